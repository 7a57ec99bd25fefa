"""``heartbeat {id}``: the reading thread answers ``{"op":"heartbeat","id"}`` at once, whatever
calls are running; it is how the gateway tells a live worker from a wedged one. Not a call."""

from __future__ import annotations

import time
import unittest

from support import WorkerTestCase, encode

#: A heartbeat is answered in milliseconds; this is far below the 1 s call it must not wait for.
PROMPT = 0.5

FILES = {
    "slow.py": """
        import time

        from portico import Interface

        class Slow(Interface):
            def sleep(self, seconds: float) -> str:
                time.sleep(seconds)
                return "slept"

            def add(self, a: int, b: int = 0) -> int:
                return a + b
    """
}


class HeartbeatTest(WorkerTestCase):
    FILES = FILES

    def call(self, method: str, *args: object) -> int:
        return self.worker.call(method, *args, module="slow", uuid="s1")

    def beat(self, request_id: int | None = None) -> tuple[int, dict[str, object], float]:
        """Send a heartbeat; its id, its answer and how long the answer took."""
        worker = self.worker
        if request_id is None:
            worker._next_id += 1
            request_id = worker._next_id
        sent = time.monotonic()
        worker.send({"op": "heartbeat", "id": request_id})
        answer = worker.wait_for(lambda f: f.get("id") == request_id and f["op"] in ("heartbeat", "error"), 5.0)
        return request_id, answer, time.monotonic() - sent

    def test_a_heartbeat_is_answered_with_its_id(self) -> None:
        request_id, answer, _ = self.beat()
        self.assertEqual(answer, {"op": "heartbeat", "id": request_id})

    def test_id_zero_as_the_gateway_sends_it(self) -> None:
        self.worker.send({"op": "heartbeat", "id": 0})
        answer = self.worker.wait_for(lambda f: f.get("id") == 0, 5.0)
        self.assertEqual(answer, {"op": "heartbeat", "id": 0})

    def test_a_heartbeat_is_answered_while_a_sync_call_runs(self) -> None:
        self.assertEqual(self.worker.result(self.call("add", 1)), 1)  # the instance exists
        started = time.monotonic()
        slow = self.call("sleep", 1.0)
        time.sleep(0.05)
        request_id, answer, took = self.beat()
        self.assertEqual(answer, {"op": "heartbeat", "id": request_id})
        self.assertLess(took, PROMPT)
        self.assertEqual(self.worker.frames_for(slow), [])  # the call is still running
        self.assertEqual(self.worker.result(slow), "slept")
        self.assertGreaterEqual(time.monotonic() - started, 0.9)

    def test_a_heartbeat_is_answered_while_the_reading_thread_runs_a_call(self) -> None:
        # Both in one write: the reading thread answers the heartbeat while more is read already
        # (when it holds a batch's replies, FrameWriter.hold), then runs the call itself. The
        # answer must not wait for that call.
        self.assertEqual(self.worker.result(self.call("add", 1)), 1)
        self.worker._next_id += 2
        slow, beat = self.worker._next_id - 1, self.worker._next_id
        sent = time.monotonic()
        self.worker.send_raw(
            encode({"op": "heartbeat", "id": beat})
            + encode({"op": "call", "id": slow, "uuid": "s1", "module": "slow", "method": "sleep", "args": [1.0], "kwargs": {}, "config": {}, "stream": False})
        )
        self.worker.wait_for(lambda f: f.get("id") == beat and f["op"] == "heartbeat", 5.0)
        self.assertLess(time.monotonic() - sent, PROMPT)
        self.assertEqual(self.worker.result(slow), "slept")

    def test_a_heartbeat_is_not_a_call(self) -> None:
        # It takes no call slot: a heartbeat sharing a running call's id is answered, the call
        # is untouched (a second call with that id would be refused as in use).
        slow = self.call("sleep", 0.5)
        time.sleep(0.05)
        _, answer, took = self.beat(slow)
        self.assertEqual(answer, {"op": "heartbeat", "id": slow})
        self.assertLess(took, PROMPT)
        self.assertEqual(self.worker.result(slow), "slept")
        self.assertEqual([f["op"] for f in self.worker.frames_for(slow)], ["heartbeat", "result"])

    def test_a_heartbeat_without_a_numeric_id_is_logged_not_answered(self) -> None:
        self.worker.send({"op": "heartbeat", "id": "x"})
        self.worker.send({"op": "heartbeat"})
        self.worker.wait_output(b"heartbeat: field 'id' must be a number", stream="stderr")
        request_id, answer, _ = self.beat()
        self.assertEqual(answer, {"op": "heartbeat", "id": request_id})
        self.assertFalse([f for f in self.worker.frames if f.get("id") == "x" or (f["op"] in ("heartbeat", "error") and "id" not in f)])


if __name__ == "__main__":
    unittest.main()
