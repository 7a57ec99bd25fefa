"""Streams: driving a stream (a generator's items, a read's chunks) within its credit window.

A sync stream is pumped on a pool thread and parked, thread released, when its window is full;
the next ``credit`` resumes it (``Calls.on_credit``). An async one is pumped on the event loop,
woken by credit through an asyncio.Event. Either way the source is closed once the stream is
over, before its ``end`` frame: a client that saw the end may rely on it.
"""

from __future__ import annotations

import asyncio
import collections.abc
import concurrent.futures
from typing import Any, Callable

from .call import Call, close_iterator, run_interruptible
from .protocol import described, log
from .replies import PLAIN_RESULTS, Replies


class Streams:
    """Pumps the streams of one worker's calls and reads."""

    def __init__(self, replies: Replies, pool: concurrent.futures.ThreadPoolExecutor) -> None:
        self.replies = replies
        self.pool = pool

    def drive_sync(self, call: Call, iterator: collections.abc.Iterator[Any]) -> None:
        """Stream a sync iterator from a pool thread within the credit window (see ``pump``)."""

        def step() -> bool | None:
            try:
                item = run_interruptible(call, next, (iterator,), {})
            except StopIteration:
                return None
            except BaseException as exc:
                self.replies.fail_raised(call, exc)
                return False
            return self.replies.send_item(call, item)

        self.pump(call, iterator, step, lambda: {"op": "end", "id": call.id})

    def pump(self, call: Call, source: Any, step: Callable[[], bool | None], end: Callable[[], dict[str, Any]]) -> None:
        """Drive a sync stream (items, or a read's chunks) on this pool thread, never past the credit window.

        ``step`` sends one piece (True), finds the stream over (None) or has stopped it, answering
        any failure itself (False). When the window is full ``source`` is parked and the thread
        returns to the pool, so slow clients cannot use up the pool; the next credit resumes it
        (``call.resume``, possibly on another thread). Otherwise ``source`` is closed once the
        stream is over, before its ``end()`` frame.
        """
        close_at_exit = True
        try:
            while True:
                with call.lock:
                    if call.done:
                        return
                    if call.credits <= 0:
                        call.parked = source
                        close_at_exit = False
                        return
                going = step()
                if going is None:
                    close_at_exit = False
                    close_iterator(call, source)
                    self.replies.finish(call, end())
                    return
                if not going:
                    return
        finally:
            if close_at_exit:
                close_iterator(call, source)

    async def drive_async(self, call: Call, iterator: collections.abc.AsyncIterator[Any]) -> None:
        """Stream an async iterator on the loop within the credit window (see ``pump_async``)."""

        async def step() -> bool | None:
            try:
                item = await iterator.__anext__()
            except StopAsyncIteration:
                return None
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                self.replies.fail_raised(call, exc)
                return False
            if type(item) in PLAIN_RESULTS:
                return self.replies.send_item(call, item)
            # Repr methods and figures render: never on the loop every coroutine shares.
            return await asyncio.get_running_loop().run_in_executor(self.pool, self.replies.send_item, call, item)

        async def close() -> None:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except BaseException as exc:
                    log(f"closing the stream of {call.method}() raised {described(exc)}")

        await self.pump_async(call, step, close, lambda: {"op": "end", "id": call.id})

    async def pump_async(
        self,
        call: Call,
        step: Callable[[], collections.abc.Awaitable[bool | None]],
        close: Callable[[], collections.abc.Awaitable[None]],
        end: Callable[[], dict[str, Any]],
    ) -> None:
        """``pump`` on the event loop: ``step`` as there, credits wake it through an asyncio.Event,
        ``close()`` releases the source (before the ``end()`` frame), and a CancelledError out of
        ``step`` that our cancel did not cause fails the call."""
        call.async_wakeup = wakeup = asyncio.Event()
        close_at_exit = True
        try:
            while True:
                while call.credits <= 0 and not call.done:
                    wakeup.clear()
                    await wakeup.wait()
                if call.done:
                    return
                try:
                    going = await step()
                except asyncio.CancelledError:
                    self.replies.fail_foreign_cancel(call)
                    return
                if going is None:
                    close_at_exit = False
                    await close()
                    self.replies.finish(call, end())
                    return
                if not going:
                    return
        finally:
            if close_at_exit:
                await close()
