"""The pipes to the gateway: fd 3 carries requests in, fd 4 carries frames out.

Owns the reading side (leader/follower, see ``Pipe.serve``), the one writer every reply, item,
chunk and event goes through, and how the process leaves when the gateway goes away. It knows
frames, not what they mean: each request is handed to the dispatcher given to ``serve``.
"""

from __future__ import annotations

import concurrent.futures
import os
import platform
import sys
import threading
import time
import traceback
from typing import Any, Callable

from .. import _read
from .._frames import FrameError, FrameReader, HeaderError, encode_frame
from .protocol import described, is_request_id, log, request_id

#: Upper bound on threads running sync methods at once. Large, because a sleeping or blocked
#: call holds its thread and must not delay the others; idle threads are reused, not re-created.
MAX_SYNC_THREADS = 256
#: gateway → worker and worker → gateway pipes (README "Process").
REQUEST_FD = 3
REPLY_FD = 4
#: Read buffer for fd 3: pipelined requests are parsed from memory instead of one read per frame.
READ_BUFFER_BYTES = 64 * 1024  # per os.read; a larger request costs a large allocation every read
#: How long the reading thread may be running a call itself before another thread takes over the
#: reading (Pipe.serve): the most a slow call delays the requests queued behind it.
HAND_OVER_AFTER_S = 0.002
#: How long exiting waits for queued replies to reach the gateway.
EXIT_FLUSH_SECONDS = 5.0
#: Linux F_SETPIPE_SZ (not exported by the fcntl module before Python 3.10 on every platform).
_F_SETPIPE_SZ = 1031
#: Reply channel capacity asked for (pipe size, or socket send buffer, which Linux doubles): a
#: whole read chunk fits, so a 1 MiB chunk is one write rather than a blocked write per 200 KiB.
REPLY_PIPE_BYTES = 1 << 20

#: Ops whose ``id`` names another request (README "Requests"): a failure handling one of them is
#: logged, never answered to that id, which would end the request it names. (A tuple: ``in``
#: compares, where a set would hash an unhashable op.)
_ID_NAMES_ANOTHER = ("credit", "cancel")

Work = Callable[[], None]
"""A sync call ready to run on whichever thread takes it."""


class Exit(Exception):
    """Raised by the ``shutdown`` handler to leave the read loop."""


class Pipe:
    """Reads requests from the gateway and writes every frame back to it."""

    def __init__(self, reply_fd: int, pool: concurrent.futures.ThreadPoolExecutor) -> None:
        self.writer = _read.ChunkWriter(reply_fd, self._reply_pipe_broken)
        self.pool = pool
        # Leader/follower reading (see serve): the thread waiting to take over reading, how many
        # threads are running a call they read themselves, and how serving ended.
        self._standby: threading.Lock | None = None
        self._roles = threading.Lock()
        # Threads running a call that was handed over (they read it, someone else reads now).
        self._running_inline = 0
        # The call the leader is running itself (a number per inline call), None when it reads;
        # the watchdog sets it to None when it hands the reading over.
        self._inline_call: int | None = None
        self._calls_started = 0
        # The watchdog sleeps on _wake (a locked lock) while _watch_idle; the leader starting a
        # call releases it. A bare lock rather than an Event: Event.set runs a Condition's
        # notify in Python, several function calls on every lone call's path.
        self._watch_idle = True
        self._wake = threading.Lock()
        self._wake.acquire()
        self._ended = False  # _done is set: read on every frame, where Event.is_set is a call
        self._done = threading.Event()
        self._status = 0
        self._reader: FrameReader | None = None
        self._dispatch: Callable[[dict[str, Any], bytes], Work | None] | None = None

    def ended(self) -> int:
        """Waits until serving ended (EOF, ``shutdown``, lost framing), whichever thread met it; its status."""
        self._done.wait()
        return self._status

    def send(self, header: dict[str, Any]) -> None:
        self.writer.put(encode_frame(header))

    def on_heartbeat(self, header: dict[str, Any]) -> None:
        """``heartbeat {id}``: answered at once by the reading thread, whatever calls are running,
        so the gateway tells a worker still reading its requests from a wedged one. Not a call."""
        self.writer.put(encode_frame({"op": "heartbeat", "id": request_id(header)}))
        self.writer.send_held()  # not kept back with a batch's replies (FrameWriter.hold)

    def _reply_pipe_broken(self, exc: OSError) -> None:
        log(f"reply pipe closed ({exc}); exiting")
        exit_now(1)

    def serve(self, reader: FrameReader, dispatch: Callable[[dict[str, Any], bytes], Work | None]) -> int:
        """Answer requests until EOF or ``shutdown``; returns the exit status.

        ``dispatch`` handles one request (header and body) and returns the sync call the reading thread should
        run, if any (it raises ``Exit`` on ``shutdown``).

        Reading is leader/follower with a lazy hand-over: the thread that reads a sync call runs
        it itself, and only when the call is still running after ``HAND_OVER_AFTER_S`` does a
        watchdog hand the reading to another thread. A small call then costs no thread switch
        at all (a hand-over before every call was most of a small call's cost on two cores, and
        pipelined calls submitted to the pool grew it to hundreds of threads fighting over the
        GIL), while a slow call still stalls the bridge for that long at most.

        While more of a batch is already read, the reading thread holds the frames it puts
        (``FrameWriter.hold``) and the batch's last reply takes them all: pipelined calls read in
        one batch are answered in one write instead of one per call, and every write wakes the
        gateway (a write per reply was most of the worker's system time under pipelined calls).
        A lone call's reply (nothing read after it) is written as it is put. A call that keeps the reader
        busy does not keep what it holds: the watchdog sends it at its next tick.
        """
        self._reader = reader
        self._dispatch = dispatch
        reader.before_read = self.writer.send_held
        self.send({"op": "ready", "pid": os.getpid(), "python": platform.python_version(), "executable": sys.executable})
        threading.Thread(target=self._watch, name="portico-hand-over", daemon=True).start()
        self._lead()
        self._done.wait()
        return self._status

    def _lead(self) -> None:
        """Read and dispatch frames until a call this thread runs is handed over, or serving ends."""
        reader, dispatch = self._reader, self._dispatch
        assert reader is not None and dispatch is not None
        me = threading.get_ident()
        writer, roles = self.writer, self._roles
        holding: int | None = None  # what this thread last gave writer.hold (None on a new leader)
        while not self._ended:
            # Nothing a frame holds ends this thread (the one reading fd 3: were it a hand-over
            # thread, nothing would read any more while the process looked alive). A header that
            # cannot be decoded fails its own request; only lost framing ends the worker.
            try:
                frame = reader.read()
            except HeaderError as exc:
                self._answer_failure(exc.request_id, "bad_request", str(exc), f"undecodable frame (request id {exc.request_id!r}): {exc}")
                continue
            except FrameError as exc:
                log(f"malformed frame, exiting: {exc}")
                return self._stop(2)
            if frame is None:
                return self._stop(0)
            # Hold what this request answers only while more of a batch is read already: the
            # batch's last reply then takes them all in one write. A lone request's reply is
            # written as it is put, before this thread's bookkeeping after the call, so the
            # gateway works on it meanwhile. (The watchdog sets None when it hands over.)
            holder = me if reader.buffered else None
            if holder is not holding:
                writer.hold(holder)
                holding = holder
            try:
                work = dispatch(*frame)
            except Exit:
                return self._stop(0)
            except Exception as exc:  # a bug in a handler: that request fails, reading goes on
                self._dispatch_failed(frame[0], exc)
                continue
            if work is None:
                continue
            with roles:
                # Running inline is only safe while the watchdog could still hand the reading over.
                inline = self._running_inline < MAX_SYNC_THREADS - 1
                if inline:
                    self._calls_started += 1
                    self._inline_call = self._calls_started
                    if self._watch_idle:
                        self._watch_idle = False
                        self._wake.release()
            if not inline:
                self.pool.submit(work)
                continue
            try:
                work()
            finally:
                with roles:
                    handed_over = self._inline_call is None
                    self._inline_call = None
                led_again = self._wait_as_standby() if handed_over else True
            if not led_again:
                return
            if handed_over:
                holding = None  # the watchdog let go of this thread's hold

    def _dispatch_failed(self, header: dict[str, Any], exc: Exception) -> None:
        """``dispatch`` raised: log it, and answer ``internal`` to the request's own id."""
        op = header.get("op")
        found = header.get("id") if op not in _ID_NAMES_ANOTHER else None
        name = repr(op) if isinstance(op, str) else type(op).__name__  # (a deep list's repr could recurse)
        self._answer_failure(
            found,
            "internal",
            f"the worker failed on this request: {described(exc)}",
            f"{name} request failed in the worker:\n" + "".join(traceback.format_exception(exc)).rstrip(),
        )

    def _answer_failure(self, found: Any, code: str, message: str, details: str) -> None:
        """Log ``details``; answer ``error {code, message}`` to request id ``found`` when it is
        one (a number or a string). Never raises: it runs on the reading thread."""
        log(details)
        if is_request_id(found) or isinstance(found, str):
            try:
                self.send({"op": "error", "id": found, "code": code, "message": message})
            except Exception as exc:  # an id whose answer does not encode (over the header bound, say)
                log(f"could not answer request {found!r}: {described(exc)}")

    def _watch(self) -> None:
        """Hand the reading over when the leader has run the same call for a whole period.

        It ticks while calls keep starting and sleeps on ``_wake`` only after a whole period in
        which none did: waking it wakes this thread, which then wants the GIL, and doing that for
        every call put two thread switches on each call's path.
        """
        seen = None
        started_before = self._calls_started
        # _wake is released once for each time _watch_idle goes from True to False (by the leader
        # or _stop, under _roles), so this thread acquires it exactly once for each time it set
        # the flag itself (and once for the flag's first True): read again without the lock, the
        # flag may already be False again, and skipping that acquire left the lock to be
        # released twice later (RuntimeError in the leader or in _stop).
        went_idle = True
        while not self._ended:
            if went_idle:
                self._wake.acquire()  # released by the leader's next call, or by _stop
                went_idle = False
                # The period starts now: with no call after the one that woke it, the next tick
                # finds it quiet and sleeps again (a lone call costs one tick, not two).
                started_before = self._calls_started
                continue
            time.sleep(HAND_OVER_AFTER_S)
            with self._roles:
                current = self._inline_call
                started, started_before = started_before, self._calls_started
                if current is None:
                    if started == self._calls_started:
                        self._watch_idle = went_idle = True  # the leader wakes it again, under this lock, for its next call
                    seen = None
                    continue
                if current != seen:
                    seen = current
                    send_held = True  # what the batch before this call answered
                else:
                    # The leader is stuck in user code: it becomes a plain call thread, and
                    # someone else reads meanwhile. It learns this from _inline_call being None.
                    send_held = False
                    self._inline_call = None
                    self._running_inline += 1
                    self.writer.hold(None)
                    standby, self._standby = self._standby, None
                    seen = None
            # Not send_held, whose look at the queue is unlocked: the leader may be inside put,
            # having seen itself as the holder, and not have appended yet. flush(0) takes the
            # queue under its lock, so that frame is either taken here or not held at all.
            self.writer.flush(0)
            if send_held:
                continue
            if standby is not None:
                standby.release()
            else:
                threading.Thread(target=self._lead, name="portico-reader", daemon=True).start()

    def _wait_as_standby(self) -> bool:
        """After a handed-over call: wait to lead again if no thread is standing by; else end."""
        with self._roles:
            self._running_inline -= 1
            if self._standby is not None or self._ended:
                return False
            turn = self._standby = threading.Lock()
            turn.acquire()
        turn.acquire()  # released by the next hand-over, or by _stop
        return not self._ended

    def _stop(self, status: int) -> None:
        with self._roles:
            self._status = status
            standby, self._standby = self._standby, None
            self._ended = True
            if self._watch_idle:  # lets the watchdog see that serving ended
                self._watch_idle = False
                self._wake.release()
        self._done.set()
        if standby is not None:
            standby.release()


def widen_pipe(fd: int) -> None:
    """Best effort: let a whole read chunk (and more) wait in the reply channel, so bulk reads
    stream with fewer blocked writes and wake-ups.

    Node gives a child's extra stdio entries as Unix socket pairs, not pipes, where F_SETPIPE_SZ
    fails; a socket's queue is bounded by the writer's SO_SNDBUF instead (about 208 KiB by
    default, which cut every 1 MiB chunk into blocked pieces).
    """
    import socket

    copy = os.dup(fd)  # the probe owns and closes its descriptor; fd stays the writer's
    try:
        probe = socket.socket(fileno=copy)
    except OSError:
        os.close(copy)
        probe = None  # not a socket: a pipe
    if probe is not None:
        with probe:
            try:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, REPLY_PIPE_BYTES)
            except OSError:
                pass  # above net.core.wmem_max: the kernel keeps its default, only slower
        return
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", _F_SETPIPE_SZ), REPLY_PIPE_BYTES)
    except (ImportError, OSError):
        pass  # not Linux, or above /proc/sys/fs/pipe-max-size: the default pipe works, only slower


def exit_now(status: int) -> None:
    """Leave now: pool threads may be stuck in user code, so no interpreter shutdown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(status)
