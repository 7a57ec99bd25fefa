"""Bridge framing: ``u32be header_len | u32be body_len | header (UTF-8 JSON) | body``.

Owns reading one frame, encoding one frame, and the writer thread that batches outgoing frames.
The protocol itself (ops, errors) lives in the worker/ package; see packages/server/src/kernel/README.md.
"""

from __future__ import annotations

import json
import os
import re
import struct
import threading
from typing import Any, BinaryIO, Callable

from ._json import dumps, encode_string

_get_ident = threading.get_ident

__all__ = ["BODY_MAX_BYTES", "HEADER_MAX_BYTES", "FrameError", "FrameWriter", "HeaderError", "encode_frame", "read_frame", "result_frame"]

#: Largest header the protocol allows (both directions).
HEADER_MAX_BYTES = 64 * 1024 * 1024
#: Largest body we accept. The protocol does not bound bodies; this guards against a garbage
#: length prefix making the worker allocate gigabytes before it notices the frame is malformed.
BODY_MAX_BYTES = 1024 * 1024 * 1024

_PREFIX = struct.Struct(">II")
#: Most frames, and bytes, a holding thread keeps back before they are written anyway
#: (FrameWriter.hold). Enough that a write per reply is gone; few enough that the gateway is
#: already forwarding the first replies of a large batch (a 64 KiB read brings up to ~250
#: small calls) while the worker runs the rest: on two cores the overlap matters.
HOLD_MAX_FRAMES = 32
HOLD_MAX_BYTES = 256 * 1024


class FrameError(Exception):
    """The byte stream is not a valid frame sequence; the protocol says the worker must end.

    Except for its subclass ``HeaderError``: that frame was read whole and the stream is still
    in step, only its header is not a JSON object.
    """


class HeaderError(FrameError):
    """A frame whose lengths were intact but whose header cannot be decoded (not UTF-8, not JSON,
    nested too deeply, not an object). It is consumed: the next frame reads as usual, and only
    this request fails (``request_id``: its id where the gateway writes it, see _LEADING_ID; else None).
    """

    def __init__(self, reason: str, request_id: Any = None) -> None:
        super().__init__(f"the request could not be decoded: {reason}")
        self.reason = reason
        self.request_id = request_id


#: The id of an undecodable header is read only where the gateway writes it, so that an "id"
#: nested deeper (in the arguments, say) is never taken for the request's: first, as in every
#: call, ``{"op":"<op>","id":<n>,``; or last, as in its other requests (``{"op":"read",...,"id":<n>}``:
#: in valid JSON, a member just before the final ``}`` is the top-level object's). An integer, a
#: plain decimal or a string.
_ID_VALUE = rb'(-?\d{1,20}(?:\.\d{1,20})?|"(?:[^"\\]|\\.){0,256}")'
_LEADING_ID = re.compile(rb'\s*\{\s*(?:"op"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*)?"id"\s*:\s*' + _ID_VALUE + rb"\s*[,}]")
_TRAILING_ID = re.compile(rb'[{,]\s*"id"\s*:\s*' + _ID_VALUE + rb"\s*\}\s*\Z")
_ID_SCAN_BYTES = 1024  # of the header's start, and of its end


def _undecodable(raw: bytes | bytearray, reason: str) -> HeaderError:
    """The HeaderError for ``raw``, with the request id its first or last bytes give, if any."""
    found = _LEADING_ID.match(raw[:_ID_SCAN_BYTES]) or _TRAILING_ID.search(raw[-_ID_SCAN_BYTES:])
    request_id = None
    if found is not None:
        try:
            request_id = json.loads(found.group(1))
            if isinstance(request_id, str):
                request_id.encode("utf-8")  # a lone surrogate ("\ud800") could not be answered
        except (ValueError, RecursionError):
            request_id = None
    return HeaderError(reason, request_id)


def encode_frame(header: dict[str, Any], body: bytes = b"") -> bytes:
    """Encode one frame. Raises TypeError/ValueError when the header is not strict JSON or too big."""
    raw = dumps(header).encode("utf-8")
    if len(raw) > HEADER_MAX_BYTES:
        raise ValueError(f"{len(raw)} bytes of JSON exceed the {HEADER_MAX_BYTES >> 20} MiB frame header limit")
    if not body:
        return _PREFIX.pack(len(raw), 0) + raw
    return _PREFIX.pack(len(raw), len(body)) + raw + body


def result_frame(request_id: Any, payload: Any) -> bytes:
    """``encode_frame({"op": "result", "id": request_id, "payload": payload})``, byte for byte.

    Every call's reply: for an int id the header is formatted around the encoded payload
    instead of encoding a dict, and a str or int payload (most small results) is encoded
    without building a JSON encoder, several steps fewer on every call. The same errors.
    """
    if type(request_id) is not int:
        return encode_frame({"op": "result", "id": request_id, "payload": payload})
    kind = type(payload)
    if kind is str:
        text = encode_string(payload)
    elif kind is int:
        text = int.__repr__(payload)  # what json writes for an int
    else:
        text = dumps(payload)
    raw = f'{{"op":"result","id":{int.__repr__(request_id)},"payload":{text}}}'.encode("utf-8")
    if len(raw) > HEADER_MAX_BYTES:
        raise ValueError(f"{len(raw)} bytes of JSON exceed the {HEADER_MAX_BYTES >> 20} MiB frame header limit")
    return _PREFIX.pack(len(raw), 0) + raw


def _parse(lengths: tuple[int, int]) -> tuple[int, int]:
    header_len, body_len = lengths
    if header_len > HEADER_MAX_BYTES:
        raise FrameError(f"frame header of {header_len} bytes exceeds {HEADER_MAX_BYTES} bytes")
    if body_len > BODY_MAX_BYTES:
        raise FrameError(f"frame body of {body_len} bytes exceeds {BODY_MAX_BYTES} bytes")
    return header_len, body_len


#: Scans one JSON value from a str: json.loads without its encoding detection and whitespace
#: regexes, which were a measurable part of reading a small request.
_scan_json = json.JSONDecoder().scan_once


_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


def _decode_header(raw: bytes | bytearray) -> dict[str, Any]:
    """The header's JSON object; HeaderError when it is not one (the frame is still in step)."""
    try:
        text = raw.decode("utf-8")
        header, end = _scan_json(text, 0)
        if end != len(text):
            raise ValueError("extra data")
    except (ValueError, StopIteration):
        # Anything unusual (whitespace around it, or no JSON at all) is json.loads's to judge.
        try:
            header = json.loads(bytes(raw))
        except UnicodeDecodeError as exc:
            raise _undecodable(raw, f"the header is not UTF-8 ({exc.reason} at byte {exc.start})") from None
        except ValueError as exc:
            raise _undecodable(raw, f"the header is not JSON ({exc})") from None
        except RecursionError:
            raise _undecodable(raw, "the header is nested too deeply") from None
    except RecursionError:  # deep nesting: it must not end the reading thread
        raise _undecodable(raw, "the header is nested too deeply") from None
    if not isinstance(header, dict):
        raise _undecodable(raw, f"the header is not a JSON object (it is {_JSON_KINDS.get(type(header), 'null')})")
    return header


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
    header_len, body_len = _parse(_PREFIX.unpack(prefix))
    raw = _read_exact(stream, header_len, "header")
    body = _read_exact(stream, body_len, "body") if body_len else b""
    return _decode_header(raw), body


class FrameReader:
    """Reads frames from a pipe with its own buffer: pipelined requests are parsed from memory
    instead of one read per frame."""

    def __init__(self, fd: int, chunk_bytes: int = 64 * 1024) -> None:
        self._fd = fd
        self._chunk = chunk_bytes
        self._buf = bytearray()
        self._pos = 0
        #: Called before every read of the pipe, which may wait for the gateway (see Pipe.serve).
        self.before_read: Callable[[], None] | None = None

    @property
    def buffered(self) -> bool:
        """Bytes of a next frame are already read: ``read`` may return without waiting."""
        return len(self._buf) > self._pos

    def _fill(self, need: int) -> bool:
        """Read until ``need`` bytes are buffered; False on EOF."""
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        while len(self._buf) < need:
            if self.before_read is not None:
                self.before_read()
            data = os.read(self._fd, max(self._chunk, need - len(self._buf)))
            if not data:
                return False
            self._buf += data
        return True

    def read(self) -> tuple[dict[str, Any], bytes] | None:
        """The next frame; None on a clean EOF between frames."""
        if len(self._buf) - self._pos < _PREFIX.size and not self._fill(_PREFIX.size):
            if len(self._buf) - self._pos:
                raise FrameError("stream ended inside a frame prefix")
            return None
        header_len, body_len = _PREFIX.unpack_from(self._buf, self._pos)
        if header_len > HEADER_MAX_BYTES or body_len > BODY_MAX_BYTES:
            _parse((header_len, body_len))  # raises the FrameError that says which
        total = _PREFIX.size + header_len + body_len
        if len(self._buf) - self._pos < total and not self._fill(total):
            raise FrameError("stream ended inside a frame")
        buf = self._buf
        start = self._pos + _PREFIX.size
        end = start + header_len
        self._pos += total  # consumed even when its header raises HeaderError
        header = _decode_header(buf[start:end])
        if body_len:
            with memoryview(buf) as view:
                body = bytes(view[end : end + body_len])
        else:
            body = b""
        return header, body


class FrameWriter:
    """Writes encoded frames to a file descriptor from whichever thread produced them.

    The thread that finishes a call writes its reply itself: no hand-off to a writer thread on
    the way out, which is most of a small call's latency. Threads that arrive while a write is
    in progress only append their frame; the thread holding the write lock takes everything
    pending before it lets go, so under load many frames leave in one ``os.write`` (batching)
    and frames from one thread keep their order. A frame put while nothing waits, nobody writes
    and nobody holds (a lone call's reply) is written straight away, without the queue.

    One thread at a time may *hold* its frames (``hold``): they wait in the queue, in order with
    everyone else's, until it calls ``send_held``, until ``HOLD_MAX_FRAMES`` or
    ``HOLD_MAX_BYTES`` wait, or until another thread writes (which takes them along). The thread reading requests holds the
    replies of the calls it runs itself while more requests are already read, so a batch of
    pipelined calls is answered with one write, not one per call (each write wakes the gateway).
    """

    def __init__(self, fd: int, on_broken: Callable[[OSError], None]) -> None:
        self._fd = fd
        self._on_broken = on_broken
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._pending_lock = threading.Lock()  # guards _pending only; never held during I/O
        self._io_lock = threading.Lock()  # held by the one thread writing
        self._broken = False
        self._holder: int | None = None  # the thread whose frames wait for its send_held (see hold)

    def put(self, frame: bytes) -> None:
        """Send one encoded frame (thread-safe). May write in the calling thread."""
        with self._pending_lock:
            pending = self._pending
            holder = self._holder
            # The common case, a lone reply: nothing waits and nobody writes, so this frame is
            # written at once without going through the queue (_drain's loop costs several
            # function calls and lock round trips more, on every lone call's path).
            direct = not pending and holder is None and not self._broken and self._io_lock.acquire(False)
            if not direct:
                pending.append(frame)
                self._pending_bytes += len(frame)
                if (
                    holder is not None
                    and holder == _get_ident()
                    and len(pending) < HOLD_MAX_FRAMES
                    and self._pending_bytes < HOLD_MAX_BYTES
                ):
                    return  # held (see hold)
        if not direct:
            self._drain(blocking=False)
            return
        try:
            written = os.write(self._fd, frame)
            if written < len(frame):
                self._write_all(memoryview(frame)[written:])
        except OSError as exc:
            self._broken = True
            self._on_broken(exc)
        finally:
            self._io_lock.release()
        # A frame put while we wrote, whose thread found the write lock taken, is ours to write.
        if self._pending:
            self._drain(blocking=False)

    def _take_pending(self) -> list[bytes]:
        """With the pending lock held: every frame put so far, which the caller then writes."""
        batch, self._pending, self._pending_bytes = self._pending, [], 0
        return batch

    def hold(self, thread: int | None) -> None:
        """From now on the frames ``thread`` puts wait for ``send_held`` (None: nobody holds)."""
        self._holder = thread

    def send_held(self) -> None:
        """Write the frames waiting in the queue, held ones included (thread-safe)."""
        # Called before every read of the pipe: mostly there is nothing to write. A frame put
        # after this look is not ours to write (its thread writes it, or holds it itself).
        if self._pending:
            self._drain(blocking=False)

    def flush(self, timeout: float | None = None) -> bool:
        """Write everything put so far; False when the write lock is not had within ``timeout``."""
        return self._drain(blocking=True, timeout=-1 if timeout is None else timeout)

    def _drain(self, blocking: bool, timeout: float = -1) -> bool:
        while True:
            if not self._io_lock.acquire(blocking, timeout):
                return False  # the thread writing now will take our frame too
            try:
                while True:
                    with self._pending_lock:
                        batch = self._take_pending()
                    if not batch or self._broken:
                        break
                    try:
                        self._write_all(b"".join(batch) if len(batch) > 1 else batch[0])
                    except OSError as exc:
                        self._broken = True
                        self._on_broken(exc)
            finally:
                self._io_lock.release()
            # A frame appended after our last look, whose thread found the lock taken, is ours.
            with self._pending_lock:
                if not self._pending or self._broken:
                    return True

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

