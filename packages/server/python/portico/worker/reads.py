"""Reads: the ``read`` op, streaming an instance's ``read(params)`` hook as ``chunk`` frames.

Owns turning what the hook returns into chunks (the sources are in ``_read.py``), the credit
window for chunks (the one of streams), and the write path that sends a file's blocks to the
pipe without copying them in Python.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
from typing import Any

from .. import _read, shared
from .._json import dumps
from . import protocol
from .call import Call, run_interruptible
from .calls import Calls
from .instances import Instance
from .methods import ASYNC, GEN, SYNC, method_kind
from .pipe import Pipe, Work
from .protocol import Refusal, described, log

#: A read's chunk size when the request names none (shared.json, the block the gateway asks for), and the largest it may name.
READ_BLOCK_DEFAULT = shared.LIMITS["read_block_bytes"]
READ_BLOCK_MAX = 64 * 1024 * 1024
#: A chunk of an async read at most this big is written from the event loop; a bigger one is
#: written by a pool thread, so that a slow pipe never holds up every coroutine for long.
ASYNC_INLINE_CHUNK = 64 * 1024


class Reads:
    """Runs ``read`` requests through the machinery of calls."""

    def __init__(
        self, pipe: Pipe, pool: concurrent.futures.ThreadPoolExecutor, loop: asyncio.AbstractEventLoop, calls: Calls
    ) -> None:
        self.writer = pipe.writer
        self.pool = pool
        self.loop = loop
        self.calls = calls

    def on_read(self, header: dict[str, Any]) -> Work | None:
        request_id, uuid, module, config = protocol.instance_fields(header)
        params = header.get("params")
        params = {} if params is None else params
        block = protocol.field(header, "block", int, READ_BLOCK_DEFAULT)
        if not 1 <= block <= READ_BLOCK_MAX:
            raise Refusal("bad_request", f"read: field 'block' must be between 1 and {READ_BLOCK_MAX}")
        call = self.calls.register(request_id, "read")
        call.resume = self._drive_read
        return self.calls.begin(call, uuid, module, config, lambda instance: self._start_read(call, instance, params, block))

    def _start_read(self, call: Call, instance: Instance, params: Any, block: int) -> Work | None:
        """Invoke the ``read`` hook the way its kind needs; a plain one is handed back to run."""
        hook = getattr(type(instance.obj), "read", None)
        if hook is None or not callable(hook):
            raise Refusal("read_unsupported", f"{instance.label} defines no read(params) hook")
        bound = instance.obj.read
        kind = method_kind(bound)
        if kind == GEN:
            self.pool.submit(self._drive_read, call, _read.IterSource(bound(params), block))  # creating it runs no user code
            return None
        if kind != SYNC and kind != ASYNC:
            self.calls.submit_coroutine(call, self._drive_read_async(call, _read.AsyncIterSource(bound(params), block)))
            return None
        # A plain or async read runs like any hook; what it returns is then streamed.
        deliver = functools.partial(self._deliver_read, block=block)
        return self.calls.start_hook(call, instance, (params,), deliver, self._fail_read)

    def _deliver_read(self, call: Call, result: Any, block: int) -> None:
        """Stream what the ``read`` hook returned, or refuse a value a read cannot send."""
        if inspect.iscoroutine(result):
            deliver = functools.partial(self._deliver_read, block=block)
            self.calls.submit_coroutine(call, self.calls.await_hook(call, result, deliver, self._fail_read))
            return
        try:
            source = _read.source_for(result, block)
        except _read.WrongType as exc:
            self._fail_read(call, exc)
            return
        if isinstance(source, _read.AsyncSource):
            self.calls.submit_coroutine(call, self._drive_read_async(call, source))
        elif _on_event_loop():  # reading a file or advancing a sync iterator would block every coroutine
            self.pool.submit(self._drive_read, call, source)
        else:
            self._drive_read(call, source)

    def _fail_read(self, call: Call, exc: BaseException) -> None:
        if isinstance(exc, _read.WrongType):
            self.calls.fail(call, Refusal("call_failed", str(exc), exception="TypeError"))
        elif isinstance(exc, FileNotFoundError):
            self.calls.fail(call, Refusal("not_found", f"read() raised {described(exc)}", exception=type(exc).__name__))
        else:
            self.calls.fail_raised(call, exc)

    def _drive_read(self, call: Call, source: _read.Source) -> None:
        """Send a sync source's chunks from a pool thread within the credit window (``Calls.pump``);
        the source is released before the end is announced, so a client that saw chunk_done may
        replace or delete the file."""

        def step() -> bool | None:
            try:
                piece = run_interruptible(call, source.pull, (), {})
            except BaseException as exc:
                self._fail_read(call, exc)
                return False
            # Returning drops ``piece`` before the next pull: the hook may reuse what it yielded.
            return None if piece is None else self._send_chunk(call, piece)

        self.calls.pump(call, source, step, lambda: {"op": "end", "id": call.id, "bytes": call.sent})

    def _chunk_head(self, call: Call, size: int) -> bytes:
        return _read.chunk_head(dumps({"op": "chunk", "id": call.id}).encode("utf-8"), size)

    def _send_chunk(self, call: Call, piece: memoryview) -> bool:
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

    def _send_chunk_copy(self, call: Call, piece: memoryview) -> bool:
        """``_send_chunk`` for a small chunk on the event loop: a copy, but no waiting for a thread."""
        frame = self._chunk_head(call, len(piece)) + piece
        with call.lock:
            if call.done:
                return False
            call.credits -= 1
            call.sent += len(piece)
            self.writer.put(frame)
        return True

    async def _drive_read_async(self, call: Call, source: _read.AsyncSource) -> None:
        """Send an async source's chunks from the loop within the credit window (``Calls.pump_async``)."""

        async def step() -> bool | None:
            try:
                piece = await source.pull()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                self._fail_read(call, exc)
                return False
            if piece is None:
                return None
            if len(piece) <= ASYNC_INLINE_CHUNK:
                return self._send_chunk_copy(call, piece)
            return await self.loop.run_in_executor(self.pool, self._send_chunk, call, piece)

        await self.calls.pump_async(call, step, lambda: self._close_async(source), lambda: {"op": "end", "id": call.id, "bytes": call.sent})

    @staticmethod
    async def _close_async(source: _read.AsyncSource) -> None:
        try:
            await source.aclose()
        except BaseException as exc:
            log(f"closing the source of read() raised {described(exc)}")


def _on_event_loop() -> bool:
    """Whether the calling thread runs the worker's event loop (where nothing may block)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
