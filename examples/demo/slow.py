"""A slow method, to show that calls run concurrently and can be cancelled."""
import time

from portico import Interface


class Slow(Interface):
    """Takes its time."""

    class Config:
        seconds: float = 2.0

    def wait(self, seconds: float | None = None) -> float:
        """Sleeps (in small steps, so that a cancel lands quickly) and returns the time slept."""
        total = self.config.seconds if seconds is None else seconds
        start = time.monotonic()
        while time.monotonic() - start < total:
            time.sleep(0.01)
        return round(time.monotonic() - start, 3)

    def quick(self) -> str:
        """Answers at once."""
        return "quick"
