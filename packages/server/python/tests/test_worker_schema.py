"""Worker: the `schema` op: config JSON Schema for each Config form, versions, methods, widget,
source location, and its errors."""

from __future__ import annotations

import importlib.util
import textwrap
import unittest

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


class WorkerSchemaTest(WorkerTestCase):
    FILES = FILES
    maxDiff = None

    def schema(self, module: str) -> dict:
        frame = self.worker.terminal(self.worker.request("schema", module=module))
        self.assertEqual(frame["op"], "schema", frame)
        return frame

    def schema_error(self, module: str) -> dict:
        return self.worker.error(self.worker.request("schema", module=module))

    # -- the module ------------------------------------------------------------------------------

    def test_reply_shape(self) -> None:
        frame = self.schema("plain")
        self.assertEqual(
            set(frame),
            {"op", "id", "module", "kind", "doc", "config_schema", "config_fields", "version_methods", "methods", "widget", "source_file", "source_line"},
        )
        self.assertEqual((frame["module"], frame["kind"]), ("plain", "Plain"))
        self.assertEqual(frame["doc"], "A plain config.\n\nSecond paragraph.")
        self.assertIsNone(frame["widget"])

    def test_doc_is_never_inherited_from_interface(self) -> None:
        self.assertIsNone(self.schema("nodoc")["doc"])

    def test_source_location_is_relative_to_the_project(self) -> None:
        frame = self.schema("plain")
        line = textwrap.dedent(FILES["plain.py"]).splitlines().index("class Plain(Base):") + 1
        self.assertEqual((frame["source_file"], frame["source_line"]), ("plain.py", line))
        frame = self.schema("pkg")
        self.assertEqual((frame["source_file"], frame["source_line"]), ("pkg/__init__.py", 4))

    def test_source_location_outside_the_project_is_null(self) -> None:
        frame = self.schema("outside")
        self.assertEqual((frame["kind"], frame["source_file"], frame["source_line"]), ("Outside", None, None))

    def test_widget_from_class_attributes_and_sibling_files(self) -> None:
        self.assertEqual(self.schema("drawn")["widget"], {"esm": True, "css": False, "meta": {"size": "small"}})
        self.assertEqual(self.schema("sib")["widget"], {"esm": True, "css": True, "meta": {}})
        self.assertIsNone(self.schema("pkg")["widget"])

    # -- config_schema ---------------------------------------------------------------------------

    def test_plain_config(self) -> None:
        schema = self.schema("plain")["config_schema"]
        optimizer = {
            "type": "object",
            "properties": {
                "lr": {"type": "number", "default": 0.01, "description": "Learning rate."},
                "momentum": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
            },
            "required": [],
            **CLOSED,
        }
        self.assertEqual(
            schema,
            {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "description": "Training settings.",
                "properties": {
                    "epochs": {"type": "integer", "default": 10, "description": "How many passes over the data."},
                    "name": {"type": "string"},
                    "rate": {"type": "number", "default": 0.5, "description": "Step size."},
                    "mode": {"enum": ["sgd", "adam"], "default": "sgd"},
                    "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                    "tags": {"type": "array", "items": {"type": "string"}, "default": []},
                    "weights": {"type": "object", "additionalProperties": {"type": "number"}, "default": {}},
                    "pair": {
                        "type": "array",
                        "prefixItems": [{"type": "integer"}, {"type": "string"}],
                        "minItems": 2,
                        "maxItems": 2,
                        "default": [1, "a"],
                    },
                    "anything": {"default": None},
                    "optimizer": optimizer,
                    "maybe": {"anyOf": [optimizer, {"type": "null"}], "default": None},
                    "flag": {"type": "boolean", "default": False},
                },
                "required": ["name"],
                **CLOSED,
            },
        )

    def test_dataclass_config(self) -> None:
        schema = self.schema("dc")["config_schema"]
        self.assertEqual(
            schema["properties"],
            {
                "required": {"type": "string", "description": "Must be given."},
                "size": {"type": "integer", "default": 3, "description": "The size."},
                "items": {"type": "array", "items": {"type": "integer"}, "default": [1, 2], "description": "Items, by docstring."},
                "inner": {
                    "type": "object",
                    "properties": {"depth": {"type": "integer", "default": 2, "description": "How deep."}},
                    "required": [],
                    **CLOSED,
                    "default": {"depth": 2},  # from the default_factory
                },
                "opt": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
            },
        )
        self.assertEqual(schema["required"], ["required"])
        self.assertFalse(schema["additionalProperties"])
        self.assertNotIn("description", schema)  # @dataclass's generated docstring is not a description

    @unittest.skipUnless(HAS_PYDANTIC, "pydantic is not installed")
    def test_pydantic_config(self) -> None:
        schema = self.schema("pyd")["config_schema"]
        self.assertNotIn("$ref", str(schema["properties"]["opt"]))
        properties = schema["properties"]
        self.assertEqual((properties["start"]["default"], properties["start"]["description"]), (0, "Where to start."))
        self.assertEqual((properties["rate"]["default"], properties["rate"]["description"]), (0.5, "Step size."))
        self.assertEqual(properties["mode"]["enum"], ["a", "b"])
        self.assertEqual(properties["maybe"]["anyOf"], [{"type": "integer"}, {"type": "null"}])
        opt = properties["opt"]
        self.assertEqual(opt["type"], "object")
        self.assertEqual(opt["default"], {"lr": 0.1, "note": ""})
        self.assertEqual(opt["properties"]["lr"]["description"], "learning rate")
        self.assertEqual(opt["properties"]["note"]["description"], "a note")
        self.assertFalse(opt["additionalProperties"])
        self.assertEqual(properties["listed"]["default"], [7])  # from the default_factory
        self.assertTrue(properties["loose"]["additionalProperties"])  # extra="allow"
        self.assertEqual(schema["required"], ["needed"])
        self.assertFalse(schema["additionalProperties"])
        # A model that contains itself keeps one reference, to a definition at the top.
        tree = properties["tree"]
        self.assertEqual(tree["default"], {"children": []})
        self.assertEqual(tree["properties"]["children"]["items"], {"$ref": "#/$defs/Tree"})
        self.assertEqual(list(schema["$defs"]), ["Tree"])
        self.assertEqual(schema["$defs"]["Tree"]["properties"]["children"]["items"], {"$ref": "#/$defs/Tree"})

    def test_no_config_is_an_empty_object(self) -> None:
        self.assertEqual(
            self.schema("nodoc")["config_schema"],
            {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {}, "required": [], **CLOSED},
        )

    # -- versions and methods --------------------------------------------------------------------

    def test_versions_include_inherited_ones(self) -> None:
        versions = self.schema("plain")["version_methods"]
        self.assertEqual([version["name"] for version in versions], ["big", "inherited", "tiny"])
        self.assertEqual(
            versions[0],
            {
                "name": "big",
                "signature": "(step: int = 10, *, scale: float = 1.5)",
                "doc": "Bigger steps.",
                "parameters": [
                    {"name": "step", "kind": "positional_or_keyword", "default": 10, "annotation": "int"},
                    {"name": "scale", "kind": "keyword_only", "default": 1.5, "annotation": "float"},
                ],
                "source_line": textwrap.dedent(FILES["plain.py"]).splitlines().index("    def version_big(self, step: int = 10, *, scale: float = 1.5):") + 1,
            },
        )
        self.assertEqual(versions[1]["source_line"], textwrap.dedent(FILES["base.py"]).splitlines().index("    def version_inherited(self):") + 1)
        self.assertEqual(versions[1]["doc"], "From the base.")
        self.assertEqual((versions[2]["signature"], versions[2]["doc"], versions[2]["parameters"]), ("()", None, []))

    # -- config_fields (the reference server's shape) --------------------------------------------

    def fields(self, module: str) -> dict:
        return {field["name"]: field for field in self.schema(module)["config_fields"]}

    def test_config_fields_of_a_plain_config(self) -> None:
        fields = self.fields("plain")
        self.assertEqual(list(fields), ["epochs", "name", "rate", "mode", "limit", "tags", "weights", "pair", "anything", "optimizer", "maybe", "flag"])
        self.assertEqual(
            fields["epochs"],
            {"name": "epochs", "type": "<class 'int'>", "default": 10, "required": False, "description": "How many passes over the data.", "fields": None},
        )
        self.assertEqual(fields["name"], {"name": "name", "type": "<class 'str'>", "default": None, "required": True, "description": None, "fields": None})
        self.assertEqual((fields["mode"]["type"], fields["mode"]["default"]), ("typing.Literal['sgd', 'adam']", "sgd"))
        self.assertEqual((fields["limit"]["type"], fields["tags"]["type"]), ("int | None", "list[str]"))
        optimizer = fields["optimizer"]
        # A nested config without a default: its own defaults apply, so it is not required.
        self.assertEqual((optimizer["type"], optimizer["required"], optimizer["default"]), ("<class 'plain.Optimizer'>", False, {"lr": 0.01, "momentum": None}))
        self.assertEqual(
            [(f["name"], f["type"], f["default"], f["description"]) for f in optimizer["fields"]],
            [("lr", "<class 'float'>", 0.01, "Learning rate."), ("momentum", "typing.Optional[float]", None, None)],
        )
        self.assertEqual([f["name"] for f in fields["maybe"]["fields"]], ["lr", "momentum"])  # Optional[Optimizer]

    def test_config_fields_of_a_dataclass_config(self) -> None:
        fields = self.fields("dc")
        self.assertEqual((fields["required"]["required"], fields["required"]["default"]), (True, None))
        self.assertEqual(
            fields["items"], {"name": "items", "type": "list[int]", "default": [1, 2], "required": False, "description": "Items, by docstring.", "fields": None}
        )
        self.assertEqual(fields["inner"]["default"], {"depth": 2})
        self.assertEqual(
            fields["inner"]["fields"], [{"name": "depth", "type": "<class 'int'>", "default": 2, "required": False, "description": "How deep.", "fields": None}]
        )

    @unittest.skipUnless(HAS_PYDANTIC, "pydantic is not installed")
    def test_config_fields_of_a_pydantic_config(self) -> None:
        fields = self.fields("pyd")
        self.assertEqual(
            fields["start"], {"name": "start", "type": "<class 'int'>", "default": 0, "required": False, "description": "Where to start.", "fields": None}
        )
        self.assertEqual((fields["mode"]["type"], fields["maybe"]["type"]), ("typing.Literal['a', 'b']", "typing.Optional[int]"))
        self.assertEqual((fields["needed"]["required"], fields["needed"]["default"]), (True, None))
        self.assertEqual(fields["listed"]["default"], [7])
        self.assertEqual([(f["name"], f["default"]) for f in fields["opt"]["fields"]], [("lr", 0.1), ("note", "")])
        # A model that contains itself is listed down to the depth bound, then no further.
        depth, node = 0, fields["tree"]
        while node["fields"] is not None:
            depth, node = depth + 1, node["fields"][0]
        self.assertEqual(depth, 6)

    def test_config_fields_carry_the_description_the_json_schema_gives(self) -> None:
        modules = ["plain", "dc"] + (["pyd"] if HAS_PYDANTIC else [])
        for module in modules:
            schema = self.schema(module)
            properties = schema["config_schema"]["properties"]
            for field in schema["config_fields"]:
                if field["fields"] is None:  # a nested config's schema carries its class docstring too
                    with self.subTest(module=module, field=field["name"]):
                        self.assertEqual(field["description"], properties[field["name"]].get("description"))
        plain = self.fields("plain")
        # A docstring, Annotated text (which wins over a docstring), dataclass metadata, Field(description=...).
        self.assertEqual((plain["epochs"]["description"], plain["rate"]["description"], plain["mode"]["description"]), ("How many passes over the data.", "Step size.", None))
        self.assertEqual((self.fields("dc")["required"]["description"], self.fields("dc")["opt"]["description"]), ("Must be given.", None))
        if HAS_PYDANTIC:
            pyd = self.fields("pyd")
            self.assertEqual((pyd["start"]["description"], pyd["rate"]["description"]), ("Where to start.", "Step size."))
            self.assertEqual([(f["name"], f["description"]) for f in pyd["opt"]["fields"]], [("lr", "learning rate"), ("note", "a note")])

    def test_methods_follow_the_callable_rule(self) -> None:
        methods = {method["name"]: method for method in self.schema("plain")["methods"]}
        # Not: _private, size (a property), limit (not callable), version_*, Config, Interface's own.
        self.assertEqual(list(methods), ["add", "build", "count", "fetch", "pure", "shared", "ticks"])
        self.assertEqual(
            methods["add"],
            {
                "name": "add",
                "signature": "(n: int = 1, *rest: int, label: str | None = None, **extra: Any) -> int",
                "doc": "Adds n.",
                "kind": "method",
                "parameters": [
                    {"name": "n", "kind": "positional_or_keyword", "default": 1, "annotation": "int"},
                    {"name": "rest", "kind": "var_positional", "annotation": "int"},
                    {"name": "label", "kind": "keyword_only", "default": None, "annotation": "str | None"},
                    {"name": "extra", "kind": "var_keyword", "annotation": "Any"},
                ],
                "returns": "int",
            },
        )
        self.assertEqual((methods["fetch"]["kind"], methods["fetch"]["returns"]), ("async", "dict[str, int]"))
        self.assertEqual((methods["count"]["kind"], methods["count"]["returns"]), ("generator", "Iterator[int]"))
        self.assertEqual((methods["ticks"]["kind"], methods["ticks"]["returns"]), ("async_generator", None))
        self.assertEqual(methods["pure"]["signature"], "(x: list[int]) -> int")  # static: nothing dropped
        self.assertEqual(methods["build"]["parameters"], [{"name": "value", "kind": "positional_or_keyword", "default": None, "annotation": None}])
        self.assertEqual(methods["shared"]["doc"], "Defined on the project's base class.")

    def test_api_methods_list_exactly_the_listed_callables(self) -> None:
        methods = self.schema("api")["methods"]
        self.assertEqual([(method["name"], method["kind"]) for method in methods], [("stream", "async_generator"), ("visible", "method")])

    def test_string_annotations_are_evaluated_when_possible(self) -> None:
        methods = {method["name"]: method for method in self.schema("future")["methods"]}
        self.assertEqual(methods["go"]["signature"], "(steps: list[int], when: float | None = None) -> dict[str, int]")
        self.assertEqual([p["annotation"] for p in methods["go"]["parameters"]], ["list[int]", "float | None"])
        # An annotation that does not evaluate stays as written.
        self.assertEqual(methods["broken"]["parameters"][0]["annotation"], "NotDefinedAnywhere")
        self.assertEqual(methods["broken"]["returns"], "int")

    # -- errors ----------------------------------------------------------------------------------

    def test_errors_use_the_resolve_codes(self) -> None:
        error = self.schema_error("nowhere")
        self.assertEqual((error["code"], error["message"]), ("module_not_found", f"Module 'nowhere' not found in project {self.project}"))
        self.assertEqual(self.schema_error("os")["code"], "module_not_found")
        error = self.schema_error("broken")
        self.assertEqual(error["code"], "module_error")
        self.assertIn("SyntaxError", error["message"])

    def test_missing_module_field_is_a_bad_request(self) -> None:
        self.worker.send({"op": "schema", "id": 7001})
        self.assertEqual(self.worker.error(7001)["code"], "bad_request")


if __name__ == "__main__":
    unittest.main()
