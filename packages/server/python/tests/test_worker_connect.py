"""``python -m portico.worker --connect HOST:PORT``: a worker placed away from the gateway
(``portico serve --workers slurm``) connects back, says hello with its one-time token, and then
speaks the frames of a local worker on that one connection."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import unittest

from support import PYTHON_DIR, TIMEOUT, make_project

from portico.worker.connect import split_address

PROJECT = {
    "where.py": """
        import os
        from portico import Interface

        class Where(Interface):
            def token(self):
                return os.environ.get("PORTICO_WORKER_TOKEN")
    """
}


def read_frame(conn: socket.socket) -> dict:
    prefix = b""
    while len(prefix) < 8:
        got = conn.recv(8 - len(prefix))
        if not got:
            raise EOFError
        prefix += got
    header_len, body_len = struct.unpack(">II", prefix)
    data = b""
    while len(data) < header_len + body_len:
        data += conn.recv(header_len + body_len - len(data))
    return json.loads(data[:header_len])


def frame(header: dict) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack(">II", len(raw), 0) + raw


class ConnectTest(unittest.TestCase):
    def start(self, address: str, token: str | None) -> subprocess.Popen:
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR, PYTHONDONTWRITEBYTECODE="1")
        env.pop("PORTICO_WORKER_TOKEN", None)
        if token is not None:
            env["PORTICO_WORKER_TOKEN"] = token
        project = make_project(self, PROJECT)
        proc = subprocess.Popen([sys.executable, "-m", "portico.worker", "--connect", address, project], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: (proc.kill(), proc.wait(), proc.stdout.close(), proc.stderr.close()))  # type: ignore[union-attr]
        return proc

    def test_hello_then_the_frames_of_a_local_worker(self) -> None:
        listener = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(listener.close)
        listener.settimeout(TIMEOUT)
        proc = self.start(f"127.0.0.1:{listener.getsockname()[1]}", "w1.s3cret")
        conn, _ = listener.accept()
        self.addCleanup(conn.close)
        conn.settimeout(TIMEOUT)
        hello = read_frame(conn)
        self.assertEqual({k: hello[k] for k in ("op", "worker", "secret")}, {"op": "hello", "worker": "w1", "secret": "s3cret"})
        self.assertEqual(hello["host"], socket.gethostname())
        self.assertEqual(read_frame(conn)["op"], "ready")
        conn.sendall(frame({"op": "call", "id": 1, "uuid": "u", "module": "where", "config": {}, "method": "token", "args": [], "kwargs": {}, "stream": False}))
        # The token left the environment before user code ran.
        self.assertEqual(read_frame(conn), {"op": "result", "id": 1, "payload": None})
        conn.sendall(frame({"op": "shutdown"}))
        self.assertEqual(proc.wait(TIMEOUT), 0)

    def test_a_gateway_it_cannot_reach_is_named(self) -> None:
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        listener.close()  # nothing listens there now
        proc = self.start(f"127.0.0.1:{port}", "w1.s3cret")
        self.assertEqual(proc.wait(TIMEOUT), 2)
        self.assertIn(f"cannot connect back to the gateway at 127.0.0.1:{port}", proc.stderr.read().decode())  # type: ignore[union-attr]

    def test_without_a_token_it_does_not_connect(self) -> None:
        proc = self.start("127.0.0.1:9", None)
        self.assertEqual(proc.wait(TIMEOUT), 2)
        self.assertIn("PORTICO_WORKER_TOKEN is not set", proc.stderr.read().decode())  # type: ignore[union-attr]

    def test_split_address(self) -> None:
        self.assertEqual(split_address("login1:4000"), ("login1", 4000))
        self.assertEqual(split_address("[fd00::1]:4000"), ("fd00::1", 4000))
        for bad in ("login1", ":4000", "h:x"):
            with self.assertRaises(ValueError):
                split_address(bad)


if __name__ == "__main__":
    unittest.main()
