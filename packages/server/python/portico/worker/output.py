"""What a method prints, as its caller sees it (docs/writing/prints-and-logs.md).

While user code runs for a call, what it writes to ``sys.stdout`` and ``sys.stderr`` (``print``,
and ``logging``'s handlers, which write to ``sys.stderr``) goes to that call's caller as ``output``
frames ``{"op": "output", "id", "stream": "stdout"|"stderr", "text"}``, in order with its stream
items and events (they leave from the same thread). A line is sent when it ends (or when
``OUTPUT_FRAME_CHARS`` of it have gathered); what is left is sent before the call's terminal
frame. Which call is running: the pool thread's (``call.running_call``) for sync code, the
task's (``CURRENT``) for async code. Output outside any call (module imports, threads user code
started, C code writing to the file descriptors) goes to the worker's own stdout and stderr, which
the gateway writes to its log.

Bounded: a call sends at most ``OUTPUT_RATE_BYTES`` of output a second (after a burst of as many);
beyond it output is dropped, and the next output it sends (or its end) starts with a note saying
how many bytes were dropped.
"""

from __future__ import annotations

import contextvars
import io
import sys
import threading
import time
from typing import Any, TextIO

from .. import shared
from .._frames import encode_frame
from .._read import ChunkWriter
from .call import Call, put_unsolicited, running_call

#: Bytes of output a call may send per second, and its burst (shared.json: LIMITS.callOutputRateBytes).
OUTPUT_RATE_BYTES = shared.LIMITS["call_output_rate_bytes"]
#: Most characters of one output frame (shared.json: LIMITS.callOutputFrameChars).
OUTPUT_FRAME_CHARS = shared.LIMITS["call_output_frame_bytes"]

#: The call whose async code runs in this task (set by ``Calls.submit_coroutine``).
CURRENT: contextvars.ContextVar[Call | None] = contextvars.ContextVar("portico_call", default=None)


def current_call() -> Call | None:
    """The call whose user code runs here, if any."""
    return running_call() or CURRENT.get()


class CallOutput:
    """One call's output not sent yet, and its rate allowance."""

    __slots__ = ("writer", "call", "pending", "allowance", "refilled", "dropped", "lock")

    def __init__(self, writer: ChunkWriter, call: Call) -> None:
        self.writer = writer
        self.call = call
        self.pending: dict[str, str] = {}
        self.allowance = float(OUTPUT_RATE_BYTES)
        self.refilled = time.monotonic()
        self.dropped = 0
        self.lock = threading.Lock()

    def add(self, stream: str, text: str) -> None:
        with self.lock:
            gathered = self.pending.get(stream, "") + text
            cut = gathered.rfind("\n") + 1
            if len(gathered) >= OUTPUT_FRAME_CHARS:
                cut = len(gathered)
            self.pending[stream] = gathered[cut:]
            ready = gathered[:cut]
        if ready:
            self._send(stream, ready)

    def close(self) -> None:
        """Sends what is left (a last line without its newline, the note of what was dropped)."""
        with self.lock:
            left, self.pending = self.pending, {}
        for stream, text in left.items():
            if text:
                self._send(stream, text)
        if self.dropped:
            self._frame("stderr", self._note())

    def _send(self, stream: str, text: str) -> None:
        now = time.monotonic()
        size = len(text.encode("utf-8", "replace"))
        with self.lock:
            self.allowance = min(float(OUTPUT_RATE_BYTES), self.allowance + (now - self.refilled) * OUTPUT_RATE_BYTES)
            self.refilled = now
            if size > self.allowance:
                self.dropped += size
                return
            self.allowance -= size
            note = self._note() if self.dropped else ""
        if note:
            self._frame("stderr", note)
        for start in range(0, len(text), OUTPUT_FRAME_CHARS):
            self._frame(stream, text[start : start + OUTPUT_FRAME_CHARS])

    def _note(self) -> str:
        dropped, self.dropped = self.dropped, 0
        return f"[portico: {dropped} bytes of output dropped: more than {OUTPUT_RATE_BYTES} bytes a second]\n"

    def _frame(self, stream: str, text: str) -> None:
        put_unsolicited(self.writer, encode_frame({"op": "output", "id": self.call.id, "stream": stream, "text": text}))


class _CallStream(io.TextIOBase):
    """``sys.stdout`` or ``sys.stderr`` of the worker: a running call's output goes to its caller,
    the rest to the real stream."""

    def __init__(self, name: str, real: TextIO, writer: ChunkWriter) -> None:
        super().__init__()
        self.name = name
        self.real = real
        self.writer = writer

    def write(self, text: str) -> int:
        call = current_call()
        if call is None or call.done:
            return self.real.write(text)
        output = call.output
        if output is None:
            output = call.output = CallOutput(self.writer, call)
        output.add(self.name, str(text))
        return len(text)

    def flush(self) -> None:
        self.real.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:  # faulthandler and subprocess want the real descriptor
        return self.real.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.real, "encoding", "utf-8")


def install(writer: ChunkWriter) -> None:
    """Routes the worker's ``sys.stdout`` and ``sys.stderr`` (see the module's doc)."""
    sys.stdout = _CallStream("stdout", sys.stdout, writer)
    sys.stderr = _CallStream("stderr", sys.stderr, writer)
