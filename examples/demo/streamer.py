"""A streamer: a generator method that reports progress as events."""
import asyncio

from portico import Interface


class Streamer(Interface):
    """Yields ticks and emits progress while doing so."""

    class Config:
        prefix: str = "tick"

    def ticks(self, n: int = 5):
        """Yields ``n`` ticks; emits ``{"progress": fraction}`` after each."""
        for i in range(n):
            yield f"{self.config.prefix} {i}"
            self.emit({"progress": (i + 1) / n})

    async def aticks(self, n: int = 3, delay: float = 0.0):
        """The same as an async generator."""
        for i in range(n):
            await asyncio.sleep(delay)
            yield i

    def echo(self, value=None):
        """Returns what it is given."""
        return value
