"""The reading thread never dies on what a frame holds (worker/pipe.py ``Pipe._lead``).

A frame whose lengths are intact but whose header cannot be decoded (not UTF-8, not JSON, nested
too deeply for the decoder, not an object) fails its own request with ``bad_request`` when the
start of its header gives an id, and is only logged otherwise; a handler raising unexpectedly
answers ``internal``. Either way the thread reading fd 3 goes on, be it the main thread or a
``portico-reader`` thread the hand-over watchdog started. Only lost framing ends the worker.
"""

from __future__ import annotations

import json
import os
import struct
import threading
import time
import unittest
from typing import Any, Callable

from support import TIMEOUT, WorkerProcess, encode, make_project
from portico._frames import HEADER_MAX_BYTES, FrameReader
from portico.worker import pipe as pipe_module
from portico.worker.dispatch import Op, Worker

#: Waits for answers that take milliseconds; a reader that died never gives them.
SHORT = 5.0
DEPTH = 1200  # beyond the JSON decoder's recursion limit (1000)

PROJECT = {
    "faults.py": """
        import threading
        import time

        from portico import Interface

        class Faults(Interface):
            def add(self, a: int, b: int = 0) -> int:
                return a + b

            def sleep(self, seconds: float) -> str:
                time.sleep(seconds)
                return "slept"

            def whoami(self) -> str:
                return threading.current_thread().name
    """
}


def frame(raw: bytes) -> bytes:
    return struct.pack(">II", len(raw), 0) + raw


def deep_call(request_id: int, depth: int = DEPTH) -> bytes:
    """A call whose single argument is a list nested ``depth`` deep (about 2.5 KB)."""
    return frame(
        b'{"op":"call","id":%d,"uuid":"f1","module":"faults","config":{},"method":"add","args":[' % request_id
        + b"[" * depth
        + b"]" * depth
        + b'],"kwargs":{},"stream":false}'
    )


class ReaderFaultsTest(unittest.TestCase):
    def start(self) -> WorkerProcess:
        worker = WorkerProcess(make_project(self, PROJECT))
        self.addCleanup(worker.close)
        worker.wait_for(lambda f: f["op"] == "ready")
        return worker

    def call(self, worker: WorkerProcess, method: str, *args: Any) -> int:
        return worker.call(method, *args, module="faults", uuid="f1")

    def reserve_id(self, worker: WorkerProcess) -> int:
        worker._next_id += 1
        return worker._next_id

    def assert_undecodable(self, worker: WorkerProcess, request_id: Any, reason: str) -> None:
        answer = worker.wait_for(lambda f: f.get("id") == request_id and f["op"] == "error", SHORT)
        self.assertEqual(set(answer), {"op", "id", "code", "message"})
        self.assertEqual(answer["code"], "bad_request")
        self.assertTrue(answer["message"].startswith("the request could not be decoded: "), answer)
        self.assertIn(reason, answer["message"])

    def assert_still_serving(self, worker: WorkerProcess) -> None:
        request_id = self.call(worker, "add", 2, 3)
        self.assertEqual(worker.terminal(request_id, SHORT), {"op": "result", "id": request_id, "payload": 5})
        self.assertIsNone(worker.proc.poll())

    # -- (a) the main thread reads the deep frame ----------------------------------------------

    def test_a_deeply_nested_call_fails_alone_on_the_main_reader(self) -> None:
        worker = self.start()
        self.assertEqual(worker.result(self.call(worker, "add", 1)), 1)  # the instance exists
        self.assertEqual(worker.result(self.call(worker, "whoami")), "MainThread")  # run by the reader
        deep = self.reserve_id(worker)
        worker.send_raw(deep_call(deep))
        self.assert_undecodable(worker, deep, "nested too deeply")
        self.assert_still_serving(worker)
        self.assertEqual(worker.result(self.call(worker, "whoami")), "MainThread")  # the same thread reads on
        worker.wait_output(b"undecodable frame (request id %d)" % deep, stream="stderr")

    # -- (b) a hand-over thread reads it --------------------------------------------------------

    def test_a_deeply_nested_call_fails_alone_on_a_hand_over_reader(self) -> None:
        worker = self.start()
        self.assertEqual(worker.result(self.call(worker, "add", 1)), 1)  # the instance exists
        slow = self.call(worker, "sleep", 0.5)  # the main thread runs it; a portico-reader reads
        time.sleep(0.05)
        held = self.call(worker, "sleep", 0.05)  # that reader runs this past HAND_OVER_AFTER_S too
        time.sleep(0.15)
        self.assertEqual(worker.terminal(held, SHORT)["payload"], "slept")
        self.assertNotIn("result", [f["op"] for f in worker.frames_for(slow)])  # still asleep
        reader = worker.result(self.call(worker, "whoami"))  # run by the thread reading now
        self.assertTrue(reader.startswith("portico-reader"), reader)
        deep = self.reserve_id(worker)
        worker.send_raw(deep_call(deep))
        self.assert_undecodable(worker, deep, "nested too deeply")
        self.assertEqual(worker.result(self.call(worker, "whoami")), reader)  # the same thread reads on
        beat = worker.request("heartbeat")
        self.assertEqual(worker.wait_for(lambda f: f.get("id") == beat, SHORT), {"op": "heartbeat", "id": beat})
        self.assert_still_serving(worker)
        self.assertEqual(worker.result(slow), "slept")
        self.assert_still_serving(worker)

    # -- (c) other undecodable headers, with and without an id ----------------------------------

    def test_undecodable_headers_with_a_leading_id_fail_that_request(self) -> None:
        worker = self.start()
        cases = [
            (b'{"op":"call","id":%d,"method":"\xff\xfe","args":[]}', "not UTF-8"),
            (b'{"op":"call","id":%d,"args":[1,}', "not JSON"),
            (b'{"op":"call","id":%d} trailing', "not JSON"),
            (b'{"op":"call","id":%d,"args":' + b'{"a":' * DEPTH + b"1" + b"}" * DEPTH + b"}", "nested too deeply"),
            (b' { "op" : "call" , "id" : %d , "args":[', "not JSON"),  # whitespace is JSON's
            (b'{"id":%d,"op":"call",', "not JSON"),  # id first
            # The gateway's other requests have their id last: deep params of a read, say.
            (b'{"op":"read","uuid":"f1","module":"faults","config":{},"params":' + b"[" * DEPTH + b"]" * DEPTH + b',"block":1048576,"id":%d}', "nested too deeply"),
            (b'{"op":"widget_set","uuid":"f1","changes":{"a":[1,}, "id" : %d } ', "not JSON"),
        ]
        for template, reason in cases:
            with self.subTest(header=template[:40]):
                request_id = self.reserve_id(worker)
                worker.send_raw(frame(template.replace(b"%d", b"%d" % request_id)))
                self.assert_undecodable(worker, request_id, reason)
                self.assert_still_serving(worker)
        worker.send_raw(frame(b'{"op":"call","id":"req-7","args":[}'))  # a string id is given back too
        self.assert_undecodable(worker, "req-7", "not JSON")
        self.assert_still_serving(worker)

    def test_undecodable_headers_without_a_leading_id_are_logged_and_skipped(self) -> None:
        worker = self.start()
        bodies = [
            b"\xff\xfe\x00garbage",  # not UTF-8, no id
            b"not json at all",
            b'[{"op":"call","id":901}]',  # not an object: an id inside is not the request's
            b'"a string"',
            b"",
            b'{"op":"call","args":[{"id":902}],',  # an id nested in the arguments is not trusted
            b'{"op":"call","config":{"id":903},"id":904,',  # only the gateway's layout is read: not 904 either
            b'{"op":"call","id":true,',  # not a number or a string
            b'{"op":"x\\",\\"id\\":905,","y":[',  # "id" inside the op string
            b'{"op":"read","params":{"x":' + b"[" * DEPTH + b"]" * DEPTH + b',"id":906}}',  # last, but not top level
            b'{"op":"read","\xff":0,"params":"x\\",\\"id\\":907}"}',  # last, but inside a string
        ]
        for raw in bodies:
            with self.subTest(header=raw[:40]):
                worker.send_raw(frame(raw) + encode({"op": "call", "id": self.reserve_id(worker), "uuid": "f1", "module": "faults", "method": "add", "args": [1]}))
                self.assertEqual(worker.result(worker._next_id), 1)  # the frame after it is read as usual
        self.assert_still_serving(worker)
        worker.wait_output(b"undecodable frame (request id None)", stream="stderr")
        self.assertFalse([f for f in worker.frames if f.get("id") in (901, 902, 903, 904, 905, 906, 907)])

    def test_a_body_behind_an_undecodable_header_is_skipped_with_it(self) -> None:
        worker = self.start()
        request_id = self.reserve_id(worker)
        raw = b'{"op":"widget_set","id":%d,"buffer_lengths":[6],' % request_id
        body = encode({"op": "call", "id": 999, "uuid": "f1", "module": "faults", "method": "add", "args": [1]})[:6]
        worker.send_raw(struct.pack(">II", len(raw), len(body)) + raw + body)
        self.assert_undecodable(worker, request_id, "not JSON")
        self.assert_still_serving(worker)

    def test_a_broken_length_prefix_still_ends_the_worker(self) -> None:
        worker = self.start()
        worker.send_raw(struct.pack(">II", HEADER_MAX_BYTES + 1, 0))
        self.assertEqual(worker.proc.wait(TIMEOUT), 2)
        worker.wait_output(b"malformed frame", stream="stderr")


class InProcessWorker:
    """A Worker served in this process over real pipes, so a test can patch its handlers."""

    def __init__(self, test: unittest.TestCase) -> None:
        request_r, self._request_w = os.pipe()
        self._reply_r, reply_w = os.pipe()
        self.logged: list[str] = []
        original_log = pipe_module.log
        pipe_module.log = self.logged.append
        test.addCleanup(setattr, pipe_module, "log", original_log)
        self.worker = Worker(make_project(test, {}), reply_fd=reply_w)
        self.frames: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self.status: list[int] = []
        reader = FrameReader(request_r)
        threading.Thread(target=lambda: self.status.append(self.worker.serve(reader)), name="first-reader", daemon=True).start()
        threading.Thread(target=self._read_replies, daemon=True).start()

        def stop() -> None:
            if not self.status:
                self.send({"op": "shutdown"})
            deadline = time.monotonic() + TIMEOUT
            while not self.status and time.monotonic() < deadline:
                time.sleep(0.01)
            loop = self.worker.loop
            loop.call_soon_threadsafe(loop.stop)
            deadline = time.monotonic() + TIMEOUT
            while loop.is_running() and time.monotonic() < deadline:
                time.sleep(0.01)
            loop.close()
            self.worker.pool.shutdown(wait=False)
            for fd in (self._request_w, request_r, reply_w):
                os.close(fd)

        test.addCleanup(stop)
        self.wait_for(lambda f: f["op"] == "ready")

    def _read_replies(self) -> None:
        data = b""
        while True:
            try:
                chunk = os.read(self._reply_r, 65536)
            except OSError:
                return
            if not chunk:
                os.close(self._reply_r)
                return
            data += chunk
            while len(data) >= 8:
                header_len, body_len = struct.unpack_from(">II", data)
                if len(data) < 8 + header_len + body_len:
                    break
                header = json.loads(data[8 : 8 + header_len])
                data = data[8 + header_len + body_len :]
                with self._cond:
                    self.frames.append(header)
                    self._cond.notify_all()

    def send(self, header: dict[str, Any]) -> None:
        os.write(self._request_w, encode(header))

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = SHORT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for found in self.frames:
                    if predicate(found):
                        return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"no matching frame; got {self.frames[-20:]}; logged {self.logged[-5:]}")
                self._cond.wait(remaining)


class DispatchFailureTest(unittest.TestCase):
    """(e) A handler raising something unexpected fails its request with ``internal``."""

    def test_a_raising_handler_answers_internal_and_the_main_reader_goes_on(self) -> None:
        served = InProcessWorker(self)

        def broken(header: dict[str, Any]) -> None:
            raise RuntimeError("handler bug")

        served.worker._ops["call"] = Op(broken)
        served.send({"op": "call", "id": 1, "uuid": "u", "module": "m", "method": "f", "args": []})
        self.assertEqual(
            served.wait_for(lambda f: f.get("id") == 1),
            {"op": "error", "id": 1, "code": "internal", "message": "the worker failed on this request: RuntimeError: handler bug"},
        )
        self.assertTrue(any("'call' request failed in the worker" in line and "RuntimeError: handler bug" in line for line in served.logged))
        served.send({"op": "heartbeat", "id": 2})
        self.assertEqual(served.wait_for(lambda f: f.get("id") == 2), {"op": "heartbeat", "id": 2})
        served.send({"op": "modules", "id": 3})
        self.assertEqual(served.wait_for(lambda f: f.get("id") == 3), {"op": "modules", "id": 3, "modules": []})
        self.assertEqual(served.status, [])

    def test_a_raising_handler_answers_internal_and_a_hand_over_reader_goes_on(self) -> None:
        served = InProcessWorker(self)
        readers: list[str] = []
        worker = served.worker

        def handler(header: dict[str, Any]) -> Any:
            readers.append(threading.current_thread().name)
            if header["method"] == "sleep":  # run by the reading thread, past HAND_OVER_AFTER_S

                def work() -> None:
                    time.sleep(0.3)
                    worker.pipe.send({"op": "result", "id": header["id"], "payload": "slept"})

                return work
            raise KeyError("handler bug")

        worker._ops["call"] = Op(handler)
        served.send({"op": "call", "id": 1, "method": "sleep"})
        time.sleep(0.1)  # handed over meanwhile
        served.send({"op": "call", "id": 2, "method": "boom"})
        self.assertEqual(served.wait_for(lambda f: f.get("id") == 2)["code"], "internal")
        self.assertEqual(readers[0], "first-reader")
        self.assertTrue(readers[1].startswith("portico-reader"), readers)
        # A failure handling an op whose id names another request is logged, not answered to it.
        worker._ops["cancel"] = Op(handler, request=False)
        served.send({"op": "cancel", "id": 1, "method": "boom"})
        served.send({"op": "heartbeat", "id": 3})
        self.assertEqual(served.wait_for(lambda f: f.get("id") == 3), {"op": "heartbeat", "id": 3})
        self.assertEqual(readers[2], readers[1])  # the same thread read on
        self.assertEqual(served.wait_for(lambda f: f.get("id") == 1), {"op": "result", "id": 1, "payload": "slept"})
        self.assertTrue(any("'cancel' request failed in the worker" in line for line in served.logged))
        served.send({"op": "modules", "id": 4})
        self.assertEqual(served.wait_for(lambda f: f.get("id") == 4)["op"], "modules")
        self.assertEqual([f["op"] for f in served.frames if f.get("id") == 1], ["result"])

    def test_a_failed_request_is_logged_and_a_nan_id_answered_as_its_string(self) -> None:
        served = InProcessWorker(self)

        def broken(header: dict[str, Any]) -> None:
            raise RuntimeError("handler bug")

        served.worker._ops["call"] = Op(broken)
        served.send({"op": "call", "id": float("nan")})  # written back as "NaN", as every value is (_json)
        served.send({"op": "heartbeat", "id": 5})
        self.assertEqual(served.wait_for(lambda f: f.get("id") == 5), {"op": "heartbeat", "id": 5})
        self.assertEqual(served.wait_for(lambda f: f.get("id") == "NaN")["code"], "internal")
        self.assertTrue(any(line.startswith("'call' request failed in the worker") for line in served.logged), served.logged)


if __name__ == "__main__":
    unittest.main()
