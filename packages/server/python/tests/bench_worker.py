"""Benchmark (not a test): pipelined trivial calls per second through a real worker, or the
throughput of a binary ``read``.

    python3 tests/bench_worker.py [--calls 20000] [--in-flight 64] [--runs 3]
    python3 tests/bench_worker.py --lone [--calls 3000] [--gap-ms 1]
    python3 tests/bench_worker.py --read-mib 1024 [--source file|bytes|generator|async_generator]

The client pre-encodes every request and, while the clock runs, only splits the reply stream
into frames; replies are decoded and checked after the clock stops. So the figure is the worker's.
The worker's CPU per call is its threads' run time (/proc/<pid>/task/*/schedstat) over the
clocked calls. ``--lone`` sends one call at a time and waits ``--gap-ms`` after each reply, so
every call finds the worker idle in os.read (its CPU then includes the hand-over watchdog waking).
A read is consumed like the gateway does: each chunk's body is read into one buffer and dropped,
and every chunk is credited as it arrives.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import tempfile
import threading
import time

from support import WorkerProcess, encode, write_files

PROJECT = {
    "bench.py": """
        from portico import Interface

        class Bench(Interface):
            def ping(self, x):
                return x

            async def aping(self, x):
                return x

            def read(self, params):
                source, path = params["source"], params["path"]
                if source == "file":
                    return open(path, "rb")
                block = bytes(1 << 20)
                count = params["mib"]
                if source == "bytes":
                    return bytes(count << 20)
                if source == "generator":
                    return (block for _ in range(count))

                async def blocks():
                    for _ in range(count):
                        yield block

                return blocks()
    """
}


class ReplyCounter:
    """Reads the reply pipe on a thread, counting complete frames."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.data = bytearray()
        self.frames = 0
        self.cond = threading.Condition()
        self._offset = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return
            self.data.extend(chunk)
            count = 0
            while len(self.data) - self._offset >= 8:
                header_len, body_len = struct.unpack_from(">II", self.data, self._offset)
                end = self._offset + 8 + header_len + body_len
                if end > len(self.data):
                    break
                self._offset = end
                count += 1
            if count:
                with self.cond:
                    self.frames += count
                    self.cond.notify_all()

    def wait(self, predicate, timeout: float = 120.0) -> None:
        with self.cond:
            if not self.cond.wait_for(predicate, timeout):
                raise TimeoutError("the worker stopped answering")

    def decoded(self) -> list[dict]:
        out, offset = [], 0
        while offset < len(self.data):
            header_len, body_len = struct.unpack_from(">II", self.data, offset)
            out.append(json.loads(self.data[offset + 8 : offset + 8 + header_len]))
            offset += 8 + header_len + body_len
        return out


def worker_cpu_ns(pid: int) -> int:
    """Run time of every thread of ``pid`` so far (ns), from the scheduler's accounting."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as stat:
                total += int(stat.read().split()[0])
        except (OSError, ValueError):
            pass  # a thread that ended meanwhile
    return total


def run(calls: int, in_flight: int, method: str, lone: bool = False, gap_s: float = 0.0) -> tuple[float, float]:
    """(calls/s, worker CPU µs per call); ``lone``: one call at a time, ``gap_s`` apart (see --lone)."""
    with tempfile.TemporaryDirectory(prefix="portico-bench-") as project:
        write_files(project, PROJECT)
        worker = WorkerProcess(project, read_replies=False)
        replies = ReplyCounter(worker.reply_fd)
        call = {"op": "call", "uuid": "b", "module": "bench", "config": {}, "method": method, "kwargs": {}, "stream": False}
        # Warm-up (ready frame + one call): the instance exists before the clock starts.
        worker.send(dict(call, id=0, args=[0]))
        replies.wait(lambda: replies.frames >= 2)
        base = replies.frames
        requests = [encode(dict(call, id=i, args=[i])) for i in range(1, calls + 1)]
        sent = 0
        cpu_before = worker_cpu_ns(worker.proc.pid)
        start = time.perf_counter()
        while lone and sent < calls:
            worker.send_raw(requests[sent])
            sent += 1
            replies.wait(lambda: replies.frames - base >= sent)
            if gap_s:
                time.sleep(gap_s)
        while sent < calls:
            replies.wait(lambda: sent - (replies.frames - base) < in_flight)
            room = in_flight - (sent - (replies.frames - base))
            worker.send_raw(b"".join(requests[sent : sent + room]))
            sent += room
        replies.wait(lambda: replies.frames - base >= calls)
        elapsed = time.perf_counter() - start
        cpu_us = (worker_cpu_ns(worker.proc.pid) - cpu_before) / calls / 1e3
        worker.close()
        replies.thread.join()
        os.close(worker.reply_fd)
        results = [f for f in replies.decoded() if f["op"] == "result" and f["id"] > 0]
        assert len(results) == calls and all(f["payload"] == f["id"] for f in results), "wrong replies"
        return calls / elapsed, cpu_us


def read_throughput(mib: int, source: str) -> tuple[float, int]:
    """(MB/s, chunks) of one read of ``mib`` MiB through the worker; the worker's peak RSS is
    printed by the caller."""
    with tempfile.TemporaryDirectory(prefix="portico-bench-") as project:
        write_files(project, PROJECT)
        path = os.path.join(project, "data.bin")
        if source == "file":
            block = os.urandom(1 << 20)
            with open(path, "wb") as handle:
                for _ in range(mib):
                    handle.write(block)
            with open(path, "rb") as handle:  # warm the page cache: we measure the worker, not the disk
                while handle.read(1 << 24):
                    pass
        worker = WorkerProcess(project, read_replies=False)
        fd = worker.reply_fd
        buffer = memoryview(bytearray(8 << 20))
        prefix = memoryview(bytearray(8))

        def fill(view: memoryview) -> None:
            while view:
                n = os.readv(fd, [view])
                if not n:
                    raise EOFError("the worker went away")
                view = view[n:]

        def frame() -> tuple[dict, int]:
            fill(prefix)
            header_len, body_len = struct.unpack(">II", prefix)
            header = bytearray(header_len)
            fill(memoryview(header))
            fill(buffer[:body_len])
            return json.loads(header), body_len

        assert frame()[0]["op"] == "ready"
        request = {"op": "read", "id": 1, "uuid": "b", "module": "bench", "config": {}, "block": 1 << 20}
        request["params"] = {"source": source, "path": path, "mib": mib}
        start = time.perf_counter()
        worker.send(request)
        total = chunks = 0
        while True:
            header, body_len = frame()
            if header["op"] == "chunk":
                chunks += 1
                total += body_len
                worker.send({"op": "credit", "id": 1, "n": 1})
                continue
            elapsed = time.perf_counter() - start
            assert header == {"op": "end", "id": 1, "bytes": mib << 20} and total == mib << 20, header
            break
        with open(f"/proc/{worker.proc.pid}/status", encoding="ascii") as status:
            peak = next((line.split()[1] for line in status if line.startswith("VmHWM:")), "?")
        worker.close()
        os.close(fd)
        print(f"  {source}: {mib} MiB in {elapsed:.2f}s, {chunks} chunks, worker peak RSS {peak} kB")
        return (mib << 20) / elapsed / 1e6, chunks


def main() -> None:
    parser = argparse.ArgumentParser(description="pipelined trivial calls per second through the worker")
    parser.add_argument("--calls", type=int, default=0, help="calls per run (default 20000, --lone 3000)")
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--method", choices=("ping", "aping"), default="ping", help="aping is the async variant")
    parser.add_argument("--lone", action="store_true", help="one call at a time, the worker idle before each")
    parser.add_argument("--gap-ms", type=float, default=1.0, help="--lone: pause after each reply (0: back to back)")
    parser.add_argument("--read-mib", type=int, default=0, help="measure a read of this many MiB instead of calls")
    parser.add_argument("--source", choices=("file", "bytes", "generator", "async_generator"), default="file", help="what read() returns")
    options = parser.parse_args()
    if options.read_mib:
        rates = [read_throughput(options.read_mib, options.source)[0] for _ in range(options.runs)]
        print(
            f"worker: read() of a {options.source} at {max(rates):,.0f} MB/s (best of {options.runs}: "
            f"{', '.join(f'{r:,.0f}' for r in rates)}; {options.read_mib} MiB in 1 MiB chunks, Python {sys.version.split()[0]})"
        )
        return
    calls = options.calls or (3000 if options.lone else 20000)
    results = [run(calls, options.in_flight, options.method, options.lone, options.gap_ms / 1e3) for _ in range(options.runs)]
    rates, cpus = [rate for rate, _ in results], [cpu for _, cpu in results]
    how = f"lone (one at a time, {options.gap_ms:g} ms apart)" if options.lone else "pipelined"
    shape = "" if options.lone else f", {options.in_flight} in flight"
    print(
        f"worker: {max(rates):,.0f} {options.method}() calls/s {how} (best of {options.runs}: {', '.join(f'{r:,.0f}' for r in rates)}; "
        f"{calls} trivial calls{shape}, Python {sys.version.split()[0]})"
    )
    print(f"worker CPU per call: {min(cpus):.1f} µs (least of {options.runs}: {', '.join(f'{c:.1f}' for c in cpus)})")


if __name__ == "__main__":
    main()
