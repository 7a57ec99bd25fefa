"""A call's prints and logging reach its caller (worker/output.py): output frames for its id, in
order with its items and events, before its terminal frame; output outside any call stays on the
worker's stderr and stdout; a call printing without pause is bounded, and says what it dropped."""

from __future__ import annotations

import unittest

from support import WorkerTestCase

from portico.worker import output

PRINTER = """
import asyncio
import logging
import sys

from portico import Interface

print("imported")  # outside any call: the worker's own stdout


class Printer(Interface):
    def hello(self, name):
        print("hello", name)
        print("no newline at the end", end="")
        return 1

    def warn(self):
        logging.getLogger("printer").warning("careful")
        print("to stderr", file=sys.stderr)
        return 2

    def ticks(self, n):
        for i in range(n):
            print(f"before {i}")
            self.emit({"i": i})
            yield i

    async def later(self):
        print("async one")
        await asyncio.sleep(0.01)
        print("async two")
        return 3

    def flood(self, megabytes):
        line = "x" * 1023 + "\\n"
        for _ in range(megabytes * 1024):
            sys.stdout.write(line)
        return "done"
"""


def of_call(frames: list[dict], request_id: int) -> list[tuple[str, object]]:
    """The frames of one call (its instance's events among them), as (op, what) pairs."""
    out = []
    for f in frames:
        if f.get("id") == request_id or (f["op"] == "event" and f.get("uuid") == f"p{request_id}"):
            what = f.get("text") if f["op"] == "output" else f.get("payload")
            out.append((f["op"] if f["op"] != "output" else f"output/{f['stream']}", what))
    return out


class OutputTest(WorkerTestCase):
    FILES = {"printer.py": PRINTER}

    def call(self, method: str, *args: object, stream: bool = False) -> int:
        # An instance per call (uuid p<request id>): the events of one are not another's.
        return self.worker.call(method, *args, module="printer", uuid=f"p{self.worker._next_id + 1}", stream=stream)

    def test_prints_reach_the_caller_before_the_result_and_the_rest_at_the_end(self) -> None:
        rid = self.call("hello", "ada")
        self.worker.terminal(rid)
        self.assertEqual(
            of_call(self.worker.frames, rid),
            [("output/stdout", "hello ada\n"), ("output/stdout", "no newline at the end"), ("result", 1)],
        )
        self.assertIn("imported", self.worker.stdout.decode())  # the import's print stayed the worker's

    def test_logging_and_stderr_are_the_stderr_stream(self) -> None:
        rid = self.call("warn")
        self.worker.terminal(rid)
        self.assertEqual(of_call(self.worker.frames, rid)[:2], [("output/stderr", "careful\n"), ("output/stderr", "to stderr\n")])

    def test_a_stream_sends_its_prints_in_order_with_its_events_and_items(self) -> None:
        rid = self.call("ticks", 2, stream=True)
        self.worker.terminal(rid)
        ops = [op for op, _ in of_call(self.worker.frames, rid)]
        self.assertEqual(ops, ["output/stdout", "event", "item", "output/stdout", "event", "item", "end"])

    def test_async_code_is_attributed_to_its_call(self) -> None:
        rid = self.call("later")
        self.worker.terminal(rid)
        self.assertEqual(of_call(self.worker.frames, rid), [("output/stdout", "async one\n"), ("output/stdout", "async two\n"), ("result", 3)])

    def test_a_flood_is_bounded_and_says_what_it_dropped(self) -> None:
        rid = self.call("flood", 8)
        self.worker.terminal(rid, timeout=60)
        frames = of_call(self.worker.frames, rid)
        sent = sum(len(str(text)) for op, text in frames if op == "output/stdout")
        self.assertLessEqual(sent, 2 * output.OUTPUT_RATE_BYTES)  # the burst, and what the time it took allowed
        notes = [text for op, text in frames if op == "output/stderr"]
        self.assertTrue(notes and "bytes of output dropped" in notes[-1], notes)
        self.assertEqual(frames[-1], ("result", "done"))


if __name__ == "__main__":
    unittest.main()
