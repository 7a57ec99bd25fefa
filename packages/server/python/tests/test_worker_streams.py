"""Worker: streaming with the credit window (sync and async generators, returned iterators)."""

from __future__ import annotations

import unittest

from support import WorkerTestCase

STREAMS = """
    import asyncio

    from portico import Interface


    class Streams(Interface):
        def __init__(self):
            self.advanced = 0

        def ticks(self, n):
            for i in range(n):
                self.advanced += 1
                yield i

        async def aticks(self, n):
            for i in range(n):
                self.advanced += 1
                await asyncio.sleep(0)
                yield i

        def advanced_count(self):
            return self.advanced

        def progress(self, n):
            for i in range(n):
                self.emit({"step": i})
                yield i

        def returns_generator(self, n):
            return (i * 2 for i in range(n))

        def returns_iterator(self):
            return iter([1, 2, 3])

        async def returns_async_generator(self):
            async def inner():
                yield "a"
                yield "b"
            return inner()

        def bad_item(self):
            yield 1
            yield b"bytes"

        def fails_midway(self):
            yield 1
            raise RuntimeError("mid-stream")

        async def afails_midway(self):
            yield 1
            raise KeyError("k")
"""


class WorkerStreamsTest(WorkerTestCase):
    FILES = {"streams.py": STREAMS}

    def call(self, method: str, *args: object, uuid: str, stream: bool = True) -> int:
        return self.worker.call(method, *args, module="streams", uuid=uuid, stream=stream)

    def advanced(self, uuid: str) -> int:
        return self.worker.result(self.call("advanced_count", uuid=uuid, stream=False))

    def test_sync_generator_stops_at_the_window_until_credited(self) -> None:
        request = self.call("ticks", 40, uuid="window")
        self.assertEqual(self.worker.wait_items(request, 16), list(range(16)))
        self.worker.settle()
        self.assertEqual(len(self.worker.items(request)), 16)
        self.assertEqual(self.advanced("window"), 16)  # not advanced while the window is full
        self.worker.send({"op": "credit", "id": request, "n": 4})
        self.assertEqual(self.worker.wait_items(request, 20), list(range(20)))
        self.worker.settle()
        self.assertEqual(len(self.worker.items(request)), 20)
        self.worker.send({"op": "credit", "id": request, "n": 100})
        self.assertEqual(self.worker.terminal(request), {"op": "end", "id": request})
        self.assertEqual(self.worker.items(request), list(range(40)))
        self.assertEqual([f["op"] for f in self.worker.frames_for(request)][-1], "end")

    def test_async_generator_stops_at_the_window_until_credited(self) -> None:
        request = self.call("aticks", 30, uuid="awindow")
        self.worker.wait_items(request, 16)
        self.worker.settle()
        self.assertEqual(len(self.worker.items(request)), 16)
        self.assertEqual(self.advanced("awindow"), 16)
        self.worker.send({"op": "credit", "id": request, "n": 14})
        self.assertEqual(self.worker.wait_items(request, 30), list(range(30)))
        # Finding the end means advancing the generator, which waits for a free slot too.
        self.worker.settle()
        self.assertEqual([f["op"] for f in self.worker.frames_for(request)][-1], "item")
        self.worker.send({"op": "credit", "id": request, "n": 1})
        self.assertEqual(self.worker.terminal(request), {"op": "end", "id": request})
        self.assertEqual(self.worker.items(request), list(range(30)))

    def test_short_stream_ends_without_credit(self) -> None:
        request = self.call("ticks", 3, uuid="short")
        self.assertEqual(self.worker.terminal(request)["op"], "end")
        self.assertEqual(self.worker.items(request), [0, 1, 2])

    def test_events_interleave_in_order_with_items(self) -> None:
        request = self.call("progress", 3, uuid="progress")
        self.worker.terminal(request)
        frames = [f for f in self.worker.frames if f.get("uuid") == "progress" or f.get("id") == request]
        self.assertEqual(
            [(f["op"], f.get("payload")) for f in frames],
            [("event", {"step": 0}), ("item", 0), ("event", {"step": 1}), ("item", 1), ("event", {"step": 2}), ("item", 2), ("end", None)],
        )

    def test_returned_generator_and_iterator_are_streamed(self) -> None:
        request = self.call("returns_generator", 3, uuid="ret")
        self.assertEqual(self.worker.terminal(request)["op"], "end")
        self.assertEqual(self.worker.items(request), [0, 2, 4])
        request = self.call("returns_iterator", uuid="ret")
        self.worker.terminal(request)
        self.assertEqual(self.worker.items(request), [1, 2, 3])
        request = self.call("returns_async_generator", uuid="ret")
        self.worker.terminal(request)
        self.assertEqual(self.worker.items(request), ["a", "b"])

    def test_stream_false_refuses_generators_before_they_run(self) -> None:
        for method in ("ticks", "aticks"):
            with self.subTest(method=method):
                request = self.call(method, 5, uuid="rest", stream=False)
                error = self.worker.error(request)
                self.assertEqual(error["code"], "streaming_unsupported")
                self.assertIn("WebSocket", error["message"])
        self.assertEqual(self.advanced("rest"), 0)

    def test_stream_false_refuses_a_returned_generator(self) -> None:
        request = self.call("returns_generator", 3, uuid="rest2", stream=False)
        self.assertEqual(self.worker.error(request)["code"], "streaming_unsupported")
        self.assertEqual(self.worker.items(request), [])

    def test_unserializable_item_ends_the_stream(self) -> None:
        request = self.call("bad_item", uuid="bad")
        error = self.worker.error(request)
        self.assertEqual(error["code"], "unserializable_result")
        self.assertIn("bytes", error["message"])
        self.assertEqual(self.worker.items(request), [1])

    def test_exception_midway_fails_the_stream_after_its_items(self) -> None:
        for method, exception in (("fails_midway", "RuntimeError"), ("afails_midway", "KeyError")):
            with self.subTest(method=method):
                request = self.call(method, uuid="mid")
                error = self.worker.error(request)
                self.assertEqual((error["code"], error["exception"]), ("call_failed", exception))
                self.assertEqual([f["op"] for f in self.worker.frames_for(request)], ["item", "error"])


if __name__ == "__main__":
    unittest.main()
