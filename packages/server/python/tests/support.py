"""Test helpers: temporary projects, and a real worker subprocess spoken to over fds 3/4."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from typing import Any, Callable

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

#: Generous: these bound waits for things that normally take milliseconds.
TIMEOUT = 15.0


def make_project(test: unittest.TestCase, files: dict[str, str]) -> str:
    """A temporary project directory holding ``files`` (dedented), removed after the test."""
    root = tempfile.mkdtemp(prefix="portico-test-")
    test.addCleanup(shutil.rmtree, root, True)
    write_files(root, files)
    return root


def write_files(root: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(textwrap.dedent(text))


def encode(header: dict[str, Any], body: bytes = b"") -> bytes:
    raw = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack(">II", len(raw), len(body)) + raw + body


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _read_into(fd: int, view: memoryview) -> bool:
    """Fill ``view`` from ``fd``; False at EOF."""
    while view:
        n = os.readv(fd, [view])
        if not n:
            return False
        view = view[n:]
    return True


class WorkerProcess:
    """``python -m portico.worker <project>`` with the request pipe on fd 3 and replies on fd 4."""

    def __init__(self, project: str, read_replies: bool = True, keep_bodies: bool = True, python: str | None = None) -> None:
        """With ``read_replies=False`` the caller reads ``reply_fd`` itself (the benchmark does).
        With ``keep_bodies=False`` frame bodies are read and dropped (``body_sizes`` still counts
        them): for reads too big to keep."""
        request_r, self._request_w = os.pipe()
        self._reply_r, reply_w = os.pipe()

        def child_fds() -> None:
            # Move both ends above 10 first so that dup2 onto 3 or 4 cannot clobber the other one.
            high_r = fcntl.fcntl(request_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(reply_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        env = dict(os.environ, PYTHONPATH=PYTHON_DIR, PYTHONDONTWRITEBYTECODE="1")
        self.proc = subprocess.Popen(
            [python or sys.executable, "-m", "portico.worker", project],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=False,  # our pipe ends are non-inheritable; only the dup2'ed 3/4 cross exec
            preexec_fn=child_fds,
        )
        os.close(request_r)
        os.close(reply_w)
        self.reply_fd = self._reply_r
        self.frames: list[dict[str, Any]] = []
        self.bodies: list[bytes] = []  # one per frame, b"" when dropped
        self.body_sizes: list[int] = []  # one per frame
        self.keep_bodies = keep_bodies
        self.auto_credit: set[Any] = set()  # ids of reads/streams credited as each chunk arrives
        self._send_lock = threading.Lock()
        self.eof = False
        self._cond = threading.Condition()
        self._next_id = 0
        self.stdout = bytearray()
        self.stderr = bytearray()
        if read_replies:
            threading.Thread(target=self._read_replies, daemon=True).start()
        self._drains = [
            threading.Thread(target=self._drain, args=(self.proc.stdout, self.stdout), daemon=True),
            threading.Thread(target=self._drain, args=(self.proc.stderr, self.stderr), daemon=True),
        ]
        for thread in self._drains:
            thread.start()

    # -- plumbing ------------------------------------------------------------------------------

    def _read_replies(self) -> None:
        scratch = bytearray()
        while True:
            prefix = _read_exact(self._reply_r, 8)
            if prefix is None:
                break
            header_len, body_len = struct.unpack(">II", prefix)
            raw = _read_exact(self._reply_r, header_len)
            if raw is None:
                break
            if self.keep_bodies:
                body: bytes | None = _read_exact(self._reply_r, body_len) if body_len else b""
            else:
                if len(scratch) < body_len:
                    scratch = bytearray(body_len)
                body = b"" if _read_into(self._reply_r, memoryview(scratch)[:body_len]) else None
            if body is None:
                break
            frame = json.loads(raw)
            if frame.get("op") in ("chunk", "item") and frame.get("id") in self.auto_credit:
                self.send({"op": "credit", "id": frame["id"], "n": 1})
            with self._cond:
                self.frames.append(frame)
                self.bodies.append(body)
                self.body_sizes.append(body_len)
                self._cond.notify_all()
        with self._cond:
            self.eof = True
            self._cond.notify_all()
        os.close(self._reply_r)

    @staticmethod
    def _drain(pipe: Any, sink: bytearray) -> None:
        for chunk in iter(lambda: pipe.read1(65536), b""):
            sink.extend(chunk)

    def send_raw(self, data: bytes) -> None:
        with self._send_lock:  # the reply thread sends credits too
            view = memoryview(data)
            while view:
                view = view[os.write(self._request_w, view) :]

    def send(self, header: dict[str, Any]) -> None:
        self.send_raw(encode(header))

    def close_requests(self) -> None:
        if self._request_w >= 0:
            os.close(self._request_w)
            self._request_w = -1

    def close(self) -> None:
        self.close_requests()
        try:
            self.proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for thread in self._drains:
            thread.join(TIMEOUT)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()

    # -- requests ------------------------------------------------------------------------------

    def request(self, op: str, body: bytes = b"", **fields: Any) -> int:
        self._next_id += 1
        self.send_raw(encode({"op": op, "id": self._next_id, **fields}, body))
        return self._next_id

    def body_of(self, frame: dict[str, Any]) -> bytes:
        """The body of a frame received (``frames`` holds it; compared by identity)."""
        with self._cond:
            return next(body for f, body in zip(self.frames, self.bodies) if f is frame) or b""

    def call(
        self,
        method: str,
        *args: Any,
        module: str = "counter",
        uuid: str = "u1",
        config: dict[str, Any] | None = None,
        stream: bool = False,
        **kwargs: Any,
    ) -> int:
        return self.request(
            "call", uuid=uuid, module=module, config=config or {}, method=method, args=list(args), kwargs=kwargs, stream=stream
        )

    def read(
        self,
        params: Any = None,
        *,
        module: str = "reader",
        uuid: str = "r1",
        config: dict[str, Any] | None = None,
        block: int = 1 << 20,
        auto_credit: bool = True,
    ) -> int:
        """Send a ``read`` request; with ``auto_credit`` each chunk is credited as it arrives."""
        self._next_id += 1
        if auto_credit:
            self.auto_credit.add(self._next_id)
        self.send({"op": "read", "id": self._next_id, "uuid": uuid, "module": module, "config": config or {}, "params": params, "block": block})
        return self._next_id

    def chunks(self, request_id: int) -> list[bytes]:
        """Bodies of the ``chunk`` frames of a read so far, in order."""
        with self._cond:
            return [body for frame, body in zip(self.frames, self.bodies) if frame.get("id") == request_id and frame["op"] == "chunk"]

    def chunk_sizes(self, request_id: int) -> list[int]:
        with self._cond:
            return [size for frame, size in zip(self.frames, self.body_sizes) if frame.get("id") == request_id and frame["op"] == "chunk"]

    def wait_chunks(self, request_id: int, count: int, timeout: float = TIMEOUT) -> list[bytes]:
        """The first ``count`` or more chunks of a read; waits for them."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                chunks = self.chunks(request_id)
                if len(chunks) >= count:
                    return chunks
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise AssertionError(f"only {len(chunks)} of {count} chunks arrived; stderr: {self.stderr.decode()[-2000:]}")
                self._cond.wait(remaining)

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = TIMEOUT) -> dict[str, Any]:
        """The first frame received (ever) that matches; waits for it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for frame in self.frames:
                    if predicate(frame):
                        return frame
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise AssertionError(f"no matching frame; got {self.frames[-20:]}; stderr: {self.stderr.decode()[-2000:]}")
                self._cond.wait(remaining)

    def terminal(self, request_id: int, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The result / end / error / resolved / modules / schema / resources frame of a request."""
        return self.wait_for(
            lambda f: f.get("id") == request_id and f["op"] in ("result", "end", "error", "resolved", "modules", "schema", "resources", "widget_assets"),
            timeout,
        )

    def result(self, request_id: int) -> Any:
        frame = self.terminal(request_id)
        if frame["op"] != "result":
            raise AssertionError(f"expected a result, got {frame}")
        return frame["payload"]

    def error(self, request_id: int, timeout: float = TIMEOUT) -> dict[str, Any]:
        frame = self.terminal(request_id, timeout)
        if frame["op"] != "error":
            raise AssertionError(f"expected an error, got {frame}")
        return frame

    def frames_for(self, request_id: int) -> list[dict[str, Any]]:
        with self._cond:
            return [f for f in self.frames if f.get("id") == request_id]

    def items(self, request_id: int) -> list[Any]:
        return [f["payload"] for f in self.frames_for(request_id) if f["op"] == "item"]

    def wait_items(self, request_id: int, count: int, timeout: float = TIMEOUT) -> list[Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                items = [f["payload"] for f in self.frames if f.get("id") == request_id and f["op"] == "item"]
                if len(items) >= count:
                    return items
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise AssertionError(f"only {len(items)} of {count} items arrived")
                self._cond.wait(remaining)

    def wait_output(self, needle: bytes, stream: str = "stdout", timeout: float = TIMEOUT) -> None:
        """Wait until the worker's stdout (or stderr) contains ``needle``."""
        sink = self.stdout if stream == "stdout" else self.stderr
        deadline = time.monotonic() + timeout
        while needle not in sink:
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} not in {stream}: {bytes(sink[-2000:])!r}")
            time.sleep(0.01)

    def settle(self, seconds: float = 0.3) -> None:
        """Give the worker time to (wrongly) send more; used only to check that nothing arrives."""
        time.sleep(seconds)


def python_with(*modules: str) -> str | None:
    """A Python that imports ``modules``: this one, else the test venv's (None when neither does)."""
    repo = os.path.abspath(os.path.join(PYTHON_DIR, "..", "..", ".."))
    for python in (sys.executable, os.environ.get("PORTICO_TEST_PYTHON"), os.path.join(repo, ".cache", "test-venv", "bin", "python")):
        if python and os.path.exists(python):
            probe = subprocess.run([python, "-c", "import " + ", ".join(modules)], capture_output=True)
            if probe.returncode == 0:
                return python
    return None


class WorkerTestCase(unittest.TestCase):
    """Starts one worker per test class on a project made of ``FILES``."""

    FILES: dict[str, str] = {}
    #: The worker's interpreter (one with numpy, matplotlib, … : see ``python_with``); this one when None.
    PYTHON: str | None = None
    worker: WorkerProcess
    project: str

    @classmethod
    def setUpClass(cls) -> None:
        cls.project = tempfile.mkdtemp(prefix="portico-test-")
        write_files(cls.project, cls.FILES)
        cls.worker = WorkerProcess(cls.project, python=cls.PYTHON)
        cls.worker.wait_for(lambda f: f["op"] == "ready")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.worker.close()
        shutil.rmtree(cls.project, ignore_errors=True)
