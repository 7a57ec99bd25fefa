"""Calls: running what an instance offers, from the first frame to the last.

Owns the table of running calls and everything about running user code for them: plain
methods on a thread (the one that read the request, or the pool), coroutines on the one asyncio
loop, sync and async generators streamed within the credit window (``credit``), ``cancel``, and
the terminal frame of each (first one wins). Reads and widget hooks run through the same
machinery (``register``, ``begin``, ``start_hook``).

Most calls are a plain method of a live instance, checked before: ``on_call`` hands those to
``_run_sync`` at once, and everything else goes the general way (``register``, ``begin``,
``_start``), which gives every refusal.
"""

from __future__ import annotations

import asyncio
import collections.abc
import concurrent.futures
import functools
import inspect
import traceback
from typing import Any, Callable

from .. import _display
from .._buffers import join_body
from .._frames import encode_frame, result_frame
from .._storage import OutsideFolder
from ..interface import CallCancelled, NotFound
from . import protocol
from .call import _Call, _set_async_exc, close_iterator, run_interruptible
from .instances import Instances, _Instance
from .methods import _AGEN, _ASYNC, _GEN, _SYNC, Methods, _Method
from .pipe import Pipe, Work
from .protocol import _Refusal, described, log

#: Result types that are neither a coroutine nor an iterator (so never a stream) by their type alone.
_PLAIN_RESULTS = frozenset({type(None), bool, int, float, str, dict, list, tuple})

Finish = Callable[[_Call, Any], None]
"""Ends a hook's call with what the hook returned (each hook shapes its own reply)."""
Failure = Callable[[_Call, BaseException], None]
"""Ends a call whose user code raised, with the error code its kind of hook gives the exception."""


class Calls:
    """The running calls of one worker, by request id."""

    def __init__(
        self,
        pipe: Pipe,
        pool: concurrent.futures.ThreadPoolExecutor,
        loop: asyncio.AbstractEventLoop,
        instances: Instances,
        methods: Methods,
    ) -> None:
        self.writer = pipe.writer
        self.pool = pool
        self.loop = loop
        self.instances = instances
        self.methods = methods
        self.calls: dict[Any, _Call] = {}
        # Read-only views for on_call's fast path (their owners fill them).
        self._live = instances.instances
        self._known_methods = methods.entries

    def finish(self, call: _Call, header: dict[str, Any]) -> None:
        self._finish_frame(call, encode_frame(header))

    def _finish_frame(self, call: _Call, frame: bytes) -> None:
        """Send the call's terminal frame unless one was sent already (first one wins)."""
        with call.lock:
            if call.done:
                return
            call.done = True
            self.writer.put(frame)
        self.calls.pop(call.id, None)

    def fail(self, call: _Call, refusal: _Refusal) -> None:
        self.finish(call, protocol.error_header(call.id, refusal))

    def fail_raised(self, call: _Call, exc: BaseException) -> None:
        if isinstance(exc, CallCancelled):
            self.fail(call, _Refusal("cancelled", f"{call.method}() was cancelled"))
            return
        if isinstance(exc, NotFound):  # the author's way of saying "no such thing": no traceback
            self.fail(call, _Refusal("not_found", f"{call.method}() raised {described(exc)}", exception=type(exc).__name__))
            return
        if isinstance(exc, _display.DisplayTooLarge):  # emit() of a bundle over the bound, not caught
            self.fail(call, _Refusal("payload_too_large", f"{call.method}() raised {described(exc)}", exception=type(exc).__name__))
            return
        if isinstance(exc, OutsideFolder):  # local_directory() refused a path leading out of the folder
            self.fail(call, _Refusal("forbidden", f"{call.method}() raised {described(exc)}", exception=type(exc).__name__))
            return
        log(f"{call.method}() (call {call.id}) raised:\n" + "".join(traceback.format_exception(exc)).rstrip())
        self.fail(
            call,
            _Refusal("call_failed", f"{call.method}() raised {described(exc)}", exception=type(exc).__name__),
        )

    def finish_result(self, call: _Call, payload: Any, buffers: list[bytes] | None = None) -> None:
        """Answers ``payload``; ``buffers`` (widget binary values) go in the frame body."""
        try:
            if buffers:
                lengths, body = join_body(buffers)
                frame = encode_frame({"op": "result", "id": call.id, "payload": payload, "buffer_lengths": lengths}, body)
            else:
                frame = result_frame(call.id, payload)
        except Exception as exc:  # any failure of user types while encoding
            self.fail(call, _Refusal("unserializable_result", f"Result of {call.method}() is not JSON: {exc}"))
            return
        self._finish_frame(call, frame)

    def finish_value(self, call: _Call, value: Any) -> None:
        """Answers a method's result that is not of a plain JSON type (README "Rich results"):
        with a display bundle when its repr methods, or IPython's formatter when JSON cannot
        carry it, show more than text; ``payload`` is its JSON value, or null when it has none.
        A value whose class declares repr methods that all failed answers its text/plain; any
        other value JSON refuses keeps ``unserializable_result``; a bundle over the bound
        answers ``payload_too_large``."""
        encode = _display.bridge_frame({"op": "result", "id": call.id})
        try:
            frame = _display.encoded(value, encode, f"The result of {call.method}()")
        except _display.DisplayTooLarge as exc:
            self.fail(call, _Refusal("payload_too_large", str(exc)))
            return
        except Exception as exc:  # any failure of user types while encoding
            self.fail(call, _Refusal("unserializable_result", f"Result of {call.method}() is not JSON: {exc}"))
            return
        self._finish_frame(call, frame)

    def _send_item(self, call: _Call, payload: Any) -> bool:
        """Send one stream item, with its display bundle when it has one (as a result would);
        False when the stream must stop (finished, unserializable or over the bound)."""
        try:
            if type(payload) in _PLAIN_RESULTS:  # most items: no repr methods to look for
                frame = encode_frame({"op": "item", "id": call.id, "payload": payload})
            else:
                frame = _display.encoded(payload, _display.bridge_frame({"op": "item", "id": call.id}), f"An item of {call.method}()")
        except _display.DisplayTooLarge as exc:
            self.fail(call, _Refusal("payload_too_large", str(exc)))
            return False
        except Exception as exc:
            self.fail(call, _Refusal("unserializable_result", f"Item of {call.method}() is not JSON: {exc}"))
            return False
        with call.lock:
            if call.done:
                return False
            call.credits -= 1
            self.writer.put(frame)
        return True

    def on_call(self, header: dict[str, Any]) -> Work | None:
        get = header.get
        request_id, uuid, module, config = get("id"), get("uuid"), get("module"), get("config")
        method, args, kwargs, stream = get("method"), get("args"), get("kwargs"), get("stream")
        # Every field there with its exact type (what the gateway always sends) needs no more
        # checks; anything else (absent fields, defaults, a float id) is checked one by one.
        if not (
            type(request_id) is int
            and type(uuid) is str
            and type(module) is str
            and type(config) is dict
            and type(method) is str
            and type(args) is list
            and type(kwargs) is dict
            and type(stream) is bool
        ):
            request_id, uuid, module, config = protocol.instance_fields(header)
            method = protocol.field(header, "method", str)
            args = protocol.field(header, "args", list, [])
            kwargs = protocol.field(header, "kwargs", dict, {})
            stream = protocol.field(header, "stream", bool, False)
        else:
            # The fast path, most calls: a plain method, already checked once, of a live instance,
            # with positional arguments that bind (see _Method.plain). It goes straight to
            # _run_sync, skipping begin/_start/methods.get/check and their allocations:
            # each function call and object on a lone call's path costs several times its warm
            # price, the caches being cold when one arrives. Anything else takes the general path
            # below, which gives every refusal.
            instance = self._live.get(uuid)
            if instance is not None and not kwargs:
                obj = instance.obj
                entry = self._known_methods.get((type(obj), method))
                if (
                    type(entry) is _Method
                    and entry.kind == _SYNC
                    and entry.plain is not None
                    and entry.required <= len(args) <= len(entry.plain)
                ):
                    call = self.register(request_id, method)
                    try:
                        bound = getattr(obj, method)
                    except _Refusal as refusal:  # as begin answers what _start raised
                        self.fail(call, refusal)
                        return None
                    except Exception as exc:
                        self.fail_raised(call, exc)
                        return None
                    if entry.floats:
                        args, kwargs = entry.floats_back(args, kwargs)
                    return functools.partial(self._run_sync, call, bound, args, kwargs, stream)
        call = self.register(request_id, method)
        return self.begin(call, uuid, module, config, lambda instance: self._start(call, instance, args, kwargs, stream))

    def register(self, request_id: Any, method: str) -> _Call:
        """A new running call (cancellable, creditable) for ``request_id``."""
        if request_id in self.calls:
            raise _Refusal("bad_request", f"id {request_id} is already in use by a running call")
        call = self.calls[request_id] = _Call(request_id, method)
        return call

    def begin(
        self, call: _Call, uuid: str, module: str, config: dict[str, Any], start: Callable[[_Instance], Work | None]
    ) -> Work | None:
        """Run ``start`` with the instance for ``uuid``: here if it exists (returning the sync
        work ``start`` hands back, for the reading thread), else in the pool once created."""
        instance = self.instances.get(uuid)
        if instance is None:
            # Creating runs imports and __init__: user code, so not on this thread.
            self.pool.submit(self._create_then, call, uuid, module, config, start)
            return None
        try:
            return start(instance)
        except _Refusal as refusal:
            self.fail(call, refusal)
        except Exception as exc:  # a hook's generator function refusing its argument, say
            self.fail_raised(call, exc)
        return None

    def _create_then(
        self, call: _Call, uuid: str, module: str, config: dict[str, Any], start: Callable[[_Instance], Work | None]
    ) -> None:
        try:
            if call.done:
                return
            work = start(self.instances.instance(uuid, module, config))
            if work is not None:
                work()
        except _Refusal as refusal:
            self.fail(call, refusal)
        except BaseException as exc:
            self.fail_raised(call, exc)

    def _start(self, call: _Call, instance: _Instance, args: list[Any], kwargs: dict[str, Any], stream: bool) -> Work | None:
        """Check the call and hand it to the loop or the pool; a plain sync method is returned
        instead, for the caller to run on its own thread (never runs user code itself)."""
        method = self.methods.get(instance, call.method)
        if method.signature is not None:
            try:
                method.check(args, kwargs)
            except TypeError as exc:
                raise _Refusal("invalid_argument", f"Invalid arguments for {call.method}(): {exc}") from None
            if method.floats:
                args, kwargs = method.floats_back(args, kwargs)
        if method.kind in (_GEN, _AGEN) and not stream:
            raise _streaming_unsupported(call)
        bound = getattr(instance.obj, call.method)
        if method.kind == _SYNC:
            return functools.partial(self._run_sync, call, bound, args, kwargs, stream)
        if method.kind == _ASYNC:
            self.submit_coroutine(call, self._run_coroutine(call, bound, args, kwargs, stream))
        elif method.kind == _GEN:
            self.pool.submit(self.drive_sync, call, bound(*args, **kwargs))  # creating it runs no user code
        else:
            self.submit_coroutine(call, self._drive_async(call, bound(*args, **kwargs)))
        return None

    def submit_coroutine(self, call: _Call, coroutine: collections.abc.Coroutine[Any, Any, None]) -> None:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        with call.lock:
            call.future = future
            cancelled = call.done
        if cancelled:  # cancel raced us before the future existed
            future.cancel()

    def _deliver(self, call: _Call, result: Any, stream: bool, on_loop: bool) -> None:
        """Send what a plain or async method returned: a value, or a stream it handed back."""
        if type(result) in _PLAIN_RESULTS:  # most results: no coroutine or iterator checks
            self.finish_result(call, result)
        elif inspect.iscoroutine(result):
            self.submit_coroutine(call, self._await_result(call, result, stream))
        elif isinstance(result, collections.abc.AsyncIterator):
            if stream:
                self.submit_coroutine(call, self._drive_async(call, result))
            else:
                aclose = getattr(result, "aclose", None)
                if aclose is not None:
                    asyncio.run_coroutine_threadsafe(aclose(), self.loop)
                self.fail(call, _streaming_unsupported(call))
        elif isinstance(result, collections.abc.Iterator):
            if not stream:
                close_iterator(call, result)
                self.fail(call, _streaming_unsupported(call))
            elif on_loop:  # advancing a sync iterator would block every coroutine
                self.pool.submit(self.drive_sync, call, result)
            else:
                self.drive_sync(call, result)
        elif on_loop:  # repr methods and figures render: never on the loop every coroutine shares
            self.pool.submit(self.finish_value, call, result)
        else:
            self.finish_value(call, result)

    # A pool thread running user code for a call registers itself, so that cancel can raise
    # CallCancelled in it (PyThreadState_SetAsyncExc). That is best-effort: the exception fires at
    # the next bytecode, so a long blocking C call such as time.sleep(60) completes first.

    def _run_sync(self, call: _Call, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], stream: bool) -> None:
        if call.done:  # cancelled while queued
            return
        try:
            result = run_interruptible(call, fn, args, kwargs)
        except BaseException as exc:
            self.fail_raised(call, exc)
            return
        self._deliver(call, result, stream, on_loop=False)

    def drive_sync(self, call: _Call, iterator: collections.abc.Iterator[Any]) -> None:
        """Stream a sync iterator from a pool thread within the credit window (see ``pump``)."""

        def step() -> bool | None:
            try:
                item = run_interruptible(call, next, (iterator,), {})
            except StopIteration:
                return None
            except BaseException as exc:
                self.fail_raised(call, exc)
                return False
            return self._send_item(call, item)

        self.pump(call, iterator, step, lambda: {"op": "end", "id": call.id})

    def pump(self, call: _Call, source: Any, step: Callable[[], bool | None], end: Callable[[], dict[str, Any]]) -> None:
        """Drive a sync stream (items, or a read's chunks) on this pool thread, never past the credit window.

        ``step`` sends one piece (True), finds the stream over (None) or has stopped it, answering
        any failure itself (False). When the window is full ``source`` is parked and the thread
        returns to the pool, so slow clients cannot use up the pool; the next credit resumes it
        (``call.resume``, possibly on another thread). Otherwise ``source`` is closed once the
        stream is over, before its ``end()`` frame: a client that saw the end may rely on it.
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
                    self.finish(call, end())
                    return
                if not going:
                    return
        finally:
            if close_at_exit:
                close_iterator(call, source)

    async def _run_coroutine(
        self, call: _Call, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], stream: bool
    ) -> None:
        # The coroutine is created here, not by the caller, so a call cancelled before it starts
        # leaves no never-awaited coroutine behind.
        await self._await_result(call, fn(*args, **kwargs), stream)

    async def _await_result(self, call: _Call, awaitable: Any, stream: bool) -> None:
        try:
            result = await awaitable
        except asyncio.CancelledError:
            self.fail_foreign_cancel(call)
            return
        except BaseException as exc:
            self.fail_raised(call, exc)
            return
        self._deliver(call, result, stream, on_loop=True)

    def fail_foreign_cancel(self, call: _Call) -> None:
        """A CancelledError that our cancel did not cause: the method's own code was cancelled."""
        if not call.done:
            self.fail(call, _Refusal("call_failed", f"{call.method}() raised CancelledError", exception="CancelledError"))

    async def _drive_async(self, call: _Call, iterator: collections.abc.AsyncIterator[Any]) -> None:
        """Stream an async iterator on the loop within the credit window (see ``pump_async``)."""

        async def step() -> bool | None:
            try:
                item = await iterator.__anext__()
            except StopAsyncIteration:
                return None
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                self.fail_raised(call, exc)
                return False
            if type(item) in _PLAIN_RESULTS:
                return self._send_item(call, item)
            # Repr methods and figures render: never on the loop every coroutine shares.
            return await asyncio.get_running_loop().run_in_executor(self.pool, self._send_item, call, item)

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
        call: _Call,
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
                    self.fail_foreign_cancel(call)
                    return
                if going is None:
                    close_at_exit = False
                    await close()
                    self.finish(call, end())
                    return
                if not going:
                    return
        finally:
            if close_at_exit:
                await close()

    def start_hook(
        self, call: _Call, instance: _Instance, args: tuple[Any, ...], finish: Finish, fail: Failure
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
        self, call: _Call, fn: Callable[..., Any], args: tuple[Any, ...], finish: Finish, fail: Failure
    ) -> None:
        # The coroutine is made here, so a hook cancelled before it starts leaves none un-awaited.
        try:
            awaitable = fn(*args)
        except BaseException as exc:
            fail(call, exc)
            return
        await self.await_hook(call, awaitable, finish, fail)

    def _run_hook(
        self, call: _Call, fn: Callable[..., Any], args: tuple[Any, ...], finish: Finish, fail: Failure
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

    async def await_hook(self, call: _Call, awaitable: Any, finish: Finish, fail: Failure) -> None:
        try:
            result = await awaitable
        except asyncio.CancelledError:
            self.fail_foreign_cancel(call)
            return
        except BaseException as exc:
            fail(call, exc)
            return
        finish(call, result)

    def on_credit(self, header: dict[str, Any]) -> None:
        n = header.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise _Refusal("bad_request", "credit: field 'n' must be a non-negative integer")
        call = self.calls.get(header.get("id"))
        if call is None:  # finished, or never existed: credit for it is meaningless
            return
        with call.lock:
            call.credits += n
            parked, call.parked = call.parked, None
        if parked is not None:
            self.pool.submit(call.resume or self.drive_sync, call, parked)
        wakeup = call.async_wakeup
        if wakeup is not None:
            self.loop.call_soon_threadsafe(wakeup.set)

    def on_cancel(self, header: dict[str, Any]) -> None:
        call = self.calls.get(header.get("id"))
        if call is None:  # finished already: its normal end won the race
            return
        frame = encode_frame(protocol.error_header(call.id, _Refusal("cancelled", f"{call.method}() was cancelled")))
        with call.lock:
            if call.done:
                return
            call.done = True
            self.writer.put(frame)
            if call.thread_id is not None:
                _set_async_exc(call.thread_id, CallCancelled)
                call.interrupt_sent = True
            future = call.future
            parked, call.parked = call.parked, None
        self.calls.pop(call.id, None)
        if parked is not None:  # a stream waiting for credit: close it (its finally blocks are user code)
            self.pool.submit(close_iterator, call, parked)
        if future is not None:
            future.cancel()  # cancels the task on the loop (coroutine or async generator)


def _streaming_unsupported(call: _Call) -> _Refusal:
    return _Refusal(
        "streaming_unsupported",
        f"{call.method}() streams its results; call it over the WebSocket to receive them",
    )
