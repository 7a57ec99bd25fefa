"""``python -m portico.run <run dir>``: real run processes on temporary projects (run_support.py
builds their run directories as the gateway does): the files a run writes, failures, contexts,
events. Cancel, the heartbeat and refused run directories: test_run_cancel.py.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
import unittest
from typing import Any

from run_support import TIME_FORMAT, Run, RunTestCase, sha256_of, unit


class FinishedRunTest(RunTestCase):
    def test_a_finished_run_writes_every_file(self) -> None:
        first = unit("counter", {"start": 3})
        second = unit("pkg.deep", contexts=[unit("remote_ctx")])
        run = self.make_run([first, second])
        self.assertEqual(run.run(), 0, run.output())

        self.assertEqual(
            run.files(),
            {
                "execution.json",
                "output.log",
                "process.json",
                "started_at",
                "heartbeat_at",
                "manifest.json",
                "events.jsonl",
                "status.json",
                "finished_at",
            },
        )
        process = run.json("process.json")
        self.assertEqual(set(process), {"pid", "starttime", "hostname", "python", "executable"})
        self.assertEqual(process["pid"], run.proc.pid)  # type: ignore[union-attr]
        if os.path.exists("/proc/self/stat"):
            self.assertIsInstance(process["starttime"], int)
        self.assertEqual(process["hostname"], socket.gethostname())
        self.assertEqual(process["python"], platform.python_version())
        self.assertEqual(process["executable"], sys.executable)
        self.assertTimes(run, "started_at", "heartbeat_at", "finished_at")
        self.assertEqual(
            run.json("status.json"),
            {
                "status": "finished",
                "error": None,
                "interfaces": [{"uuid": first["uuid"], "status": "finished"}, {"uuid": second["uuid"], "status": "finished"}],
            },
        )
        self.assertEqual(run.cached(first), run.uuid)
        self.assertEqual(run.cached(second), run.uuid)

        # The instance was bound like the worker binds it: uuid, checked config, project as cwd.
        result_path = os.path.join(self.project, ".portico", "interfaces", first["uuid"], "result.json")
        with open(result_path, encoding="utf-8") as handle:
            self.assertEqual(json.load(handle), {"start": 3, "uuid": first["uuid"], "cwd": self.project})

        output = run.output()
        for line in ("print from python 3", "stderr from python", "os.write to fd 1", "os.write to fd 2"):
            self.assertIn(line + "\n", output)
        # The context's event; its "interface" is the emitting instance (the context).
        events = [json.loads(line) for line in run.text("events.jsonl").splitlines()]
        self.assertEqual([(e["interface"], e["payload"]) for e in events], [(second["contexts"][0]["uuid"], {"context": "entered"})])

    def test_async_call_is_awaited(self) -> None:
        interface = unit("async_call")
        run = self.make_run([interface])
        self.assertEqual(run.run(), 0, run.output())
        with open(os.path.join(self.project, ".portico", "interfaces", interface["uuid"], "async.txt")) as handle:
            self.assertEqual(handle.read(), "awaited")

    def test_manifest_hashes_every_module_before_running(self) -> None:
        interfaces = [unit("counter", contexts=[unit("ctx"), unit("remote_ctx")]), unit("pkg.deep", contexts=[unit("ctx")]), unit("nowhere")]
        run = self.make_run(interfaces)
        self.assertEqual(run.run(), 1, run.output())
        manifest = run.json("manifest.json")
        self.assertEqual(set(manifest), {"python", "executable", "platform", "modules"})
        self.assertEqual(manifest["python"], platform.python_version())
        self.assertEqual(manifest["executable"], sys.executable)
        self.assertEqual(manifest["platform"], platform.platform())
        join = os.path.join
        self.assertEqual(
            manifest["modules"],
            {
                "counter": sha256_of(join(self.project, "counter.py")),
                "ctx": sha256_of(join(self.project, "ctx.py")),
                "remote_ctx": sha256_of(join(self.project, ".portico", "remotes", "remote_ctx.py")),
                "pkg.deep": sha256_of(join(self.project, "pkg", "deep.py")),
                "nowhere": None,
            },
        )
        self.assertEqual(list(manifest["modules"]), ["counter", "ctx", "remote_ctx", "pkg.deep", "nowhere"])


class FailedRunTest(RunTestCase):
    def test_a_failing_interface_fails_the_run_and_skips_the_rest(self) -> None:
        interfaces = [unit("counter"), unit("broken_call"), unit("counter")]
        run = self.make_run(interfaces)
        self.assertEqual(run.run(), 1)
        self.assertEqual(
            run.json("status.json"),
            {
                "status": "failed",
                "error": {"exception": "ValueError", "message": "bad value 42", "interface": interfaces[1]["uuid"]},
                "interfaces": [
                    {"uuid": interfaces[0]["uuid"], "status": "finished"},
                    {"uuid": interfaces[1]["uuid"], "status": "failed"},
                    {"uuid": interfaces[2]["uuid"], "status": "skipped"},
                ],
            },
        )
        self.assertEqual(run.cached(interfaces[0]), run.uuid)
        self.assertIsNone(run.cached(interfaces[1]))
        self.assertIsNone(run.cached(interfaces[2]))
        output = run.output()
        self.assertIn("Traceback (most recent call last)", output)
        self.assertIn("broken_call.py", output)
        self.assertIn("ValueError: bad value 42", output)
        self.assertEqual(output.count("print from python"), 1)  # the third interface never ran
        self.assertTimes(run, "started_at", "heartbeat_at", "finished_at")

    def test_setup_problems_fail_the_run_with_their_message(self) -> None:
        cases = [
            # module, config, exception, words in the message, words in output.log
            ("broken_import", {}, "RuntimeError", ["failed to import", "broken at import"], ["broken_import.py", "RuntimeError: broken at import"]),
            ("missing_dep", {}, "ModuleNotFoundError", ["failed to import", "not_installed_anywhere_xyz"], ["Traceback"]),
            ("nowhere", {}, "ExecutionError", ["'nowhere' not found"], []),
            ("json", {}, "ExecutionError", ["'json' not found"], []),  # project-only lookup: no stdlib modules
            ("no_call", {}, "ExecutionError", ["no_call.NoCall defines no __call__"], []),
            ("counter", {"start": "three"}, "ExecutionError", ["Invalid config for counter.Counter", "start"], []),
        ]
        for module, config, exception, message_words, output_words in cases:
            with self.subTest(module=module):
                interfaces = [unit(module, config), unit("counter")]
                run = self.make_run(interfaces)
                self.assertEqual(run.run(), 1, run.output())
                status = run.json("status.json")
                self.assertEqual(status["status"], "failed")
                self.assertEqual(status["error"]["exception"], exception)
                self.assertEqual(status["error"]["interface"], interfaces[0]["uuid"])
                for word in message_words:
                    self.assertIn(word, status["error"]["message"])
                self.assertEqual([i["status"] for i in status["interfaces"]], ["failed", "skipped"])
                self.assertIsNone(run.cached(interfaces[0]))
                output = run.output()
                self.assertIn(status["error"]["message"], output)
                for word in output_words:
                    self.assertIn(word, output)
                self.assertTrue(run.exists("finished_at"))


class ContextTest(RunTestCase):
    def contexts(self, **b_config: Any) -> list[dict[str, Any]]:
        return [unit("ctx", {"name": "A"}), unit("ctx", {"name": "B", **b_config})]

    def test_contexts_enter_in_order_and_exit_in_reverse(self) -> None:
        interface = unit("ordered", contexts=self.contexts())
        run = self.make_run([interface])
        self.assertEqual(run.run(), 0, run.output())
        self.assertEqual(self.order(), ["enter A", "enter B", "call", "exit B None", "exit A None"])
        self.assertEqual(run.cached(interface), run.uuid)

    def test_contexts_exit_when_call_fails(self) -> None:
        interface = unit("ordered", {"fail": True}, contexts=self.contexts())
        run = self.make_run([interface])
        self.assertEqual(run.run(), 1)
        self.assertEqual(self.order(), ["enter A", "enter B", "call", "exit B RuntimeError", "exit A RuntimeError"])
        self.assertEqual(run.json("status.json")["error"]["exception"], "RuntimeError")
        self.assertIsNone(run.cached(interface))

    def test_a_failing_enter_exits_only_the_contexts_entered(self) -> None:
        interface = unit("ordered", contexts=self.contexts(fail_enter=True))
        run = self.make_run([interface])
        self.assertEqual(run.run(), 1)
        self.assertEqual(self.order(), ["enter A", "enter B", "exit A KeyError"])
        self.assertEqual(run.json("status.json")["error"]["exception"], "KeyError")

    def test_a_context_may_suppress_a_failure_but_nothing_is_cached(self) -> None:
        interface = unit("ordered", {"fail": True}, contexts=self.contexts(swallow=True))
        run = self.make_run([interface])
        self.assertEqual(run.run(), 0, run.output())
        self.assertEqual(self.order(), ["enter A", "enter B", "call", "exit B RuntimeError", "exit A None"])
        self.assertEqual(run.json("status.json")["interfaces"], [{"uuid": interface["uuid"], "status": "finished"}])
        self.assertIsNone(run.cached(interface))  # __call__ never returned: there is no result


class EventTest(RunTestCase):
    def test_emit_appends_json_lines(self) -> None:
        interface = unit("emitter")
        run = self.make_run([interface])
        self.assertEqual(run.run(), 0, run.output())
        lines = run.text("events.jsonl").splitlines()
        events = [json.loads(line) for line in lines]
        for event in events:
            self.assertEqual(set(event), {"at", "interface", "payload"})
            self.assertRegex(event["at"], TIME_FORMAT)
            self.assertEqual(event["interface"], interface["uuid"])
        self.assertEqual(
            [event["payload"] for event in events], [{"i": 0}, {"i": 1}, {"i": 2}, ["from", "a thread"], {"bad": "TypeError"}]
        )


if __name__ == "__main__":
    unittest.main()
