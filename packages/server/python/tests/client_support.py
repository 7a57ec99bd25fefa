"""What the portico.client suites share: the gateway they start (the demo plus EXTRA_MODULES),
its test case base class and a bounded wait."""

from __future__ import annotations

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gateway_support import GatewayProcess  # noqa: E402  (also puts portico on sys.path)

from portico.client import Gateway, GatewayError, InterfaceProxy  # noqa: E402

#: Bounds every wait in these tests (things that normally take milliseconds).
WAIT = 15.0

EXTRA_MODULES = {
    # A read hook over the interface's own folder, where uploads land.
    "clientfiles.py": """
        import os

        from portico import Interface


        class ClientFiles(Interface):
            \"\"\"Serves back the files uploaded into its folder.\"\"\"

            def read(self, params):
                name = params.get("name")
                if not isinstance(name, str) or not name:
                    raise ValueError("read needs params {'name': <file>}")
                return open(self.local_directory(name), "rb")

            def size(self, name: str) -> int:
                return os.path.getsize(self.local_directory(name))
    """,
    # A widget whose state lives in Python.
    "knob.py": """
        from portico import Interface


        class Knob(Interface):
            \"\"\"A value that widgets and code both change.\"\"\"

            def __init__(self):
                self.value = 0

            def bump(self) -> int:
                self.value += 1
                self.push_widget_change({"value": self.value})
                return self.value

            def widget_state(self) -> dict:
                return {"value": self.value}

            def widget_update(self, changes: dict) -> dict:
                if set(changes) - {"value"}:
                    raise ValueError("only 'value' can be changed")
                self.value = max(0, int(changes["value"]))
                return {"value": self.value}
    """,
    # A count kept in memory only (no widget, nothing saved): a fresh instance starts at 0 again.
    "tally.py": """
        from portico import Interface


        class Tally(Interface):
            \"\"\"Counts in memory.\"\"\"

            def __init__(self):
                self.count = 0

            def add(self, n: int = 1) -> int:
                self.count += n
                return self.count

            def value(self) -> int:
                return self.count
    """,
    "picture.py": """
        from portico import Interface

        class Picture(Interface):
            \"\"\"An image held as bytes, as an anywidget keeps binary state.\"\"\"

            def __init__(self):
                self.layers = [{"name": "base", "pixels": bytes(range(4))}]

            def invert(self) -> None:
                self.layers[0]["pixels"] = bytes(255 - b for b in self.layers[0]["pixels"])
                self.push_widget_change({"layers": self.layers})

            def widget_state(self) -> dict:
                return {"layers": self.layers}

            def widget_update(self, changes: dict) -> dict:
                self.layers = changes["layers"]
                return {"layers": self.layers}
    """,
}


def wait_until(predicate, timeout: float = WAIT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


class GatewayTestCase(unittest.TestCase):
    token: str | None = None
    gateway: GatewayProcess

    @classmethod
    def setUpClass(cls) -> None:
        cls.gateway = GatewayProcess(token=cls.token, extra=EXTRA_MODULES)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.gateway.stop()

    def setUp(self) -> None:
        self.g = Gateway(self.gateway.url, token=self.token, timeout=WAIT * 2)
        self.addCleanup(self.g.close)

    def proxy(self, target: str, version=None, **kwargs) -> InterfaceProxy:
        return self.g.interface(target, version, **kwargs)

    def assertCode(self, code: str, error: GatewayError, status: int | None = None) -> None:
        self.assertEqual(error.code, code, str(error))
        if status is not None:
            self.assertEqual(error.status, status)
