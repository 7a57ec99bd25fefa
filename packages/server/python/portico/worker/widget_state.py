"""Widget state that comes back: saved in the interface's folder, handed back to the next instance.

An instance whose class overrides ``widget_update`` (a served anywidget does) and does not set
``_persist_widget = False`` has what its ``widget_state()`` answers saved to
``<project>/.portico/interfaces/<uuid>/.widget-state`` after each change: a ``widget_set`` its
hook accepted, and every ``push_widget_change``. When an instance of that uuid is made again
(after an idle release, a worker restart, by another gateway on the same folder), the file is read
and given to its ``widget_update`` before anyone can use it.

- **File.** One bridge frame (``_frames.encode_frame``): the header is
  ``{"op": "widget_state", "version": 1, "state", "buffer_paths"?, "buffer_lengths"?}``, the body
  the binary values one after the other, raw (``_buffers``), exactly as ``widget_get`` answers.
- **Coalesced.** A change only marks the uuid; one saver thread writes it ``SAVE_DELAY_S`` after
  the first mark, calling ``widget_state()`` there, so a burst of changes is one write of the
  latest state and no call waits for a save. A state that encodes to the bytes this worker last
  wrote for the uuid, while that file is still there, is not written again: a ``widget_message`` that changed
  nothing costs no disk write.
- **Atomic.** Temp file in the same folder, fsync, ``os.replace`` (``_storage.atomic_write``): a
  reader, or the next worker after a crash, finds the previous file or the new one, never a torn one.
- **Exit.** ``flush`` writes what is pending, bounded (``EXIT_FLUSH_SECONDS``), before the worker
  leaves (``__main__``); a crash may lose the last ``SAVE_DELAY_S`` of changes, never the file.
- **One process at a time.** A worker that restores a uuid holds ``.widget-state.lock`` in its
  folder (``flock``, exclusive) until it lets the instance go (``let_go``: a release, a reload) or
  exits. The worker of a gateway that was killed still writes its last changes as it leaves; the
  next gateway's worker waits for that (at most ``TAKEOVER_SECONDS``) before it reads the file, so
  it never restores a state older than one the killed gateway's client was answered with.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import inspect
import os
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

try:
    import fcntl
except ImportError:  # not a POSIX system: no lock, as on a file system without locks
    fcntl = None  # type: ignore[assignment]

from .. import _storage
from .._buffers import join_body, put_buffers, split_body, split_buffers
from .._frames import BODY_MAX_BYTES, encode_frame, read_frame
from ..interface import Interface
from .protocol import described, log

__all__ = ["STATE_FILE", "WidgetStates", "decode_state", "encode_state", "persists", "state_path"]

#: The file in the interface's folder (hidden: file listings do not show it).
STATE_FILE = ".widget-state"
#: Format version in the file's header; another version is not restored.
STATE_VERSION = 1
#: How long after a change its save is written: the changes made meanwhile go in the same write.
SAVE_DELAY_S = 0.03
#: How long the worker's exit waits for pending saves (below the gateway's 2 s stop grace).
EXIT_FLUSH_SECONDS = 1.5
#: How long making an instance waits for a save of its uuid still pending (a release just before).
SETTLE_SECONDS = 2.0
#: How long an ``async def`` widget hook may take when it runs for a save or a restore.
HOOK_TIMEOUT_S = 10.0
#: Saves tried again when ``widget_state()`` raised (it may race a change on another thread).
SAVE_TRIES = 3
#: The lock file beside the state: held by the one worker process that has the instance.
LOCK_FILE = ".widget-state.lock"
#: How long making an instance waits for another process to let its state go (a worker whose
#: gateway died writes its last save first, within ``EXIT_FLUSH_SECONDS``); then it goes on.
TAKEOVER_SECONDS = 5.0


def persists(cls: type) -> bool:
    """Whether instances of ``cls`` save their widget state: it overrides ``widget_update`` (else
    the state is the config) and does not opt out with ``_persist_widget = False``."""
    return bool(getattr(cls, "_persist_widget", True)) and getattr(cls, "widget_update", None) is not Interface.widget_update


def encode_state(state: Mapping[str, Any]) -> bytes:
    """The file's bytes for ``state``: one frame, binary values raw in its body.

    Raises TypeError / ValueError for a state that is not JSON and binary values, or too big for a frame.
    """
    plain, paths, buffers = split_buffers(dict(state))
    header: dict[str, Any] = {"op": "widget_state", "version": STATE_VERSION, "state": plain}
    body = b""
    if paths:
        header["buffer_paths"] = paths
        header["buffer_lengths"], body = join_body(buffers)
        if len(body) > BODY_MAX_BYTES:
            raise ValueError(f"{len(body)} bytes of binary values exceed the {BODY_MAX_BYTES >> 20} MiB a state file may hold")
    return encode_frame(header, body)


def decode_state(stream: Any) -> dict[str, Any]:
    """The state a file holds (binary values as ``bytes``); ValueError for anything else."""
    try:
        frame = read_frame(stream)
    except Exception as exc:  # FrameError: torn or garbage
        raise ValueError(f"not a widget state file: {exc}") from None
    if frame is None:
        raise ValueError("the file is empty")
    if stream.read(1):
        raise ValueError("bytes after the state frame")
    header, body = frame
    if header.get("op") != "widget_state" or header.get("version") != STATE_VERSION:
        raise ValueError(f"not a widget state file of version {STATE_VERSION}")
    state = header.get("state")
    if not isinstance(state, dict):
        raise ValueError("its state is not an object")
    return put_buffers(state, header.get("buffer_paths", []), split_body(header.get("buffer_lengths"), body))


def state_path(project: str, uuid: str) -> str | None:
    """Where the state of ``uuid`` is saved; None for a uuid that cannot name a folder (never saved)."""
    try:
        return _storage.data_path(project, uuid, (STATE_FILE,))
    except ValueError:
        return None


@dataclass
class _Due:
    obj: Interface
    due: float  # time.monotonic() of the write
    tries: int = 0


class WidgetStates:
    """The widget state files of one project: the saver thread and the restore."""

    def __init__(self, project: str, loop: asyncio.AbstractEventLoop | None = None, delay: float = SAVE_DELAY_S) -> None:
        self.project = project
        self.loop = loop  # runs an ``async def`` hook
        self.delay = delay
        self._cond = threading.Condition()
        self._pending: dict[str, _Due] = {}  # uuid → its next save
        self._saving: str | None = None  # the uuid the saver is writing now
        self._thread: threading.Thread | None = None
        self._written: dict[str, bytes] = {}  # uuid → SHA-256 of the file as this worker last wrote it
        self._held: dict[str, int] = {}  # uuid → the descriptor of its lock file, locked by this worker
        self._letting_go: set[str] = set()  # uuids whose lock goes once their pending save is written

    # -- saving ----------------------------------------------------------------------------------

    def changed(self, uuid: str, obj: Interface) -> None:
        """``obj``'s widget state changed: save it soon (cheap; any thread)."""
        with self._cond:
            entry = self._pending.get(uuid)
            if entry is not None:
                entry.obj = obj  # the same write takes the latest state (of the latest instance)
                return
            self._pending[uuid] = _Due(obj, time.monotonic() + self.delay)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="portico-widget-save", daemon=True)
                self._thread.start()
            self._cond.notify()

    def flush(self, timeout: float) -> bool:
        """Write every pending save now; False when they were not all written within ``timeout``."""
        return self._settle(lambda: bool(self._pending) or self._saving is not None, None, timeout)

    def settle(self, uuid: str, timeout: float = SETTLE_SECONDS) -> bool:
        """Write the pending save of ``uuid`` now, if any, and wait for it (a new instance of it is
        about to read the file)."""
        return self._settle(lambda: uuid in self._pending or self._saving == uuid, uuid, timeout)

    def _settle(self, busy: Any, uuid: str | None, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            for key, entry in self._pending.items():
                if uuid is None or key == uuid:
                    entry.due = 0.0
            self._cond.notify_all()
            while busy():
                remaining = deadline - time.monotonic()
                if remaining <= 0 or threading.current_thread() is self._thread:
                    return False
                self._cond.wait(remaining)
        return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if not self._pending:
                        self._cond.wait()
                        continue
                    uuid, entry = min(self._pending.items(), key=lambda item: item[1].due)
                    wait = entry.due - time.monotonic()
                    if wait <= 0:
                        break
                    self._cond.wait(wait)
                del self._pending[uuid]
                self._saving = uuid
            try:
                self._save(uuid, entry)
            except BaseException as exc:  # never lose the thread
                log(f"saving the widget state of {uuid} failed:\n" + "".join(traceback.format_exception(exc)).rstrip())
            finally:
                with self._cond:
                    self._saving = None
                    fd = None
                    if uuid in self._letting_go and uuid not in self._pending:
                        self._letting_go.discard(uuid)
                        fd = self._held.pop(uuid, None)
                    self._cond.notify_all()
                if fd is not None:
                    os.close(fd)

    def _save(self, uuid: str, entry: _Due) -> None:
        try:
            state = self._hook(entry.obj.widget_state)
            if not isinstance(state, Mapping):
                raise TypeError(f"widget_state() returned {type(state).__name__}, not a dict")
            data = encode_state(state)
        except Exception as exc:
            entry.tries += 1
            if entry.tries < SAVE_TRIES and not isinstance(exc, (TypeError, ValueError)):
                with self._cond:  # perhaps a race with a change on another thread: once more, later
                    if uuid not in self._pending:
                        entry.due = time.monotonic() + self.delay
                        self._pending[uuid] = entry
                return
            log(f"the widget state of {uuid} was not saved: {described(exc)}")
            return
        path = state_path(self.project, uuid)
        if path is None:
            return
        digest = hashlib.sha256(data).digest()
        if self._written.get(uuid) == digest and os.path.exists(path):
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            _storage.atomic_write(path, data)  # temp file, fsync, os.replace; the temp file goes on failure
        except OSError as exc:
            self._written.pop(uuid, None)
            log(f"the widget state of {uuid} was not saved: {described(exc)}")
            return
        self._written[uuid] = digest

    def _hook(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)``; an ``async def`` hook runs on the worker's loop, waited for here."""
        result = fn(*args)
        if inspect.iscoroutine(result):
            if self.loop is None:
                result.close()
                raise TypeError(f"{fn.__name__}() is async and no event loop runs it")
            future = asyncio.run_coroutine_threadsafe(result, self.loop)
            try:
                return future.result(HOOK_TIMEOUT_S)
            except concurrent.futures.TimeoutError:
                future.cancel()
                raise
        return result

    # -- holding ---------------------------------------------------------------------------------

    def hold(self, uuid: str) -> None:
        """Hold ``uuid``'s lock file from now until ``let_go``: waits (at most ``TAKEOVER_SECONDS``)
        for another process that holds it. Nothing to hold where the file system has no locks."""
        with self._cond:
            self._letting_go.discard(uuid)
            if uuid in self._held:
                return
        path = state_path(self.project, uuid)
        if path is None or fcntl is None:
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(os.path.join(os.path.dirname(path), LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            log(f"the widget state of {uuid} is restored without its lock: {described(exc)}")
            return
        deadline = time.monotonic() + TAKEOVER_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    log(f"the widget state of {uuid} is still held by another process after {TAKEOVER_SECONDS:g} s; restoring it without waiting longer")
                    os.close(fd)
                    return
                time.sleep(0.01)
            except OSError:  # a file system without locks (some network mounts)
                os.close(fd)
                return
        with self._cond:
            if uuid in self._held:  # another thread of this worker took it meanwhile
                os.close(fd)
            else:
                self._held[uuid] = fd

    def let_go(self, uuid: str) -> None:
        """This worker no longer has ``uuid``'s instance: its lock goes once a pending save is written."""
        with self._cond:
            if uuid not in self._held:
                return
            if uuid in self._pending or self._saving == uuid:
                self._letting_go.add(uuid)
                return
            fd = self._held.pop(uuid)
        os.close(fd)

    # -- restoring -------------------------------------------------------------------------------

    def restore(self, uuid: str, obj: Interface) -> bool:
        """Give ``obj`` (new, not yet published) the state saved for ``uuid`` through its
        ``widget_update``; True when it took it. Only the keys whose saved value differs from
        what the new instance's ``widget_state()`` answers are handed over, as a page would set
        them: a hook that refuses read-only keys (config shown as state) still takes the rest.
        A missing file is nothing to restore; a bad file or a hook that raises is logged, the
        file left as it is."""
        path = state_path(self.project, uuid)
        if path is None:
            return False  # such a uuid never saves either
        self.hold(uuid)  # another process still writing its last save of this uuid goes first
        self.settle(uuid)  # a save of the instance this one replaces, still pending
        try:
            with open(path, "rb") as stream:
                state = decode_state(stream)
        except FileNotFoundError:
            return False
        except (OSError, ValueError) as exc:
            log(f"the saved widget state of {uuid} ({path}) was not restored: {exc}")
            return False
        try:
            changes = _changed_keys(state, self._hook(obj.widget_state))
            if changes:
                self._hook(obj.widget_update, changes)
        except Exception as exc:
            log(
                f"the saved widget state of {uuid} was not restored: widget_update() raised {described(exc)}\n"
                + "".join(traceback.format_exception(exc)).rstrip()
            )
            return False
        return True


def _changed_keys(saved: dict[str, Any], fresh: Any) -> dict[str, Any]:
    """The entries of ``saved`` that ``fresh`` (a new instance's state) lacks or holds otherwise;
    all of ``saved`` when ``fresh`` is no mapping. A value that cannot be compared counts as changed."""
    if not isinstance(fresh, Mapping):
        return dict(saved)
    changes = {}
    for key, value in saved.items():
        try:
            same = key in fresh and bool(fresh[key] == value)
        except Exception:
            same = False
        if not same:
            changes[key] = value
    return changes
