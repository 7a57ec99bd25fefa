"""What the schema suites share: a project with every Config form, and SchemaCase."""

from __future__ import annotations

import importlib.util

from support import WorkerTestCase

HAS_PYDANTIC = importlib.util.find_spec("pydantic") is not None

FILES = {
    "base.py": """
        from portico import Interface

        class Base(Interface):
            def version_inherited(self):
                \"\"\"From the base.\"\"\"
                return {}

            def shared(self) -> str:
                \"\"\"Defined on the project's base class.\"\"\"
                return "shared"
    """,
    "plain.py": """
        \"\"\"The plain module.\"\"\"
        import typing
        from typing import Annotated, Any, Literal, Optional

        from base import Base


        class Optimizer:
            lr: float = 0.01
            \"\"\"Learning rate.\"\"\"

            momentum: Optional[float] = None


        class Plain(Base):
            \"\"\"A plain config.

            Second paragraph.
            \"\"\"

            class Config:
                \"\"\"Training settings.\"\"\"

                epochs: int = 10
                \"\"\"How many passes over the data.\"\"\"

                name: str
                rate: Annotated[float, "Step size."] = 0.5
                \"\"\"Ignored: Annotated wins.\"\"\"

                mode: Literal["sgd", "adam"] = "sgd"
                limit: int | None = None
                tags: list[str] = []
                weights: dict[str, float] = {}
                pair: tuple[int, str] = (1, "a")
                anything: Any = None
                optimizer: Optimizer
                maybe: Optional[Optimizer] = None
                flag: bool = False
                helper = "not a field"

            def version_big(self, step: int = 10, *, scale: float = 1.5):
                \"\"\"Bigger steps.\"\"\"
                return {"epochs": step}

            def version_tiny(self):
                return {"epochs": 1}

            def add(self, n: int = 1, *rest: int, label: str | None = None, **extra: Any) -> int:
                \"\"\"Adds n.\"\"\"
                return n

            async def fetch(self, key: str) -> dict[str, int]:
                return {}

            def count(self, n: int) -> typing.Iterator[int]:
                yield from range(n)

            async def ticks(self, n: int):
                yield n

            @staticmethod
            def pure(x: list[int]) -> int:
                return len(x)

            @classmethod
            def build(cls, value=None):
                return value

            @property
            def size(self):
                return 1

            def _private(self):
                pass

            limit = 5
    """,
    "dc.py": """
        import dataclasses
        from dataclasses import dataclass, field

        from portico import Interface


        @dataclass
        class Inner:
            depth: int = 2
            \"\"\"How deep.\"\"\"


        class Dc(Interface):
            @dataclass
            class Config:
                required: str = field(metadata={"description": "Must be given."})
                size: int = field(default=3, metadata={"description": "The size."})
                items: list[int] = field(default_factory=lambda: [1, 2])
                \"\"\"Items, by docstring.\"\"\"

                inner: Inner = field(default_factory=Inner)
                opt: float | None = None
    """,
    "pyd.py": """
        from typing import Annotated, Literal, Optional

        from pydantic import BaseModel, ConfigDict, Field

        from portico import Interface


        class Opt(BaseModel):
            lr: float = Field(0.1, description="learning rate")
            note: Annotated[str, "a note"] = ""


        class Tree(BaseModel):
            children: list["Tree"] = []


        class Loose(BaseModel):
            model_config = ConfigDict(extra="allow")
            x: int = 0


        class Pyd(Interface):
            class Config(BaseModel):
                start: int = Field(0, description="Where to start.")
                rate: Annotated[float, "Step size."] = 0.5
                mode: Literal["a", "b"] = "a"
                maybe: Optional[int] = None
                opt: Opt = Opt()
                listed: list[int] = Field(default_factory=lambda: [7])
                tree: Tree = Field(default_factory=Tree)
                loose: Loose = Loose()
                needed: str

            def ping(self):
                return "pong"
    """,
    "api.py": """
        from portico import Interface

        class Api(Interface):
            __api_methods__ = ["visible", "stream", "missing"]

            def visible(self):
                return 1

            def hidden(self):
                return 2

            async def stream(self):
                yield 1
    """,
    "future.py": """
        from __future__ import annotations

        from portico import Interface

        class Future(Interface):
            def go(self, steps: list[int], when: float | None = None) -> dict[str, int]:
                return {}

            def broken(self, x: NotDefinedAnywhere = 1) -> int:
                return 1
    """,
    "nodoc.py": """
        \"\"\"Module docstring, not the class's.\"\"\"
        from portico import Interface

        class NoDoc(Interface):
            pass
    """,
    "runner.py": """
        from portico import Interface

        class Step(Interface):
            def __call__(self):
                print("ran")

        class Runner(Step):
            pass

        __interface__ = "Runner"
    """,
    "drawn.py": """
        from portico import Interface

        class Drawn(Interface):
            _esm = "export default { render() {} }"
            _widget_meta = {"size": "small"}
    """,
    "sib.py": """
        from portico import Interface

        class Sib(Interface):
            pass
    """,
    "sib.widget.js": "export default {};\n",
    "sib.widget.css": ".sib {}\n",
    "outside.py": """
        from portico import Interface

        class Outside(Interface):
            pass

        Outside.__module__ = "json"  # reflection now finds it in the stdlib, outside the project
        __interface__ = "Outside"
    """,
    "pkg/__init__.py": """
        from portico import Interface

        class Packaged(Interface):
            pass
    """,
    "broken.py": "from portico import Interface\n\nclass Broken(Interface)\n",
}

CLOSED = {"additionalProperties": False}


class SchemaCase(WorkerTestCase):
    """A worker on FILES, and its `schema` answers."""

    FILES = FILES
    maxDiff = None

    def schema(self, module: str) -> dict:
        frame = self.worker.terminal(self.worker.request("schema", module=module))
        self.assertEqual(frame["op"], "schema", frame)
        return frame

    def schema_error(self, module: str) -> dict:
        return self.worker.error(self.worker.request("schema", module=module))
