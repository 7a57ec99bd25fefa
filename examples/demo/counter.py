"""A counter: config, versions and plain methods."""
from portico import Interface


class Counter(Interface):
    """Counts clicks, starting from ``start`` in steps of ``step``."""

    class Config:
        start: int = 0
        step: int = 1

    def version_big(self, step: int = 10):
        """Counts in big steps."""
        return {"step": step}

    def __init__(self):
        self.count = self.config.start

    def add(self, n: int = 1) -> int:
        """Adds ``n`` steps and returns the new count."""
        self.count += n * self.config.step
        return self.count

    def value(self) -> int:
        """The current count."""
        return self.count

    def reset(self) -> int:
        """Back to the start."""
        self.count = self.config.start
        return self.count
