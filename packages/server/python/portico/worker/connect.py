"""``python -m portico.worker --connect HOST:PORT <project>``: a worker placed away from the gateway.

A worker the gateway could not start as its own child (one placed by Slurm on a compute node,
``portico serve --workers slurm``) has no fd 3 and fd 4 to inherit. It connects back to the
gateway over TCP instead, proves it is the worker the gateway started with the one-time secret
it was given in ``PORTICO_WORKER_TOKEN`` (``<worker id>.<secret>``), and then puts that one
connection on fd 3 and fd 4: everything after is the local worker, frame for frame.
"""

from __future__ import annotations

import os
import socket

from .._frames import encode_frame
from .pipe import REPLY_FD, REQUEST_FD
from .protocol import log

#: The environment variable carrying the worker's id and secret; removed once read, so that
#: processes user code starts never see it.
TOKEN_VARIABLE = "PORTICO_WORKER_TOKEN"
#: How long connecting back may take before the worker gives up (seconds).
CONNECT_TIMEOUT_S = 30.0


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port`` → (host, port); ValueError when it is neither."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"--connect wants HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


def connect_back(address: str) -> int:
    """Connects to the gateway at ``address``, says who this worker is, and makes the connection
    fd 3 and fd 4. Returns 0, or 2 after logging why (the gateway's log names the address)."""
    token = os.environ.pop(TOKEN_VARIABLE, "")
    worker_id, _, secret = token.partition(".")
    if not worker_id or not secret:
        log(f"{TOKEN_VARIABLE} is not set: only the gateway starts connecting workers")
        return 2
    try:
        host, port = split_address(address)
        conn = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    except (OSError, ValueError) as exc:
        log(f"cannot connect back to the gateway at {address}: {exc}")
        return 2
    conn.settimeout(None)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    hello = {"op": "hello", "worker": worker_id, "secret": secret, "host": socket.gethostname(), "job": os.environ.get("SLURM_JOB_ID")}
    try:
        conn.sendall(encode_frame(hello))
    except OSError as exc:
        log(f"cannot connect back to the gateway at {address}: {exc}")
        return 2
    fd = conn.detach()  # the connection may already be fd 3 or fd 4 (the lowest free ones)
    for target in (REQUEST_FD, REPLY_FD):
        if fd != target:
            os.dup2(fd, target)
    if fd not in (REQUEST_FD, REPLY_FD):
        os.close(fd)  # fd 3 and fd 4 hold the connection now
    return 0
