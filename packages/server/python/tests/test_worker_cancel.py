"""Worker: concurrency (a slow call never blocks another) and cancellation of every call kind."""

from __future__ import annotations

import time
import unittest

from support import TIMEOUT, WorkerTestCase

SLOW = """
    import asyncio
    import threading
    import time

    from portico import CallCancelled, Interface


    class Slow(Interface):
        def __init__(self):
            self.gate = threading.Event()
            self.state = {}

        def wait_gate(self):
            self.gate.wait(30)
            return "released"

        def open_gate(self):
            self.gate.set()
            return "opened"

        def spin_until_gate(self):
            # Pure Python, never blocking: only the interpreter's switch interval lets others run.
            while not self.gate.is_set():
                pass
            return "spun"

        def quick(self):
            return "quick"

        async def async_wait_gate(self):
            while not self.gate.is_set():
                await asyncio.sleep(0.01)
            return "async released"

        def sleepy(self, seconds):
            try:
                # Inside the try: a cancel arriving while the event is written raises from emit().
                self.emit("sleeping")
                deadline = time.monotonic() + seconds
                while time.monotonic() < deadline:
                    time.sleep(0.01)  # small steps: cancellation lands between them
            except CallCancelled:
                self.state["sleepy"] = "cancelled"
                raise
            return "slept"

        async def async_sleep(self, seconds):
            self.emit("async sleeping")
            try:
                await asyncio.sleep(seconds)
            except asyncio.CancelledError:
                self.state["async_sleep"] = "cancelled"
                raise
            return "slept"

        def forever(self):
            try:
                i = 0
                while True:
                    yield i
                    i += 1
            finally:
                self.state["forever"] = "closed"

        def stuck_generator(self):
            try:
                self.emit("generating")
                while True:
                    time.sleep(0.01)  # inside next(): only CallCancelled can stop this
                yield 1
            except CallCancelled:
                self.state["stuck_generator"] = "cancelled"
                raise

        async def aforever(self):
            try:
                i = 0
                while True:
                    yield i
                    i += 1
            finally:
                self.state["aforever"] = "closed"

        def announce_then_wait(self):
            try:
                self.emit("announced")
                while True:
                    time.sleep(0.01)
            except CallCancelled:
                self.state["announce_then_wait"] = "cancelled"
                raise

        def read_state(self):
            return self.state
"""


class WorkerConcurrencyTest(WorkerTestCase):
    FILES = {"slow.py": SLOW}

    def call(self, method: str, *args: object, uuid: str = "s", stream: bool = False) -> int:
        return self.worker.call(method, *args, module="slow", uuid=uuid, stream=stream)

    def wait_state(self, uuid: str, key: str, value: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while self.worker.result(self.call("read_state", uuid=uuid)).get(key) != value:
            if time.monotonic() > deadline:
                self.fail(f"state {key} never became {value}")
            time.sleep(0.02)

    def assert_single_terminal(self, request: int) -> None:
        self.worker.settle(0.2)
        terminals = [f for f in self.worker.frames_for(request) if f["op"] in ("result", "end", "error")]
        self.assertEqual(len(terminals), 1, terminals)

    def test_a_blocked_call_does_not_block_other_calls(self) -> None:
        blocked = self.call("wait_gate", uuid="gate")
        blocked_async = self.call("async_wait_gate", uuid="gate")
        # Both answer while the blocked calls still wait: they run on other threads / the loop.
        self.assertEqual(self.worker.result(self.call("quick", uuid="gate")), "quick")
        self.assertEqual(self.worker.result(self.call("quick", uuid="other")), "quick")
        self.assertEqual(self.worker.frames_for(blocked), [])
        self.assertEqual(self.worker.result(self.call("open_gate", uuid="gate")), "opened")
        self.assertEqual(self.worker.result(blocked), "released")
        self.assertEqual(self.worker.result(blocked_async), "async released")

    def test_a_call_spinning_on_the_cpu_does_not_stall_the_reading(self) -> None:
        # The thread that reads a call runs it; a call that never blocks must still see the reading
        # handed over, or the open_gate that ends it would never be read.
        spinning = self.call("spin_until_gate", uuid="spin")
        self.assertEqual(self.worker.result(self.call("quick", uuid="other")), "quick")
        self.assertEqual(self.worker.frames_for(spinning), [])
        self.assertEqual(self.worker.result(self.call("open_gate", uuid="spin")), "opened")
        self.assertEqual(self.worker.result(spinning), "spun")

    def test_many_concurrent_sleeping_calls_all_complete(self) -> None:
        requests = [self.call("sleepy", 0.2, uuid=f"many{i}") for i in range(40)]
        self.assertEqual([self.worker.result(r) for r in requests], ["slept"] * 40)

    def test_cancel_a_sleeping_sync_method(self) -> None:
        request = self.call("sleepy", 60, uuid="c-sync")
        self.worker.wait_for(lambda f: f.get("uuid") == "c-sync" and f["payload"] == "sleeping")
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state("c-sync", "sleepy", "cancelled")  # CallCancelled was raised inside it
        self.assert_single_terminal(request)
        # The pool threads that were interrupted keep serving calls normally.
        results = [self.call("quick", uuid="c-sync") for _ in range(20)]
        self.assertEqual([self.worker.result(r) for r in results], ["quick"] * 20)

    def test_cancel_a_sleeping_sync_method_of_a_live_instance(self) -> None:
        # A plain call on an instance that exists, with its method checked once already, takes
        # on_call's fast path: it runs on the reading thread until the reading is handed over,
        # and must be interrupted by a cancel the new reader reads exactly like a pooled call.
        self.assertEqual(self.worker.result(self.call("sleepy", 0, uuid="c-live")), "slept")  # checks sleepy
        for attempt in range(3):
            uuid = f"c-live{attempt}"
            self.assertEqual(self.worker.result(self.call("quick", uuid=uuid)), "quick")  # creates it
            request = self.call("sleepy", 60, uuid=uuid)
            self.worker.wait_for(lambda f, uuid=uuid: f.get("uuid") == uuid and f["payload"] == "sleeping")
            self.worker.send({"op": "cancel", "id": request})
            self.assertEqual(self.worker.error(request)["code"], "cancelled")
            self.wait_state(uuid, "sleepy", "cancelled")  # CallCancelled was raised inside it
            self.assert_single_terminal(request)
            self.assertEqual(self.worker.result(self.call("quick", uuid=uuid)), "quick")

    def test_a_call_reusing_a_running_calls_id_is_refused(self) -> None:
        # Also when the reused id's call could take on_call's fast path (a live instance, a
        # checked method): the running call keeps its id and still answers.
        self.assertEqual(self.worker.result(self.call("quick", uuid="dup")), "quick")
        blocked = self.call("wait_gate", uuid="dup")
        self.worker.send(
            {"op": "call", "id": blocked, "uuid": "dup", "module": "slow", "config": {}, "method": "quick", "args": [], "kwargs": {}, "stream": False}
        )
        error = self.worker.error(blocked)
        self.assertEqual((error["code"], error["message"]), ("bad_request", f"id {blocked} is already in use by a running call"))
        self.assertEqual(self.worker.result(self.call("open_gate", uuid="dup")), "opened")
        released = self.worker.wait_for(lambda f: f.get("id") == blocked and f["op"] == "result")
        self.assertEqual(released["payload"], "released")

    def test_cancel_during_emit_of_a_live_instances_call(self) -> None:
        # test_cancel_during_emit_is_answered_and_raised on the fast path (see above): the
        # instance exists and the method was checked by the first attempt.
        for attempt in range(25):
            uuid = f"live-announce{attempt}"
            self.assertEqual(self.worker.result(self.call("quick", uuid=uuid)), "quick")
            request = self.call("announce_then_wait", uuid=uuid)
            self.worker.wait_for(lambda f, uuid=uuid: f.get("uuid") == uuid and f["payload"] == "announced")
            self.worker.send({"op": "cancel", "id": request})
            self.assertEqual(self.worker.error(request, timeout=5)["code"], "cancelled")
            self.wait_state(uuid, "announce_then_wait", "cancelled")

    def test_cancel_a_coroutine(self) -> None:
        request = self.call("async_sleep", 60, uuid="c-async")
        self.worker.wait_for(lambda f: f.get("uuid") == "c-async" and f["payload"] == "async sleeping")
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state("c-async", "async_sleep", "cancelled")
        self.assert_single_terminal(request)

    def test_cancel_during_emit_is_answered_and_raised(self) -> None:
        # A cancel sent as soon as an event arrives often lands while the thread is still in the
        # writer: its error frame must still leave promptly (not wait for another frame to push it
        # out), and CallCancelled still be raised in the method.
        for attempt in range(25):
            uuid = f"announce{attempt}"
            request = self.call("announce_then_wait", uuid=uuid)
            self.worker.wait_for(lambda f, uuid=uuid: f.get("uuid") == uuid and f["payload"] == "announced")
            self.worker.send({"op": "cancel", "id": request})
            self.assertEqual(self.worker.error(request, timeout=5)["code"], "cancelled")
            self.wait_state(uuid, "announce_then_wait", "cancelled")

    def test_cancel_a_sync_generator_closes_it(self) -> None:
        request = self.call("forever", uuid="c-gen", stream=True)
        self.worker.wait_items(request, 16)
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state("c-gen", "forever", "closed")
        self.worker.send({"op": "credit", "id": request, "n": 10})  # too late: ignored
        self.assert_single_terminal(request)
        self.assertEqual(len(self.worker.items(request)), 16)

    def test_cancel_interrupts_a_generator_while_it_computes_an_item(self) -> None:
        request = self.call("stuck_generator", uuid="c-stuck", stream=True)
        self.worker.wait_for(lambda f: f.get("uuid") == "c-stuck" and f["payload"] == "generating")
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state("c-stuck", "stuck_generator", "cancelled")
        self.assert_single_terminal(request)

    def test_streams_waiting_for_credit_do_not_hold_pool_threads(self) -> None:
        # More stalled streams than the pool has threads (256): sync calls must still run.
        requests = [self.call("forever", uuid="parked", stream=True) for _ in range(300)]
        for request in requests:
            self.worker.wait_items(request, 16)
        self.assertEqual(self.worker.result(self.call("quick", uuid="parked")), "quick")
        for request in requests:
            self.worker.send({"op": "cancel", "id": request})
        for request in requests:
            self.assertEqual(self.worker.error(request)["code"], "cancelled")

    def test_cancel_an_async_generator_closes_it(self) -> None:
        request = self.call("aforever", uuid="c-agen", stream=True)
        self.worker.wait_items(request, 16)
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state("c-agen", "aforever", "closed")
        self.assert_single_terminal(request)

    def test_cancel_after_the_end_changes_nothing(self) -> None:
        request = self.call("quick", uuid="late")
        self.assertEqual(self.worker.result(request), "quick")
        self.worker.send({"op": "cancel", "id": request})
        self.worker.send({"op": "cancel", "id": 987654})  # unknown id: ignored
        self.assert_single_terminal(request)
        self.assertEqual(self.worker.result(self.call("quick", uuid="late")), "quick")


if __name__ == "__main__":
    unittest.main()
