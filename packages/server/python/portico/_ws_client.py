"""A small RFC 6455 WebSocket client over ``socket`` (stdlib only), for ``portico.client``.

What it does, and no more:

- the opening handshake (``_ws_handshake.py``: ``Sec-WebSocket-Key`` / ``Sec-WebSocket-Accept`` checked, optional
  subprotocols checked against the answer, extra headers such as ``X-Service-Project``); a
  refused upgrade raises :class:`HandshakeError` with the HTTP status, headers and body;
- text and binary messages, sent masked (as a client must), fragmented above ``fragment_size``;
- received messages reassembled from fragments, text checked as UTF-8, bounded by ``max_message``;
- pings answered with pongs automatically, ``ping()`` to probe, ``last_pong`` to see the answer;
- the closing handshake, and :class:`ConnectionClosed` carrying the close code and reason.

Threading: any number of threads may send (one lock keeps every message whole on the wire); one
thread at a time receives. No extensions (no compression) are negotiated.
"""

from __future__ import annotations

import base64
import os
import socket
import ssl
import struct
import threading
import urllib.parse
from typing import Mapping, Sequence

from ._ws_handshake import RECV_BYTES, HandshakeError, WebSocketError, handshake  # noqa: F401  (HandshakeError re-exported)

__all__ = ["ConnectionClosed", "HandshakeError", "WebSocket", "WebSocketError", "connect"]

OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_DATA_OPS = (OP_TEXT, OP_BINARY)
_CONTROL_OPS = (OP_CLOSE, OP_PING, OP_PONG)

#: Close codes this module sends (RFC 6455 §7.4.1).
CLOSE_NORMAL, CLOSE_PROTOCOL_ERROR, CLOSE_INVALID_DATA, CLOSE_TOO_BIG = 1000, 1002, 1007, 1009
#: Close codes that may never appear in a close frame on the wire.
_RESERVED_CODES = frozenset({1004, 1005, 1006, 1015})



class ConnectionClosed(WebSocketError):
    """The connection is closed: ``code`` and ``reason`` from the close frame (1006: no close frame)."""

    def __init__(self, code: int = 1006, reason: str = "") -> None:
        super().__init__(f"websocket closed ({code}{': ' + reason if reason else ''})")
        self.code = code
        self.reason = reason


def _mask(payload: bytes, key: bytes) -> bytes:
    """XOR ``payload`` with the 4-byte ``key`` repeated (RFC 6455 §5.3), at C speed via big ints."""
    n = len(payload)
    if not n:
        return b""
    repeated = key * (n // 4) + key[: n % 4]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(repeated, "little")).to_bytes(n, "little")


def _frame_head(opcode: int, n: int, fin: bool, key: bytes) -> bytes:
    """The header of a client frame (always masked, RFC 6455 §5.2) of ``n`` payload bytes."""
    head = bytearray([(0x80 if fin else 0) | opcode])
    if n < 126:
        head.append(0x80 | n)
    elif n < 1 << 16:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    return bytes(head + key)


class WebSocket:
    """One client connection; make it with :func:`connect`."""

    def __init__(
        self,
        sock: socket.socket,
        *,
        subprotocol: str | None,
        response_headers: Mapping[str, str],
        buffered: bytes = b"",
        max_message: int = 256 * 1024 * 1024,
        fragment_size: int = 4 * 1024 * 1024,
    ) -> None:
        self.sock = sock
        #: The subprotocol the server chose (None when none was offered).
        self.subprotocol = subprotocol
        #: Headers of the 101 answer, names lowercased.
        self.response_headers = dict(response_headers)
        #: Largest message accepted from the server; a larger one closes with 1009.
        self.max_message = max_message
        #: Messages longer than this are sent as several frames (fragmentation).
        self.fragment_size = max(1, fragment_size)
        #: Payload of the last pong received (an answer to :meth:`ping`), or None.
        self.last_pong: bytes | None = None
        #: Close code and reason once the connection is closed (1006 when it ended without a close frame).
        self.close_code: int | None = None
        self.close_reason = ""
        self._buffer = bytearray(buffered)
        self._send_lock = threading.Lock()
        self._recv_lock = threading.Lock()
        self._pong = threading.Condition()
        self._close_sent = False
        self._closed = False

    # ---------------------------------------------------------------- sending

    @property
    def closed(self) -> bool:
        """True once the closing handshake ended or the connection dropped."""
        return self._closed

    def send_text(self, text: str) -> None:
        """Sends one text message."""
        self._send_message(OP_TEXT, text.encode("utf-8"))

    def send_binary(self, data: bytes | bytearray | memoryview) -> None:
        """Sends one binary message."""
        self._send_message(OP_BINARY, bytes(data))

    def send(self, data: str | bytes | bytearray | memoryview) -> None:
        """Sends ``data``: a ``str`` as a text message, bytes as a binary message."""
        if isinstance(data, str):
            self.send_text(data)
        else:
            self.send_binary(data)

    def ping(self, payload: bytes = b"") -> None:
        """Sends a ping (at most 125 bytes of payload); the pong lands in :attr:`last_pong`."""
        if len(payload) > 125:
            raise ValueError("a ping payload has at most 125 bytes")
        with self._send_lock:
            self._send_frame(OP_PING, payload, fin=True)

    def wait_pong(self, payload: bytes, timeout: float) -> bool:
        """Waits until the last pong received carries ``payload``; False on timeout or close."""
        with self._pong:
            return self._pong.wait_for(lambda: self.last_pong == payload or self._closed, timeout) and self.last_pong == payload

    def _send_message(self, opcode: int, payload: bytes) -> None:
        with self._send_lock:
            if self._close_sent or self._closed:
                raise ConnectionClosed(self.close_code or 1006, self.close_reason or "close already sent")
            size = self.fragment_size
            if len(payload) <= size:
                self._send_frame(opcode, payload, fin=True)
                return
            view = memoryview(payload)
            for start in range(0, len(payload), size):
                piece = view[start : start + size]
                last = start + size >= len(payload)
                self._send_frame(opcode if start == 0 else OP_CONTINUATION, bytes(piece), fin=last)

    def _send_frame(self, opcode: int, payload: bytes, *, fin: bool) -> None:
        """Writes one masked frame; the caller holds the send lock."""
        n = len(payload)
        key = os.urandom(4)
        head = _frame_head(opcode, n, fin, key)
        masked = _mask(payload, key)
        try:
            if n <= RECV_BYTES:
                self.sock.sendall(head + masked)
            else:
                self.sock.sendall(head)
                self.sock.sendall(masked)
        except OSError as err:
            self._mark_closed(1006, f"send failed: {err}")
            raise ConnectionClosed(1006, f"send failed: {err}") from err

    # -------------------------------------------------------------- receiving

    def recv(self) -> str | bytes:
        """The next message: ``str`` for text, ``bytes`` for binary.

        Pings are answered and pongs recorded on the way. Raises :class:`ConnectionClosed` when
        the server closes (after answering its close frame) or the connection drops.
        """
        with self._recv_lock:
            if self._closed:
                raise ConnectionClosed(self.close_code or 1006, self.close_reason)
            opcode: int | None = None
            parts: list[bytes] = []
            total = 0
            while True:
                fin, op, payload = self._read_frame()
                if op in _CONTROL_OPS:
                    self._control(op, payload)
                    continue
                if op == OP_CONTINUATION:
                    if opcode is None:
                        self._fail(CLOSE_PROTOCOL_ERROR, "continuation frame without a message to continue")
                elif opcode is not None:
                    self._fail(CLOSE_PROTOCOL_ERROR, "new data frame inside a fragmented message")
                else:
                    opcode = op
                total += len(payload)
                if total > self.max_message:
                    self._fail(CLOSE_TOO_BIG, f"message larger than {self.max_message} bytes")
                parts.append(payload)
                if fin:
                    break
            data = parts[0] if len(parts) == 1 else b"".join(parts)
            if opcode == OP_TEXT:
                try:
                    return data.decode("utf-8")
                except UnicodeDecodeError:
                    self._fail(CLOSE_INVALID_DATA, "text message is not valid UTF-8")
            return bytes(data)

    def _read_frame(self) -> tuple[bool, int, bytes]:
        b0, b1 = self._read_exact(2)
        fin, rsv, opcode = bool(b0 & 0x80), b0 & 0x70, b0 & 0x0F
        masked, length = bool(b1 & 0x80), b1 & 0x7F
        if rsv:
            self._fail(CLOSE_PROTOCOL_ERROR, "reserved bits set without a negotiated extension")
        if opcode not in _DATA_OPS and opcode not in _CONTROL_OPS and opcode != OP_CONTINUATION:
            self._fail(CLOSE_PROTOCOL_ERROR, f"unknown opcode {opcode:#x}")
        if masked:
            self._fail(CLOSE_PROTOCOL_ERROR, "server frames must not be masked")
        if opcode in _CONTROL_OPS and (not fin or length > 125):
            self._fail(CLOSE_PROTOCOL_ERROR, "control frames must be whole and at most 125 bytes")
        if length == 126:
            (length,) = struct.unpack(">H", self._read_exact(2))
        elif length == 127:
            (length,) = struct.unpack(">Q", self._read_exact(8))
            if length >> 63:
                self._fail(CLOSE_PROTOCOL_ERROR, "frame length has its top bit set")
        if length > self.max_message:
            self._fail(CLOSE_TOO_BIG, f"frame larger than {self.max_message} bytes")
        return fin, opcode, self._read_exact(length)

    def _control(self, opcode: int, payload: bytes) -> None:
        if opcode == OP_PING:
            with self._send_lock:
                if not self._close_sent:
                    self._send_frame(OP_PONG, payload, fin=True)
        elif opcode == OP_PONG:
            with self._pong:
                self.last_pong = payload
                self._pong.notify_all()
        else:  # close
            code, reason = 1005, ""
            if len(payload) == 1:
                self._fail(CLOSE_PROTOCOL_ERROR, "close frame with a one-byte payload")
            if len(payload) >= 2:
                (code,) = struct.unpack(">H", payload[:2])
                try:
                    reason = payload[2:].decode("utf-8")
                except UnicodeDecodeError:
                    self._fail(CLOSE_INVALID_DATA, "close reason is not valid UTF-8")
                if code < 1000 or code in _RESERVED_CODES or 1016 <= code < 3000 or code >= 5000:
                    self._fail(CLOSE_PROTOCOL_ERROR, f"invalid close code {code}")
            self._send_close(code if code != 1005 else CLOSE_NORMAL, "")
            self._mark_closed(code, reason)
            self._shutdown()
            raise ConnectionClosed(code, reason)

    def _read_exact(self, n: int) -> bytes:
        buffer = self._buffer
        if n <= RECV_BYTES:
            while len(buffer) < n:
                self._fill(buffer)
            data = bytes(buffer[:n])
            del buffer[:n]
            return data
        # A large payload: read straight into its final place instead of growing the buffer.
        out = bytearray(n)
        view = memoryview(out)
        have = min(len(buffer), n)
        view[:have] = buffer[:have]
        del buffer[:have]
        while have < n:
            try:
                got = self.sock.recv_into(view[have:], n - have)
            except OSError as err:
                self._lost(err)
            if not got:
                self._lost(None)
            have += got
        return out  # type: ignore[return-value]  # a bytearray; recv() turns the message into bytes once

    def _fill(self, buffer: bytearray) -> None:
        try:
            data = self.sock.recv(RECV_BYTES)
        except OSError as err:
            self._lost(err)
        if not data:
            self._lost(None)
        buffer += data

    def _lost(self, err: OSError | None) -> None:
        reason = f"connection lost: {err}" if err else "connection closed without a close frame"
        if self._closed and self.close_code is not None:
            raise ConnectionClosed(self.close_code, self.close_reason)
        self._mark_closed(1006, reason)
        self._shutdown()
        raise ConnectionClosed(1006, reason)

    def _fail(self, code: int, reason: str) -> None:
        """A protocol violation by the server: close with ``code`` and raise."""
        self._send_close(code, reason)
        self._mark_closed(code, reason)
        self._shutdown()
        raise ConnectionClosed(code, reason)

    # ---------------------------------------------------------------- closing

    def close(self, code: int = CLOSE_NORMAL, reason: str = "", timeout: float = 2.0) -> None:
        """Starts the closing handshake; waits up to ``timeout`` for the server's close frame.

        When another thread is inside :meth:`recv`, that thread sees the answer and finishes the
        handshake (its recv raises :class:`ConnectionClosed`); this call then only sends.
        """
        self._send_close(code, reason)
        if not self._recv_lock.acquire(blocking=False):
            return
        try:
            if not self._closed:
                self.sock.settimeout(timeout)
                try:
                    while not self._closed:
                        self._read_frame_for_close()
                except (ConnectionClosed, OSError):
                    pass
        finally:
            self._recv_lock.release()
            self._mark_closed(code, reason)
            self._shutdown()

    def _read_frame_for_close(self) -> None:
        _fin, op, payload = self._read_frame()
        if op in _CONTROL_OPS:
            self._control(op, payload)

    def abort(self) -> None:
        """Drops the connection without a closing handshake (unblocks a thread inside recv)."""
        self._mark_closed(1006, "aborted")
        self._shutdown()

    def _send_close(self, code: int, reason: str) -> None:
        with self._send_lock:
            if self._close_sent or self._closed:
                return
            self._close_sent = True
            payload = struct.pack(">H", code) + reason.encode("utf-8")[:123]
            try:
                self._send_frame(OP_CLOSE, payload, fin=True)
            except ConnectionClosed:
                pass

    def _mark_closed(self, code: int, reason: str) -> None:
        if self.close_code is None:
            self.close_code, self.close_reason = code, reason
        self._closed = True
        with self._pong:
            self._pong.notify_all()

    def _shutdown(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


def connect(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    subprotocols: Sequence[str] | None = None,
    timeout: float | None = 30.0,
    ssl_context: ssl.SSLContext | None = None,
    max_message: int = 256 * 1024 * 1024,
    fragment_size: int = 4 * 1024 * 1024,
) -> WebSocket:
    """Opens a WebSocket to ``url`` (``ws://`` or ``wss://``) and returns it once upgraded.

    ``headers`` are sent with the upgrade request; ``subprotocols`` are offered in
    ``Sec-WebSocket-Protocol`` (the server must pick one of them, or none when none is offered).
    ``timeout`` bounds the connect and the handshake; the returned socket blocks without one.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("ws", "wss"):
        raise ValueError(f"not a WebSocket URL: {url!r}")
    secure = parts.scheme == "wss"
    host = parts.hostname or "localhost"
    port = parts.port or (443 if secure else 80)
    resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if secure:
            context = ssl_context or ssl.create_default_context()
            sock = context.wrap_socket(sock, server_hostname=host)
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        host_header = host if ":" not in host else f"[{host}]"
        if parts.port:
            host_header += f":{parts.port}"
        chosen, response, rest = handshake(sock, resource, host_header, key, subprotocols, headers)
        sock.settimeout(None)
        return WebSocket(
            sock,
            subprotocol=chosen,
            response_headers=response,
            buffered=rest,
            max_message=max_message,
            fragment_size=fragment_size,
        )
    except BaseException:
        try:
            sock.close()
        except OSError:
            pass
        raise
