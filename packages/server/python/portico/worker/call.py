"""One running call (or read, or widget hook) and the thread that runs its user code.

Owns the per-call state every part of the worker shares (``Call``: credit window, terminal
frame sent, the future on the loop, a stream parked while out of credit) and the interrupt
machinery: a pool thread running user code registers itself, so that ``cancel`` can raise
``CallCancelled`` in it, and frames user code sends from that thread (events, widget pushes)
are written with the interrupt held off.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import shared
from .._read import ChunkWriter
from ..interface import CallCancelled
from .protocol import described, log

#: Items a stream (or chunks a read) may have sent and not yet had credited; the generator waits beyond that
#: (shared.json, the gateway's LIMITS.streamWindow).
STREAM_WINDOW = shared.LIMITS["stream_window"]


def set_async_exc(thread_id: int, exc: type[BaseException] | None) -> None:
    # CPython only; ``None`` clears an exception that has not been raised yet.
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc is not None else None
    )


@dataclass(eq=False, slots=True)
class Call:
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
    resume: Callable[[Call, Any], None] | None = None  # continues `parked` (default: Calls.drive_sync)
    async_wakeup: asyncio.Event | None = None
    sent: int = 0  # bytes a read sent so far
    output: Any = None  # output.CallOutput: what its user code printed, not sent yet


#: ``.call``: the call whose user code this thread runs and may interrupt (see ``put_unsolicited``).
_interruptible = threading.local()

# A pool thread running user code for a call registers itself, so that cancel can raise
# CallCancelled in it (PyThreadState_SetAsyncExc). That is best-effort: the exception fires at
# the next bytecode, so a long blocking C call such as time.sleep(60) completes first.


def run_interruptible(call: Call, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> Any:
    """``fn(*args, **kwargs)`` on this thread, where ``cancel`` of ``call`` may interrupt it."""
    thread_id = threading.get_ident()
    with call.lock:
        if call.done:
            raise CallCancelled()
        call.thread_id = thread_id
        _interruptible.call = call
    try:
        return fn(*args, **kwargs)
    finally:
        while True:  # see _leave_interruptible
            try:
                _leave_interruptible(call, thread_id)
                break
            except CallCancelled:
                continue


def _leave_interruptible(call: Call, thread_id: int) -> None:
    # A CallCancelled sent just as user code returned may still be pending: clear it under the
    # lock (after which cancel cannot send another), so it never fires in the next call this
    # pool thread runs. If it fires while we get here, catching it and retrying is enough; it
    # can fire on the way in too (at this function's entry, before its try), so callers retry
    # as well: else the thread kept this finished call as its interrupt target.
    while True:
        try:
            with call.lock:
                call.thread_id = None
                _interruptible.call = None
                if call.interrupt_sent:
                    set_async_exc(thread_id, None)
            return
        except CallCancelled:
            continue


def running_call() -> Call | None:
    """The call whose sync user code runs on this thread, if any."""
    return getattr(_interruptible, "call", None)


def put_unsolicited(writer: ChunkWriter, frame: bytes) -> None:
    """Send an event or widget push from whatever thread user code runs on."""
    call: Call | None = getattr(_interruptible, "call", None)
    if call is None:
        writer.put(frame)
        return
    # emit() from a sync method or generator: its thread may receive CallCancelled at any
    # bytecode. Landing inside the writer, it would strand the frames other threads queued
    # for it to write (a cancel's own error frame among them). So the writer runs with the
    # interrupt held off; a cancel that came before or meanwhile is raised here instead.
    with call.lock:
        thread_id, call.thread_id = call.thread_id, None
        if call.interrupt_sent and thread_id is not None:
            set_async_exc(thread_id, None)  # pending, not yet raised: we raise it below
        cancelled = call.done
    if cancelled:
        raise CallCancelled()
    try:
        writer.put(frame)
    finally:
        with call.lock:
            call.thread_id = thread_id
            cancelled = call.done
    if cancelled:
        raise CallCancelled()


def close_iterator(call: Call, iterator: Any) -> None:
    close = getattr(iterator, "close", None)
    if close is not None:
        try:
            close()
        except BaseException as exc:
            log(f"closing the stream of {call.method}() raised {described(exc)}")

