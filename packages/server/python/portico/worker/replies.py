"""Replies: what a running call sends, from its stream items to its terminal frame.

Owns the table of running calls by request id and the rule that a call has one terminal frame
(result, end or error: the first one wins, and the call leaves the table with it), the error
code each exception a call raises becomes, and results and stream items as frames: a plain JSON
value as it is, anything else with its display bundle when it has one (docs/writing/rich-results.md).
"""

from __future__ import annotations

import traceback
from typing import Any

from .. import _display
from .._buffers import join_body
from .._frames import encode_frame, result_frame
from .._storage import OutsideFolder
from .._read import ChunkWriter
from ..interface import CallCancelled, NotFound
from . import protocol
from .call import Call
from .protocol import Refusal, described, log

#: Result types that are neither a coroutine nor an iterator (so never a stream) by their type alone.
PLAIN_RESULTS = frozenset({type(None), bool, int, float, str, dict, list, tuple})


class Replies:
    """The running calls of one worker, by request id, and the frames they send."""

    def __init__(self, writer: ChunkWriter) -> None:
        self.writer = writer
        self.calls: dict[Any, Call] = {}

    def register(self, request_id: Any, method: str) -> Call:
        """A new running call (cancellable, creditable) for ``request_id``."""
        if request_id in self.calls:
            raise Refusal("bad_request", f"id {request_id} is already in use by a running call")
        call = self.calls[request_id] = Call(request_id, method)
        return call

    def finish(self, call: Call, header: dict[str, Any]) -> None:
        self.finish_frame(call, encode_frame(header))

    def finish_frame(self, call: Call, frame: bytes) -> None:
        """Send the call's terminal frame unless one was sent already (first one wins), after
        what its user code printed and has not been sent yet."""
        if call.output is not None and not call.done:
            call.output.close()
        with call.lock:
            if call.done:
                return
            call.done = True
            self.writer.put(frame)
        self.calls.pop(call.id, None)

    def fail(self, call: Call, refusal: Refusal) -> None:
        self.finish(call, protocol.error_header(call.id, refusal))

    def fail_raised(self, call: Call, exc: BaseException) -> None:
        if isinstance(exc, CallCancelled):
            self.fail(call, Refusal("cancelled", f"{call.method}() was cancelled"))
            return
        if isinstance(exc, NotFound):  # the author's way of saying "no such thing": no traceback
            self.fail(call, Refusal("not_found", f"{call.method}() raised {described(exc)}", exception=type(exc).__name__))
            return
        if isinstance(exc, _display.DisplayTooLarge):  # emit() of a bundle over the bound, not caught
            self.fail(call, Refusal("payload_too_large", f"{call.method}() raised {described(exc)}", exception=type(exc).__name__))
            return
        if isinstance(exc, OutsideFolder):  # local_directory() refused a path leading out of the folder
            self.fail(call, Refusal("forbidden", f"{call.method}() raised {described(exc)}", exception=type(exc).__name__))
            return
        log(f"{call.method}() (call {call.id}) raised:\n" + "".join(traceback.format_exception(exc)).rstrip())
        self.fail(
            call,
            Refusal("call_failed", f"{call.method}() raised {described(exc)}", exception=type(exc).__name__),
        )

    def fail_foreign_cancel(self, call: Call) -> None:
        """A CancelledError that our cancel did not cause: the method's own code was cancelled."""
        if not call.done:
            self.fail(call, Refusal("call_failed", f"{call.method}() raised CancelledError", exception="CancelledError"))

    def finish_result(self, call: Call, payload: Any, buffers: list[bytes] | None = None) -> None:
        """Answers ``payload``; ``buffers`` (widget binary values) go in the frame body."""
        try:
            if buffers:
                lengths, body = join_body(buffers)
                frame = encode_frame({"op": "result", "id": call.id, "payload": payload, "buffer_lengths": lengths}, body)
            else:
                frame = result_frame(call.id, payload)
        except Exception as exc:  # any failure of user types while encoding
            self.fail(call, Refusal("unserializable_result", f"Result of {call.method}() is not JSON: {exc}"))
            return
        self.finish_frame(call, frame)

    def finish_value(self, call: Call, value: Any) -> None:
        """Answers a method's result that is not of a plain JSON type (docs/writing/rich-results.md):
        with a display bundle when its repr methods, or IPython's formatter when JSON cannot
        carry it, show more than text; ``payload`` is its JSON value, or null when it has none.
        A value whose class declares repr methods that all failed answers its text/plain; any
        other value JSON refuses keeps ``unserializable_result``; a bundle over the bound
        answers ``payload_too_large``."""
        encode = _display.bridge_frame({"op": "result", "id": call.id})
        try:
            frame = _display.encoded(value, encode, f"The result of {call.method}()")
        except _display.DisplayTooLarge as exc:
            self.fail(call, Refusal("payload_too_large", str(exc)))
            return
        except Exception as exc:  # any failure of user types while encoding
            self.fail(call, Refusal("unserializable_result", f"Result of {call.method}() is not JSON: {exc}"))
            return
        self.finish_frame(call, frame)

    def send_item(self, call: Call, payload: Any) -> bool:
        """Send one stream item, with its display bundle when it has one (as a result would);
        False when the stream must stop (finished, unserializable or over the bound)."""
        try:
            if type(payload) in PLAIN_RESULTS:  # most items: no repr methods to look for
                frame = encode_frame({"op": "item", "id": call.id, "payload": payload})
            else:
                frame = _display.encoded(payload, _display.bridge_frame({"op": "item", "id": call.id}), f"An item of {call.method}()")
        except _display.DisplayTooLarge as exc:
            self.fail(call, Refusal("payload_too_large", str(exc)))
            return False
        except Exception as exc:
            self.fail(call, Refusal("unserializable_result", f"Item of {call.method}() is not JSON: {exc}"))
            return False
        with call.lock:
            if call.done:
                return False
            call.credits -= 1
            self.writer.put(frame)
        return True


def streaming_unsupported(call: Call) -> Refusal:
    return Refusal(
        "streaming_unsupported",
        f"{call.method}() streams its results: over REST ask for them with Accept: application/x-ndjson "
        "(or text/event-stream), or call it over the WebSocket",
    )
