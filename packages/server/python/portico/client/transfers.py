"""Binary transfers over a proxy's socket: uploads into the interface's folder, and reads.

One transfer per socket at a time (binary frames carry no id). An upload stops sending when the
gateway refused it already; a read takes the binary frames the connection routes to its sink,
which stops the socket reading while the consumer is behind. A transfer cut off on this side
drops the socket, so the gateway never takes half of one for the whole.
"""

from __future__ import annotations

import os
import queue
import stat
from typing import Any, BinaryIO, Callable, Iterator, Mapping

from .connection import Connection, Lost, ReadSink
from .errors import GatewayError


def upload(
    conn: Connection, path: str, pieces: Iterator[bytes | memoryview], total: int | None, mode: str, progress: Any
) -> dict[str, Any]:
    """Sends ``pieces`` to ``path`` over ``conn`` (``chunk_start``, binary frames, ``chunk_end``);
    the ``chunk_done`` payload once the gateway made them durable."""
    with conn.transfer_lock:
        waiter: queue.SimpleQueue[Any] = queue.SimpleQueue()
        transfer_id = conn.register(waiter)
        conn.upload_id = transfer_id
        done = False
        try:
            conn.send({"type": "chunk_start", "id": transfer_id, "mode": mode, "path": path})
            sent = 0
            early: dict[str, Any] | None = None
            for piece in pieces:
                if not waiter.empty():  # the gateway refused the upload already: stop sending
                    early = waiter.get()
                    break
                conn.send_binary(piece)
                sent += len(piece)
                if progress is not None:
                    progress(sent, total)
            if sent == 0 and early is None and progress is not None:
                progress(0, total)
            conn.send({"type": "chunk_end", "id": transfer_id})
            if early is not None:
                waiter.put(early)
            answer = conn.next(waiter)
            done = True
            if answer.get("type") != "chunk_done":
                raise GatewayError("invalid_frame", None, f"unexpected {answer.get('type')!r} frame answering an upload")
            return dict(answer.get("payload") or {})
        except GatewayError:
            done = True  # answered by the gateway, or the socket is gone already
            raise
        finally:
            conn.upload_id = None
            conn.forget(transfer_id)
            if not done:
                conn.abort("an upload was cut off on the client side")


def read(conn: Connection, params: Mapping[str, Any] | None, write: Callable[[bytes], Any], progress: Any) -> int:
    """Passes what the interface's ``read(params)`` serves over ``conn`` to ``write``, a frame at a
    time; the number of bytes.
    """
    with conn.transfer_lock:
        transfer_id = next(conn.ids)
        sink = ReadSink(transfer_id)
        with conn.lock:
            if conn.dead:
                raise conn.dead
            conn.pending[transfer_id] = sink
            conn.read_sink = sink
        received = 0
        done = False
        try:
            conn.send({"type": "chunk_start", "id": transfer_id, "mode": "read", "params": dict(params or {})})
            while True:
                try:
                    item = sink.queue.get(timeout=0.5)
                except queue.Empty:
                    if conn.dead:
                        done = True
                        raise conn.dead from None
                    continue
                if isinstance(item, (bytes, bytearray)):
                    write(item)
                    received += len(item)
                    if progress is not None:
                        progress(received, None)
                    continue
                done = True
                if isinstance(item, Lost):
                    raise item.error
                if item.get("type") == "error":
                    raise GatewayError.from_detail(item.get("payload") or {})
                if item.get("type") != "chunk_done":
                    raise GatewayError("invalid_frame", None, f"unexpected {item.get('type')!r} frame answering a read")
                return received
        finally:
            with conn.lock:
                conn.pending.pop(transfer_id, None)
                if conn.read_sink is sink:
                    conn.read_sink = None
            if not done:
                conn.abort("a read was cut off on the client side")


def pieces_of(source: Any, block: int) -> tuple[Iterator[bytes | memoryview], int | None]:
    """The upload's pieces of at most ``block`` bytes, and its total size when it is known."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        view = memoryview(source).cast("B")
        return (view[i : i + block] for i in range(0, len(view), block)), len(view)
    if not hasattr(source, "read"):
        raise TypeError(f"upload data is bytes, a file path or a binary file object, not {type(source).__name__}")
    total: int | None = None
    try:
        info = os.fstat(source.fileno())
        if stat.S_ISREG(info.st_mode):
            total = max(0, info.st_size - source.tell())
    except (AttributeError, OSError, ValueError):
        total = None

    def blocks() -> Iterator[bytes]:
        while True:
            piece = source.read(block)
            if not piece:
                return
            if isinstance(piece, str):
                raise TypeError("upload needs a binary file object (opened with 'rb'), not a text one")
            yield piece

    return blocks(), total


class DataMethods:
    """An interface proxy's uploads and reads (mixed into :class:`~portico.client.InterfaceProxy`,
    which provides the connection)."""

    def _connection(self) -> Connection:
        raise NotImplementedError

    def upload(
        self,
        path: str,
        data: bytes | bytearray | memoryview | str | os.PathLike[str] | BinaryIO,
        mode: str = "write",
        progress: Callable[[int, int | None], Any] | None = None,
        block: int = 1 << 20,
    ) -> dict[str, Any]:
        """Streams bytes to ``path`` inside the interface's folder; returns the ``chunk_done``
        payload (``{"path", "bytes_written", "mode"}``) once they are durable.

        ``data``: bytes-like, a local file path (``str`` or path-like), or a binary file object
        (read in ``block``-byte pieces, never all at once). ``mode``: ``"write"`` replaces the
        file, ``"append"`` adds to it. ``progress(bytes_sent, total)`` is called after each block
        (``total`` is None for a file object of unknown size). If the upload is cut off on this
        side, the socket is dropped, so the gateway leaves the target as it was.
        """
        if mode not in ("write", "append"):
            raise ValueError(f"mode is 'write' or 'append', not {mode!r}")
        if block < 1:
            raise ValueError("block must be positive")
        opened: BinaryIO | None = None
        if isinstance(data, (str, os.PathLike)):
            opened = open(data, "rb")  # noqa: SIM115 - closed below
            source: Any = opened
        else:
            source = data
        try:
            pieces, total = pieces_of(source, block)
            return upload(self._connection(), path, pieces, total, mode, progress)
        finally:
            if opened is not None:
                opened.close()

    def read(self, params: Mapping[str, Any] | None = None, progress: Callable[[int, None], Any] | None = None) -> bytes:
        """The bytes the interface's ``read(params)`` hook serves (``chunk_start`` mode read).

        ``progress(bytes_so_far, None)`` is called per received frame. For large data use
        :meth:`read_to`, which never holds it all.
        """
        parts: list[bytes] = []
        read(self._connection(), params, parts.append, progress)
        return b"".join(parts)

    def read_to(
        self,
        params: Mapping[str, Any] | None,
        file: str | os.PathLike[str] | BinaryIO,
        progress: Callable[[int, None], Any] | None = None,
    ) -> int:
        """Streams what ``read(params)`` serves into ``file`` (a path, or a binary file object),
        a frame at a time; returns the number of bytes written. The socket stops reading while
        the file is behind, so memory stays bounded."""
        if isinstance(file, (str, os.PathLike)):
            with open(file, "wb") as handle:
                return read(self._connection(), params, handle.write, progress)
        return read(self._connection(), params, file.write, progress)
