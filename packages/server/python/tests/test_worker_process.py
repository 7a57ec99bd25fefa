"""Worker process lifecycle: exit on EOF and on shutdown, malformed frames, sys.path and cwd."""

from __future__ import annotations

import os
import struct
import time
import unittest

from support import TIMEOUT, WorkerProcess, make_project

PROJECT = {
    "where.py": """
        import os
        import sys
        import threading
        import time

        from portico import Interface

        class Where(Interface):
            def paths(self):
                return {"cwd": os.getcwd(), "first": sys.path[0], "second": sys.path[1]}

            def start_thread(self):
                # A non-daemon thread in user code must not keep the worker alive after EOF.
                threading.Thread(target=time.sleep, args=(60,)).start()
                return "started"

            def linger(self, marker):
                # A call that outlives its gateway: it would run far past the test's patience.
                open(marker, "w").close()
                time.sleep(600)
                return "done"

            def chatty(self):
                # Printed outside any call (a thread of its own): the worker's own stdout, buffered.
                words = threading.Thread(target=print, args=("buffered words",))
                words.start()
                words.join()
                return "ok"
    """
}


class WorkerProcessTest(unittest.TestCase):
    def start(self) -> WorkerProcess:
        project = make_project(self, PROJECT)
        worker = WorkerProcess(project)
        self.addCleanup(worker.close)
        worker.wait_for(lambda f: f["op"] == "ready")
        return worker

    def test_project_is_the_cwd_and_first_on_sys_path_then_its_remotes(self) -> None:
        worker = self.start()
        paths = worker.result(worker.call("paths", module="where"))
        project = worker.proc.args[-1]
        self.assertEqual(paths, {"cwd": project, "first": project, "second": os.path.join(project, ".portico", "remotes")})

    def test_eof_on_the_request_pipe_ends_the_worker(self) -> None:
        worker = self.start()
        self.assertEqual(worker.result(worker.call("start_thread", module="where")), "started")
        self.assertEqual(worker.result(worker.call("chatty", module="where")), "ok")
        worker.close_requests()
        self.assertEqual(worker.proc.wait(TIMEOUT), 0)
        worker.wait_output(b"buffered words\n")  # user output is flushed on the way out

    def test_eof_while_a_call_still_runs_ends_the_worker_without_waiting_for_it(self) -> None:
        # A gateway killed during a call: the worker cannot answer it any more, so it leaves at the
        # EOF (widget saves written first) rather than when the call would have ended. Twice: the
        # call the reading thread runs itself, and one past the hand-over to another reader.
        for settle in (0.0, 1.0):
            with self.subTest(settle=settle):
                worker = self.start()
                # The instance exists already: the reading thread runs the next call itself.
                worker.result(worker.call("paths", module="where"))
                marker = os.path.join(worker.proc.args[-1], f"lingering-{settle}")
                worker.call("linger", marker, module="where")
                deadline = time.monotonic() + TIMEOUT
                while not os.path.exists(marker):
                    self.assertLess(time.monotonic(), deadline, "the call never started")
                    time.sleep(0.01)
                time.sleep(settle)
                worker.close_requests()
                self.assertEqual(worker.proc.wait(TIMEOUT), 0)

    def test_shutdown_ends_the_worker(self) -> None:
        worker = self.start()
        worker.send({"op": "shutdown"})
        self.assertEqual(worker.proc.wait(TIMEOUT), 0)

    def test_lost_framing_ends_the_worker(self) -> None:
        # A header that cannot be decoded fails its request alone (test_reader_faults); a length
        # over the limit means the byte stream can no longer be cut into frames.
        worker = self.start()
        worker.send_raw(struct.pack(">II", 64 * 1024 * 1024 + 1, 0))
        self.assertEqual(worker.proc.wait(TIMEOUT), 2)
        worker.wait_output(b"malformed frame", stream="stderr")


if __name__ == "__main__":
    unittest.main()
