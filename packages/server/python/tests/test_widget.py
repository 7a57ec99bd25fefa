"""Widgets: the Interface hooks (widget_state / widget_update / widget_message, pushes) and the
worker ops widget_get / widget_set / widget_msg / widget_assets, with the widget flags of
`modules` and `schema` agreeing with widget_assets.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import unittest
from typing import Any

from support import WorkerTestCase

import portico
from portico import Interface, NotFound, ReadOnly
from portico._view import ConfigView
from portico.interface import Binding, attach

PLAIN = """
    from portico import Interface


    class Plain(Interface):
        \"\"\"No widget hooks of its own: the defaults.\"\"\"

        class Config:
            start: int = 3
            name: str = "x"
            tags: list = []
"""

SLIDER = """
    import threading
    import time

    from portico import CallCancelled, Interface, NotFound


    class Slider(Interface):
        class Config:
            start: int = 0

        def __init__(self):
            self.state = {"value": self.config.start, "label": "slider"}
            self.seen = []

        def widget_state(self):
            return self.state

        def widget_update(self, changes):
            if "value" in changes:
                value = changes["value"]
                if not isinstance(value, int):
                    raise TypeError(f"value must be an integer, not {type(value).__name__}")
                if value < 0:
                    raise ValueError("value must not be negative")
                self.state["value"] = min(value, 100)
                return {"value": self.state["value"]}  # clamped
            if "label" in changes:
                self.state["label"] = changes["label"]
                return None  # as given
            if "list" in changes:
                return ["not", "a", "dict"]
            if "boom" in changes:
                raise RuntimeError("update broke")
            if "missing" in changes:
                raise NotFound("no such key")
            if "slow" in changes:
                try:
                    while True:
                        time.sleep(0.01)
                except CallCancelled:
                    self.seen.append("update cancelled")
                    raise
            if "complex" in changes:
                return {"x": 1j}
            return changes

        def widget_message(self, content, buffers):
            self.seen.append([content, [[type(b).__name__, b.hex()] for b in buffers]])
            if content == "push":
                self.push_widget_change({"value": 7})
                self.push_widget_message({"note": "hi"}, [b"\\x00\\x01", bytearray(b"zz")])
                return "pushed"
            if content == "quiet":
                return None
            if content == "sizes":
                return [len(b) for b in buffers]
            if content == "object":
                return object()
            return {"echo": content}

        def bump(self):
            self.state["value"] += 1
            self.push_widget_change({"value": self.state["value"]})
            return self.state["value"]

        def push_from_thread(self):
            done = threading.Event()

            def work():
                self.push_widget_message("from a thread")
                done.set()

            threading.Thread(target=work).start()
            done.wait(5)
            return "ok"

        def bad_push(self):
            try:
                self.push_widget_change({"x": object()})
            except TypeError as exc:
                return f"TypeError: {exc}"

        def seen_messages(self):
            return self.seen
"""

ASYNC_WIDGET = """
    import asyncio

    from portico import Interface, ReadOnly


    class AsyncWidget(Interface):
        def __init__(self):
            self.state = {"n": 0}
            self.log = []

        async def widget_state(self):
            await asyncio.sleep(0)
            return self.state

        async def widget_update(self, changes):
            if changes.get("wait"):
                try:
                    await asyncio.sleep(30)
                except asyncio.CancelledError:
                    self.log.append("cancelled")
                    raise
            if changes.get("frozen"):
                raise ReadOnly("frozen right now")
            self.state.update(changes)
            self.push_widget_change({"pushed": True})
            return None

        async def widget_message(self, content, buffers):
            await asyncio.sleep(0)
            return {"async": content}

        def get_log(self):
            return self.log
"""

BAD_STATE = """
    from portico import Interface


    class BadState(Interface):
        class Config:
            kind: str = "object"

        def widget_state(self):
            if self.config.kind == "list":
                return [1, 2]
            if self.config.kind == "raise":
                raise KeyError("state")
            return {"x": object()}
"""


def carrying(*buffers: bytes) -> dict[str, Any]:
    """The request fields that carry ``buffers`` in the frame body, as the gateway sends them."""
    return {"buffer_lengths": [len(b) for b in buffers], "body": b"".join(buffers)}


class WidgetOpsTest(WorkerTestCase):
    FILES = {"plain.py": PLAIN, "slider.py": SLIDER, "async_widget.py": ASYNC_WIDGET, "bad_state.py": BAD_STATE}

    def op(self, op: str, module: str, uuid: str, config: dict | None = None, **fields: Any) -> int:
        return self.worker.request(op, uuid=uuid, module=module, config=config or {}, **fields)

    def get(self, module: str, uuid: str, config: dict | None = None) -> Any:
        return self.worker.result(self.op("widget_get", module, uuid, config))

    # -- defaults -------------------------------------------------------------------------------

    def test_default_state_is_the_config(self) -> None:
        self.assertEqual(self.get("plain", "p1"), {"state": {"start": 3, "name": "x", "tags": []}})
        self.assertEqual(self.get("plain", "p2", {"start": 5, "tags": ["a"]}), {"state": {"start": 5, "name": "x", "tags": ["a"]}})

    def test_default_update_is_read_only(self) -> None:
        error = self.worker.error(self.op("widget_set", "plain", "p1", changes={"start": 4}))
        self.assertEqual(error["code"], "read_only")
        self.assertIn("read-only", error["message"])
        self.assertEqual(self.get("plain", "p1")["state"]["start"], 3)

    def test_default_message_has_no_reply(self) -> None:
        request = self.op("widget_msg", "plain", "p1", content={"any": 1}, **carrying(b"x"))
        self.assertEqual(self.worker.result(request), {"reply": None, "has_reply": False})

    def test_invalid_config_is_refused_when_creating(self) -> None:
        error = self.worker.error(self.op("widget_get", "plain", "p-bad", {"start": "no"}))
        self.assertEqual(error["code"], "invalid_config")

    # -- widget_set -----------------------------------------------------------------------------

    def test_update_returns_normalized_changes(self) -> None:
        result = self.worker.result(self.op("widget_set", "slider", "s1", {"start": 1}, changes={"value": 500}))
        self.assertEqual(result, {"changes": {"value": 100}})
        self.assertEqual(self.get("slider", "s1")["state"]["value"], 100)

    def test_update_returning_none_broadcasts_the_changes_as_given(self) -> None:
        result = self.worker.result(self.op("widget_set", "slider", "s1", {"start": 1}, changes={"label": "speed"}))
        self.assertEqual(result, {"changes": {"label": "speed"}})

    def test_value_and_type_errors_are_invalid_argument(self) -> None:
        for value, exception in ((-1, "ValueError"), ("high", "TypeError")):
            with self.subTest(value=value):
                error = self.worker.error(self.op("widget_set", "slider", "s2", {"start": 1}, changes={"value": value}))
                self.assertEqual((error["code"], error["exception"]), ("invalid_argument", exception))
                self.assertIn("widget_update()", error["message"])

    def test_other_failures_of_update(self) -> None:
        error = self.worker.error(self.op("widget_set", "slider", "s2", {"start": 1}, changes={"list": 1}))
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "TypeError"))
        self.assertIn("returned list", error["message"])
        error = self.worker.error(self.op("widget_set", "slider", "s2", {"start": 1}, changes={"boom": 1}))
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "RuntimeError"))
        self.assertIn("update broke", error["message"])
        error = self.worker.error(self.op("widget_set", "slider", "s2", {"start": 1}, changes={"missing": 1}))
        self.assertEqual(error["code"], "not_found")
        error = self.worker.error(self.op("widget_set", "slider", "s2", {"start": 1}, changes={"complex": 1}))
        self.assertEqual(error["code"], "unserializable_result")

    def test_changes_must_be_an_object(self) -> None:
        for changes in ([1], "x", None):
            with self.subTest(changes=changes):
                error = self.worker.error(self.op("widget_set", "slider", "s2", {"start": 1}, changes=changes))
                self.assertEqual(error["code"], "bad_request")

    def test_cancel_interrupts_a_sync_update(self) -> None:
        request = self.op("widget_set", "slider", "s3", {"start": 1}, changes={"slow": True})
        time.sleep(0.2)
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        deadline = time.monotonic() + 10
        while "update cancelled" not in self.worker.result(self.worker.call("seen_messages", module="slider", uuid="s3")):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.02)

    # -- widget_msg and pushes ------------------------------------------------------------------

    def test_message_reply_and_buffers(self) -> None:
        request = self.op("widget_msg", "slider", "s4", {"start": 1}, content="sizes", **carrying(b"abc", b"", bytes(range(256))))
        self.assertEqual(self.worker.result(request), {"reply": [3, 0, 256], "has_reply": True})
        request = self.op("widget_msg", "slider", "s4", {"start": 1}, content={"k": [1]})
        self.assertEqual(self.worker.result(request), {"reply": {"echo": {"k": [1]}}, "has_reply": True})
        request = self.op("widget_msg", "slider", "s4", {"start": 1}, content="quiet")
        self.assertEqual(self.worker.result(request), {"reply": None, "has_reply": False})
        seen = self.worker.result(self.worker.call("seen_messages", module="slider", uuid="s4"))
        self.assertEqual(seen[0], ["sizes", [["bytes", "616263"], ["bytes", ""], ["bytes", bytes(range(256)).hex()]]])
        self.assertEqual(seen[1:], [[{"k": [1]}, []], ["quiet", []]])

    def test_unserializable_reply(self) -> None:
        error = self.worker.error(self.op("widget_msg", "slider", "s4", {"start": 1}, content="object"))
        self.assertEqual(error["code"], "unserializable_result")

    def test_bad_buffers_are_bad_requests(self) -> None:
        for lengths, body in (([5], b"abc"), ([-1], b""), ("abc", b"abc"), ([True], b"a"), ([], b"extra")):
            with self.subTest(lengths=lengths, body=body):
                error = self.worker.error(self.op("widget_msg", "slider", "s4", {"start": 1}, content=1, buffer_lengths=lengths, body=body))
                self.assertEqual(error["code"], "bad_request")

    def test_pushes_reach_the_gateway_before_the_reply(self) -> None:
        request = self.op("widget_msg", "slider", "s5", {"start": 1}, content="push")
        self.worker.terminal(request)
        frames = [f for f in self.worker.frames if f.get("uuid") == "s5" or f.get("id") == request]
        self.assertEqual(
            frames,
            [
                {"op": "widget_change", "uuid": "s5", "changes": {"value": 7}},
                {"op": "widget_msg", "uuid": "s5", "content": {"note": "hi"}, "buffer_lengths": [2, 2]},
                {"op": "result", "id": request, "payload": {"reply": "pushed", "has_reply": True}},
            ],
        )
        self.assertEqual(self.worker.body_of(frames[1]), b"\x00\x01zz")

    def test_push_from_a_method_and_from_another_thread(self) -> None:
        request = self.worker.call("bump", module="slider", uuid="s6", config={"start": 10})
        self.assertEqual(self.worker.result(request), 11)
        frames = [f for f in self.worker.frames if f.get("uuid") == "s6" or f.get("id") == request]
        self.assertEqual([f["op"] for f in frames], ["widget_change", "result"])
        self.assertEqual(frames[0]["changes"], {"value": 11})
        request = self.worker.call("push_from_thread", module="slider", uuid="s6", config={"start": 10})
        self.assertEqual(self.worker.result(request), "ok")
        pushed = self.worker.wait_for(lambda f: f.get("uuid") == "s6" and f["op"] == "widget_msg")
        self.assertEqual(pushed, {"op": "widget_msg", "uuid": "s6", "content": "from a thread"})

    def test_an_unserializable_push_raises_type_error_in_the_caller(self) -> None:
        result = self.worker.result(self.worker.call("bad_push", module="slider", uuid="s7", config={"start": 1}))
        self.assertTrue(result.startswith("TypeError:"), result)

    # -- async hooks ----------------------------------------------------------------------------

    def test_async_hooks_are_awaited(self) -> None:
        self.assertEqual(self.get("async_widget", "a1"), {"state": {"n": 0}})
        request = self.op("widget_set", "async_widget", "a1", changes={"n": 2})
        self.assertEqual(self.worker.result(request), {"changes": {"n": 2}})
        frames = [f for f in self.worker.frames if f.get("uuid") == "a1" or f.get("id") == request]
        self.assertEqual([f["op"] for f in frames], ["widget_change", "result"])
        self.assertEqual(self.get("async_widget", "a1"), {"state": {"n": 2}})
        request = self.op("widget_msg", "async_widget", "a1", content=[1])
        self.assertEqual(self.worker.result(request), {"reply": {"async": [1]}, "has_reply": True})
        error = self.worker.error(self.op("widget_set", "async_widget", "a1", changes={"frozen": True}))
        self.assertEqual((error["code"], error["message"]), ("read_only", "frozen right now"))

    def test_cancel_an_async_update(self) -> None:
        request = self.op("widget_set", "async_widget", "a2", changes={"wait": True})
        time.sleep(0.2)
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        deadline = time.monotonic() + 10
        while self.worker.result(self.worker.call("get_log", module="async_widget", uuid="a2")) != ["cancelled"]:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.02)

    # -- bad state ------------------------------------------------------------------------------

    def test_state_must_be_a_json_object(self) -> None:
        error = self.worker.error(self.op("widget_get", "bad_state", "b1"))
        self.assertEqual(error["code"], "unserializable_result")
        error = self.worker.error(self.op("widget_get", "bad_state", "b2", {"kind": "list"}))
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "TypeError"))
        self.assertIn("widget_state() returned list", error["message"])
        error = self.worker.error(self.op("widget_get", "bad_state", "b3", {"kind": "raise"}))
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "KeyError"))

    def test_hooks_are_not_callable_methods(self) -> None:
        for name in ("widget_state", "widget_update", "widget_message", "push_widget_change"):
            with self.subTest(name=name):
                error = self.worker.error(self.worker.call(name, module="slider", uuid="s8", config={"start": 1}))
                self.assertEqual(error["code"], "method_forbidden")
        names = [m["name"] for m in self.worker.terminal(self.worker.request("schema", module="slider"))["methods"]]
        self.assertEqual(names, ["bad_push", "bump", "push_from_thread", "seen_messages"])

    def test_missing_fields_and_unknown_modules(self) -> None:
        self.worker.send({"op": "widget_get", "id": 9001, "module": "slider"})
        self.assertEqual(self.worker.error(9001)["code"], "bad_request")
        self.assertEqual(self.worker.error(self.op("widget_get", "nowhere", "z1"))["code"], "module_not_found")


# -- widget_assets ------------------------------------------------------------------------------

ASSET_FILES = {
    "inline.py": """
        from portico import Interface

        class Inline(Interface):
            _esm = "export default { render({ el }) { el.textContent = 'hi'; } }"
            _css = ".x { color: red }"
    """,
    "named.py": """
        from portico import Interface

        class Named(Interface):
            _esm = "front/named.js"
            _css = "missing.css"  # names no file: so it is source text
    """,
    "front/named.js": "export default {};\n",
    "pathed.py": """
        import pathlib

        from portico import Interface

        class Pathed(Interface):
            _esm = pathlib.Path("front") / "pathed.mjs"
    """,
    "front/pathed.mjs": "export default {};\n",
    "path_missing.py": """
        import pathlib

        from portico import Interface

        class PathMissing(Interface):
            _esm = pathlib.Path("nowhere.js")
    """,
    "multiline.py": """
        from portico import Interface

        class Multiline(Interface):
            _esm = "front/named.js\\nexport default {}"
    """,
    "sib.py": "from portico import Interface\n\nclass Sib(Interface):\n    pass\n",
    "sib.widget.js": "export default {};\n",
    "sib.widget.css": ".sib {}\n",
    "wpkg/__init__.py": "from portico import Interface\n\nclass WPkg(Interface):\n    pass\n",
    "wpkg/__init__.widget.js": "export default {};\n",
    "css_only.py": "from portico import Interface\n\nclass CssOnly(Interface):\n    pass\n",
    "css_only.widget.css": ".c {}\n",
    "none.py": "from portico import Interface\n\nclass NoWidget(Interface):\n    pass\n",
    "not_str.py": "from portico import Interface\n\nclass NotStr(Interface):\n    _esm = 5\n",
    "escape.py": """
        import pathlib

        from portico import Interface

        class Escape(Interface):
            _esm = pathlib.Path("..") / "outside.js"
    """,
    "escape_abs.py": "from portico import Interface\n\nclass EscapeAbs(Interface):\n    _esm = '/etc/hostname.js'\n",
    "linked.py": "from portico import Interface\n\nclass Linked(Interface):\n    pass\n",
    "lib/__init__.py": "",
    "lib/base.py": """
        from portico import Interface

        class Base(Interface):
            _esm = "base.js"
    """,
    "lib/base.js": "export default {};\n",
    "child.py": """
        from lib.base import Base

        class Child(Base):
            pass
    """,
}


class WidgetAssetsTest(WorkerTestCase):
    FILES = ASSET_FILES

    @classmethod
    def setUpClass(cls) -> None:
        cls.outside = tempfile.mkdtemp(prefix="portico-outside-")
        with open(os.path.join(cls.outside, "evil.widget.js"), "w") as handle:
            handle.write("export default {};\n")
        super().setUpClass()
        os.symlink(os.path.join(cls.outside, "evil.widget.js"), os.path.join(cls.project, "linked.widget.js"))
        with open(os.path.join(os.path.dirname(cls.project), "outside.js"), "w") as handle:
            handle.write("export default {};\n")
        cls.addClassCleanup(os.remove, os.path.join(os.path.dirname(cls.project), "outside.js"))

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        shutil.rmtree(cls.outside, ignore_errors=True)

    def assets(self, module: str) -> dict[str, Any]:
        frame = self.worker.terminal(self.worker.request("widget_assets", module=module))
        if frame["op"] != "widget_assets":
            raise AssertionError(frame)
        return {"esm": frame["esm"], "css": frame["css"]}

    def error(self, module: str) -> dict[str, Any]:
        return self.worker.error(self.worker.request("widget_assets", module=module))

    def path(self, *parts: str) -> dict[str, str]:
        return {"path": os.path.realpath(os.path.join(self.project, *parts))}

    def test_reply_shape(self) -> None:
        request = self.worker.request("widget_assets", module="sib")
        frame = self.worker.terminal(request)
        self.assertEqual(frame, {"op": "widget_assets", "id": request, **self.assets("sib")})

    def test_inline_sources(self) -> None:
        self.assertEqual(
            self.assets("inline"),
            {"esm": {"inline": "export default { render({ el }) { el.textContent = 'hi'; } }"}, "css": {"inline": ".x { color: red }"}},
        )

    def test_a_string_naming_an_existing_file_is_a_path_else_source(self) -> None:
        self.assertEqual(self.assets("named"), {"esm": self.path("front", "named.js"), "css": {"inline": "missing.css"}})
        self.assertEqual(self.assets("multiline"), {"esm": {"inline": "front/named.js\nexport default {}"}, "css": None})

    def test_a_path_object_is_a_path(self) -> None:
        self.assertEqual(self.assets("pathed"), {"esm": self.path("front", "pathed.mjs"), "css": None})
        self.assertEqual(self.error("path_missing")["code"], "not_found")

    def test_sibling_files(self) -> None:
        self.assertEqual(self.assets("sib"), {"esm": self.path("sib.widget.js"), "css": self.path("sib.widget.css")})
        self.assertEqual(self.assets("wpkg"), {"esm": self.path("wpkg", "__init__.widget.js"), "css": None})
        self.assertEqual(self.assets("css_only"), {"esm": None, "css": self.path("css_only.widget.css")})

    def test_no_assets(self) -> None:
        self.assertEqual(self.assets("none"), {"esm": None, "css": None})
        self.assertEqual(self.assets("not_str"), {"esm": None, "css": None})

    def test_an_inherited_name_is_relative_to_the_module_that_declares_it(self) -> None:
        self.assertEqual(self.assets("child"), {"esm": self.path("lib", "base.js"), "css": None})

    def test_paths_outside_the_project_are_forbidden(self) -> None:
        for module in ("escape", "linked"):
            with self.subTest(module=module):
                error = self.error(module)
                self.assertEqual(error["code"], "forbidden")
                self.assertIn("outside the project", error["message"])
        # A string that names no file inside is source text, never a path outside.
        self.assertEqual(self.assets("escape_abs"), {"esm": {"inline": "/etc/hostname.js"}, "css": None})

    def test_unknown_and_broken_modules(self) -> None:
        self.assertEqual(self.error("nowhere")["code"], "module_not_found")
        self.assertEqual(self.error("os")["code"], "module_not_found")
        self.worker.send({"op": "widget_assets", "id": 9100})
        self.assertEqual(self.worker.error(9100)["code"], "bad_request")

    def test_modules_and_schema_flags_agree_with_the_assets(self) -> None:
        listing = {entry["module"]: entry for entry in self.worker.terminal(self.worker.request("modules"))["modules"]}
        for module in ("inline", "named", "pathed", "multiline", "sib", "wpkg", "css_only", "none", "not_str", "child"):
            with self.subTest(module=module):
                assets = self.assets(module)
                schema = self.worker.terminal(self.worker.request("schema", module=module))
                expected = {asset: value is not None for asset, value in assets.items()}
                self.assertEqual(schema["widget"], {**expected, "meta": {}} if any(expected.values()) else None)
                self.assertEqual(listing[module]["widget"], assets["esm"] is not None)


# -- the hooks without a worker -----------------------------------------------------------------


class Counter(Interface):
    class Config:
        start: int = 0


def bound(obj: Interface, pushes: list[Any] | None = None, config: dict[str, Any] | None = None) -> Interface:
    kwargs: dict[str, Any] = {}
    if pushes is not None:
        kwargs["push"] = lambda uuid, op, fields, buffers: pushes.append((uuid, op, fields, buffers))
    attach(obj, Binding(uuid="u", config=ConfigView(config or {"start": 2}), project=None, emit=lambda u, p: None, **kwargs))
    return obj


class HooksTest(unittest.TestCase):
    def test_exports(self) -> None:
        self.assertIs(portico.NotFound, NotFound)
        self.assertIs(portico.ReadOnly, ReadOnly)
        self.assertTrue(issubclass(NotFound, LookupError))
        self.assertTrue(issubclass(ReadOnly, Exception))
        self.assertIn("NotFound", portico.__all__)
        self.assertIn("ReadOnly", portico.__all__)

    def test_defaults(self) -> None:
        obj = bound(Counter())
        state = obj.widget_state()
        self.assertEqual(state, {"start": 2})
        state["start"] = 9  # a copy: the config stays as it was
        self.assertEqual(obj.config.start, 2)
        with self.assertRaises(ReadOnly):
            obj.widget_update({"start": 3})
        self.assertIsNone(obj.widget_message({"x": 1}, []))

    def test_hooks_are_documented(self) -> None:
        for name in ("widget_state", "widget_update", "widget_message", "push_widget_change", "push_widget_message"):
            with self.subTest(name=name):
                self.assertTrue(getattr(Interface, name).__doc__)
        self.assertIn("read(self, params)", Interface.__doc__ or "")

    def test_pushes_go_to_the_binding(self) -> None:
        pushes: list[Any] = []
        obj = bound(Counter(), pushes)
        obj.push_widget_change({"a": 1})
        obj.push_widget_change({"image": b"\x01\x02", "layers": [{"data": memoryview(b"\x03")}]})
        obj.push_widget_message({"b": 2}, [b"x", bytearray(b"y"), memoryview(b"z")])
        obj.push_widget_message("plain")
        self.assertEqual(
            pushes,
            [
                ("u", "widget_change", {"changes": {"a": 1}}, []),
                (
                    "u",
                    "widget_change",
                    {"changes": {"image": None, "layers": [{"data": None}]}, "buffer_paths": [["image"], ["layers", 0, "data"]]},
                    [b"\x01\x02", b"\x03"],
                ),
                ("u", "widget_msg", {"content": {"b": 2}}, [b"x", b"y", b"z"]),
                ("u", "widget_msg", {"content": "plain"}, []),
            ],
        )

    def test_push_arguments_are_checked(self) -> None:
        obj = bound(Counter())
        with self.assertRaises(TypeError):
            obj.push_widget_change([("a", 1)])  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            obj.push_widget_change({"a": object()})
        with self.assertRaises(TypeError):
            obj.push_widget_change({"a": 10**5000})  # ValueError inside (too many digits), TypeError outside
        with self.assertRaises(TypeError):
            obj.push_widget_message("x", ["not bytes"])  # type: ignore[list-item]

    def test_unbound_instances_push_nowhere(self) -> None:
        obj = Counter()
        obj.push_widget_change({"a": 1})
        obj.push_widget_message({"b": 2}, [b"x"])
        with self.assertRaises(TypeError):
            obj.push_widget_message(object())


if __name__ == "__main__":
    unittest.main()
