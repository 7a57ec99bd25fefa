"""Binary reads for the bridge's ``read`` op: what a ``read(params)`` hook returned, cut into
chunks of at most ``block`` bytes, and the writer that sends a chunk without copying it.

Owns telling the allowed return values apart (``source_for``), the sources that yield chunks
(memoryview slices of a bytes-like result, items of an iterator, blocks of a file read with
``readinto`` into one reused buffer) and ``ChunkWriter``. The op itself (credits, cancel, errors)
is worker/reads.py's; the protocol is packages/server/src/kernel/README.md.

Copies: a bytes-like result or item is sent as slices of itself; a file is read into one buffer
per read, which is written to the pipe before it is refilled; a chunk's body goes to the pipe in
the same ``os.writev`` as its header, never concatenated with it.
"""

from __future__ import annotations

import collections.abc
import inspect
import io
import os
import struct
from typing import Any, Callable

from ._frames import FrameWriter

__all__ = ["AsyncSource", "ChunkWriter", "Source", "WrongType", "chunk_head", "source_for"]

_BYTES_LIKE = (bytes, bytearray, memoryview)
_ALLOWED = "bytes, bytearray, memoryview, an iterable or async iterable of those, or a binary file object (with .read(n))"
_PREFIX = struct.Struct(">II")


class WrongType(TypeError):
    """The hook returned (or yielded) something a read cannot send."""


def chunk_head(header_json: bytes, body_len: int) -> bytes:
    """The frame bytes before a body of ``body_len`` bytes: prefix and the encoded header."""
    return _PREFIX.pack(len(header_json), body_len) + header_json


def _describe(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _bytes_view(value: Any, what: str) -> memoryview:
    """A flat byte view of a bytes-like ``value`` (no copy unless it is not contiguous)."""
    if not isinstance(value, _BYTES_LIKE):
        raise WrongType(f"{what} {_describe(value)}; allowed: bytes, bytearray or memoryview")
    view = memoryview(value)
    if view.format == "B" and view.ndim == 1:
        return view
    if not view.c_contiguous:
        return memoryview(view.tobytes())
    return view.cast("B")


def source_for(result: Any, block: int) -> Source | AsyncSource:
    """The source that sends ``result`` (what ``read(params)`` returned) in chunks of ``block``.

    Raises WrongType for anything else (a text file is closed first).
    """
    if isinstance(result, _BYTES_LIKE):
        return BytesSource(_bytes_view(result, "read() returned"), block)
    read = getattr(result, "read", None)
    if callable(read) and not isinstance(result, (str, collections.abc.Mapping)):
        if isinstance(result, io.TextIOBase):
            _close_quietly(result)
            raise WrongType("read() returned a text file; open it in binary mode ('rb')")
        if inspect.iscoroutinefunction(read):
            return AsyncFileSource(result, block)
        return FileSource(result, block)
    if isinstance(result, (str, collections.abc.Mapping)) or result is None:
        raise WrongType(f"read() returned {_describe(result)}; allowed: {_ALLOWED}")
    if hasattr(result, "__aiter__"):
        return AsyncIterSource(result.__aiter__(), block)
    if hasattr(result, "__iter__"):
        return IterSource(iter(result), block)
    raise WrongType(f"read() returned {_describe(result)}; allowed: {_ALLOWED}")


def _close_quietly(obj: Any) -> None:
    try:
        obj.close()
    except Exception:
        pass


class Source:
    """Chunks pulled one at a time from a pool thread. ``pull`` returns a non-empty view of at
    most ``block`` bytes, valid until the next ``pull``, or None at the end. ``close`` releases
    what the hook returned (closes the generator or file)."""

    def pull(self) -> memoryview | None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class AsyncSource:
    """``Source`` for the event loop: ``pull`` and ``aclose`` are coroutines."""

    async def pull(self) -> memoryview | None:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass


class _Pieces:
    """The rest of one bytes-like item, handed out ``block`` bytes at a time."""

    __slots__ = ("block", "rest")

    def __init__(self, block: int) -> None:
        self.block = block
        self.rest: memoryview | None = None

    def take(self) -> memoryview | None:
        rest = self.rest
        if rest is None:
            return None
        if len(rest) <= self.block:
            self.rest = None
            return rest
        self.rest = rest[self.block :]
        return rest[: self.block]

    def put(self, view: memoryview) -> None:
        self.rest = view if len(view) else None


class BytesSource(Source):
    def __init__(self, view: memoryview, block: int) -> None:
        self.pieces = _Pieces(block)
        self.pieces.put(view)

    def pull(self) -> memoryview | None:
        return self.pieces.take()

    def close(self) -> None:
        self.pieces.rest = None


class IterSource(Source):
    """Items of a sync iterator (a generator ``read``, or an iterable it returned)."""

    def __init__(self, iterator: collections.abc.Iterator[Any], block: int) -> None:
        self.iterator = iterator
        self.pieces = _Pieces(block)

    def pull(self) -> memoryview | None:
        while True:
            piece = self.pieces.take()
            if piece is not None:
                return piece
            try:
                item = next(self.iterator)
            except StopIteration:
                return None
            self.pieces.put(_bytes_view(item, "read() yielded"))

    def close(self) -> None:
        self.pieces.rest = None
        close = getattr(self.iterator, "close", None)
        if close is not None:
            close()


class FileSource(Source):
    """A binary file object: ``readinto`` one reused buffer when it can, else ``read(block)``."""

    def __init__(self, file: Any, block: int) -> None:
        self.file = file
        self.block = block
        readinto = getattr(file, "readinto", None)
        self.readinto: Callable[[memoryview], int | None] | None = readinto if callable(readinto) else None
        self.buffer: memoryview | None = None
        self.pieces = _Pieces(block)

    def pull(self) -> memoryview | None:
        if self.readinto is not None:
            if self.buffer is None:
                self.buffer = memoryview(bytearray(self.block))
            n = self.readinto(self.buffer)
            if n is None:
                raise WrongType("read() returned a non-blocking file that had no data; return a blocking file")
            return self.buffer[:n] if n else None
        piece = self.pieces.take()
        if piece is not None:
            return piece
        data = self.file.read(self.block)
        if data is None:
            raise WrongType("read() returned a non-blocking file that had no data; return a blocking file")
        self.pieces.put(_bytes_view(data, "read() returned a file whose read() gives"))
        return self.pieces.take()

    def close(self) -> None:
        self.pieces.rest = None
        self.file.close()


class AsyncIterSource(AsyncSource):
    """Items of an async iterator (an async generator ``read``, or one it returned)."""

    def __init__(self, iterator: collections.abc.AsyncIterator[Any], block: int) -> None:
        self.iterator = iterator
        self.pieces = _Pieces(block)

    async def pull(self) -> memoryview | None:
        while True:
            piece = self.pieces.take()
            if piece is not None:
                return piece
            try:
                item = await self.iterator.__anext__()
            except StopAsyncIteration:
                return None
            self.pieces.put(_bytes_view(item, "read() yielded"))

    async def aclose(self) -> None:
        self.pieces.rest = None
        aclose = getattr(self.iterator, "aclose", None)
        if aclose is not None:
            await aclose()


class AsyncFileSource(AsyncSource):
    """A file object whose ``read(n)`` is a coroutine (and ``close()`` may be one)."""

    def __init__(self, file: Any, block: int) -> None:
        self.file = file
        self.block = block
        self.pieces = _Pieces(block)

    async def pull(self) -> memoryview | None:
        piece = self.pieces.take()
        if piece is not None:
            return piece
        data = await self.file.read(self.block)
        self.pieces.put(_bytes_view(data, "read() returned a file whose read() gives"))
        return self.pieces.take()

    async def aclose(self) -> None:
        self.pieces.rest = None
        closed = self.file.close()
        if inspect.isawaitable(closed):
            await closed


class ChunkWriter(FrameWriter):
    """A FrameWriter that can also send a frame whose body is a separate buffer.

    ``put_body`` writes the frame head and the body with one ``os.writev`` (no concatenation)
    and returns only once both are in the pipe, so the caller may refill the body's buffer.
    """

    def put_body(self, head: bytes, body: memoryview, admit: Callable[[], bool]) -> bool:
        """Write ``head`` + ``body`` after every frame put before; False (nothing written) when
        ``admit()``, called while no other frame can be written, says the frame may not go.

        Taking the write lock first means that a frame another thread puts meanwhile (a cancel's
        error, say) is written after this one, never before it with this one following.
        """
        with self._io_lock:
            self._write_pending()
            if self._broken or not admit():
                written = False
            else:
                try:
                    _writev_all(self._fd, [head, body])
                except OSError as exc:
                    self._broken = True
                    self._on_broken(exc)
                written = True
        self._drain(blocking=False)  # frames put while we held the lock: their threads left them to us
        return written

    def _write_pending(self) -> None:
        """With the write lock held: write every frame put so far."""
        while not self._broken:
            with self._pending_lock:
                batch = self._take_pending()
            if not batch:
                return
            try:
                _writev_all(self._fd, batch)
            except OSError as exc:
                self._broken = True
                self._on_broken(exc)


#: os.writev takes at most IOV_MAX (1024 on Linux) buffers per call.
_IOV_MAX = 1024


def _writev_all(fd: int, parts: list[Any]) -> None:
    views = [memoryview(part) for part in parts if len(part)]
    start = 0
    while start < len(views):
        written = os.writev(fd, views[start : start + _IOV_MAX])
        while written:  # a pipe may take part of it (a signal interrupted the write)
            first = len(views[start])
            if written >= first:
                written -= first
                start += 1
            else:
                views[start] = views[start][written:]
                written = 0
