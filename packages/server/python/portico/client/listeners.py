"""A proxy's listeners: callbacks by kind (``event``, ``widget_change``, ``widget_msg``,
``instance_restarted``, ``closed``), run in order on one thread of their own, so that a slow or
calling callback never stalls the socket's reader. Answers whose waiter wants them in that same
order (the kernel widget's, ``kernel_widget.py``) are queued there too (``run_later``). The proxy owns one; its connection holds it weakly (``connection.py``) and
dispatches what arrives, without knowing the proxy.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any, Callable

log = logging.getLogger("portico.client")

#: ``closed``: the socket went away without the proxy closing it (the gateway stopped, the network dropped).
KINDS = ("event", "widget_change", "widget_msg", "instance_restarted", "closed")


class Listeners:
    """Callbacks by kind, and the thread that runs them."""

    def __init__(self) -> None:
        self.callbacks: dict[str, list[Callable[[Any], Any]]] = {kind: [] for kind in KINDS}
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def add(self, kind: str, callback: Callable[[Any], Any]) -> None:
        self.callbacks[kind].append(callback)

    def remove(self, kind: str, callback: Callable[[Any], Any]) -> None:
        if callback in self.callbacks[kind]:
            self.callbacks[kind].remove(callback)

    def any(self) -> bool:
        """Whether anybody listens (a socket with listeners stays open while idle)."""
        return any(self.callbacks.values())

    def dispatch(self, kind: str, value: Any) -> None:
        """Runs the callbacks of ``kind`` with ``value``, later, on the listeners' thread."""
        callbacks = list(self.callbacks[kind])
        if callbacks:
            self._enqueue(callbacks, value)

    def run_now(self, kind: str, value: Any) -> None:
        """Runs the callbacks of ``kind`` with ``value`` in this thread (a call's consumer, so that
        its events reach them in order with its items)."""
        for callback in list(self.callbacks[kind]):
            try:
                callback(value)
            except Exception:
                log.exception("portico.client: a listener callback raised")

    def run_later(self, callback: Callable[[Any], Any], value: Any) -> None:
        """Runs ``callback(value)`` on the listeners' thread, after what was dispatched before."""
        self._enqueue([callback], value)

    def _enqueue(self, callbacks: list[Callable[[Any], Any]], value: Any) -> None:
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="portico-client-callbacks", daemon=True)
                self.thread.start()
        self.queue.put((callbacks, value))

    def stop(self) -> None:
        with self.lock:
            if self.thread is not None:
                self.queue.put(None)
                self.thread = None

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            callbacks, value = item
            for callback in callbacks:
                try:
                    callback(value)
                except Exception:
                    log.exception("portico.client: a listener callback raised")
