"""``Execution``: a run dispatched through the gateway, its status, output and cancel."""

from __future__ import annotations

import time
import urllib.parse
from typing import Any, Iterator, Mapping, Protocol

from .. import shared

#: Window asked of /v1/executions/{uuid}/output while following (the gateway's cap, shared.json).
FOLLOW_WINDOW = shared.LIMITS["output_window_max_bytes"]
#: Run statuses after which nothing changes any more.
ENDED_STATUSES = frozenset({"finished", "failed", "interrupted"})


class Requester(Protocol):
    """What an execution uses of its :class:`~portico.client.Gateway`."""

    def request(self, method: str, path: str, body: Any = None, query: Mapping[str, Any] | None = None) -> Any: ...


class Execution:
    """A run dispatched with :meth:`Gateway.dispatch`: its status, output and cancel.

    ``info`` is the last ExecutionInfo seen (refreshed by :meth:`status`, :meth:`wait`).
    """

    def __init__(self, gateway: Requester, info: Mapping[str, Any]) -> None:
        self.gateway = gateway
        self.info: dict[str, Any] = dict(info)
        self.uuid: str = self.info["uuid"]

    def __repr__(self) -> str:
        return f"<portico.client.Execution {self.uuid} {self.info.get('status')}>"

    def _path(self, suffix: str = "") -> str:
        return f"/v1/executions/{urllib.parse.quote(self.uuid, safe='')}{suffix}"

    def status(self) -> dict[str, Any]:
        """The current ExecutionInfo (``status``: pending, running, finished, failed, interrupted)."""
        self.info = self.gateway.request("GET", self._path())
        return self.info

    @property
    def ended(self) -> bool:
        """Whether the last ExecutionInfo seen says the run is over (call :meth:`status` to refresh)."""
        return self.info.get("status") in ENDED_STATUSES and not self.info.get("is_active")

    def output(self, offset: int | None = None, tail: int | None = None, limit: int | None = None) -> dict[str, Any]:
        """A window of the run's output: ``{"output", "offset", "size", "limit"}``.

        ``offset`` reads forward from a byte; ``tail`` reads the last bytes; neither: the last
        ``limit`` bytes. Poll with ``offset=size`` for only what was appended.
        """
        return self.gateway.request("GET", self._path("/output"), query={"offset": offset, "tail": tail, "limit": limit})

    def follow(self, offset: int = 0, poll: float = 0.2) -> Iterator[str]:
        """Yields the run's output text as it grows, from byte ``offset``, until the run ends.

        Polls the output window every ``poll`` seconds while nothing is new; after the run ended,
        reads whatever was still unread and stops.
        """
        ended = False
        while True:
            window = self.output(offset=offset, limit=FOLLOW_WINDOW)
            start, size = int(window["offset"]), int(window["size"])
            read = min(int(window["limit"]), max(0, size - start))
            offset = start + read
            if window["output"]:
                yield window["output"]
            if offset < size:
                continue  # more already there
            if ended:
                return
            if self.status().get("status") in ENDED_STATUSES and not self.info.get("is_active"):
                ended = True  # one more read: output written before the status
                continue
            time.sleep(poll)

    def cancel(self) -> None:
        """Asks the run to stop (it is interrupted within about a second); idempotent."""
        self.gateway.request("POST", self._path("/cancel"))

    def wait(self, timeout: float | None = None, poll: float = 0.2) -> dict[str, Any]:
        """Waits until the run ended and returns its ExecutionInfo; TimeoutError after ``timeout`` s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            info = self.status()
            if info.get("status") in ENDED_STATUSES and not info.get("is_active"):
                return info
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"execution {self.uuid} still {info.get('status')} after {timeout} s")
            time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))
