"""Helpers of the run tests (test_run.py, test_run_cancel.py): a project of interface modules, and
run directories built the way the gateway builds them: ``execution.json`` written first,
``output.log`` opened with O_APPEND and passed as the process's stdout and stderr, cwd = the
project, the gateway's environment, and a session of its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
import unittest
import uuid as uuidlib
from typing import Any

from support import PYTHON_DIR, TIMEOUT, make_project

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
