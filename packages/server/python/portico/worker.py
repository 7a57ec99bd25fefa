"""The kernel bridge worker: ``python -m portico.worker <project dir>``.

Owns the protocol of packages/server/src/kernel/README.md: reading requests from fd 3, hosting
interface instances, running calls concurrently (a thread pool for sync code, one asyncio loop
for coroutines), streaming with a credit window, cancellation, and writing replies to fd 4.
stdout and stderr belong to user code and to our diagnostics; they never carry protocol.

Threads: one thread at a time reads and dispatches frames; a plain sync call is run by the
thread that read it, after it handed the reading to a standby thread (leader/follower, see
``serve``), so a slow call never stalls the bridge. Pool threads run generators, imports,
resolution and reflection (``modules``, ``schema``); one thread runs the event loop; replies are
written to fd 4 by the thread that produced them.

Besides calls, the worker serves an instance's hooks: ``read`` (binary reads, streamed as
``chunk`` frames with the same credit window; sources in _read.py) and the widget hooks
(``widget_get`` / ``widget_set`` / ``widget_msg``, run like calls), plus ``widget_assets``.

Modules are looked up in the project directory, then in ``<project>/.portico/remotes`` (modules
the gateway fetched), and nowhere else. An imported module whose file changes is imported again
the next time it is looked up (see ``interface_class``); ``invalidate`` (sent by the gateway after
a source edit) drops modules, their caches and their live instances at once.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import collections.abc
import concurrent.futures
import ctypes
import dataclasses
import functools
import importlib
import importlib.machinery
import inspect
import os
import platform
import sys
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable

from . import _discovery, _fields, _jsonschema, _read, _reflect
from . import config as _config
from ._frames import FrameError, FrameReader, encode_frame
from ._json import dumps
from ._view import ConfigView
from .interface import Binding, CallCancelled, Interface, NotFound, ReadOnly, attach

#: Items a stream (or chunks a read) may have sent and not yet had credited; the generator waits beyond that.
STREAM_WINDOW = 16
#: A read's chunk size when the request names none, and the largest it may name.
READ_BLOCK_DEFAULT = 1024 * 1024
READ_BLOCK_MAX = 64 * 1024 * 1024
#: A chunk of an async read at most this big is written from the event loop; a bigger one is
#: written by a pool thread, so that a slow pipe never holds up every coroutine for long.
ASYNC_INLINE_CHUNK = 64 * 1024
#: Upper bound on threads running sync methods at once. Large, because a sleeping or blocked
#: call holds its thread and must not delay the others; idle threads are reused, not re-created.
MAX_SYNC_THREADS = 256
#: gateway → worker and worker → gateway pipes (README "Process").
REQUEST_FD = 3
REPLY_FD = 4
#: Read buffer for fd 3: pipelined requests are parsed from memory instead of one read per frame.
READ_BUFFER_BYTES = 64 * 1024  # per os.read; a larger request costs a large allocation every read
#: How long exiting waits for queued replies to reach the gateway.
EXIT_FLUSH_SECONDS = 5.0
#: Where fetched remote modules live, relative to the project; searched after the project.
REMOTES_DIR = os.path.join(".portico", "remotes")

# Method kinds, decided once per (class, name); also the `kind` of a method in `schema`.
_SYNC, _ASYNC, _GEN, _AGEN = "method", "async", "generator", "async_generator"
#: Ops that are requests: their refusals are answered to their `id` (README "Requests").
_REQUESTS = frozenset(
    {"resolve", "modules", "schema", "call", "read", "widget_get", "widget_set", "widget_msg", "widget_assets", "invalidate"}
)
#: Hooks the worker's own ops invoke; never callable through `call` unless in __api_methods__.
_HOOKS = frozenset({"read", "widget_state", "widget_update", "widget_message"})


def log(message: str) -> None:
    """Worker diagnostics go to stderr, which the gateway forwards to its log."""
    try:
        sys.stderr.write(f"portico.worker: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class _Refusal(Exception):
    """A request that ends in an ``error`` frame with this code."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra


_Work = Callable[[], None]
"""A sync call ready to run on whichever thread takes it."""


class _Exit(Exception):
    """Raised by the ``shutdown`` handler to leave the read loop."""


def _set_async_exc(thread_id: int, exc: type[BaseException] | None) -> None:
    # CPython only; ``None`` clears an exception that has not been raised yet.
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc is not None else None
    )


@dataclass(eq=False, slots=True)
class _Call:
    """State of one ``call`` (or ``read``, or widget hook) request until its terminal frame
    (result, end or error). ``method`` names what runs, for messages (``read``, ``widget_state``)."""

    id: Any
    method: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: bool = False  # a terminal frame was sent: nothing else may be sent for this id
    credits: int = STREAM_WINDOW
    thread_id: int | None = None  # set while a pool thread runs user code for this call
    interrupt_sent: bool = False
    future: concurrent.futures.Future[Any] | None = None
    parked: Any = None  # a sync stream (iterator, or a read's _read.Source) waiting for credit
    resume: Callable[[_Call, Any], None] | None = None  # continues `parked` (default: _drive_sync)
    async_wakeup: asyncio.Event | None = None
    sent: int = 0  # bytes a read sent so far


@dataclass
class _Instance:
    obj: Interface
    label: str  # "module.Class", for messages


@dataclass
class _Method:
    kind: str
    signature: inspect.Signature | None


@dataclass
class _Pending:
    """An instance being created; later calls for the same uuid wait for it."""

    ready: threading.Event = field(default_factory=threading.Event)
    instance: _Instance | None = None
    error: _Refusal | None = None


#: ``.call``: the call whose user code this thread runs and may interrupt (see ``_emit``).
_interruptible = threading.local()


def _is_request_id(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _described(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Worker:
    """One project's interface instances and the calls running on them."""

    def __init__(self, project: str, reply_fd: int = REPLY_FD) -> None:
        self.project = project
        #: Where modules are looked up, in order (README "Process").
        self.search_path = project_search_path(project)
        self.writer = _read.ChunkWriter(reply_fd, self._reply_pipe_broken)
        self.pool = concurrent.futures.ThreadPoolExecutor(MAX_SYNC_THREADS, thread_name_prefix="portico-call")
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="portico-asyncio", daemon=True).start()
        self.calls: dict[Any, _Call] = {}
        self.instances: dict[str, _Instance] = {}
        self._pending: dict[str, _Pending] = {}
        self._instances_lock = threading.Lock()
        self._classes: dict[str, tuple[type[Interface], str]] = {}
        # Module name → (file, mtime_ns) when we imported it; a newer file means import again.
        self._stamps: dict[str, tuple[str, int]] = {}
        self._import_locks: dict[str, threading.Lock] = {}
        # Module file → (mtime_ns, what `modules` reports from importing it), so that listing
        # again does not import unchanged modules.
        self._listing: dict[str, tuple[int, dict[str, Any]]] = {}
        self._methods: dict[tuple[type, str], _Method | tuple[str, str]] = {}
        # Leader/follower reading (see serve): the thread waiting to take over reading, how many
        # threads are running a call they read themselves, and how serving ended.
        self._standby: threading.Lock | None = None
        self._roles = threading.Lock()
        self._running_inline = 0
        self._done = threading.Event()
        self._status = 0
        self._reader: FrameReader | None = None
        self._handlers: dict[str, Callable[[dict[str, Any]], _Work | None]] = {
            "resolve": self._on_resolve,
            "modules": self._on_modules,
            "schema": self._on_schema,
            "call": self._on_call,
            "read": self._on_read,
            "widget_get": self._on_widget_get,
            "widget_set": self._on_widget_set,
            "widget_msg": self._on_widget_msg,
            "widget_assets": self._on_widget_assets,
            "invalidate": self._on_invalidate,
            "credit": self._on_credit,
            "cancel": self._on_cancel,
            "release": self._on_release,
            "shutdown": self._on_shutdown,
        }

    # -- output ---------------------------------------------------------------------------------

    def send(self, header: dict[str, Any]) -> None:
        self.writer.put(encode_frame(header))

    def _reply_pipe_broken(self, exc: OSError) -> None:
        log(f"reply pipe closed ({exc}); exiting")
        _exit(1)

    def _emit(self, uuid: str | None, payload: Any) -> None:
        # Encoded in the caller's thread so that a bad payload raises where emit() was called, and
        # queued before the call returns so the event precedes the call's result on the wire.
        self._put_unsolicited(encode_frame({"op": "event", "uuid": uuid, "payload": payload}))

    def _push(self, uuid: str | None, op: str, fields: dict[str, Any], buffers: list[bytes] | None) -> None:
        """``push_widget_change`` / ``push_widget_message``: like ``_emit``, another op."""
        header = {"op": op, "uuid": uuid, **fields}
        if buffers is not None:
            header["buffers"] = [base64.b64encode(buffer).decode("ascii") for buffer in buffers]
        self._put_unsolicited(encode_frame(header))

    def _put_unsolicited(self, frame: bytes) -> None:
        """Send an event or widget push from whatever thread user code runs on."""
        call: _Call | None = getattr(_interruptible, "call", None)
        if call is None:
            self.writer.put(frame)
            return
        # emit() from a sync method or generator: its thread may receive CallCancelled at any
        # bytecode. Landing inside the writer, it would strand the frames other threads queued
        # for it to write (a cancel's own error frame among them). So the writer runs with the
        # interrupt held off; a cancel that came before or meanwhile is raised here instead.
        with call.lock:
            thread_id, call.thread_id = call.thread_id, None
            if call.interrupt_sent and thread_id is not None:
                _set_async_exc(thread_id, None)  # pending, not yet raised: we raise it below
            cancelled = call.done
        if cancelled:
            raise CallCancelled()
        try:
            self.writer.put(frame)
        finally:
            with call.lock:
                call.thread_id = thread_id
                cancelled = call.done
        if cancelled:
            raise CallCancelled()

    def _error_header(self, request_id: Any, refusal: _Refusal) -> dict[str, Any]:
        header = {"op": "error", "id": request_id, "code": refusal.code, "message": refusal.message}
        header.update(refusal.extra)
        return header

    def _finish(self, call: _Call, header: dict[str, Any]) -> None:
        self._finish_frame(call, encode_frame(header))

    def _finish_frame(self, call: _Call, frame: bytes) -> None:
        """Send the call's terminal frame unless one was sent already (first one wins)."""
        with call.lock:
            if call.done:
                return
            call.done = True
            self.writer.put(frame)
        self.calls.pop(call.id, None)

    def _fail(self, call: _Call, refusal: _Refusal) -> None:
        self._finish(call, self._error_header(call.id, refusal))

    def _fail_raised(self, call: _Call, exc: BaseException) -> None:
        if isinstance(exc, CallCancelled):
            self._fail(call, _Refusal("cancelled", f"{call.method}() was cancelled"))
            return
        if isinstance(exc, NotFound):  # the author's way of saying "no such thing": no traceback
            self._fail(call, _Refusal("not_found", f"{call.method}() raised {_described(exc)}", exception=type(exc).__name__))
            return
        log(f"{call.method}() (call {call.id}) raised:\n" + "".join(traceback.format_exception(exc)).rstrip())
        self._fail(
            call,
            _Refusal("call_failed", f"{call.method}() raised {_described(exc)}", exception=type(exc).__name__),
        )

    def _finish_result(self, call: _Call, payload: Any) -> None:
        try:
            frame = encode_frame({"op": "result", "id": call.id, "payload": payload})
        except Exception as exc:  # any failure of user types while encoding
            self._fail(call, _Refusal("unserializable_result", f"Result of {call.method}() is not JSON: {exc}"))
            return
        self._finish_frame(call, frame)

    def _send_item(self, call: _Call, payload: Any) -> bool:
        """Send one stream item; False when the stream must stop (finished or unserializable)."""
        try:
            frame = encode_frame({"op": "item", "id": call.id, "payload": payload})
        except Exception as exc:
            self._fail(call, _Refusal("unserializable_result", f"Item of {call.method}() is not JSON: {exc}"))
            return False
        with call.lock:
            if call.done:
                return False
            call.credits -= 1
            self.writer.put(frame)
        return True

    # -- input ----------------------------------------------------------------------------------

    def serve(self, reader: FrameReader) -> int:
        """Answer requests until EOF or ``shutdown``; returns the exit status.

        Reading is leader/follower: the thread that reads a sync call runs it itself after
        handing the reading over to a standby thread. No thread hand-off then sits between a
        request and its reply (on two cores that hand-off was most of a small call's latency),
        and a slow call still never stalls the bridge, because someone else reads meanwhile.
        When further requests are already waiting, the reader keeps reading and the pool runs
        the call instead: under load, batching beats latency.
        """
        self._reader = reader
        self.send({"op": "ready", "pid": os.getpid(), "python": platform.python_version(), "executable": sys.executable})
        self._lead()
        self._done.wait()
        return self._status

    def _lead(self) -> None:
        """Read and dispatch frames until this thread runs a call and someone else leads."""
        reader = self._reader
        assert reader is not None
        while not self._done.is_set():
            try:
                frame = reader.read()
            except FrameError as exc:
                log(f"malformed frame, exiting: {exc}")
                return self._stop(2)
            if frame is None:
                return self._stop(0)
            try:
                work = self.dispatch(frame[0])
            except _Exit:
                return self._stop(0)
            if work is None:
                continue
            if reader.ready() or not self._hand_over():
                self.pool.submit(work)  # requests waiting, or at the thread bound
                continue
            try:
                work()
            finally:
                led_again = self._wait_as_standby()
            if not led_again:
                return

    def _hand_over(self) -> bool:
        """Let another thread lead (the standby, or a new one); False at the thread bound."""
        with self._roles:
            if self._running_inline >= MAX_SYNC_THREADS:
                return False
            self._running_inline += 1
            standby, self._standby = self._standby, None
        if standby is not None:
            standby.release()
        else:
            threading.Thread(target=self._lead, name="portico-reader", daemon=True).start()
        return True

    def _wait_as_standby(self) -> bool:
        """After a call: wait to lead again if no thread is standing by; else end this thread."""
        with self._roles:
            self._running_inline -= 1
            if self._standby is not None or self._done.is_set():
                return False
            turn = self._standby = threading.Lock()
            turn.acquire()
        turn.acquire()  # released by the next hand-over, or by _stop
        return not self._done.is_set()

    def _stop(self, status: int) -> None:
        with self._roles:
            self._status = status
            standby, self._standby = self._standby, None
        self._done.set()
        if standby is not None:
            standby.release()

    def dispatch(self, header: dict[str, Any]) -> _Work | None:
        """Handle one request; returns the sync call the reading thread should run, if any."""
        op = header.get("op")
        handler = self._handlers.get(op) if isinstance(op, str) else None
        if handler is None:
            self._bad_request(header, f"unknown op {op!r}" if op is not None else "the frame has no 'op'")
            return None
        try:
            return handler(header)
        except _Refusal as refusal:
            # Only requests reach here; their `id` is their own (credit/cancel log instead).
            if refusal.code == "bad_request" and header.get("op") not in _REQUESTS:
                log(f"ignored {op} frame: {refusal.message}")
            else:
                self._bad_request(header, refusal.message, refusal)

    def _bad_request(self, header: dict[str, Any], message: str, refusal: _Refusal | None = None) -> None:
        request_id = header.get("id")
        if _is_request_id(request_id):
            self.send(self._error_header(request_id, refusal or _Refusal("bad_request", message)))
        else:
            log(f"bad request without an id ({message}): {str(header)[:200]}")

    @staticmethod
    def _field(header: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        value = header.get(name)
        if value is None:  # absent or null: the default, if the field has one
            value = default
        if value is ... or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise _Refusal("bad_request", f"{header.get('op')}: field {name!r} is missing or has the wrong type")
        return value

    def _request_id(self, header: dict[str, Any]) -> Any:
        request_id = header.get("id")
        if not _is_request_id(request_id):
            raise _Refusal("bad_request", f"{header.get('op')}: field 'id' must be a number")
        return request_id

    # -- resolve --------------------------------------------------------------------------------

    def _on_resolve(self, header: dict[str, Any]) -> None:
        request_id = self._request_id(header)
        module = self._field(header, "module", str)
        version = header.get("version", [])
        # In the pool: importing and version methods run user code, which may be slow.
        self.pool.submit(self._resolve, request_id, module, version)

    def _resolve(self, request_id: Any, module: str, version: Any) -> None:
        try:
            cls, label = self.interface_class(module)
            resolved = _config.resolve(cls, version)
            if resolved.issues:
                raise _invalid_config(label, resolved.issues)
            self.send(
                {
                    "op": "resolved",
                    "id": request_id,
                    "module": module,
                    "kind": cls.__name__,
                    "config": resolved.config,
                    "version": resolved.version,
                }
            )
        except _Refusal as refusal:
            self.send(self._error_header(request_id, refusal))
        except BaseException as exc:  # a bug here must still answer the request
            log("resolve failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            self.send(self._error_header(request_id, _Refusal("module_error", f"Resolving {module!r} failed: {_described(exc)}")))

    # -- invalidate -----------------------------------------------------------------------------

    def _on_invalidate(self, header: dict[str, Any]) -> None:
        request_id = self._request_id(header)
        modules = self._field(header, "modules", list)
        if not all(isinstance(name, str) and name for name in modules):
            raise _Refusal("bad_request", "invalidate: field 'modules' must be a list of module names")
        # In the pool: it waits for imports of these modules in progress (user code) to finish.
        self.pool.submit(self._invalidate, request_id, modules)

    def _invalidate(self, request_id: Any, modules: list[str]) -> None:
        try:
            evicted, dropped = self.invalidate(modules)
            self.send({"op": "invalidated", "id": request_id, "evicted": evicted, "dropped": dropped})
        except BaseException as exc:  # a bug here must still answer the request
            log("invalidate failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            self.send(self._error_header(request_id, _Refusal("module_error", f"Invalidating {modules!r} failed: {_described(exc)}")))

    def invalidate(self, modules: list[str]) -> tuple[list[str], list[str]]:
        """Forget ``modules`` and everything below them (``pkg`` takes ``pkg.sub`` along), after
        their source changed: the project's entries in ``sys.modules``, the cached interface
        classes, import stamps, listing and method caches, and the live instances of their
        classes. Returns ``(evicted uuids, dropped sys.modules names)``, both sorted.

        The next lookup imports the module afresh from disk; the next call on an evicted uuid
        creates a new instance (requests carry module and config). Calls running on an evicted
        instance finish on it. Modules that merely import a dropped one keep their reference.
        """

        def affected(name: str) -> bool:
            return any(name == module or name.startswith(module + ".") for module in modules)

        names = sorted({name for name in list(self._import_locks) if affected(name)} | set(modules))
        # Holding each module's import lock lets an import in progress finish first; otherwise it
        # could cache the class it is building after we cleared the cache.
        locks = [self._import_locks.setdefault(name, threading.Lock()) for name in names]
        for lock in locks:
            lock.acquire()
        try:
            for cache in (self._classes, self._stamps):
                for name in [name for name in list(cache) if affected(name)]:
                    cache.pop(name, None)
            dropped = []
            for name, loaded in list(sys.modules.items()):
                if affected(name) and self._inside_project(_module_location(loaded)):
                    sys.modules.pop(name, None)
                    dropped.append(name)
            for path, (_mtime, entry) in list(self._listing.items()):
                if affected(entry["module"]):
                    self._listing.pop(path, None)
            for key in [key for key in list(self._methods) if affected(getattr(key[0], "__module__", ""))]:
                self._methods.pop(key, None)
            with self._instances_lock:
                evicted = [uuid for uuid, instance in self.instances.items() if affected(type(instance.obj).__module__)]
                for uuid in evicted:
                    del self.instances[uuid]
            importlib.invalidate_caches()  # the finders' directory listings (a file moved or appeared)
        finally:
            for lock in locks:
                lock.release()
        return sorted(evicted), sorted(dropped)

    # -- modules --------------------------------------------------------------------------------

    def _inside_project(self, path: str | None) -> bool:
        return inside_project(self.project, path)

    def _import(self, module: str) -> Any:
        imported = import_project_module(self.project, module, self.search_path)
        stamp = _stamp(getattr(imported, "__file__", None))
        if stamp is not None:
            self._stamps[module] = stamp
        return imported

    def _unchanged(self, module: str) -> bool:
        """Whether ``module``'s file is still the one we imported (True if we never did)."""
        stamp = self._stamps.get(module)
        return stamp is None or _stamp(stamp[0]) == stamp

    def interface_class(self, module: str) -> tuple[type[Interface], str]:
        """The interface class of ``module`` and its label ``module.Class`` (cached).

        When the module's file changed since it was imported, the module is imported afresh
        (a new module object) and its new class is used from then on: by ``resolve``,
        ``schema``, ``modules`` and instances created later. Instances that exist keep their
        class. Only the module's own file is watched, not the modules it imports.
        """
        cached = self._classes.get(module)
        if cached is not None and self._unchanged(module):
            return cached
        # One lock per module, so that two requests never both drop and re-import a changed module;
        # a slow import still holds up no other module.
        with self._import_locks.setdefault(module, threading.Lock()):
            if not self._unchanged(module):
                self._forget(module)
            cached = self._classes.get(module)
            if cached is None:
                cls = _select_interface(module, self._import(module))
                cached = self._classes[module] = (cls, f"{module}.{cls.__name__}")
            return cached

    def _forget(self, module: str) -> None:
        stamp = self._stamps.pop(module, None)
        self._classes.pop(module, None)
        loaded = sys.modules.get(module)
        if stamp is not None and loaded is not None and getattr(loaded, "__file__", None) == stamp[0]:
            del sys.modules[module]
        importlib.invalidate_caches()

    def _on_modules(self, header: dict[str, Any]) -> None:
        request_id = self._request_id(header)
        self.pool.submit(self._modules, request_id)  # importing runs user code

    def _modules(self, request_id: Any) -> None:
        try:
            listing: dict[str, tuple[int, dict[str, Any]]] = {}
            entries = []
            for module, path in _discovery.find_modules(self.project):
                try:
                    mtime = os.stat(path).st_mtime_ns
                except OSError:  # removed while we walked
                    continue
                cached = self._listing.get(path)
                # A cached failure is stale once the module loaded (e.g. `resolve` after a broken
                # dependency was fixed); asking again then costs no import.
                if cached is not None and cached[0] == mtime and not (cached[1]["error"] and module in self._classes):
                    imported = cached[1]
                else:
                    imported = self._import_for_listing(module)
                listing[path] = (mtime, imported)
                entry = {key: value for key, value in imported.items() if key != "esm"}
                # The sibling file is looked for every time: adding one changes no module's mtime.
                entry["widget"] = imported["kind"] is not None and (imported["esm"] or _reflect.has_sibling(path, "esm"))
                entries.append(entry)
            self._listing = listing
            self.send({"op": "modules", "id": request_id, "modules": entries})
        except BaseException as exc:  # a bug here must still answer the request
            log("modules failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            self.send(self._error_header(request_id, _Refusal("module_error", f"Listing modules failed: {_described(exc)}")))

    def _import_for_listing(self, module: str) -> dict[str, Any]:
        """What importing ``module`` tells ``modules``: ``{module, kind, doc, error, esm}``."""
        try:
            cls, _ = self.interface_class(module)
        except _Refusal as refusal:
            return {"module": module, "kind": None, "doc": self._loaded_doc(module), "error": _one_line(refusal.message), "esm": False}
        except BaseException as exc:
            log(f"listing {module!r} failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            return {"module": module, "kind": None, "doc": None, "error": _one_line(f"Module {module!r}: {_described(exc)}"), "esm": False}
        doc = _reflect.own_doc(cls) or self._loaded_doc(module)
        esm = _reflect.declared_asset(cls, "esm") is not None
        return {"module": module, "kind": cls.__name__, "doc": doc, "error": None, "esm": esm}

    def _loaded_doc(self, module: str) -> str | None:
        """The docstring of ``module`` when it is imported (from the project)."""
        loaded = sys.modules.get(module)
        return _reflect.module_doc(loaded) if loaded is not None and self._inside_project(getattr(loaded, "__file__", None)) else None

    def _on_schema(self, header: dict[str, Any]) -> None:
        request_id = self._request_id(header)
        module = self._field(header, "module", str)
        self.pool.submit(self._schema, request_id, module)  # importing runs user code

    def _schema(self, request_id: Any, module: str) -> None:
        try:
            cls, _ = self.interface_class(module)
            source_file, source_line = _reflect.source_location(cls, self.project)
            header = {
                "op": "schema",
                "id": request_id,
                "module": module,
                "kind": cls.__name__,
                "doc": _reflect.own_doc(cls),
                "config_schema": _jsonschema.config_schema(getattr(cls, "Config", None)),
                "config_fields": _fields.config_fields(getattr(cls, "Config", None)),
                "version_methods": _reflect.version_methods(cls),
                "methods": [self._describe_method(cls, name) for name in _remote_method_names(cls)],
                "widget": _reflect.widget_info(cls, getattr(sys.modules.get(module), "__file__", None)),
                "source_file": source_file,
                "source_line": source_line,
            }
            self.send(header)
        except _Refusal as refusal:
            self.send(self._error_header(request_id, refusal))
        except BaseException as exc:  # a bug here must still answer the request
            log("schema failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            self.send(self._error_header(request_id, _Refusal("module_error", f"Describing {module!r} failed: {_described(exc)}")))

    @staticmethod
    def _describe_method(cls: type, name: str) -> dict[str, Any]:
        return {**_reflect.describe_callable(cls, name, returns=True), "kind": _method_kind(getattr(cls, name))}

    # -- instances ------------------------------------------------------------------------------

    def instance(self, uuid: str, module: str, config: dict[str, Any]) -> _Instance:
        """The cached instance for ``uuid``, created (once, even under concurrent calls) if needed."""
        with self._instances_lock:
            existing = self.instances.get(uuid)
            if existing is not None:
                return existing
            pending = self._pending.get(uuid)
            owner = pending is None
            if pending is None:
                pending = self._pending[uuid] = _Pending()
        if not owner:
            pending.ready.wait()
            if pending.error is not None:
                raise _Refusal(pending.error.code, pending.error.message, **pending.error.extra)
            assert pending.instance is not None
            return pending.instance
        try:
            pending.instance = self._create(uuid, module, config)
            with self._instances_lock:
                self.instances[uuid] = pending.instance
            return pending.instance
        except BaseException as exc:
            pending.error = (
                exc
                if isinstance(exc, _Refusal)
                else _Refusal("call_failed", f"Creating instance {uuid} failed: {_described(exc)}", exception=type(exc).__name__)
            )
            raise
        finally:
            with self._instances_lock:
                self._pending.pop(uuid, None)
            pending.ready.set()

    def _create(self, uuid: str, module: str, config: dict[str, Any]) -> _Instance:
        cls, label = self.interface_class(module)
        return _Instance(create_instance(cls, label, uuid, config, self.project, self._emit, push=self._push), label)

    def _on_release(self, header: dict[str, Any]) -> None:
        uuid = header.get("uuid")
        if not isinstance(uuid, str):
            raise _Refusal("bad_request", "release: field 'uuid' must be a string")
        with self._instances_lock:
            self.instances.pop(uuid, None)

    def _on_shutdown(self, header: dict[str, Any]) -> None:
        raise _Exit()

    # -- calls ----------------------------------------------------------------------------------

    def _on_call(self, header: dict[str, Any]) -> _Work | None:
        request_id, uuid, module, config = self._instance_fields(header)
        method = self._field(header, "method", str)
        args = self._field(header, "args", list, [])
        kwargs = self._field(header, "kwargs", dict, {})
        stream = self._field(header, "stream", bool, False)
        call = self._register(request_id, method)
        return self._begin(call, uuid, module, config, lambda instance: self._start(call, instance, args, kwargs, stream))

    def _instance_fields(self, header: dict[str, Any]) -> tuple[Any, str, str, dict[str, Any]]:
        """``id``, ``uuid``, ``module`` and ``config`` of a request addressed to an instance."""
        request_id = self._request_id(header)
        return request_id, self._field(header, "uuid", str), self._field(header, "module", str), self._field(header, "config", dict, {})

    def _register(self, request_id: Any, method: str) -> _Call:
        """A new running call (cancellable, creditable) for ``request_id``."""
        if request_id in self.calls:
            raise _Refusal("bad_request", f"id {request_id} is already in use by a running call")
        call = self.calls[request_id] = _Call(request_id, method)
        return call

    def _begin(
        self, call: _Call, uuid: str, module: str, config: dict[str, Any], start: Callable[[_Instance], _Work | None]
    ) -> _Work | None:
        """Run ``start`` with the instance for ``uuid``: here if it exists (returning the sync
        work ``start`` hands back, for the reading thread), else in the pool once created."""
        instance = self.instances.get(uuid)
        if instance is None:
            # Creating runs imports and __init__: user code, so not on this thread.
            self.pool.submit(self._create_then, call, uuid, module, config, start)
            return None
        try:
            return start(instance)
        except _Refusal as refusal:
            self._fail(call, refusal)
        except Exception as exc:  # a hook's generator function refusing its argument, say
            self._fail_raised(call, exc)
        return None

    def _create_then(
        self, call: _Call, uuid: str, module: str, config: dict[str, Any], start: Callable[[_Instance], _Work | None]
    ) -> None:
        try:
            if call.done:
                return
            work = start(self.instance(uuid, module, config))
            if work is not None:
                work()
        except _Refusal as refusal:
            self._fail(call, refusal)
        except BaseException as exc:
            self._fail_raised(call, exc)

    def _method(self, instance: _Instance, name: str) -> _Method:
        cls = type(instance.obj)
        entry = self._methods.get((cls, name))
        if entry is None:
            try:
                entry = self._inspect_method(instance, name)
            except _Refusal as refusal:
                entry = (refusal.code, refusal.message)
            self._methods[(cls, name)] = entry
        if isinstance(entry, tuple):
            raise _Refusal(*entry)
        return entry

    def _inspect_method(self, instance: _Instance, name: str) -> _Method:
        _check_remote(type(instance.obj), instance.label, name)
        bound = getattr(instance.obj, name)
        try:
            signature: inspect.Signature | None = inspect.signature(bound)
        except (TypeError, ValueError):  # builtins without a signature: let the call decide
            signature = None
        return _Method(_method_kind(bound), signature)

    def _start(self, call: _Call, instance: _Instance, args: list[Any], kwargs: dict[str, Any], stream: bool) -> _Work | None:
        """Check the call and hand it to the loop or the pool; a plain sync method is returned
        instead, for the caller to run on its own thread (never runs user code itself)."""
        method = self._method(instance, call.method)
        if method.signature is not None:
            try:
                method.signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise _Refusal("invalid_argument", f"Invalid arguments for {call.method}(): {exc}") from None
        if method.kind in (_GEN, _AGEN) and not stream:
            raise _streaming_unsupported(call)
        bound = getattr(instance.obj, call.method)
        if method.kind == _SYNC:
            return functools.partial(self._run_sync, call, bound, args, kwargs, stream)
        if method.kind == _ASYNC:
            self._submit_coroutine(call, self._run_coroutine(call, bound, args, kwargs, stream))
        elif method.kind == _GEN:
            self.pool.submit(self._drive_sync, call, bound(*args, **kwargs))  # creating it runs no user code
        else:
            self._submit_coroutine(call, self._drive_async(call, bound(*args, **kwargs)))
        return None

    def _submit_coroutine(self, call: _Call, coroutine: collections.abc.Coroutine[Any, Any, None]) -> None:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        with call.lock:
            call.future = future
            cancelled = call.done
        if cancelled:  # cancel raced us before the future existed
            future.cancel()

    def _deliver(self, call: _Call, result: Any, stream: bool, on_loop: bool) -> None:
        """Send what a plain or async method returned: a value, or a stream it handed back."""
        if inspect.iscoroutine(result):
            self._submit_coroutine(call, self._await_result(call, result, stream))
        elif isinstance(result, collections.abc.AsyncIterator):
            if stream:
                self._submit_coroutine(call, self._drive_async(call, result))
            else:
                aclose = getattr(result, "aclose", None)
                if aclose is not None:
                    asyncio.run_coroutine_threadsafe(aclose(), self.loop)
                self._fail(call, _streaming_unsupported(call))
        elif isinstance(result, collections.abc.Iterator):
            if not stream:
                _close_iterator(call, result)
                self._fail(call, _streaming_unsupported(call))
            elif on_loop:  # advancing a sync iterator would block every coroutine
                self.pool.submit(self._drive_sync, call, result)
            else:
                self._drive_sync(call, result)
        else:
            self._finish_result(call, result)

    # A pool thread running user code for a call registers itself, so that cancel can raise
    # CallCancelled in it (PyThreadState_SetAsyncExc). That is best-effort: the exception fires at
    # the next bytecode, so a long blocking C call such as time.sleep(60) completes first.

    def _run_interruptible(self, call: _Call, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> Any:
        thread_id = threading.get_ident()
        with call.lock:
            if call.done:
                raise CallCancelled()
            call.thread_id = thread_id
            _interruptible.call = call
        try:
            return fn(*args, **kwargs)
        finally:
            self._leave_interruptible(call, thread_id)

    def _leave_interruptible(self, call: _Call, thread_id: int) -> None:
        # A CallCancelled sent just as user code returned may still be pending: clear it under the
        # lock (after which cancel cannot send another), so it never fires in the next call this
        # pool thread runs. If it fires while we get here, catching it and retrying is enough.
        while True:
            try:
                with call.lock:
                    call.thread_id = None
                    _interruptible.call = None
                    if call.interrupt_sent:
                        _set_async_exc(thread_id, None)
                return
            except CallCancelled:
                continue

    def _run_sync(self, call: _Call, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], stream: bool) -> None:
        if call.done:  # cancelled while queued
            return
        try:
            result = self._run_interruptible(call, fn, args, kwargs)
        except BaseException as exc:
            self._fail_raised(call, exc)
            return
        self._deliver(call, result, stream, on_loop=False)

    def _drive_sync(self, call: _Call, iterator: collections.abc.Iterator[Any]) -> None:
        """Stream a sync iterator from a pool thread, never advancing it past the credit window.

        When the window is full the stream is parked and its thread returns to the pool, so slow
        clients cannot use up the pool; the next credit resubmits it (possibly to another thread).
        """
        finished = True
        try:
            while True:
                with call.lock:
                    if call.done:
                        return
                    if call.credits <= 0:
                        call.parked = iterator
                        finished = False
                        return
                try:
                    item = self._run_interruptible(call, next, (iterator,), {})
                except StopIteration:
                    self._finish(call, {"op": "end", "id": call.id})
                    return
                except BaseException as exc:
                    self._fail_raised(call, exc)
                    return
                if not self._send_item(call, item):
                    return
        finally:
            if finished:
                _close_iterator(call, iterator)

    async def _run_coroutine(
        self, call: _Call, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], stream: bool
    ) -> None:
        # The coroutine is created here, not by the caller, so a call cancelled before it starts
        # leaves no never-awaited coroutine behind.
        await self._await_result(call, fn(*args, **kwargs), stream)

    async def _await_result(self, call: _Call, awaitable: Any, stream: bool) -> None:
        try:
            result = await awaitable
        except asyncio.CancelledError:
            self._fail_foreign_cancel(call)
            return
        except BaseException as exc:
            self._fail_raised(call, exc)
            return
        self._deliver(call, result, stream, on_loop=True)

    def _fail_foreign_cancel(self, call: _Call) -> None:
        """A CancelledError that our cancel did not cause: the method's own code was cancelled."""
        if not call.done:
            self._fail(call, _Refusal("call_failed", f"{call.method}() raised CancelledError", exception="CancelledError"))

    async def _drive_async(self, call: _Call, iterator: collections.abc.AsyncIterator[Any]) -> None:
        """Stream an async iterator on the loop; credits wake it through an asyncio.Event."""
        call.async_wakeup = wakeup = asyncio.Event()
        try:
            while True:
                while call.credits <= 0 and not call.done:
                    wakeup.clear()
                    await wakeup.wait()
                if call.done:
                    return
                try:
                    item = await iterator.__anext__()
                except StopAsyncIteration:
                    self._finish(call, {"op": "end", "id": call.id})
                    return
                except asyncio.CancelledError:
                    self._fail_foreign_cancel(call)
                    return
                except BaseException as exc:
                    self._fail_raised(call, exc)
                    return
                if not self._send_item(call, item):
                    return
        finally:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except BaseException as exc:
                    log(f"closing the stream of {call.method}() raised {_described(exc)}")

    # -- reads ----------------------------------------------------------------------------------

    def _on_read(self, header: dict[str, Any]) -> _Work | None:
        request_id, uuid, module, config = self._instance_fields(header)
        params = header.get("params")
        params = {} if params is None else params
        block = self._field(header, "block", int, READ_BLOCK_DEFAULT)
        if not 1 <= block <= READ_BLOCK_MAX:
            raise _Refusal("bad_request", f"read: field 'block' must be between 1 and {READ_BLOCK_MAX}")
        call = self._register(request_id, "read")
        call.resume = self._drive_read
        return self._begin(call, uuid, module, config, lambda instance: self._start_read(call, instance, params, block))

    def _start_read(self, call: _Call, instance: _Instance, params: Any, block: int) -> _Work | None:
        """Invoke the ``read`` hook the way its kind needs; a plain one is handed back to run."""
        hook = getattr(type(instance.obj), "read", None)
        if hook is None or not callable(hook):
            raise _Refusal("read_unsupported", f"{instance.label} defines no read(params) hook")
        bound = instance.obj.read
        kind = _method_kind(bound)
        if kind == _GEN:
            self.pool.submit(self._drive_read, call, _read.IterSource(bound(params), block))  # creating it runs no user code
            return None
        if kind != _SYNC and kind != _ASYNC:
            self._submit_coroutine(call, self._drive_read_async(call, _read.AsyncIterSource(bound(params), block)))
            return None
        # A plain or async read runs like any hook; what it returns is then streamed.
        return self._start_hook(call, instance, (params,), functools.partial(self._deliver_read, block=block))

    def _deliver_read(self, call: _Call, result: Any, block: int) -> None:
        """Stream what the ``read`` hook returned, or refuse a value a read cannot send."""
        if inspect.iscoroutine(result):
            self._submit_coroutine(call, self._await_hook(call, result, functools.partial(self._deliver_read, block=block)))
            return
        try:
            source = _read.source_for(result, block)
        except _read.WrongType as exc:
            self._fail_read(call, exc)
            return
        if isinstance(source, _read.AsyncSource):
            self._submit_coroutine(call, self._drive_read_async(call, source))
        elif _on_event_loop():  # reading a file or advancing a sync iterator would block every coroutine
            self.pool.submit(self._drive_read, call, source)
        else:
            self._drive_read(call, source)

    def _fail_read(self, call: _Call, exc: BaseException) -> None:
        if isinstance(exc, _read.WrongType):
            self._fail(call, _Refusal("call_failed", str(exc), exception="TypeError"))
        elif isinstance(exc, FileNotFoundError):
            self._fail(call, _Refusal("not_found", f"read() raised {_described(exc)}", exception=type(exc).__name__))
        else:
            self._fail_raised(call, exc)

    def _drive_read(self, call: _Call, source: _read.Source) -> None:
        """Send a sync source's chunks from a pool thread within the credit window; parked (and
        resumed by credit, like ``_drive_sync``) while the window is full."""
        finished = True
        try:
            while True:
                with call.lock:
                    if call.done:
                        return
                    if call.credits <= 0:
                        call.parked = source
                        finished = False
                        return
                try:
                    piece = self._run_interruptible(call, source.pull, (), {})
                except BaseException as exc:
                    self._fail_read(call, exc)
                    return
                if piece is None:
                    self._finish(call, {"op": "end", "id": call.id, "bytes": call.sent})
                    return
                sent = self._send_chunk(call, piece)
                del piece  # before the next pull: the hook may reuse or resize what it yielded
                if not sent:
                    return
        finally:
            if finished:
                _close_iterator(call, source)

    def _chunk_head(self, call: _Call, size: int) -> bytes:
        return _read.chunk_head(dumps({"op": "chunk", "id": call.id}).encode("utf-8"), size)

    def _send_chunk(self, call: _Call, piece: memoryview) -> bool:
        """Write one chunk (blocking until it is in the pipe); False when the read has ended."""
        size = len(piece)

        def admit() -> bool:  # runs while no other frame can be written
            with call.lock:
                if call.done:
                    return False
                call.credits -= 1
                call.sent += size
                return True

        return self.writer.put_body(self._chunk_head(call, size), piece, admit)

    def _send_chunk_copy(self, call: _Call, piece: memoryview) -> bool:
        """``_send_chunk`` for a small chunk on the event loop: a copy, but no waiting for a thread."""
        frame = self._chunk_head(call, len(piece)) + piece
        with call.lock:
            if call.done:
                return False
            call.credits -= 1
            call.sent += len(piece)
            self.writer.put(frame)
        return True

    async def _drive_read_async(self, call: _Call, source: _read.AsyncSource) -> None:
        """Send an async source's chunks from the loop; credits wake it like ``_drive_async``."""
        call.async_wakeup = wakeup = asyncio.Event()
        try:
            while True:
                while call.credits <= 0 and not call.done:
                    wakeup.clear()
                    await wakeup.wait()
                if call.done:
                    return
                try:
                    piece = await source.pull()
                except asyncio.CancelledError:
                    self._fail_foreign_cancel(call)
                    return
                except BaseException as exc:
                    self._fail_read(call, exc)
                    return
                if piece is None:
                    self._finish(call, {"op": "end", "id": call.id, "bytes": call.sent})
                    return
                if len(piece) <= ASYNC_INLINE_CHUNK:
                    sent = self._send_chunk_copy(call, piece)
                else:
                    sent = await self.loop.run_in_executor(self.pool, self._send_chunk, call, piece)
                del piece
                if not sent:
                    return
        finally:
            try:
                await source.aclose()
            except BaseException as exc:
                log(f"closing the source of read() raised {_described(exc)}")

    # -- widgets --------------------------------------------------------------------------------

    def _on_widget_get(self, header: dict[str, Any]) -> _Work | None:
        request_id, uuid, module, config = self._instance_fields(header)
        call = self._register(request_id, "widget_state")
        return self._begin(call, uuid, module, config, lambda instance: self._start_hook(call, instance, (), self._finish_state))

    def _on_widget_set(self, header: dict[str, Any]) -> _Work | None:
        request_id, uuid, module, config = self._instance_fields(header)
        changes = self._field(header, "changes", dict)
        call = self._register(request_id, "widget_update")

        def finish(call: _Call, normalized: Any) -> None:
            self._finish_changes(call, changes if normalized is None else normalized)

        return self._begin(call, uuid, module, config, lambda instance: self._start_hook(call, instance, (changes,), finish))

    def _on_widget_msg(self, header: dict[str, Any]) -> _Work | None:
        request_id, uuid, module, config = self._instance_fields(header)
        content = header.get("content")
        encoded = self._field(header, "buffers", list, [])
        try:
            buffers = [base64.b64decode(item, validate=True) for item in encoded]
        except (TypeError, ValueError, binascii.Error):
            raise _Refusal("bad_request", "widget_msg: field 'buffers' must be a list of base64 strings") from None
        call = self._register(request_id, "widget_message")
        finish = lambda call, reply: self._finish_result(call, {"reply": reply, "has_reply": reply is not None})  # noqa: E731
        return self._begin(call, uuid, module, config, lambda instance: self._start_hook(call, instance, (content, buffers), finish))

    def _start_hook(
        self, call: _Call, instance: _Instance, args: tuple[Any, ...], finish: Callable[[_Call, Any], None]
    ) -> _Work | None:
        """Run the hook ``call.method`` like a call: a plain one is handed back to run on a
        thread, a coroutine goes to the loop; ``finish`` sends what it returned."""
        bound = getattr(instance.obj, call.method)
        if inspect.iscoroutinefunction(bound):
            self._submit_coroutine(call, self._call_hook_async(call, bound, args, finish))
            return None
        return functools.partial(self._run_hook, call, bound, args, finish)

    async def _call_hook_async(self, call: _Call, fn: Callable[..., Any], args: tuple[Any, ...], finish: Callable[[_Call, Any], None]) -> None:
        # The coroutine is made here, so a hook cancelled before it starts leaves none un-awaited.
        try:
            awaitable = fn(*args)
        except BaseException as exc:
            self._fail_hook(call, exc)
            return
        await self._await_hook(call, awaitable, finish)

    def _run_hook(self, call: _Call, fn: Callable[..., Any], args: tuple[Any, ...], finish: Callable[[_Call, Any], None]) -> None:
        if call.done:  # cancelled while queued
            return
        try:
            result = self._run_interruptible(call, fn, args, {})
        except BaseException as exc:
            self._fail_hook(call, exc)
            return
        if inspect.iscoroutine(result):
            self._submit_coroutine(call, self._await_hook(call, result, finish))
        else:
            finish(call, result)

    async def _await_hook(self, call: _Call, awaitable: Any, finish: Callable[[_Call, Any], None]) -> None:
        try:
            result = await awaitable
        except asyncio.CancelledError:
            self._fail_foreign_cancel(call)
            return
        except BaseException as exc:
            self._fail_hook(call, exc)
            return
        finish(call, result)

    def _fail_hook(self, call: _Call, exc: BaseException) -> None:
        if call.method == "read":
            self._fail_read(call, exc)
        elif isinstance(exc, ReadOnly):
            self._fail(call, _Refusal("read_only", str(exc) or "the widget is read-only", exception=type(exc).__name__))
        elif call.method == "widget_update" and isinstance(exc, (ValueError, TypeError)):
            self._fail(call, _Refusal("invalid_argument", f"widget_update() refused the changes: {_described(exc)}", exception=type(exc).__name__))
        else:
            self._fail_raised(call, exc)

    def _finish_state(self, call: _Call, state: Any) -> None:
        if not isinstance(state, collections.abc.Mapping):
            self._fail(call, _Refusal("call_failed", f"widget_state() returned {_type_name(state)}; it must return a dict", exception="TypeError"))
            return
        self._finish_result(call, {"state": state})

    def _finish_changes(self, call: _Call, changes: Any) -> None:
        if not isinstance(changes, collections.abc.Mapping):
            message = f"widget_update() returned {_type_name(changes)}; it must return a dict of changes or None"
            self._fail(call, _Refusal("call_failed", message, exception="TypeError"))
            return
        self._finish_result(call, {"changes": changes})

    def _on_widget_assets(self, header: dict[str, Any]) -> None:
        request_id = self._request_id(header)
        module = self._field(header, "module", str)
        self.pool.submit(self._widget_assets, request_id, module)  # importing runs user code

    def _widget_assets(self, request_id: Any, module: str) -> None:
        try:
            cls, label = self.interface_class(module)
            module_file = getattr(sys.modules.get(module), "__file__", None)
            reply: dict[str, Any] = {"op": "widget_assets", "id": request_id}
            for asset in _reflect.WIDGET_SIBLINGS:
                reply[asset] = self._asset(label, asset, _reflect.widget_asset(cls, module_file, asset))
            self.send(reply)
        except _Refusal as refusal:
            self.send(self._error_header(request_id, refusal))
        except BaseException as exc:  # a bug here must still answer the request
            log("widget_assets failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            self.send(self._error_header(request_id, _Refusal("module_error", f"Finding the widget of {module!r} failed: {_described(exc)}")))

    def _asset(self, label: str, asset: str, found: tuple[str, str] | None) -> dict[str, str] | None:
        """The reply's ``esm`` / ``css``: null, ``{inline}``, or ``{path}`` of a file inside the project."""
        if found is None:
            return None
        form, value = found
        if form == "inline":
            return {"inline": value}
        real, root = os.path.realpath(value), os.path.realpath(self.project)
        if not inside_project(root, real):
            raise _Refusal("forbidden", f"The widget {asset} of {label} ({value}) lies outside the project")
        if not os.path.isfile(real):
            raise _Refusal("not_found", f"The widget {asset} of {label} names {value}, which is not a file")
        return {"path": real}

    def _on_credit(self, header: dict[str, Any]) -> None:
        n = header.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise _Refusal("bad_request", "credit: field 'n' must be a non-negative integer")
        call = self.calls.get(header.get("id"))
        if call is None:  # finished, or never existed: credit for it is meaningless
            return
        with call.lock:
            call.credits += n
            parked, call.parked = call.parked, None
        if parked is not None:
            self.pool.submit(call.resume or self._drive_sync, call, parked)
        wakeup = call.async_wakeup
        if wakeup is not None:
            self.loop.call_soon_threadsafe(wakeup.set)

    def _on_cancel(self, header: dict[str, Any]) -> None:
        call = self.calls.get(header.get("id"))
        if call is None:  # finished already: its normal end won the race
            return
        frame = encode_frame(self._error_header(call.id, _Refusal("cancelled", f"{call.method}() was cancelled")))
        with call.lock:
            if call.done:
                return
            call.done = True
            self.writer.put(frame)
            if call.thread_id is not None:
                _set_async_exc(call.thread_id, CallCancelled)
                call.interrupt_sent = True
            future = call.future
            parked, call.parked = call.parked, None
        self.calls.pop(call.id, None)
        if parked is not None:  # a stream waiting for credit: close it (its finally blocks are user code)
            self.pool.submit(_close_iterator, call, parked)
        if future is not None:
            future.cancel()  # cancels the task on the loop (coroutine or async generator)


def _close_iterator(call: _Call, iterator: Any) -> None:
    close = getattr(iterator, "close", None)
    if close is not None:
        try:
            close()
        except BaseException as exc:
            log(f"closing the stream of {call.method}() raised {_described(exc)}")


def _invalid_config(label: str, issues: list[_config.Issue]) -> _Refusal:
    problems = "; ".join(f"{issue['path']}: {issue['message']}" if issue["path"] else issue["message"] for issue in issues)
    return _Refusal("invalid_config", f"Invalid config for {label}: {problems}", issues=issues)


def _streaming_unsupported(call: _Call) -> _Refusal:
    return _Refusal(
        "streaming_unsupported",
        f"{call.method}() streams its results; call it over the WebSocket to receive them",
    )


def _check_remote(cls: type, label: str, name: str) -> None:
    """Raise the refusal for calling ``name`` on ``cls`` remotely, unless it is allowed.

    The one rule for what is callable (calls check it; ``schema`` lists what passes it): a public
    name defined by the project's classes, not a version method or Config; or, when the class
    sets ``__api_methods__``, exactly the names listed there. Either way it must be a callable
    attribute of the class that is not a class.
    """
    missing = object()
    attr = getattr(cls, name, missing)
    if name.startswith("_"):
        raise _Refusal("method_forbidden", f"Method {name!r} is private on {label}")
    explicit = getattr(cls, "__api_methods__", None)
    if explicit is not None:
        if name not in explicit:
            if attr is missing:
                raise _Refusal("method_not_found", f"Method {name!r} not found on {label}")
            raise _Refusal("method_forbidden", f"Method {name!r} is not listed in {label}.__api_methods__")
    else:
        if not _defined_below_interface(cls, name):
            if attr is missing:
                raise _Refusal("method_not_found", f"Method {name!r} not found on {label}")
            raise _Refusal("method_forbidden", f"Method {name!r} of {label} comes from Interface and is not callable remotely")
        if name.startswith("version_") or name == "Config":
            raise _Refusal("method_forbidden", f"{name!r} on {label} is not callable remotely (versions and Config are not methods)")
        if name in _HOOKS:
            raise _Refusal("method_forbidden", f"{name!r} on {label} is a hook served by its own op, not a remotely callable method")
    if attr is missing or isinstance(attr, type) or not callable(attr):
        raise _Refusal("method_not_found", f"Method {name!r} not found on {label}")


def _remote_method_names(cls: type) -> list[str]:
    """Every name ``_check_remote`` allows on ``cls``, sorted."""
    explicit = getattr(cls, "__api_methods__", None)
    candidates = explicit if explicit is not None else dir(cls)
    names = set()
    for name in candidates:
        if not isinstance(name, str):
            continue
        try:
            _check_remote(cls, "", name)
        except _Refusal:
            continue
        names.add(name)
    return sorted(names)


def _method_kind(fn: Any) -> str:
    if inspect.isasyncgenfunction(fn):
        return _AGEN
    if inspect.iscoroutinefunction(fn):
        return _ASYNC
    if inspect.isgeneratorfunction(fn):
        return _GEN
    return _SYNC


def _stamp(path: str | None) -> tuple[str, int] | None:
    """``(path, mtime_ns)`` of a module file, or None (no file, or it is gone)."""
    if not path:
        return None
    try:
        return path, os.stat(path).st_mtime_ns
    except OSError:
        return None


def _module_location(module: Any) -> str | None:
    """The file of a loaded module, or the first folder of a namespace package."""
    location = getattr(module, "__file__", None)
    if location:
        return location
    try:
        return next(iter(getattr(module, "__path__", None) or []), None)
    except TypeError:
        return None


def _type_name(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _one_line(message: str) -> str:
    lines = message.strip().splitlines()
    return lines[0] if lines else message


def _defined_below_interface(cls: type, name: str) -> bool:
    """Whether ``name`` comes from the project's classes rather than from Interface itself."""
    for klass in cls.__mro__:
        if klass is Interface:
            return False
        if name in vars(klass):
            return True
    return False


def _select_interface(module: str, imported: Any) -> type[Interface]:
    chosen = getattr(imported, "__interface__", None)
    if chosen is not None:
        cls = getattr(imported, chosen, None) if isinstance(chosen, str) else chosen
        if isinstance(cls, type) and issubclass(cls, Interface) and cls is not Interface:
            return cls
        raise _Refusal("module_error", f"Module {module!r} sets __interface__ = {chosen!r}, which is not an Interface subclass in it")
    found: list[type[Interface]] = []
    for value in vars(imported).values():
        # Only classes defined here: an imported base or sibling interface is not this module's.
        if (
            isinstance(value, type)
            and issubclass(value, Interface)
            and value is not Interface
            and value.__module__ == imported.__name__
            and value not in found
        ):
            found.append(value)
    if not found:
        raise _Refusal("module_error", f"Module {module!r} defines no Interface subclass")
    if len(found) > 1:
        names = ", ".join(cls.__name__ for cls in found)
        raise _Refusal(
            "module_error", f"Module {module!r} defines several Interface subclasses ({names}); set __interface__ = \"Name\" to pick one"
        )
    return found[0]


# -- module lookup and instance creation, shared with run.py ------------------------------------


def project_search_path(project: str) -> list[str]:
    """Where ``project``'s modules are looked up, in order: the project, then its fetched remotes."""
    return [project, os.path.join(project, REMOTES_DIR)]


def inside_project(project: str, path: str | None) -> bool:
    """Whether ``path`` lies in the directory ``project`` (an absolute path)."""
    if not path:
        return False
    path = os.path.abspath(path)
    try:
        return os.path.commonpath([path, project]) == project
    except ValueError:  # different drives
        return False


def check_module_name(project: str, module: str) -> list[str]:
    """The parts of the dotted name ``module``; refuses what cannot name a project module."""
    parts = module.split(".")
    if not module or not all(part.isidentifier() and not part.startswith("__") for part in parts):
        raise _Refusal("module_not_found", f"Module {module!r} not found in project {project}: not a dotted module name")
    return parts


def import_project_module(
    project: str, module: str, search_path: list[str] | None = None, report: Callable[[str], None] = log
) -> Any:
    """Import ``module`` from ``project`` (or its fetched remotes) and nowhere else.

    Raises ``_Refusal``: ``module_not_found``, or ``module_error`` when importing raised (the
    traceback goes to ``report``) or the name resolves to a module outside the project.
    """
    search_path = project_search_path(project) if search_path is None else search_path
    parts = check_module_name(project, module)
    # Search only the project directory and its fetched remotes for the top-level name, so
    # that a request can never import (and run) a stdlib or installed module: "os" or "json"
    # are simply not found. sys.path starts with the same two directories (see _prepare).
    finder = importlib.machinery.PathFinder
    if finder.find_spec(parts[0], search_path) is None:
        importlib.invalidate_caches()  # the file may have been created after start-up
        if finder.find_spec(parts[0], search_path) is None:
            raise _Refusal("module_not_found", f"Module {module!r} not found in project {project}")
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
            raise _Refusal("module_not_found", f"Module {module!r} not found in project {project}") from None
        raise _import_failed(module, exc, report) from None
    except BaseException as exc:
        raise _import_failed(module, exc, report) from None
    # The project's module may be shadowed by one imported earlier from elsewhere
    # (a project `json.py` versus the stdlib json the worker already uses).
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        loaded = sys.modules.get(name)
        location = _module_location(loaded)
        if not inside_project(project, location):
            raise _Refusal(
                "module_error",
                f"Module {name!r} resolves to {location or 'a built-in module'}, outside project {project} "
                "(a module of that name was imported before); rename the project module",
            )
    return imported


def _import_failed(module: str, exc: BaseException, report: Callable[[str], None]) -> _Refusal:
    report(f"module {module!r} failed to import:\n" + "".join(traceback.format_exception(exc)).rstrip())
    return _Refusal("module_error", f"Module {module!r} failed to import: {_described(exc)}", exception=type(exc).__name__)


def create_instance(
    cls: type[Interface],
    label: str,
    uuid: str,
    config: dict[str, Any],
    project: str,
    emit: Callable[[str | None, Any], None],
    report: Callable[[str], None] = log,
    push: Callable[[str | None, str, dict[str, Any], list[bytes] | None], None] | None = None,
) -> Interface:
    """An instance of ``cls`` bound to ``uuid``, ``config`` (checked against the class) and
    ``project``, with ``emit`` as its event sink and ``push`` as its widget push sink (None: pushes
    are checked and dropped); ``__init__()`` runs with all of that bound.

    Raises ``_Refusal``: ``invalid_config``, or ``call_failed`` when ``__init__`` raised (the
    traceback goes to ``report``).
    """
    resolved, issues = _config.check_config(cls, config)
    if issues:
        raise _invalid_config(label, issues)
    obj = cls.__new__(cls)
    binding = Binding(uuid=uuid, config=ConfigView(resolved), project=project, emit=emit)
    attach(obj, binding if push is None else dataclasses.replace(binding, push=push))
    try:
        obj.__init__()
    except BaseException as exc:
        report(f"{label}.__init__() raised:\n" + "".join(traceback.format_exception(exc)).rstrip())
        raise _Refusal("call_failed", f"{label}.__init__() raised {_described(exc)}", exception=type(exc).__name__) from None
    return obj


def use_project_path(project: str) -> None:
    """Put ``project`` and its fetched remotes first on sys.path, in place of the launch directory."""
    launch_dir = os.getcwd()
    # `python -m` put the launch directory first; the project takes its place, followed by its
    # fetched remotes, so project code imports a remote like its own module (README "Process").
    if sys.path and sys.path[0] in ("", launch_dir):
        sys.path.pop(0)
    first = project_search_path(project)
    sys.path[:] = first + [entry for entry in sys.path if os.path.abspath(entry or ".") not in first]


def _exit(status: int) -> None:
    """Leave now: pool threads may be stuck in user code, so no interpreter shutdown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(status)


def _prepare(project: str) -> None:
    use_project_path(project)
    os.chdir(project)
    for fd in (REQUEST_FD, REPLY_FD):
        os.set_inheritable(fd, False)  # processes started by user code must not hold our pipes open
    try:
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # prints reach the log promptly
    except (AttributeError, ValueError):
        pass


def _on_event_loop() -> bool:
    """Whether the calling thread runs the worker's event loop (where nothing may block)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


#: Linux F_SETPIPE_SZ (not exported by the fcntl module before Python 3.10 on every platform).
_F_SETPIPE_SZ = 1031
#: Reply pipe capacity asked for: a whole read chunk fits, so a 1 MiB chunk is one write, not sixteen.
REPLY_PIPE_BYTES = 1 << 20


def _widen_pipe(fd: int) -> None:
    """Best effort: grow the reply pipe so bulk reads stream with fewer context switches."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", _F_SETPIPE_SZ), REPLY_PIPE_BYTES)
    except (ImportError, OSError):
        pass  # not Linux, or above /proc/sys/fs/pipe-max-size: the default pipe works, only slower


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        log("usage: python -m portico.worker <project dir>")
        return 2
    project = os.path.abspath(args[0])
    if not os.path.isdir(project):
        log(f"project directory {project} does not exist")
        return 2
    try:
        os.fstat(REQUEST_FD)
        os.fstat(REPLY_FD)
    except OSError:
        log(f"fd {REQUEST_FD} and fd {REPLY_FD} must be the gateway's pipes")
        return 2
    _widen_pipe(REPLY_FD)
    _prepare(project)
    worker = Worker(project)
    try:
        status = worker.serve(FrameReader(REQUEST_FD, READ_BUFFER_BYTES))
    except BaseException as exc:
        log("worker failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
        status = 1
    worker.writer.flush(EXIT_FLUSH_SECONDS)
    _exit(status)
    return status  # not reached: _exit ends the process


if __name__ == "__main__":
    sys.exit(main())
