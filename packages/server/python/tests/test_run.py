"""``python -m portico.run <run dir>``: real run processes on temporary projects.

Run directories are built the way the gateway builds them: ``execution.json`` written first,
``output.log`` opened with O_APPEND and passed as the process's stdout and stderr, cwd = the
project, the gateway's environment, and a session of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import time
import unittest
import uuid as uuidlib
from typing import Any

from support import PYTHON_DIR, TIMEOUT, make_project

from portico.run import CANCEL_POLL_SECONDS, HEARTBEAT_SECONDS

TIME_FORMAT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")

PROJECT = {
    "counter.py": '''
        import os
        import sys

        from portico import Interface

        class Counter(Interface):
            """Prints to every kind of output and saves what it was bound to."""

            class Config:
                start: int = 0

            def __call__(self):
                print(f"print from python {self.config.start}")
                sys.stderr.write("stderr from python\\n")
                os.write(1, b"os.write to fd 1\\n")
                os.write(2, b"os.write to fd 2\\n")
                self.save_file("result.json", {"start": self.config.start, "uuid": self.uuid, "cwd": os.getcwd()})
    ''',
    "broken_call.py": """
        from portico import Interface

        class BrokenCall(Interface):
            def __call__(self):
                raise ValueError("bad value 42")
    """,
    "broken_import.py": """
        from portico import Interface

        raise RuntimeError("broken at import")
    """,
    "missing_dep.py": """
        import not_installed_anywhere_xyz

        from portico import Interface

        class MissingDep(Interface):
            def __call__(self):
                pass
    """,
    "no_call.py": """
        from portico import Interface

        class NoCall(Interface):
            def method(self):
                return 1
    """,
    "ordered.py": """
        from portico import Interface

        class Ordered(Interface):
            class Config:
                fail: bool = False

            def __call__(self):
                with open("order.log", "a") as log:
                    log.write("call\\n")
                if self.config.fail:
                    raise RuntimeError("call failed")
    """,
    "ctx.py": """
        from portico import Interface

        class Ctx(Interface):
            class Config:
                name: str = "ctx"
                swallow: bool = False
                fail_enter: bool = False

            def _log(self, line):
                with open("order.log", "a") as log:
                    log.write(line + "\\n")

            def __enter__(self):
                self._log(f"enter {self.config.name}")
                if self.config.fail_enter:
                    raise KeyError("enter failed")
                return self

            def __exit__(self, exc_type, exc, tb):
                self._log(f"exit {self.config.name} {exc_type.__name__ if exc_type else None}")
                return self.config.swallow
    """,
    ".portico/remotes/remote_ctx.py": """
        from portico import Interface

        class RemoteCtx(Interface):
            def __enter__(self):
                self.emit({"context": "entered"})

            def __exit__(self, exc_type, exc, tb):
                return None
    """,
    "pkg/__init__.py": "",
    "pkg/deep.py": """
        from portico import Interface

        class Deep(Interface):
            def __call__(self):
                self.save_file("deep.txt", "deep")
    """,
    "sleeper.py": """
        import json
        import time
        import traceback

        from portico import ExecutionInterrupted, Interface

        class Sleeper(Interface):
            class Config:
                seconds: float = 30.0
                swallow: bool = False

            def __call__(self):
                started = time.monotonic()
                with open("sleeping", "w") as marker:
                    marker.write("yes")
                try:
                    time.sleep(self.config.seconds)
                except BaseException as exc:
                    frames = traceback.extract_tb(exc.__traceback__)
                    mine = [frame for frame in frames if frame.filename == __file__]
                    record = {
                        "type": type(exc).__name__,
                        "is_execution_interrupted": isinstance(exc, ExecutionInterrupted),
                        "elapsed": time.monotonic() - started,
                        "line": mine[-1].line if mine else None,
                        "functions": [frame.name for frame in frames],
                    }
                    with open("interrupted.json", "w") as out:
                        json.dump(record, out)
                    if not self.config.swallow:
                        raise
    """,
    "tracked.py": """
        from portico import Interface

        with open("tracked_imported", "w") as marker:
            marker.write("yes")

        class Tracked(Interface):
            def __call__(self):
                pass
    """,
    "emitter.py": """
        import threading

        from portico import Interface

        class Emitter(Interface):
            def __call__(self):
                for i in range(3):
                    self.emit({"i": i})
                thread = threading.Thread(target=self.emit, args=(["from", "a thread"],))
                thread.start()
                thread.join()
                try:
                    self.emit(object())
                except TypeError:
                    self.emit({"bad": "TypeError"})
    """,
    "async_call.py": """
        import asyncio

        from portico import Interface

        class AsyncCall(Interface):
            async def __call__(self):
                await asyncio.sleep(0)
                self.save_file("async.txt", "awaited")
    """,
}


def new_uuid() -> str:
    return uuidlib.uuid4().hex[:24]


def unit(module: str, config: dict[str, Any] | None = None, contexts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"uuid": new_uuid(), "module": module, "config": config or {}}
    if contexts is not None:
        entry["contexts"] = contexts
    return entry


def sha256_of(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


class Run:
    """One run directory and its ``python -m portico.run`` process, set up like the gateway does."""

    def __init__(self, test: unittest.TestCase, project: str, interfaces: list[dict[str, Any]], raw_spec: str | None = None) -> None:
        self.test = test
        self.project = project
        self.interfaces = interfaces
        self.uuid = new_uuid()
        self.dir = os.path.join(project, ".portico", "executions", self.uuid)
        os.makedirs(self.dir)
        self.spec = {
            "uuid": self.uuid,
            "project": project,
            "created_at": "2026-11-21T23:00:00.000Z",
            "created_by": "ada",
            "parent": None,
            "interfaces": interfaces,
        }
        if raw_spec is not None:
            self.write("execution.json", raw_spec)
        elif interfaces is not None:
            self.write("execution.json", json.dumps(self.spec, indent=2) + "\n")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Run:
        log = os.open(os.path.join(self.dir, "output.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR, PYTHONUNBUFFERED="1", PYTHONSAFEPATH="1", PYTHONDONTWRITEBYTECODE="1")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "portico.run", self.dir],
                cwd=self.project,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        finally:
            os.close(log)
        self.test.addCleanup(self._reap)
        return self

    def _reap(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def wait(self, timeout: float = TIMEOUT) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def run(self) -> int:
        return self.start().wait()

    # -- files --

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def write(self, name: str, text: str) -> None:
        tmp = self.path(f".{name}.tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, self.path(name))

    def cancel(self) -> None:
        self.write("cancelled", "cancelled\n")

    def exists(self, name: str) -> bool:
        return os.path.exists(self.path(name))

    def text(self, name: str) -> str:
        with open(self.path(name), encoding="utf-8") as handle:
            return handle.read()

    def json(self, name: str) -> Any:
        return json.loads(self.text(name))

    def output(self) -> str:
        return self.text("output.log")

    def files(self) -> set[str]:
        return set(os.listdir(self.dir))

    def cached(self, interface: dict[str, Any]) -> str | None:
        try:
            with open(os.path.join(self.project, ".portico", "interfaces", interface["uuid"], "cached"), encoding="utf-8") as handle:
                return handle.read()
        except FileNotFoundError:
            return None


def wait_for(predicate: Any, timeout: float = TIMEOUT, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class RunTestCase(unittest.TestCase):
    def setUp(self) -> None:
        self.project = make_project(self, PROJECT)

    def make_run(self, interfaces: list[dict[str, Any]], raw_spec: str | None = None) -> Run:
        return Run(self, self.project, interfaces, raw_spec)

    def order(self) -> list[str]:
        try:
            with open(os.path.join(self.project, "order.log"), encoding="utf-8") as handle:
                return handle.read().splitlines()
        except FileNotFoundError:
            return []

    def assertTimes(self, run: Run, *names: str) -> list[str]:
        values = [run.text(name) for name in names]
        for name, value in zip(names, values):
            self.assertRegex(value, TIME_FORMAT, name)
            self.assertTrue(TIME_FORMAT.fullmatch(value), f"{name} holds more than a time: {value!r}")
        self.assertEqual(values, sorted(values), f"{names} out of order")
        return values


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
