"""Widgets: the worker ops widget_get / widget_set / widget_msg. Their assets are in
test_widget_assets.py, the Interface hooks themselves in test_widget_hooks.py.
"""

from __future__ import annotations

import time
import unittest
from typing import Any

from support import WorkerTestCase


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


if __name__ == "__main__":
    unittest.main()
