"""Calls: running what an instance offers, from the request to its terminal frame.

Owns running user code for a call: plain methods on a thread (the one that read the request,
or the pool), coroutines on the one asyncio loop, sync and async generators streamed within the
credit window (``streams.py``), ``credit`` and ``cancel``. What a call sends, and the table of
running calls, are ``replies.py``'s. Reads and widget hooks run through the same machinery
(``register``, ``begin``, ``start_hook``).

Every call takes one path: ``on_call`` → its live instance (or ``begin``, which creates it in
the pool first) → ``_start`` (the method's checked kind and arguments, ``methods.py``) → a
plain method is handed back to the reading thread to run, anything else goes to the pool or the
loop. ``on_call`` takes a live instance itself rather than through ``begin``: on the hot path the
extra call and its argument packing were a visible share of a call's CPU in the worker.
"""

from __future__ import annotations

import asyncio
import collections.abc
import concurrent.futures
import functools
import inspect
from typing import Any, Callable

from .._frames import encode_frame
from ..interface import CallCancelled
from . import protocol
from . import output
from .call import Call, close_iterator, run_interruptible, set_async_exc
from .instances import Instance, Instances
from .methods import AGEN, ASYNC, GEN, SYNC, Methods
from .pipe import Pipe, Work
from .protocol import Refusal
from .replies import PLAIN_RESULTS, Replies, streaming_unsupported
from .streams import Streams

Finish = Callable[[Call, Any], None]
"""Ends a hook's call with what the hook returned (each hook shapes its own reply)."""
Failure = Callable[[Call, BaseException], None]
"""Ends a call whose user code raised, with the error code its kind of hook gives the exception."""


class Calls:
    """The running calls of one worker: starting them, feeding them credit, cancelling them."""

    def __init__(
        self,
        pipe: Pipe,
        pool: concurrent.futures.ThreadPoolExecutor,
        loop: asyncio.AbstractEventLoop,
        instances: Instances,
        methods: Methods,
    ) -> None:
        self.pool = pool
        self.loop = loop
        self.instances = instances
        self.methods = methods
        self.replies = replies = Replies(pipe.writer)
        self.streams = streams = Streams(replies, pool)
        # What reads and widget hooks use of the parts, under the names they have always had.
        self.calls = replies.calls
        self.register = replies.register
        self.finish = replies.finish
        self.fail = replies.fail
        self.fail_raised = replies.fail_raised
        self.finish_result = replies.finish_result
        self.pump = streams.pump
        self.pump_async = streams.pump_async

    def on_call(self, header: dict[str, Any]) -> Work | None:
        request_id, uuid, module, config, method, args, kwargs, stream = protocol.call_fields(header)
        call = self.register(request_id, method)
        instance = self.instances.get(uuid)
        if instance is None:
            return self.begin(call, uuid, module, config, self._start, call, args, kwargs, stream)
        try:
            return self._start(instance, call, args, kwargs, stream)
        except Refusal as refusal:
            self.fail(call, refusal)
        except Exception as exc:
            self.fail_raised(call, exc)
        return None

    def begin(
        self, call: Call, uuid: str, module: str, config: dict[str, Any], start: Callable[..., Work | None], *args: Any
    ) -> Work | None:
        """Run ``start(instance, *args)`` with the instance for ``uuid``: here if it is live
        (returning the sync work ``start`` hands back, for the reading thread), else in the pool
        once created. What ``start`` raises is the call's error."""
        instance = self.instances.get(uuid)
        if instance is None:
            # Creating runs imports and __init__: user code, so not on this thread.
            self.pool.submit(self._create_then, call, uuid, module, config, start, args)
            return None
        try:
            return start(instance, *args)
        except Refusal as refusal:
            self.fail(call, refusal)
        except Exception as exc:  # a hook's generator function refusing its argument, say
            self.fail_raised(call, exc)
        return None

    def _create_then(
        self, call: Call, uuid: str, module: str, config: dict[str, Any], start: Callable[..., Work | None], args: tuple[Any, ...]
    ) -> None:
        try:
            if call.done:
                return
            work = start(self.instances.instance(uuid, module, config), *args)
            if work is not None:
                work()
        except Refusal as refusal:
            self.fail(call, refusal)
        except BaseException as exc:
            self.fail_raised(call, exc)

    def _start(self, instance: Instance, call: Call, args: list[Any], kwargs: dict[str, Any], stream: bool) -> Work | None:
        """Check the call and hand it to the loop or the pool; a plain sync method is returned
        instead, for the caller to run on its own thread (never runs user code itself)."""
        method = self.methods.get(instance, call.method)
        if method.signature is not None:
            try:
                method.check(args, kwargs)
            except TypeError as exc:
                raise Refusal("invalid_argument", f"Invalid arguments for {call.method}(): {exc}") from None
            if method.floats:
                args, kwargs = method.floats_back(args, kwargs)
        kind = method.kind
        if not stream and kind in (GEN, AGEN):
            raise streaming_unsupported(call)
        bound = getattr(instance.obj, call.method)
        if kind == SYNC:
            return functools.partial(self._run_sync, call, bound, args, kwargs, stream)
        if kind == ASYNC:
            self.submit_coroutine(call, self._run_coroutine(call, bound, args, kwargs, stream))
        elif kind == GEN:
            self.pool.submit(self.streams.drive_sync, call, bound(*args, **kwargs))  # creating it runs no user code
        else:
            self.submit_coroutine(call, self.streams.drive_async(call, bound(*args, **kwargs)))
        return None

    def submit_coroutine(self, call: Call, coroutine: collections.abc.Coroutine[Any, Any, None]) -> None:
        future = asyncio.run_coroutine_threadsafe(_as_call(call, coroutine), self.loop)
        with call.lock:
            call.future = future
            cancelled = call.done
        if cancelled:  # cancel raced us before the future existed
            future.cancel()

    def _deliver(self, call: Call, result: Any, stream: bool, on_loop: bool) -> None:
        """Send what a plain or async method returned: a value, or a stream it handed back."""
        if type(result) in PLAIN_RESULTS:  # most results: no coroutine or iterator checks
            self.finish_result(call, result)
        elif inspect.iscoroutine(result):
            self.submit_coroutine(call, self._await_result(call, result, stream))
        elif isinstance(result, collections.abc.AsyncIterator):
            if stream:
                self.submit_coroutine(call, self.streams.drive_async(call, result))
            else:
                aclose = getattr(result, "aclose", None)
                if aclose is not None:
                    asyncio.run_coroutine_threadsafe(aclose(), self.loop)
                self.fail(call, streaming_unsupported(call))
        elif isinstance(result, collections.abc.Iterator):
            if not stream:
                close_iterator(call, result)
                self.fail(call, streaming_unsupported(call))
            elif on_loop:  # advancing a sync iterator would block every coroutine
                self.pool.submit(self.streams.drive_sync, call, result)
            else:
                self.streams.drive_sync(call, result)
        elif on_loop:  # repr methods and figures render: never on the loop every coroutine shares
            self.pool.submit(self.replies.finish_value, call, result)
        else:
            self.replies.finish_value(call, result)

    # A pool thread running user code for a call registers itself, so that cancel can raise
    # CallCancelled in it (PyThreadState_SetAsyncExc). That is best-effort: the exception fires at
    # the next bytecode, so a long blocking C call such as time.sleep(60) completes first.

    def _run_sync(self, call: Call, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], stream: bool) -> None:
        if call.done:  # cancelled while queued
            return
        try:
            result = run_interruptible(call, fn, args, kwargs)
        except BaseException as exc:
            self.fail_raised(call, exc)
            return
        self._deliver(call, result, stream, on_loop=False)

    async def _run_coroutine(
        self, call: Call, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], stream: bool
    ) -> None:
        # The coroutine is created here, not by the caller, so a call cancelled before it starts
        # leaves no never-awaited coroutine behind.
        await self._await_result(call, fn(*args, **kwargs), stream)

    async def _await_result(self, call: Call, awaitable: Any, stream: bool) -> None:
        try:
            result = await awaitable
        except asyncio.CancelledError:
            self.replies.fail_foreign_cancel(call)
            return
        except BaseException as exc:
            self.fail_raised(call, exc)
            return
        self._deliver(call, result, stream, on_loop=True)

    def start_hook(
        self, call: Call, instance: Instance, args: tuple[Any, ...], finish: Finish, fail: Failure
    ) -> Work | None:
        """Run the hook ``call.method`` like a call: a plain one is handed back to run on a
        thread, a coroutine goes to the loop; ``finish`` sends what it returned, ``fail`` what
        it raised (each kind of hook maps its exceptions to its own error codes)."""
        bound = getattr(instance.obj, call.method)
        if inspect.iscoroutinefunction(bound):
            self.submit_coroutine(call, self._call_hook_async(call, bound, args, finish, fail))
            return None
        return functools.partial(self._run_hook, call, bound, args, finish, fail)

    async def _call_hook_async(
        self, call: Call, fn: Callable[..., Any], args: tuple[Any, ...], finish: Finish, fail: Failure
    ) -> None:
        # The coroutine is made here, so a hook cancelled before it starts leaves none un-awaited.
        try:
            awaitable = fn(*args)
        except BaseException as exc:
            fail(call, exc)
            return
        await self.await_hook(call, awaitable, finish, fail)

    def _run_hook(
        self, call: Call, fn: Callable[..., Any], args: tuple[Any, ...], finish: Finish, fail: Failure
    ) -> None:
        if call.done:  # cancelled while queued
            return
        try:
            result = run_interruptible(call, fn, args, {})
        except BaseException as exc:
            fail(call, exc)
            return
        if inspect.iscoroutine(result):
            self.submit_coroutine(call, self.await_hook(call, result, finish, fail))
        else:
            finish(call, result)

    async def await_hook(self, call: Call, awaitable: Any, finish: Finish, fail: Failure) -> None:
        try:
            result = await awaitable
        except asyncio.CancelledError:
            self.replies.fail_foreign_cancel(call)
            return
        except BaseException as exc:
            fail(call, exc)
            return
        finish(call, result)

    def on_credit(self, header: dict[str, Any]) -> None:
        n = header.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise Refusal("bad_request", "credit: field 'n' must be a non-negative integer")
        call = self.calls.get(header.get("id"))
        if call is None:  # finished, or never existed: credit for it is meaningless
            return
        with call.lock:
            call.credits += n
            parked, call.parked = call.parked, None
        if parked is not None:
            self.pool.submit(call.resume or self.streams.drive_sync, call, parked)
        wakeup = call.async_wakeup
        if wakeup is not None:
            self.loop.call_soon_threadsafe(wakeup.set)

    def on_cancel(self, header: dict[str, Any]) -> None:
        call = self.calls.get(header.get("id"))
        if call is None:  # finished already: its normal end won the race
            return
        frame = encode_frame(protocol.error_header(call.id, Refusal("cancelled", f"{call.method}() was cancelled")))
        with call.lock:
            if call.done:
                return
            call.done = True
            self.replies.writer.put(frame)
            if call.thread_id is not None:
                set_async_exc(call.thread_id, CallCancelled)
                call.interrupt_sent = True
            future = call.future
            parked, call.parked = call.parked, None
        self.calls.pop(call.id, None)
        if parked is not None:  # a stream waiting for credit: close it (its finally blocks are user code)
            self.pool.submit(close_iterator, call, parked)
        if future is not None:
            future.cancel()  # cancels the task on the loop (coroutine or async generator)


async def _as_call(call: Call, coroutine: collections.abc.Coroutine[Any, Any, None]) -> None:
    """Runs ``coroutine`` in a task that knows it works for ``call`` (its prints go to its caller)."""
    output.CURRENT.set(call)
    await coroutine
