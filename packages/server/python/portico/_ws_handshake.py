"""The opening handshake of the WebSocket client (``_ws_client.py``, RFC 6455 §4.1), and the errors
every part of it raises: the upgrade request, the response head, and every check of the answer.
"""

from __future__ import annotations

import base64
import hashlib
import socket
from typing import Mapping, Sequence

#: The GUID of RFC 6455 §1.3, appended to the key to compute Sec-WebSocket-Accept.
_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

#: Bytes asked of the socket per recv for small reads (response heads, frame headers, small frames).
RECV_BYTES = 64 * 1024
#: Largest response head of the handshake we read before giving up.
_MAX_HEAD = 64 * 1024


class WebSocketError(Exception):
    """Base class of this module's errors."""


class HandshakeError(WebSocketError):
    """The server did not accept the upgrade (``status`` is its HTTP status, 0 when it was not HTTP)."""

    def __init__(self, message: str, status: int = 0, headers: Mapping[str, str] | None = None, body: bytes = b"") -> None:
        super().__init__(message)
        self.status = status
        self.headers = dict(headers or {})
        self.body = body


def _accept_for(key: str) -> str:
    return base64.b64encode(hashlib.sha1((key + _GUID).encode("ascii")).digest()).decode("ascii")


def _header_tokens(value: str) -> list[str]:
    return [token.strip().lower() for token in value.split(",") if token.strip()]


def handshake(
    sock: socket.socket,
    resource: str,
    host_header: str,
    key: str,
    subprotocols: Sequence[str] | None,
    headers: Mapping[str, str] | None,
) -> tuple[str | None, dict[str, str], bytes]:
    """Sends the upgrade request over ``sock`` and checks the answer: the subprotocol the server
    chose, its response headers (lower-case names) and the bytes it sent past its head.
    Raises :class:`HandshakeError` when the upgrade is refused or the answer is not a valid one."""
    lines = [
        f"GET {resource} HTTP/1.1",
        f"Host: {host_header}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    if subprotocols:
        lines.append(f"Sec-WebSocket-Protocol: {', '.join(subprotocols)}")
    for name, value in (headers or {}).items():
        if "\r" in name or "\n" in name or "\r" in str(value) or "\n" in str(value):
            raise ValueError(f"header {name!r} contains a line break")
        lines.append(f"{name}: {value}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    head = bytearray()
    while b"\r\n\r\n" not in head:
        if len(head) > _MAX_HEAD:
            raise HandshakeError("the handshake response head is too large")
        data = sock.recv(RECV_BYTES)
        if not data:
            raise HandshakeError("the server closed the connection during the handshake")
        head += data
    end = head.index(b"\r\n\r\n")
    rest = bytes(head[end + 4 :])
    status_line, *header_lines = head[:end].decode("latin-1").split("\r\n")
    fields = status_line.split(" ", 2)
    if len(fields) < 2 or not fields[0].startswith("HTTP/") or not fields[1].isdigit():
        raise HandshakeError(f"not an HTTP response: {status_line!r}")
    status = int(fields[1])
    response: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        response[name] = f"{response[name]}, {value.strip()}" if name in response else value.strip()

    if status != 101:
        body = rest
        length = int(response.get("content-length", "0") or 0)
        while len(body) < length:
            data = sock.recv(RECV_BYTES)
            if not data:
                break
            body += data
        raise HandshakeError(f"upgrade refused: HTTP {status}", status, response, body)
    if "websocket" not in _header_tokens(response.get("upgrade", "")):
        raise HandshakeError("the 101 answer lacks 'Upgrade: websocket'", status, response)
    if "upgrade" not in _header_tokens(response.get("connection", "")):
        raise HandshakeError("the 101 answer lacks 'Connection: Upgrade'", status, response)
    if response.get("sec-websocket-accept") != _accept_for(key):
        raise HandshakeError("Sec-WebSocket-Accept does not match the key", status, response)
    if response.get("sec-websocket-extensions"):
        raise HandshakeError("the server answered with extensions that were not offered", status, response)
    chosen = response.get("sec-websocket-protocol") or None
    if chosen is not None and chosen not in (subprotocols or ()):
        raise HandshakeError(f"the server chose subprotocol {chosen!r}, which was not offered", status, response)
    if subprotocols and chosen is None:
        raise HandshakeError(f"the server accepted none of the offered subprotocols {list(subprotocols)}", status, response)
    return chosen, response, rest
