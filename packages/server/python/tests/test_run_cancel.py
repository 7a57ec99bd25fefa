"""``python -m portico.run <run dir>``: cancel (the marker, the signal, skipped interfaces), the
heartbeat, and the run directories a run process refuses. Real run processes (run_support.py).
"""

from __future__ import annotations

import json
import os
import signal
import time
import unittest
from typing import Any

from run_support import Run, RunTestCase, new_uuid, unit, wait_for

from portico.run_watch import CANCEL_POLL_SECONDS, HEARTBEAT_SECONDS


class CancelTest(RunTestCase):
    def wait_sleeping(self, run: Run) -> None:
        wait_for(lambda: os.path.exists(os.path.join(self.project, "sleeping")) or run.proc.poll() is not None, what="sleeping")  # type: ignore[union-attr]
        self.assertIsNone(run.proc.poll(), run.output())  # type: ignore[union-attr]

    def interrupted_record(self) -> dict[str, Any]:
        with open(os.path.join(self.project, "interrupted.json"), encoding="utf-8") as handle:
            return json.load(handle)

    def test_cancel_interrupts_a_sleeping_call_through_the_signal(self) -> None:
        # B's __exit__ returns True: that must not swallow the interrupt.
        interfaces = [unit("sleeper", contexts=[unit("ctx", {"name": "A"}), unit("ctx", {"name": "B", "swallow": True})]), unit("counter")]
        run = self.make_run(interfaces).start()
        self.wait_sleeping(run)
        cancelled_at = time.monotonic()
        run.cancel()
        self.assertEqual(run.wait(), 130, run.output())
        self.assertLess(time.monotonic() - cancelled_at, 5.0)

        record = self.interrupted_record()
        self.assertEqual(record["type"], "ExecutionInterrupted")
        self.assertTrue(record["is_execution_interrupted"])
        self.assertLess(record["elapsed"], 5.0)  # time.sleep(30) itself was broken off...
        self.assertIn("time.sleep(", record["line"])
        self.assertIn("_on_signal", record["functions"])  # ...by the SIGUSR1 handler
        self.assertEqual(
            run.json("status.json"),
            {
                "status": "interrupted",
                "error": {"exception": "ExecutionInterrupted", "message": "the execution was cancelled", "interface": interfaces[0]["uuid"]},
                "interfaces": [{"uuid": interfaces[0]["uuid"], "status": "interrupted"}, {"uuid": interfaces[1]["uuid"], "status": "skipped"}],
            },
        )
        self.assertEqual(self.order(), ["enter A", "enter B", "exit B ExecutionInterrupted", "exit A ExecutionInterrupted"])
        self.assertIsNone(run.cached(interfaces[0]))
        self.assertNotIn("print from python", run.output())
        self.assertIn("cancel requested", run.output())
        self.assertTimes(run, "started_at", "heartbeat_at", "finished_at")

    def test_cancel_before_start_runs_nothing(self) -> None:
        interfaces = [unit("tracked"), unit("counter")]
        run = self.make_run(interfaces)
        run.cancel()
        started = time.monotonic()
        self.assertEqual(run.run(), 130, run.output())
        self.assertLess(time.monotonic() - started, 5.0)
        self.assertEqual(
            run.json("status.json"),
            {
                "status": "interrupted",
                "error": {"exception": "ExecutionInterrupted", "message": "the execution was cancelled", "interface": None},
                "interfaces": [{"uuid": i["uuid"], "status": "skipped"} for i in interfaces],
            },
        )
        self.assertFalse(os.path.exists(os.path.join(self.project, "tracked_imported")))
        self.assertTimes(run, "started_at", "heartbeat_at", "finished_at")

    def test_a_swallowed_interrupt_finishes_the_call_but_stops_the_run(self) -> None:
        interfaces = [unit("sleeper", {"swallow": True}), unit("counter")]
        run = self.make_run(interfaces).start()
        self.wait_sleeping(run)
        run.cancel()
        self.assertEqual(run.wait(), 130, run.output())
        self.assertEqual(self.interrupted_record()["type"], "ExecutionInterrupted")
        status = run.json("status.json")
        self.assertEqual(status["status"], "interrupted")
        self.assertEqual(status["error"]["interface"], interfaces[0]["uuid"])
        self.assertEqual([i["status"] for i in status["interfaces"]], ["finished", "skipped"])
        self.assertEqual(run.cached(interfaces[0]), run.uuid)  # its __call__ returned
        self.assertNotIn("print from python", run.output())

    def test_sigkill_leaves_a_started_run_without_status(self) -> None:
        run = self.make_run([unit("sleeper")]).start()
        self.wait_sleeping(run)
        os.kill(run.proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
        self.assertEqual(run.wait(), -signal.SIGKILL)
        self.assertTimes(run, "started_at", "heartbeat_at")
        self.assertTrue(run.exists("process.json"))
        self.assertFalse(run.exists("status.json"))
        self.assertFalse(run.exists("finished_at"))

    def test_heartbeat_advances_while_running(self) -> None:
        run = self.make_run([unit("sleeper")]).start()
        self.wait_sleeping(run)
        first = run.text("heartbeat_at")
        wait_for(lambda: run.text("heartbeat_at") != first, timeout=HEARTBEAT_SECONDS + 3, what="a new heartbeat")
        second = run.text("heartbeat_at")
        self.assertGreater(second, first)
        run.cancel()
        self.assertEqual(run.wait(), 130)
        self.assertLessEqual(run.text("heartbeat_at"), run.text("finished_at"))
        self.assertGreater(HEARTBEAT_SECONDS, CANCEL_POLL_SECONDS)


class RefusalTest(RunTestCase):
    def snapshot(self, run: Run) -> dict[str, bytes]:
        files = {}
        for name in sorted(run.files() - {"output.log"}):
            with open(run.path(name), "rb") as handle:
                files[name] = handle.read()
        return files

    def test_a_finished_run_dir_is_refused_untouched(self) -> None:
        interface = unit("counter")
        run = self.make_run([interface])
        run.write("status.json", '{"status": "finished", "error": null, "interfaces": []}\n')
        run.write("finished_at", "2026-11-21T23:00:01.000000Z")
        before = self.snapshot(run)
        self.assertEqual(run.run(), 2)
        self.assertEqual(self.snapshot(run), before)
        self.assertIn("status.json exists", run.output())
        self.assertIsNone(run.cached(interface))

    def test_a_run_dir_in_use_is_refused(self) -> None:
        first = self.make_run([unit("sleeper")]).start()
        wait_for(lambda: os.path.exists(os.path.join(self.project, "sleeping")), what="sleeping")
        second = Run(self, self.project, [])
        second.uuid, second.dir = first.uuid, first.dir  # the same directory, started again
        self.assertEqual(second.run(), 2)
        self.assertIn("in use by another run process", first.output())
        first.cancel()
        self.assertEqual(first.wait(), 130)

    def test_missing_or_malformed_execution_json_is_refused(self) -> None:
        cases = {
            "missing": None,
            "not json": "{not json",
            "not an object": "[]",
            "interfaces not a list": None,
            "uuid of another run": None,
            "bad interface uuid": None,
            "relative project": None,
        }
        for name in cases:
            with self.subTest(case=name):
                run = self.make_run(None)  # type: ignore[arg-type]
                spec = dict(run.spec, interfaces=[unit("counter")])
                if name == "not json":
                    run.write("execution.json", "{not json")
                elif name == "not an object":
                    run.write("execution.json", "[]")
                elif name == "interfaces not a list":
                    run.write("execution.json", json.dumps(dict(spec, interfaces={"a": 1})))
                elif name == "uuid of another run":
                    run.write("execution.json", json.dumps(dict(spec, uuid=new_uuid())))
                elif name == "bad interface uuid":
                    run.write("execution.json", json.dumps(dict(spec, interfaces=[dict(unit("counter"), uuid="../x")])))
                elif name == "relative project":
                    run.write("execution.json", json.dumps(dict(spec, project="project")))
                expected = run.files() | {"output.log"}
                self.assertEqual(run.run(), 2)
                self.assertEqual(run.files(), expected)
                self.assertIn("portico.run: refused:", run.output())
                self.assertIn("execution.json", run.output())


if __name__ == "__main__":
    unittest.main()
