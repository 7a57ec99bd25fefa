"""The hand-over watchdog's wake lock (worker/pipe.py): it must stay balanced whatever the
interleaving of the watchdog going idle and the leader starting calls."""

from __future__ import annotations

import os
import sys
import threading
import unittest

import support  # noqa: F401  # puts the portico package on sys.path
from portico.worker.pipe import Pipe


def _start_call(pipe: Pipe) -> None:
    """What Pipe._lead does under _roles when it starts running a call inline (a quick one:
    it is over before the watchdog's next tick)."""
    with pipe._roles:
        pipe._calls_started += 1
        if pipe._watch_idle:
            pipe._watch_idle = False
            pipe._wake.release()


class WakeLockTest(unittest.TestCase):
    def test_calls_starting_right_after_the_watchdog_goes_idle_never_release_its_lock_twice(self) -> None:
        # The watchdog is paused at the first line it runs with the flag set and _roles free (just
        # after going idle), and a call starts right there, three times over; then serving ends.
        # Before the fix the watchdog read the flag again there, found it cleared by that call,
        # skipped its acquire, and the next call's release raised RuntimeError.
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)
        pipe = Pipe(w, None)  # type: ignore[arg-type]  # no pool: nothing is submitted here
        paused, resume = threading.Semaphore(0), threading.Semaphore(0)
        state = {"armed": False, "pauses": 0}

        def line(frame, event, arg):  # type: ignore[no-untyped-def]
            if event == "line":
                idle_now = pipe._watch_idle and not pipe._roles.locked()
                if idle_now and state["armed"] and state["pauses"] < 3:
                    state["armed"] = False
                    state["pauses"] += 1
                    paused.release()
                    resume.acquire()
                elif not pipe._watch_idle:
                    state["armed"] = True  # the next time it goes idle, pause there
            return line

        def trace(frame, event, arg):  # type: ignore[no-untyped-def]
            return line if frame.f_code is Pipe._watch.__code__ else None

        def watch() -> None:
            sys.settrace(trace)
            pipe._watch()

        watchdog = threading.Thread(target=watch, daemon=True)
        watchdog.start()
        errors: list[BaseException] = []
        _start_call(pipe)  # wakes it; it ticks, finds the period quiet and goes idle
        for _ in range(3):
            self.assertTrue(paused.acquire(timeout=10), "the watchdog never went idle")
            try:
                _start_call(pipe)
            except RuntimeError as exc:
                errors.append(exc)
            resume.release()
        try:
            pipe._stop(0)
        except RuntimeError as exc:
            errors.append(exc)
        watchdog.join(10)
        self.assertEqual(errors, [])
        self.assertFalse(watchdog.is_alive(), "the watchdog did not end with serving")


if __name__ == "__main__":
    unittest.main()
