"""The progress bar a call or a stream shows in a notebook cell while its method emits progress.

A progress event is an ``event`` whose payload is a JSON object with a number ``progress`` between
0 and 1 and an optional string ``message`` (the convention in /v1/protocol and the README). In a
notebook kernel, a call through an interface proxy shows one bar in its cell from the first such
event it hears, updated in place (IPython's ``display_id``), and marks it done, failed or stopped
when the call ends; a stream shows a running count of its items until a progress event arrives.
Events carry no call id: a call hears those emitted while it is the oldest call in flight on its
proxy (``connection.py``). The bar is updated from the thread that made the call (the cell's), as
it reads the call's frames. Outside a kernel nothing is shown and IPython is never imported: the
bar exists only when ``IPython`` is already loaded and ``get_ipython()`` is a kernel's shell.
``Gateway.progress = False`` turns it off.

A request (a connect, a call) waiting for a worker whose Slurm allocation is pending hears
``waiting`` notices from the gateway (``--workers slurm``, docs/running/slurm-workers.md): each is
printed as one line on stderr, ``portico: Slurm job 123: PENDING (Priority)``, in a notebook or not,
as srun itself says a job is queued: the wait can be minutes, and nothing else tells why.
"""

from __future__ import annotations

import html
import logging
import math
import sys
import time
import uuid
from typing import Any, Callable

log = logging.getLogger("portico.client")

#: Least time between two updates that only move a running count or change a message; a whole
#: percent more, the first display and the end always show at once.
PROGRESS_INTERVAL = 0.1
#: Characters of the text/plain bar.
BAR_WIDTH = 10

_HTML_STYLE = "display:flex;align-items:center;gap:0.6em;font-family:var(--jp-code-font-family,monospace)"
_FAILED_STYLE = "color:var(--jp-error-color1,#c62828)"


def progress_of(payload: Any) -> tuple[float, str | None] | None:
    """``(fraction, message)`` when ``payload`` is a progress event's, else None."""
    if not isinstance(payload, dict):
        return None
    value = payload.get("progress")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        return None  # NaN fails the comparison too
    message = payload.get("message")
    return float(value), message if isinstance(message, str) and message else None


def show_waiting(payload: Any) -> None:
    """Prints a ``waiting`` notice's message on stderr: ``portico: Slurm job 123: PENDING (Priority)``."""
    message = payload.get("message") if isinstance(payload, dict) else None
    if isinstance(message, str) and message:
        print(f"portico: {message}", file=sys.stderr, flush=True)


def _kernel_display() -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """IPython's ``display`` and ``update_display`` when this runs in a notebook kernel, else None."""
    ipython = sys.modules.get("IPython")  # a kernel has it loaded; never imported from here
    if ipython is None:
        return None
    shell = ipython.get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:  # plain Python, or terminal IPython
        return None
    from IPython.display import display, update_display

    return display, update_display


class Progress:
    """One call's bar: created hidden, shown on the first progress event (or stream item)."""

    def __init__(self, display: Callable[..., Any], update_display: Callable[..., Any]) -> None:
        self._display = display
        self._update = update_display
        self.id = f"portico-progress-{uuid.uuid4().hex}"
        self.fraction: float | None = None
        self.message: str | None = None
        self.items = 0
        self.outcome: str | None = None  # "done", "failed: <code>", "stopped"
        self._shown: tuple[Any, ...] | None = None
        self._shown_at = 0.0

    @classmethod
    def start(cls, enabled: bool) -> Progress | None:
        """A bar for one call, or None when it cannot show (not in a kernel) or ``enabled`` is False."""
        hooks = _kernel_display() if enabled else None
        return cls(*hooks) if hooks else None

    def event(self, payload: Any) -> None:
        """An ``event`` the interface emitted while the call ran: progress moves the bar."""
        progress = progress_of(payload)
        if progress is None or self.outcome:
            return
        self.fraction, self.message = progress
        self._publish()

    def item(self) -> None:
        """A stream item arrived: counted, and shown while no progress event came."""
        self.items += 1
        if not self.outcome:
            self._publish()

    def end(self, outcome: str) -> None:
        """The call ended: ``"done"`` (a finished bar shows full), ``"failed: <code>"`` or ``"stopped"``."""
        if self.outcome:
            return
        self.outcome = outcome
        if outcome == "done" and self.fraction is not None:
            self.fraction = 1.0
        if self._shown is not None:  # never shown: nothing to finish
            self._publish()

    # ------------------------------------------------------------ rendering

    def _state(self) -> tuple[Any, ...]:
        percent = None if self.fraction is None else math.floor(self.fraction * 100)
        return (percent, self.message, None if percent is not None else self.items, self.outcome)

    def _publish(self) -> None:
        state = self._state()
        if state == self._shown:
            return
        now = time.monotonic()
        shown = self._shown
        if shown is not None and state[0] == shown[0] and state[3] == shown[3] and now - self._shown_at < PROGRESS_INTERVAL:
            return  # only a count or a message changed, and just now
        try:
            (self._display if shown is None else self._update)(self.bundle(), raw=True, display_id=self.id)
        except Exception:  # a bar that cannot show (a kernel shutting down) never fails the call
            log.debug("portico.client: the progress bar could not be shown", exc_info=True)
            return
        self._shown, self._shown_at = state, now

    def _words(self) -> str:
        """``50% message`` or ``12 items``, with ``(done)``, ``(failed: <code>)`` or ``(stopped)``
        once the call ended."""
        if self.fraction is None:
            words = f"{self.items} item{'' if self.items == 1 else 's'}"
        else:
            words = f"{math.floor(self.fraction * 100)}%"
        if self.message:
            words += f" {self.message}"
        return words + (f" ({self.outcome})" if self.outcome else "")

    def text(self) -> str:
        """The text/plain form: ``[#####     ] 50% message``, ``12 items``, ``… (done)``."""
        if self.fraction is None:
            return self._words()
        filled = math.floor(self.fraction * BAR_WIDTH)
        return f"[{'#' * filled}{' ' * (BAR_WIDTH - filled)}] {self._words()}"

    def bundle(self) -> dict[str, str]:
        """The MIME bundle shown: a ``<progress>`` element (indeterminate while only counting)
        and its text, with the text/plain fallback."""
        if self.fraction is not None:
            bar = f'<progress value="{self.fraction:g}" max="1" style="width:16em"></progress>'
        elif self.outcome:
            bar = ""
        else:
            bar = '<progress style="width:16em"></progress>'
        label = html.escape(self._words())
        if self.outcome and self.outcome.startswith("failed"):
            label = f'<span style="{_FAILED_STYLE}">{label}</span>'
        else:
            label = f"<span>{label}</span>"
        return {"text/html": f'<div class="portico-progress" style="{_HTML_STYLE}">{bar}{label}</div>', "text/plain": self.text()}
