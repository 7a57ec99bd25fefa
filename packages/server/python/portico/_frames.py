"""Bridge framing: ``u32be header_len | u32be body_len | header (UTF-8 JSON) | body``.

Owns reading one frame, encoding one frame, and the writer thread that batches outgoing frames.
The protocol itself (ops, errors) lives in worker.py; see packages/server/src/kernel/README.md.
"""

from __future__ import annotations

import json
import os
import queue
import struct
import threading
from typing import Any, BinaryIO, Callable

from ._json import dumps

__all__ = ["BODY_MAX_BYTES", "HEADER_MAX_BYTES", "FrameError", "FrameWriter", "encode_frame", "read_frame"]

#: Largest header the protocol allows (both directions).
HEADER_MAX_BYTES = 64 * 1024 * 1024
#: Largest body we accept. The protocol does not bound bodies; this guards against a garbage
#: length prefix making the worker allocate gigabytes before it notices the frame is malformed.
BODY_MAX_BYTES = 1024 * 1024 * 1024

_PREFIX = struct.Struct(">II")


class FrameError(Exception):
    """The byte stream is not a valid frame sequence; the protocol says the worker must end."""


def encode_frame(header: dict[str, Any], body: bytes = b"") -> bytes:
    """Encode one frame. Raises TypeError/ValueError when the header is not strict JSON or too big."""
    raw = dumps(header).encode("utf-8")
    if len(raw) > HEADER_MAX_BYTES:
        raise ValueError(f"{len(raw)} bytes of JSON exceed the {HEADER_MAX_BYTES >> 20} MiB frame header limit")
    return _PREFIX.pack(len(raw), len(body)) + raw + body


def _read_exact(stream: BinaryIO, n: int, what: str) -> bytes:
    data = stream.read(n)
    if data is None or len(data) != n:
        raise FrameError(f"stream ended inside a frame {what}")
    return data


def read_frame(stream: BinaryIO) -> tuple[dict[str, Any], bytes] | None:
    """Read one frame from a blocking buffered stream; None on a clean EOF between frames."""
    prefix = stream.read(_PREFIX.size)
    if not prefix:
        return None
    if len(prefix) != _PREFIX.size:
        raise FrameError("stream ended inside a frame prefix")
    header_len, body_len = _PREFIX.unpack(prefix)
    if header_len > HEADER_MAX_BYTES:
        raise FrameError(f"frame header of {header_len} bytes exceeds {HEADER_MAX_BYTES} bytes")
    if body_len > BODY_MAX_BYTES:
        raise FrameError(f"frame body of {body_len} bytes exceeds {BODY_MAX_BYTES} bytes")
    raw = _read_exact(stream, header_len, "header")
    body = _read_exact(stream, body_len, "body") if body_len else b""
    try:
        header = json.loads(raw)
    except ValueError as exc:  # includes UnicodeDecodeError
        raise FrameError(f"frame header is not UTF-8 JSON: {exc}") from None
    if not isinstance(header, dict):
        raise FrameError("frame header is not a JSON object")
    return header, body


class FrameWriter:
    """Writes encoded frames to a file descriptor from one dedicated thread.

    Any thread may ``put`` a frame; the writer drains everything queued at that moment and
    writes it with a single ``os.write`` (one syscall per batch instead of per frame is most of
    the pipelined throughput). Frames from one thread keep their order.
    """

    def __init__(self, fd: int, on_broken: Callable[[OSError], None]) -> None:
        self._fd = fd
        self._on_broken = on_broken
        self._queue: queue.SimpleQueue[bytes | threading.Event] = queue.SimpleQueue()
        # Daemon: a stuck pipe must never keep the worker process alive.
        self._thread = threading.Thread(target=self._run, name="portico-writer", daemon=True)
        self._thread.start()

    def put(self, frame: bytes) -> None:
        """Queue one encoded frame (thread-safe, never blocks)."""
        self._queue.put(frame)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every frame queued before this call has been written; False on timeout."""
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout)

    def _run(self) -> None:
        q = self._queue
        while True:
            item = q.get()
            chunks: list[bytes] = []
            markers: list[threading.Event] = []
            while True:
                if isinstance(item, bytes):
                    chunks.append(item)
                else:
                    markers.append(item)
                if q.empty():  # single consumer, so empty() then get() cannot race
                    break
                item = q.get()
            if chunks:
                try:
                    self._write_all(b"".join(chunks) if len(chunks) > 1 else chunks[0])
                except OSError as exc:
                    self._on_broken(exc)
                    return
            for marker in markers:
                marker.set()

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

