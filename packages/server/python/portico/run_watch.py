"""A run process's watch: the heartbeat, the cancel watcher, and the one ``ExecutionInterrupted``
a cancel raises in user code (see the docstring of ``run.py``, "Cancel").
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable

from . import shared
from .interface import ExecutionInterrupted
from .run_folder import FILES, write_time

__all__ = ["CANCEL_POLL_SECONDS", "HEARTBEAT_SECONDS", "Beats", "Interrupter"]

#: How often ``heartbeat_at`` is rewritten while the run is going (shared.json: the gateway
#: takes a run on another host as dead once its heartbeat is three of these old).
HEARTBEAT_SECONDS = float(shared.LIMITS["run_heartbeat_seconds"])
#: How often the watcher looks for the ``cancelled`` marker.
CANCEL_POLL_SECONDS = 0.1


class Interrupter:
    """Turns SIGUSR1 into one ``ExecutionInterrupted``, raised only while user code runs.

    ``with interrupter:`` marks user code (the main thread only). A signal outside it, or while
    ``emit`` writes a line (``hold``), is kept as ``requested`` and raised when user code runs or
    the line is written; the run checks ``requested`` between interfaces.
    """

    def __init__(self) -> None:
        self.requested = False
        self.delivered = False
        self.armed = False
        self.hold = 0
        self.main = threading.get_ident()

    def install(self) -> None:
        signal.signal(signal.SIGUSR1, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.requested = True
        self.raise_if_due()

    def raise_if_due(self) -> None:
        if self.requested and self.armed and not self.hold and not self.delivered:
            self.delivered = True
            raise ExecutionInterrupted()

    def __enter__(self) -> None:
        self.armed = True
        try:
            self.raise_if_due()  # a cancel that came while no user code ran
        except BaseException:
            self.armed = False
            raise

    def __exit__(self, *exc_info: Any) -> None:
        self.armed = False


class Beats:
    """The heartbeat and cancel-watcher threads of the run in ``run_dir``."""

    def __init__(self, run_dir: str, interrupter: Interrupter, report: Callable[[str], None]) -> None:
        self.dir = run_dir
        self.interrupter = interrupter
        self.report = report
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        self._beat_once()
        self.threads.append(threading.Thread(target=self._heartbeat, name="portico-heartbeat", daemon=True))
        if self._cancel_requested():  # checked right away, so a run cancelled before it started runs nothing
            self.interrupter.requested = True
        else:
            self.threads.append(threading.Thread(target=self._watch, name="portico-cancel-watcher", daemon=True))
        for thread in self.threads:
            thread.start()

    def halt(self) -> None:
        """Stop both threads; once this returns, ``heartbeat_at`` no longer changes."""
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _beat_once(self) -> None:
        try:
            write_time(os.path.join(self.dir, FILES["heartbeat_at"]))
        except OSError as exc:
            self.report(f"cannot write {FILES['heartbeat_at']}: {exc}")

    def _heartbeat(self) -> None:
        while not self.stop.wait(HEARTBEAT_SECONDS):
            self._beat_once()

    def _cancel_requested(self) -> bool:
        return os.path.lexists(os.path.join(self.dir, FILES["cancelled"]))

    def _watch(self) -> None:
        while not self.stop.wait(CANCEL_POLL_SECONDS):
            if self._cancel_requested():
                self.report("cancel requested; interrupting the run")
                os.kill(os.getpid(), signal.SIGUSR1)
                return
