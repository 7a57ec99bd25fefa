"""Worker: the `read` op under flow control (the credit window), cancel (which must close what the
hook returned), its errors, and a 1 GiB file streamed with bounded memory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import unittest

from read_support import ReadCase, pattern
from support import WorkerProcess, write_files


class ReadFlowTest(ReadCase):
    # -- flow control ---------------------------------------------------------------------------

    def test_generator_stops_at_the_window_until_credited(self) -> None:
        request = self.read({"n": 40}, module="gen_reader", uuid="gw", auto_credit=False)
        self.assertEqual(len(self.worker.wait_chunks(request, 16)), 16)
        self.worker.settle()
        self.assertEqual(len(self.worker.chunks(request)), 16)
        self.assertEqual(self.state(module="gen_reader", uuid="gw")["advanced"], 16)  # not advanced while full
        self.worker.send({"op": "credit", "id": request, "n": 4})
        self.assertEqual(len(self.worker.wait_chunks(request, 20)), 20)
        self.worker.settle()
        self.assertEqual(len(self.worker.chunks(request)), 20)
        self.worker.send({"op": "credit", "id": request, "n": 100})
        self.assertEqual(self.worker.terminal(request), {"op": "end", "id": request, "bytes": 40})
        self.assertEqual(b"".join(self.worker.chunks(request)), bytes(65 + i % 26 for i in range(40)))

    def test_file_stops_at_the_window_until_credited(self) -> None:
        request = self.read({"kind": "file", "key": "fw", "n": 100}, block=2, auto_credit=False)
        self.worker.wait_chunks(request, 16)
        self.worker.settle()
        self.assertEqual(len(self.worker.chunks(request)), 16)
        self.assertEqual(self.state("fw"), "open")
        self.worker.send({"op": "credit", "id": request, "n": 1000})
        end = self.worker.terminal(request)
        self.assert_chunked(self.worker.chunks(request), end, pattern(100), 2)
        self.assertEqual(self.state("fw"), "closed")

    def test_async_generator_stops_at_the_window_until_credited(self) -> None:
        request = self.read({"n": 30}, module="agen_reader", uuid="agw", auto_credit=False)
        self.worker.wait_chunks(request, 16)
        self.worker.settle()
        self.assertEqual(len(self.worker.chunks(request)), 16)
        self.assertEqual(self.state(module="agen_reader", uuid="agw")["advanced"], 16)
        self.worker.send({"op": "credit", "id": request, "n": 100})
        self.assertEqual(self.worker.terminal(request)["bytes"], 30)

    # -- cancel -----------------------------------------------------------------------------------

    def test_cancel_closes_a_parked_generator(self) -> None:
        request = self.read({}, module="gen_reader", uuid="gc", auto_credit=False)  # endless
        self.worker.wait_chunks(request, 16)
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state(lambda state: state["closed"] is True, module="gen_reader", uuid="gc")
        self.worker.settle()
        self.assertEqual([f["op"] for f in self.worker.frames_for(request)], ["chunk"] * 16 + ["error"])

    def test_cancel_closes_a_parked_file(self) -> None:
        request = self.read({"kind": "file", "key": "fc", "n": 1000}, block=10, auto_credit=False)
        self.worker.wait_chunks(request, 16)
        self.assertEqual(self.state("fc"), "open")
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state("closed", "fc")

    def test_cancel_interrupts_a_file_read_in_progress_and_closes_it(self) -> None:
        request = self.read({"kind": "slow_file", "key": "slow"})
        self.wait_state("open", "slow")
        time.sleep(0.1)  # inside readinto
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state("closed", "slow")
        self.assertTrue(self.state("slow.interrupted"))

    def test_cancel_interrupts_a_generator_advancing_and_closes_it(self) -> None:
        request = self.read({"stuck": True}, module="gen_reader", uuid="gs")
        self.worker.wait_chunks(request, 1)
        time.sleep(0.1)
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state(lambda state: state.get("interrupted") and state["closed"], module="gen_reader", uuid="gs")

    def test_cancel_closes_a_parked_async_generator(self) -> None:
        request = self.read({}, module="agen_reader", uuid="agc", auto_credit=False)
        self.worker.wait_chunks(request, 16)
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state(lambda state: state["closed"] is True, module="agen_reader", uuid="agc")

    def test_credit_and_cancel_after_the_end_are_ignored(self) -> None:
        chunks, end = self.read_all({"kind": "bytes", "n": 3})
        self.worker.send({"op": "credit", "id": end["id"], "n": 5})
        self.worker.send({"op": "cancel", "id": end["id"]})
        self.worker.settle()
        self.assertEqual([f["op"] for f in self.worker.frames_for(end["id"])], ["chunk", "end"])

    # -- errors ---------------------------------------------------------------------------------

    def test_missing_file_and_not_found_are_not_found(self) -> None:
        request = self.read({"kind": "missing_file", "path": os.path.join(self.project, "nope.bin")})
        error = self.worker.error(request)
        self.assertEqual((error["code"], error["exception"]), ("not_found", "FileNotFoundError"))
        self.assertIn("nope.bin", error["message"])
        request = self.read({"kind": "not_found", "name": "x7"})
        error = self.worker.error(request)
        self.assertEqual((error["code"], error["exception"]), ("not_found", "NotFound"))
        self.assertIn("no record 'x7'", error["message"])
        request = self.read({"kind": "missing"}, module="async_reader", uuid="a1")
        self.assertEqual(self.worker.error(request)["code"], "not_found")

    def test_not_found_midway_follows_the_chunks_sent(self) -> None:
        request = self.read({"missing_at": 2}, module="gen_reader", uuid="gm")
        self.assertEqual(self.worker.error(request)["code"], "not_found")
        self.assertEqual([f["op"] for f in self.worker.frames_for(request)], ["chunk", "chunk", "error"])

    def test_not_found_from_a_method_is_not_found(self) -> None:
        error = self.worker.error(self.worker.call("fetch", "k", module="reader", uuid="r1"))
        self.assertEqual((error["code"], error["exception"]), ("not_found", "NotFound"))
        self.assertIn("no record 'k'", error["message"])

    def test_a_class_without_read_is_read_unsupported(self) -> None:
        error = self.worker.error(self.read({}, module="noread", uuid="n0"))
        self.assertEqual(error["code"], "read_unsupported")
        self.assertIn("NoRead", error["message"])

    def test_an_exception_is_call_failed_with_its_name(self) -> None:
        error = self.worker.error(self.read({"kind": "raise"}))
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "RuntimeError"))
        self.assertIn("read broke", error["message"])
        error = self.worker.error(self.read({"fail_at": 1}, module="gen_reader", uuid="gf"))
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "KeyError"))
        self.assertEqual([f["op"] for f in self.worker.frames_for(error["id"])], ["chunk", "error"])

    def test_wrong_return_types_are_call_failed_saying_what_is_allowed(self) -> None:
        for kind, named in (("str", "str"), ("int", "int"), ("none", "None"), ("dict", "dict")):
            with self.subTest(kind=kind):
                error = self.worker.error(self.read({"kind": kind}))
                self.assertEqual((error["code"], error["exception"]), ("call_failed", "TypeError"))
                self.assertIn(f"read() returned {named};", error["message"])
                self.assertIn("bytes, bytearray, memoryview", error["message"])
                self.assertIn("binary file object", error["message"])

    def test_a_text_file_is_refused_and_closed(self) -> None:
        error = self.worker.error(self.read({"kind": "text_file", "path": os.path.join(self.project, "data", "hello.txt")}))
        self.assertEqual(error["code"], "call_failed")
        self.assertIn("text file", error["message"])
        self.assertIn("'rb'", error["message"])
        self.assertIs(self.state("text_file"), True)

    def test_a_wrong_item_fails_after_the_chunks_before_it(self) -> None:
        request = self.read({"kind": "bad_item"})
        error = self.worker.error(request)
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "TypeError"))
        self.assertIn("read() yielded str", error["message"])
        self.assertEqual(self.worker.chunks(request), [b"fine"])

    def test_malformed_requests_are_bad_requests(self) -> None:
        for fields in ({"block": 0}, {"block": "big"}, {"block": 2**40}, {"uuid": 5}, {"module": None}):
            with self.subTest(fields=fields):
                self.worker._next_id += 1
                request = self.worker._next_id
                header = {"op": "read", "id": request, "uuid": "r1", "module": "reader", "config": {}, "params": {}, "block": 16}
                header.update(fields)
                self.worker.send(header)
                self.assertEqual(self.worker.error(request)["code"], "bad_request")

    def test_unknown_module_is_module_not_found(self) -> None:
        self.assertEqual(self.worker.error(self.read({}, module="nowhere", uuid="zz"))["code"], "module_not_found")

    def test_read_is_a_hook_not_a_callable_method(self) -> None:
        error = self.worker.error(self.worker.call("read", {"kind": "bytes"}, module="reader", uuid="r1"))
        self.assertEqual(error["code"], "method_forbidden")
        request = self.worker.request("schema", module="reader")
        names = [method["name"] for method in self.worker.terminal(request)["methods"]]
        self.assertNotIn("read", names)
        self.assertIn("state", names)


class BigReadTest(unittest.TestCase):
    """A 1 GiB file streams through with the worker's memory bounded."""

    SIZE = 1 << 30

    def test_one_gib_file_streams_with_bounded_memory(self) -> None:
        project = tempfile.mkdtemp(prefix="portico-test-")
        self.addCleanup(shutil.rmtree, project, True)
        write_files(
            project,
            {
                "big.py": """
                    from portico import Interface

                    class Big(Interface):
                        def read(self, params):
                            return open(params["path"], "rb")
                """
            },
        )
        path = os.path.join(project, "big.bin")
        with open(path, "wb") as handle:
            handle.truncate(self.SIZE)  # sparse: no disk space, and reads come from the page cache
            handle.seek(self.SIZE - 4)
            handle.write(b"tail")
        worker = WorkerProcess(project, keep_bodies=False)
        self.addCleanup(worker.close)
        worker.wait_for(lambda f: f["op"] == "ready")
        start = time.perf_counter()
        request = worker.read({"path": path}, module="big", uuid="big")
        end = worker.terminal(request, timeout=120)
        elapsed = time.perf_counter() - start
        self.assertEqual(end, {"op": "end", "id": request, "bytes": self.SIZE})
        sizes = worker.chunk_sizes(request)
        self.assertEqual(sum(sizes), self.SIZE)
        self.assertEqual(max(sizes), 1 << 20)
        self.assertGreater(min(sizes), 0)
        peak = _peak_rss_kib(worker.proc.pid)
        if peak is not None:
            self.assertLess(peak, 100 * 1024, f"worker peak RSS {peak} KiB after a 1 GiB read")
        if os.environ.get("PORTICO_VERBOSE"):
            print(f"\n1 GiB read in {elapsed:.2f}s ({self.SIZE / elapsed / 1e6:.0f} MB/s), peak RSS {peak} KiB")


def _peak_rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


if __name__ == "__main__":
    unittest.main()
