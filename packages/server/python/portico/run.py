"""An Execution: ``python -m portico.run <run dir>`` runs interfaces' ``__call__`` in its own process.

The gateway creates ``<project>/.portico/executions/<execution uuid>/`` (the run dir), writes
``execution.json`` into it and starts this module detached, with the project as cwd and stdout and
stderr appended to ``output.log``. A crash or a cancel therefore never touches the long-lived
worker, and the run outlives a gateway restart. The run's state is its directory; every file
below is written atomically (temp file + rename) unless said otherwise. Times are ISO-8601 UTC
with microseconds and ``Z`` (``2026-11-21T23:00:00.123456Z``); text files hold just the time, no
newline; JSON files are compact, one line, newline-terminated.

- ``process.json`` (first): ``{"pid", "starttime", "hostname", "python", "executable"}``;
  ``starttime`` is field 22 of ``/proc/self/stat`` (an int, null where unavailable), so that a
  reader can tell this process from a later one with the same pid.
- ``started_at`` (second), then ``heartbeat_at``, rewritten every ``HEARTBEAT_SECONDS`` until the
  run's outcome is known; it never changes after ``status.json`` is written.
- ``manifest.json``: ``{"python", "executable", "platform", "modules": {name: sha256 hex of its
  source file, or null when it is not found}}`` for every interface and context module, hashed
  before any of them runs.
- ``events.jsonl`` (appended, created empty at start): one line
  ``{"at", "interface": uuid of the emitting instance, "payload"}`` per ``emit()``; an emitted
  value IPython could display (a figure) adds ``"display"`` (its MIME bundle, binary data as
  base64 text) and ``"metadata"`` when it has some, ``payload`` then being null where JSON cannot
  carry it (README "Rich results").
- ``status.json``, then ``finished_at`` (last): ``{"status": "finished"|"failed"|"interrupted",
  "error": null | {"exception", "message", "interface": uuid | null},
  "interfaces": [{"uuid", "status": "finished"|"failed"|"interrupted"|"skipped"}]}``.
  ``exception`` is the class name of what user code raised, ``ExecutionInterrupted`` for a
  cancel, or ``ExecutionError`` when Portico itself could not run an interface (module not found,
  invalid config, no ``__call__``).
- ``<project>/.portico/interfaces/<interface uuid>/cached`` (outside the run dir): the execution
  uuid, written once the interface's ``__call__`` returned and its contexts exited cleanly.

Exit status: 0 finished, 1 failed, 130 interrupted, 2 refused (usage; a run dir that already has
``status.json`` or is in use by another run process; a missing or malformed ``execution.json``).
A refused run writes nothing into the run dir; the reason goes to stderr.

Cancel: the gateway creates ``cancelled`` in the run dir. A watcher thread polls for it every
``CANCEL_POLL_SECONDS`` and sends SIGUSR1 to this process; the handler raises
``ExecutionInterrupted`` in the main thread (a signal also breaks off ``time.sleep``), once, and
only while user code runs. A cancel that arrives between interfaces (or before the first) stops
the run there: the remaining interfaces are ``skipped``. One that arrives while a context exits
stays pending until the next interface would start, so a run whose last interface had already
returned still ends ``finished``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import fcntl
import hashlib
import importlib.machinery
import inspect
import json
import os
import platform
import signal
import socket
import sys
import threading
import traceback
from typing import Any

from . import _display, _storage
from ._json import dumps
from .interface import ExecutionInterrupted, Interface
from .worker import (
    _Refusal,
    _select_interface,
    check_module_name,
    create_instance,
    import_project_module,
    project_search_path,
    use_project_path,
)

__all__ = ["CANCEL_POLL_SECONDS", "HEARTBEAT_SECONDS", "ExecutionError", "main"]

#: How often ``heartbeat_at`` is rewritten while the run is going.
HEARTBEAT_SECONDS = 2.0
#: How often the watcher looks for the ``cancelled`` marker.
CANCEL_POLL_SECONDS = 0.1
#: After the outcome is recorded, how long exiting may wait for threads user code left running
#: and for its ``atexit`` handlers (uploads, flushes) before the process ends regardless.
EXIT_GRACE_SECONDS = 30.0

EXIT_FINISHED = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2
EXIT_INTERRUPTED = 130

EXECUTION_FILE = "execution.json"
PROCESS_FILE = "process.json"
STARTED_FILE = "started_at"
HEARTBEAT_FILE = "heartbeat_at"
MANIFEST_FILE = "manifest.json"
EVENTS_FILE = "events.jsonl"
STATUS_FILE = "status.json"
FINISHED_FILE = "finished_at"
CANCEL_FILE = "cancelled"
CACHED_FILE = "cached"

_FINISHED, _FAILED, _INTERRUPTED, _SKIPPED = "finished", "failed", "interrupted", "skipped"
_EXIT_CODES = {_FINISHED: EXIT_FINISHED, _FAILED: EXIT_FAILED, _INTERRUPTED: EXIT_INTERRUPTED}


class ExecutionError(Exception):
    """Portico cannot run an interface (no ``__call__``; see also the refusals of the worker)."""


class _Refused(Exception):
    """The run dir cannot be run at all: exit 2, having written nothing."""


def log(message: str) -> None:
    """Run diagnostics go to stderr, which is output.log."""
    try:
        sys.stderr.write(f"portico.run: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# -- execution.json --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Unit:
    """An interface or a context: what to instantiate."""

    uuid: str
    module: str
    config: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class _Entry:
    unit: _Unit
    contexts: list[_Unit]


@dataclasses.dataclass(frozen=True)
class _Spec:
    uuid: str
    project: str
    interfaces: list[_Entry]


def _unit(raw: Any, where: str, project: str) -> _Unit:
    if not isinstance(raw, dict):
        raise _Refused(f"{where} is not an object")
    uuid, module, config = raw.get("uuid"), raw.get("module"), raw.get("config", {})
    if not isinstance(uuid, str):
        raise _Refused(f"{where}.uuid is not a string")
    try:
        _storage.data_path(project, uuid, ())  # it names the interface's data folder
    except ValueError as exc:
        raise _Refused(f"{where}.uuid: {exc}") from None
    if not isinstance(module, str) or not module:
        raise _Refused(f"{where}.module is not a non-empty string")
    if not isinstance(config, dict):
        raise _Refused(f"{where}.config is not an object")
    return _Unit(uuid, module, config)


def _load_spec(run_dir: str) -> _Spec:
    path = os.path.join(run_dir, EXECUTION_FILE)
    try:
        with open(path, "rb") as handle:
            raw = json.loads(handle.read())
    except FileNotFoundError:
        raise _Refused(f"{path} does not exist") from None
    except (OSError, ValueError) as exc:  # ValueError includes JSON and UTF-8 errors
        raise _Refused(f"{path} is not readable JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise _Refused(f"{path} is not a JSON object")
    uuid, project, interfaces = raw.get("uuid"), raw.get("project"), raw.get("interfaces")
    if not isinstance(uuid, str) or uuid != os.path.basename(run_dir):
        raise _Refused(f"{path}: uuid {uuid!r} is not the name of the run directory")
    if not isinstance(project, str) or not os.path.isabs(project) or not os.path.isdir(project):
        raise _Refused(f"{path}: project {project!r} is not an existing absolute directory")
    project = os.path.normpath(project)
    if not isinstance(interfaces, list):
        raise _Refused(f"{path}: interfaces is not a list")
    entries = []
    for i, item in enumerate(interfaces):
        unit = _unit(item, f"{path}: interfaces[{i}]", project)
        contexts = item.get("contexts", [])
        if not isinstance(contexts, list):
            raise _Refused(f"{path}: interfaces[{i}].contexts is not a list")
        entries.append(_Entry(unit, [_unit(c, f"{path}: interfaces[{i}].contexts[{j}]", project) for j, c in enumerate(contexts)]))
    return _Spec(uuid, project, entries)


def _lock(run_dir: str) -> int:
    """Hold the run dir for this process's life, so that two runs of it never overlap."""
    try:
        fd = os.open(run_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise _Refused(f"run directory {run_dir}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise _Refused(f"run directory {run_dir} is in use by another run process") from None
    return fd  # kept open (and locked) until the process ends


# -- process facts -----------------------------------------------------------------------------------


def process_starttime() -> int | None:
    """Field 22 of /proc/self/stat (clock ticks after boot); None where there is no /proc."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
        # The command name (field 2) is parenthesized and may itself hold spaces or parentheses.
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _module_file(project: str, module: str) -> str | None:
    """The file importing ``module`` from the project would load, found without importing."""
    try:
        parts = check_module_name(project, module)
    except _Refusal:
        return None
    path: Any = project_search_path(project)
    spec = None
    for depth in range(1, len(parts) + 1):
        if spec is not None:
            path = spec.submodule_search_locations
            if not path:
                return None
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:depth]), list(path))
        if spec is None:
            return None
    return spec.origin if spec is not None and spec.has_location else None


def _sha256(path: str | None) -> str | None:
    if path is None:
        return None
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def _defines(cls: type, name: str) -> bool:
    """Whether instances of ``cls`` have ``name`` from a class (not from the metaclass, as
    ``getattr(cls, "__call__")`` would report)."""
    return any(name in vars(klass) for klass in cls.__mro__ if klass is not object)


# -- cancellation ------------------------------------------------------------------------------------


class _Interrupter:
    """Turns SIGUSR1 into one ``ExecutionInterrupted``, raised only while user code runs.

    ``with interrupter:`` marks user code (the main thread only). A signal outside it, or while
    ``emit`` writes a line (``hold``), is kept as ``requested`` and raised when user code runs or
    the line is written; the run checks ``requested`` between interfaces.
    """

    def __init__(self) -> None:
        self.requested = False
        self.delivered = False
        self.armed = False
        self.hold = 0
        self.main = threading.get_ident()

    def install(self) -> None:
        signal.signal(signal.SIGUSR1, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.requested = True
        self.raise_if_due()

    def raise_if_due(self) -> None:
        if self.requested and self.armed and not self.hold and not self.delivered:
            self.delivered = True
            raise ExecutionInterrupted()

    def __enter__(self) -> None:
        self.armed = True
        try:
            self.raise_if_due()  # a cancel that came while no user code ran
        except BaseException:
            self.armed = False
            raise

    def __exit__(self, *exc_info: Any) -> None:
        self.armed = False


class _Beats:
    """The heartbeat and cancel-watcher threads."""

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        self._beat_once()
        self.threads.append(threading.Thread(target=self._heartbeat, name="portico-heartbeat", daemon=True))
        if self._cancel_requested():  # checked right away, so a run cancelled before it started runs nothing
            self.run.interrupter.requested = True
        else:
            self.threads.append(threading.Thread(target=self._watch, name="portico-cancel-watcher", daemon=True))
        for thread in self.threads:
            thread.start()

    def halt(self) -> None:
        """Stop both threads; once this returns, ``heartbeat_at`` no longer changes."""
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _beat_once(self) -> None:
        try:
            self.run.write_text(HEARTBEAT_FILE, utc_now())
        except OSError as exc:
            log(f"cannot write {HEARTBEAT_FILE}: {exc}")

    def _heartbeat(self) -> None:
        while not self.stop.wait(HEARTBEAT_SECONDS):
            self._beat_once()

    def _cancel_requested(self) -> bool:
        return os.path.lexists(os.path.join(self.run.dir, CANCEL_FILE))

    def _watch(self) -> None:
        while not self.stop.wait(CANCEL_POLL_SECONDS):
            if self._cancel_requested():
                log("cancel requested; interrupting the run")
                os.kill(os.getpid(), signal.SIGUSR1)
                return


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
    def __init__(self, run_dir: str, spec: _Spec) -> None:
        self.dir = run_dir
        self.spec = spec
        self.project = spec.project
        self.interrupter = _Interrupter()
        self.beats = _Beats(self)
        self._events_lock = threading.Lock()
        self._events_fd: int | None = None

    # -- files --

    def write_text(self, name: str, text: str) -> None:
        _storage._atomic_write(os.path.join(self.dir, name), text.encode("utf-8"))

    def write_json(self, name: str, value: Any) -> None:
        self.write_text(name, dumps(value) + "\n")

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

    def _manifest(self) -> dict[str, Any]:
        modules: dict[str, str | None] = {}
        for entry in self.spec.interfaces:
            for unit in [entry.unit, *entry.contexts]:
                if unit.module not in modules:
                    modules[unit.module] = _sha256(_module_file(self.project, unit.module))
        return {
            "python": platform.python_version(),
            "executable": sys.executable,
            "platform": platform.platform(),
            "modules": modules,
        }

    # -- running --

    def start(self) -> None:
        """Everything before user code: the start files, the threads, the project's sys.path."""
        self.write_json(
            PROCESS_FILE,
            {
                "pid": os.getpid(),
                "starttime": process_starttime(),
                "hostname": socket.gethostname(),
                "python": platform.python_version(),
                "executable": sys.executable,
            },
        )
        self.write_text(STARTED_FILE, utc_now())
        self.interrupter.install()  # before the watcher can send the signal
        self.beats.start()
        use_project_path(self.project)
        os.chdir(self.project)
        try:
            sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            pass
        self.write_json(MANIFEST_FILE, self._manifest())
        self._events_fd = os.open(
            os.path.join(self.dir, EVENTS_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644
        )

    def execute(self) -> tuple[str, _Failure | None, list[dict[str, str]]]:
        """Run the interfaces in order; the run's status, its error and each interface's status."""
        statuses: list[dict[str, str]] = []
        failure: _Failure | None = None
        for entry in self.spec.interfaces:
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

    def _interface_class(self, module: str) -> tuple[type[Interface], str]:
        cls = _select_interface(module, import_project_module(self.project, module, report=log))
        return cls, f"{module}.{cls.__name__}"

    def _instance(self, unit: _Unit) -> Interface:
        cls, label = self._interface_class(unit.module)
        return create_instance(cls, label, unit.uuid, unit.config, self.project, self._emit, report=log)

    def _run_interface(self, entry: _Entry) -> tuple[str, _Failure | None]:
        uuid = entry.unit.uuid
        delivered_before = self.interrupter.delivered
        entered: list[Interface] = []
        returned = False
        error: BaseException | None = None
        try:
            with self.interrupter:
                obj = self._instance(entry.unit)
                if not _defines(type(obj), "__call__"):
                    raise ExecutionError(f"{entry.unit.module}.{type(obj).__name__} defines no __call__() to run")
                for unit in entry.contexts:
                    context = self._instance(unit)
                    if _defines(type(context), "__enter__"):
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
        if isinstance(error, _Refusal):  # its traceback, when it has one worth showing, is logged already
            log(f"interface {uuid} ({entry.unit.module}) failed: {error.message}")
            return _FAILED, _Failure(error.extra.get("exception") or ExecutionError.__name__, error.message, uuid)
        log(f"interface {uuid} ({entry.unit.module}) failed:\n" + _format(error))
        return _FAILED, _Failure(type(error).__name__, str(error), uuid)

    def _exit_contexts(self, entered: list[Interface], error: BaseException | None) -> BaseException | None:
        """``__exit__`` of the entered contexts, innermost first, like nested ``with`` blocks;
        the error that is left (None when there was none or a context suppressed it)."""
        for context in reversed(entered):
            if not _defines(type(context), "__exit__"):
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
        _storage._atomic_write(os.path.join(directory, CACHED_FILE), self.spec.uuid.encode("utf-8"))

    def finish(self, status: str, failure: _Failure | None, statuses: list[dict[str, str]]) -> None:
        self.beats.halt()
        self.write_json(STATUS_FILE, {"status": status, "error": failure.to_json() if failure else None, "interfaces": statuses})
        self.write_text(FINISHED_FILE, utc_now())


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
            raise _Refused(f"run directory {run_dir} does not exist")
        if os.path.lexists(os.path.join(run_dir, STATUS_FILE)):
            raise _Refused(f"run directory {run_dir} holds a finished run ({STATUS_FILE} exists); start a new execution")
        _lock(run_dir)
        spec = _load_spec(run_dir)
    except _Refused as refused:
        log(f"refused: {refused}")
        return EXIT_REFUSED

    run = _Run(run_dir, spec)
    statuses: list[dict[str, str]] = []
    try:
        run.start()
        status, failure, statuses = run.execute()
    except BaseException as exc:  # our own machinery failed (a disk error, say): still record it
        log("the run failed:\n" + _format(exc))
        done = {item["uuid"] for item in statuses}
        statuses += [{"uuid": e.unit.uuid, "status": _SKIPPED} for e in spec.interfaces if e.unit.uuid not in done]
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
