"""Worker: ready, resolve, calls, instances, events, result encoding, files, stdout."""

from __future__ import annotations

import json
import os
import unittest

from support import WorkerTestCase, encode

COUNTER = """
    import asyncio
    import dataclasses
    import datetime
    import decimal
    import os
    import pathlib
    import threading
    import time
    import uuid

    from portico import Interface


    @dataclasses.dataclass
    class Point:
        x: int
        y: int


    class Counter(Interface):
        \"\"\"Counts.\"\"\"

        class Config:
            start: int = 0
            step: int = 1

        def __init__(self):
            self.value = self.config.start

        def version_big(self, step: int = 10):
            return {"step": step}

        def add(self, n: int = 1) -> int:
            self.value += n * self.config.step
            return self.value

        def echo(self, *args, **kwargs):
            return {"args": args, "kwargs": kwargs}

        def notify(self, n):
            for i in range(n):
                self.emit({"i": i})
            return "done"

        def notify_from_thread(self):
            thread = threading.Thread(target=self.emit, args=({"from": "thread"},))
            thread.start()
            thread.join()
            return "ok"

        def emit_bad(self):
            try:
                self.emit({"bad": object()})
            except TypeError as exc:
                return "TypeError: " + str(exc)
            return "no error"

        async def async_add(self, n):
            await asyncio.sleep(0)
            self.emit({"async": n})
            return self.add(n)

        def rich(self):
            return {
                "tuple": (1, 2),
                "set": {3, 1, 2},
                "when": datetime.datetime(2024, 5, 1, 12, 0),
                "id": uuid.UUID(int=1),
                "path": pathlib.PurePosixPath("a/b"),
                "dec": decimal.Decimal("2.5"),
                "point": Point(1, 2),
            }

        def read_config(self):
            return {"start": self.config.start, "step": self.config["step"], "all": self.config}

        def shout(self, text):
            print("PRINTED", text)
            print("x" * 100000)
            return text.upper()

        def remember(self, value):
            self.save_file("state.json", {"value": value})
            self.save_file("note.txt", "hi")
            return self.local_directory()

        def wait_for_file(self, path):
            while not os.path.exists(path):
                time.sleep(0.001)
            return "found"

        def recall(self):
            return [self.load_file("state.json"), self.load_file("note.txt"), self.load_file("missing.json", 7)]
"""


class WorkerCallsTest(WorkerTestCase):
    FILES = {"counter.py": COUNTER}

    def test_ready_frame_comes_first(self) -> None:
        ready = self.worker.frames[0]
        self.assertEqual(ready["op"], "ready")
        self.assertEqual(ready["pid"], self.worker.proc.pid)
        self.assertRegex(ready["python"], r"^3\.\d+\.\d+")
        self.assertTrue(os.path.isabs(ready["executable"]))

    def test_resolve_returns_kind_config_and_normalized_version(self) -> None:
        request = self.worker.request("resolve", module="counter", version=[" ~big ( 3 ) ", {"start": 2}, None, {}])
        self.assertEqual(
            self.worker.terminal(request),
            {
                "op": "resolved",
                "id": request,
                "module": "counter",
                "kind": "Counter",
                "config": {"start": 2, "step": 3},
                "version": ["~big(3)", {"start": 2}],
            },
        )

    def test_resolve_with_problems_lists_every_issue(self) -> None:
        request = self.worker.request("resolve", module="counter", version=[{"nope": 1, "start": "x"}, "~huge"])
        error = self.worker.error(request)
        self.assertEqual(error["code"], "invalid_config")
        self.assertCountEqual(
            error["issues"],
            [
                {"path": "nope", "message": "Unknown config key 'nope' (declared fields: start, step)"},
                {"path": "start", "message": "expected int, got str"},
                {"path": None, "message": "Counter has no version method 'version_huge'"},
            ],
        )

    def test_call_returns_the_result_and_the_instance_keeps_state(self) -> None:
        config = {"start": 10, "step": 2}
        self.assertEqual(self.worker.result(self.worker.call("add", 1, uuid="keep", config=config)), 12)
        self.assertEqual(self.worker.result(self.worker.call("add", n=3, uuid="keep", config=config)), 18)

    def test_release_drops_the_instance(self) -> None:
        self.assertEqual(self.worker.result(self.worker.call("add", 5, uuid="rel")), 5)
        self.worker.send({"op": "release", "uuid": "rel"})
        self.assertEqual(self.worker.result(self.worker.call("add", 5, uuid="rel")), 5)

    def test_a_reply_read_in_the_same_batch_as_a_slow_call_does_not_wait_for_it(self) -> None:
        # Both requests arrive in one write, so the reading thread runs them one after the other
        # and holds the first reply while it reads: the slow call must not keep it.
        self.worker.result(self.worker.call("add", 0, uuid="batch"))  # the instance exists: both run inline
        flag = os.path.join(self.project, "batch-flag")
        quick, slow = self.worker._next_id + 1, self.worker._next_id + 2
        self.worker._next_id += 2
        call = {"op": "call", "uuid": "batch", "module": "counter", "config": {}, "kwargs": {}, "stream": False}
        self.worker.send_raw(
            encode(dict(call, id=quick, method="add", args=[1])) + encode(dict(call, id=slow, method="wait_for_file", args=[flag]))
        )
        self.assertEqual(self.worker.result(quick), 1)  # would time out if it waited for the slow call
        with open(flag, "w", encoding="utf-8"):
            pass
        self.assertEqual(self.worker.result(slow), "found")

    def test_args_and_kwargs_are_passed_through(self) -> None:
        payload = self.worker.result(self.worker.call("echo", 1, "a", key=[1]))
        self.assertEqual(payload, {"args": [1, "a"], "kwargs": {"key": [1]}})

    def test_async_method(self) -> None:
        request = self.worker.call("async_add", 4, uuid="async")
        self.assertEqual(self.worker.result(request), 4)

    def test_events_precede_the_result_and_carry_the_uuid(self) -> None:
        request = self.worker.call("notify", 3, uuid="events")
        self.worker.terminal(request)
        frames = [f for f in self.worker.frames if f.get("uuid") == "events" or f.get("id") == request]
        self.assertEqual(
            [(f["op"], f.get("payload")) for f in frames],
            [("event", {"i": 0}), ("event", {"i": 1}), ("event", {"i": 2}), ("result", "done")],
        )

    def test_emit_from_async_method_and_from_another_thread(self) -> None:
        for method, payload in (("async_add", {"async": 1}), ("notify_from_thread", {"from": "thread"})):
            with self.subTest(method=method):
                uuid = f"emit-{method}"
                request = self.worker.call(method, *([1] if method == "async_add" else []), uuid=uuid)
                self.worker.terminal(request)
                ops = [f["op"] for f in self.worker.frames if f.get("uuid") == uuid or f.get("id") == request]
                self.assertEqual(ops, ["event", "result"])
                self.assertEqual(self.worker.wait_for(lambda f: f.get("uuid") == uuid)["payload"], payload)

    def test_unserializable_event_raises_type_error_in_the_method(self) -> None:
        message = self.worker.result(self.worker.call("emit_bad"))
        self.assertTrue(message.startswith("TypeError: ") and "object" in message, message)

    def test_result_encoding_of_extra_types(self) -> None:
        self.assertEqual(
            self.worker.result(self.worker.call("rich")),
            {
                "tuple": [1, 2],
                "set": [1, 2, 3],
                "when": "2024-05-01T12:00:00",
                "id": "00000000000000000000000000000001",
                "path": "a/b",
                "dec": 2.5,
                "point": {"x": 1, "y": 2},
            },
        )

    def test_config_is_readable_by_attribute_and_item(self) -> None:
        payload = self.worker.result(self.worker.call("read_config", uuid="cfg", config={"start": 4}))
        self.assertEqual(payload, {"start": 4, "step": 1, "all": {"start": 4, "step": 1}})

    def test_print_goes_to_the_caller_and_does_not_corrupt_replies(self) -> None:
        request = self.worker.call("shout", "hey")
        self.assertEqual(self.worker.result(request), "HEY")
        self.assertEqual(self.worker.result(self.worker.call("add", 1, uuid="after-print")), 1)
        printed = [f for f in self.worker.frames if f.get("id") == request and f["op"] == "output"]
        self.assertEqual(printed[0], {"op": "output", "id": request, "stream": "stdout", "text": "PRINTED hey\n"})
        # A long line goes in pieces of at most OUTPUT_FRAME_CHARS, whole once put together.
        self.assertEqual("".join(f["text"] for f in printed[1:]), "x" * 100000 + "\n")
        self.assertTrue(all(len(f["text"]) <= 65536 for f in printed))
        self.assertNotIn(b"PRINTED", bytes(self.worker.stdout))

    def test_files_live_in_the_interface_directory(self) -> None:
        directory = self.worker.result(self.worker.call("remember", 42, uuid="files1"))
        self.assertEqual(directory, os.path.join(self.project, ".portico", "interfaces", "files1"))
        with open(os.path.join(directory, "state.json"), encoding="utf-8") as handle:
            self.assertEqual(json.load(handle), {"value": 42})
        self.assertEqual(self.worker.result(self.worker.call("recall", uuid="files1")), [{"value": 42}, "hi", 7])


if __name__ == "__main__":
    unittest.main()
