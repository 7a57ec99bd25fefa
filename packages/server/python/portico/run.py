"""An Execution: ``python -m portico.run <run dir>`` runs interfaces' ``__call__`` in its own process.

The gateway creates ``<project>/.portico/executions/<execution uuid>/`` (the run dir), writes
``execution.json`` into it and starts this module detached, with the project as cwd and stdout and
stderr appended to ``output.log``. A crash or a cancel therefore never touches the long-lived
worker, and the run outlives a gateway restart. The run's state is its directory, in the format
``shared.json`` (``run_folder``) writes down once for this package and the gateway: file names,
what each holds, times (ISO-8601 UTC with microseconds and ``Z``, a time file holding the time
alone), JSON files (compact, one line, newline-terminated); ``run_folder.py`` names, writes and
reads them. This process writes, in this order: ``process.json`` (first), ``started_at``,
``heartbeat_at`` (then every ``HEARTBEAT_SECONDS`` of ``run_watch.py`` until the outcome is
known, never after ``status.json``), ``manifest.json`` (before any module runs), ``events.jsonl`` (created empty,
one line appended per ``emit()``), ``status.json`` and ``finished_at`` (last); and the ``cached``
marker in an interface's own folder once its ``__call__`` returned and its contexts exited
cleanly. In ``status.json``, an error's ``exception`` is the class name of what user code raised,
``ExecutionInterrupted`` for a cancel, or ``ExecutionError`` when Portico itself could not run an
interface (module not found, invalid config, no ``__call__``).

Exit status: 0 finished, 1 failed, 130 interrupted, 2 refused (usage; a run dir that already has
``status.json`` or is in use by another run process; a missing or malformed ``execution.json``).
A refused run writes nothing into the run dir; the reason goes to stderr.

Cancel: the gateway creates ``cancelled`` in the run dir. A watcher thread (``run_watch.py``)
polls for it every ``CANCEL_POLL_SECONDS`` and sends SIGUSR1 to this process; the handler raises
``ExecutionInterrupted`` in the main thread (a signal also breaks off ``time.sleep``), once, and
only while user code runs. A cancel that arrives between interfaces (or before the first) stops
the run there: the remaining interfaces are ``skipped``. One that arrives while a context exits
stays pending until the next interface would start, so a run whose last interface had already
returned still ends ``finished``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
import platform
import socket
import sys
import threading
import traceback
from typing import Any

from . import _display, _storage
from ._reflect import defines
from ._json import dumps
from .interface import ExecutionInterrupted, Interface
from .run_folder import CACHED_FILE, FILES, utc_now, write_json, write_time
from .run_plan import Entry, Plan, Refused, Unit, load_plan, lock_run_dir, manifest
from .run_watch import Beats, Interrupter
from .worker import Refusal, create_instance, import_project_module, select_interface, use_project_path

__all__ = ["ExecutionError", "main"]

#: After the outcome is recorded, how long exiting may wait for threads user code left running
#: and for its ``atexit`` handlers (uploads, flushes) before the process ends regardless.
EXIT_GRACE_SECONDS = 30.0

EXIT_FINISHED = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2
EXIT_INTERRUPTED = 130

_FINISHED, _FAILED, _INTERRUPTED, _SKIPPED = "finished", "failed", "interrupted", "skipped"
_EXIT_CODES = {_FINISHED: EXIT_FINISHED, _FAILED: EXIT_FAILED, _INTERRUPTED: EXIT_INTERRUPTED}


class ExecutionError(Exception):
    """Portico cannot run an interface (no ``__call__``; see also the refusals of the worker)."""


def log(message: str) -> None:
    """Run diagnostics go to stderr, which is output.log."""
    try:
        sys.stderr.write(f"portico.run: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def process_starttime() -> int | None:
    """Field 22 of /proc/self/stat (clock ticks after boot); None where there is no /proc."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
        # The command name (field 2) is parenthesized and may itself hold spaces or parentheses.
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


# -- the run ---------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Failure:
    exception: str
    message: str
    interface: str | None
    interrupted: bool = False  # a cancel, not a failure

    def to_json(self) -> dict[str, Any]:
        return {"exception": self.exception, "message": self.message, "interface": self.interface}


def _interrupted(interface: str | None) -> _Failure:
    return _Failure(ExecutionInterrupted.__name__, str(ExecutionInterrupted()), interface, interrupted=True)


class _Run:
    def __init__(self, run_dir: str, plan: Plan) -> None:
        self.dir = run_dir
        self.plan = plan
        self.project = plan.project
        self.interrupter = Interrupter()
        self.beats = Beats(run_dir, self.interrupter, log)
        self._events_lock = threading.Lock()
        self._events_fd: int | None = None

    def path(self, key: str) -> str:
        return os.path.join(self.dir, FILES[key])

    def _emit(self, uuid: str | None, payload: Any) -> None:
        # Encoded first, so that a bad payload raises in the caller before anything is written.
        at = utc_now()

        def encode(value: Any, shown: _display.Shown | None) -> bytes:
            event = {"at": at, "interface": uuid, "payload": value}
            if shown is not None:
                event.update(_display.base64_fields(shown))
            return (dumps(event) + "\n").encode("utf-8")

        line = _display.encoded(payload, encode, "emit()")
        interrupter = self.interrupter
        main = threading.get_ident() == interrupter.main
        if main:  # a cancel must not land between two parts of a line
            interrupter.hold += 1
        try:
            with self._events_lock:
                assert self._events_fd is not None
                view = memoryview(line)
                while view:
                    view = view[os.write(self._events_fd, view) :]
        finally:
            if main:
                interrupter.hold -= 1
                interrupter.raise_if_due()

    # -- running --

    def start(self) -> None:
        """Everything before user code: the start files, the threads, the project's sys.path."""
        write_json(
            self.path("process"),
            {
                "pid": os.getpid(),
                "starttime": process_starttime(),
                "hostname": socket.gethostname(),
                "python": platform.python_version(),
                "executable": sys.executable,
            },
        )
        write_time(self.path("started_at"))
        self.interrupter.install()  # before the watcher can send the signal
        self.beats.start()
        use_project_path(self.project)
        os.chdir(self.project)
        try:
            sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            pass
        write_json(self.path("manifest"), manifest(self.plan))
        self._events_fd = os.open(self.path("events"), os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)

    def execute(self) -> tuple[str, _Failure | None, list[dict[str, str]]]:
        """Run the interfaces in order; the run's status, its error and each interface's status."""
        statuses: list[dict[str, str]] = []
        failure: _Failure | None = None
        for entry in self.plan.interfaces:
            uuid = entry.unit.uuid
            if failure is None and self.interrupter.requested and not self.interrupter.delivered:
                failure = _interrupted(None)  # cancelled while no interface ran: none is interrupted
            if failure is not None:
                statuses.append({"uuid": uuid, "status": _SKIPPED})
                continue
            delivered_before = self.interrupter.delivered
            status, failure = self._run_interface(entry)
            statuses.append({"uuid": uuid, "status": status})
            if failure is None and self.interrupter.delivered and not delivered_before:
                failure = _interrupted(uuid)  # its code swallowed the interrupt; the run stops anyway
        if failure is None:
            return _FINISHED, None, statuses
        return (_INTERRUPTED if failure.interrupted else _FAILED), failure, statuses

    def _instance(self, unit: Unit) -> Interface:
        cls = select_interface(unit.module, import_project_module(self.project, unit.module, report=log))
        return create_instance(cls, f"{unit.module}.{cls.__name__}", unit.uuid, unit.config, self.project, self._emit, report=log)

    def _run_interface(self, entry: Entry) -> tuple[str, _Failure | None]:
        uuid = entry.unit.uuid
        delivered_before = self.interrupter.delivered
        entered: list[Interface] = []
        returned = False
        error: BaseException | None = None
        try:
            with self.interrupter:
                obj = self._instance(entry.unit)
                if not defines(type(obj), "__call__"):
                    raise ExecutionError(f"{entry.unit.module}.{type(obj).__name__} defines no __call__() to run")
                for unit in entry.contexts:
                    context = self._instance(unit)
                    if defines(type(context), "__enter__"):
                        context.__enter__()  # type: ignore[attr-defined]
                    entered.append(context)
                result = obj()  # type: ignore[operator]
                if inspect.iscoroutine(result):
                    asyncio.run(result)
                returned = True
        except BaseException as exc:
            error = exc
        error = self._exit_contexts(entered, error)
        interrupted_here = self.interrupter.delivered and not delivered_before
        if error is None:
            if returned:
                try:
                    self._mark_cached(uuid)
                except OSError as exc:
                    log(f"cannot write the cached marker of interface {uuid}: {exc}")
                    return _FAILED, _Failure(type(exc).__name__, str(exc), uuid)
            return _FINISHED, None
        if interrupted_here:
            log(f"interface {uuid} ({entry.unit.module}) was interrupted:\n" + _format(error))
            return _INTERRUPTED, _interrupted(uuid)
        if isinstance(error, Refusal):  # its traceback, when it has one worth showing, is logged already
            log(f"interface {uuid} ({entry.unit.module}) failed: {error.message}")
            return _FAILED, _Failure(error.extra.get("exception") or ExecutionError.__name__, error.message, uuid)
        log(f"interface {uuid} ({entry.unit.module}) failed:\n" + _format(error))
        return _FAILED, _Failure(type(error).__name__, str(error), uuid)

    def _exit_contexts(self, entered: list[Interface], error: BaseException | None) -> BaseException | None:
        """``__exit__`` of the entered contexts, innermost first, like nested ``with`` blocks;
        the error that is left (None when there was none or a context suppressed it)."""
        for context in reversed(entered):
            if not defines(type(context), "__exit__"):
                continue
            try:
                suppress = context.__exit__(  # type: ignore[attr-defined]
                    type(error) if error is not None else None, error, error.__traceback__ if error is not None else None
                )
            except BaseException as exc:
                if exc is not error and exc.__context__ is None:
                    exc.__context__ = error
                error = exc
                continue
            if suppress and error is not None and not isinstance(error, ExecutionInterrupted):
                error = None
        return error

    def _mark_cached(self, uuid: str) -> None:
        directory = _storage.data_path(self.project, uuid, (), create=True)
        _storage.atomic_write(os.path.join(directory, CACHED_FILE), self.plan.uuid.encode("utf-8"))

    def finish(self, status: str, failure: _Failure | None, statuses: list[dict[str, str]]) -> None:
        self.beats.halt()
        write_json(self.path("status"), {"status": status, "error": failure.to_json() if failure else None, "interfaces": statuses})
        write_time(self.path("finished_at"))


def _format(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)).rstrip()


def _flush_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


def _exit_later(status: int) -> None:
    """End the process after ``EXIT_GRACE_SECONDS`` if leftover threads or atexit hang it."""

    def force() -> None:
        log(f"exit took more than {EXIT_GRACE_SECONDS:g} s (threads left running?); ending the process")
        _flush_stdio()
        os._exit(status)

    timer = threading.Timer(EXIT_GRACE_SECONDS, force)
    timer.daemon = True
    timer.start()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        log("usage: python -m portico.run <run dir>")
        return EXIT_REFUSED
    run_dir = os.path.abspath(args[0])
    try:
        if not os.path.isdir(run_dir):
            raise Refused(f"run directory {run_dir} does not exist")
        if os.path.lexists(os.path.join(run_dir, FILES["status"])):
            raise Refused(f"run directory {run_dir} holds a finished run ({FILES['status']} exists); start a new execution")
        lock_run_dir(run_dir)
        plan = load_plan(run_dir)
    except Refused as refused:
        log(f"refused: {refused}")
        return EXIT_REFUSED

    run = _Run(run_dir, plan)
    statuses: list[dict[str, str]] = []
    try:
        run.start()
        status, failure, statuses = run.execute()
    except BaseException as exc:  # our own machinery failed (a disk error, say): still record it
        log("the run failed:\n" + _format(exc))
        done = {item["uuid"] for item in statuses}
        statuses += [{"uuid": e.unit.uuid, "status": _SKIPPED} for e in plan.interfaces if e.unit.uuid not in done]
        status, failure = _FAILED, _Failure(type(exc).__name__, str(exc), None)
    try:
        run.finish(status, failure, statuses)
    except BaseException as exc:
        log("cannot record the outcome:\n" + _format(exc))
        status = _FAILED
    _flush_stdio()
    code = _EXIT_CODES[status]
    _exit_later(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
