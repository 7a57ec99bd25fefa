"""Binary values in widget state and binary buffers in widget messages, as raw frame bodies
(``buffer_lengths``) between gateway and worker: widget_state with bytes, widget_update receiving
and returning bytes, and widget_message answering ``WidgetReply(content, buffers)``.
"""

from __future__ import annotations

import unittest
from typing import Any

from support import WorkerTestCase

IMAGE = """
    from portico import Interface, WidgetReply


    class Image(Interface):
        def __init__(self):
            self.state = {"pixels": b"\\x00\\x01\\x02", "layers": [{"name": "a", "data": bytearray(b"AB")}], "size": 3}

        def widget_state(self):
            return self.state

        def widget_update(self, changes):
            for key, value in changes.items():
                if key == "pixels" and not isinstance(value, bytes):
                    raise TypeError("pixels must be bytes")
                self.state[key] = value
            if "pixels" in changes:
                return {"pixels": changes["pixels"][::-1], "size": len(changes["pixels"])}
            return None

        def widget_message(self, content, buffers):
            if content == "arrow":
                return WidgetReply({"rows": 2}, [b"ARROW1", memoryview(b"\\xff" * 5)])
            if content == "bad":
                return WidgetReply("x", ["not bytes"])
            return {"sizes": [len(b) for b in buffers]}
"""


def carrying(*buffers: bytes) -> dict[str, Any]:
    return {"buffer_lengths": [len(b) for b in buffers], "body": b"".join(buffers)}


class WidgetBuffersTest(WorkerTestCase):
    FILES = {"image.py": IMAGE}

    def op(self, op: str, uuid: str, **fields: Any) -> int:
        return self.worker.request(op, uuid=uuid, module="image", config={}, **fields)

    def answer(self, request: int) -> tuple[dict[str, Any], bytes]:
        frame = self.worker.terminal(request)
        self.assertEqual(frame["op"], "result", frame)
        return frame, self.worker.body_of(frame)

    def test_binary_values_of_the_state_travel_in_the_body(self) -> None:
        frame, body = self.answer(self.op("widget_get", "i1"))
        self.assertEqual(
            frame["payload"],
            {"state": {"pixels": None, "layers": [{"name": "a", "data": None}], "size": 3}, "buffer_paths": [["pixels"], ["layers", 0, "data"]]},
        )
        self.assertEqual((frame["buffer_lengths"], body), ([3, 2], b"\x00\x01\x02AB"))

    def test_widget_update_receives_bytes_and_may_return_them(self) -> None:
        request = self.op("widget_set", "i2", changes={"pixels": None}, buffer_paths=[["pixels"]], **carrying(b"xyz"))
        frame, body = self.answer(request)
        self.assertEqual(frame["payload"], {"changes": {"pixels": None, "size": 3}, "buffer_paths": [["pixels"]]})
        self.assertEqual(body, b"zyx")
        # Changes returned as given (None) keep their binary values too, nested ones included.
        request = self.op("widget_set", "i2", changes={"layers": [{"data": None}]}, buffer_paths=[["layers", 0, "data"]], **carrying(b"\x07"))
        frame, body = self.answer(request)
        self.assertEqual((frame["payload"]["buffer_paths"], body), ([["layers", 0, "data"]], b"\x07"))
        frame, body = self.answer(self.op("widget_get", "i2"))
        self.assertEqual(body, b"xyz\x07")

    def test_a_reply_with_buffers(self) -> None:
        frame, body = self.answer(self.op("widget_msg", "i3", content="arrow"))
        self.assertEqual((frame["payload"], frame["buffer_lengths"], body), ({"reply": {"rows": 2}, "has_reply": True}, [6, 5], b"ARROW1" + b"\xff" * 5))
        frame, _ = self.answer(self.op("widget_msg", "i3", content="sizes", **carrying(b"", b"abc")))
        self.assertEqual(frame["payload"]["reply"], {"sizes": [0, 3]})
        error = self.worker.error(self.op("widget_msg", "i3", content="bad"))
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "TypeError"))

    def test_buffer_paths_that_do_not_fit_are_bad_requests(self) -> None:
        cases = [
            ({"a": None}, [["a"], ["b"]], carrying(b"x")),  # more paths than buffers
            ({"a": None}, [["missing", "x"]], carrying(b"x")),  # no such place
            ({"a": None}, [[]], carrying(b"x")),  # empty path
            ({"a": None}, "a", carrying(b"x")),  # not a list
        ]
        for changes, paths, fields in cases:
            with self.subTest(paths=paths):
                error = self.worker.error(self.op("widget_set", "i4", changes=changes, buffer_paths=paths, **fields))
                self.assertEqual(error["code"], "bad_request")


if __name__ == "__main__":
    unittest.main()
