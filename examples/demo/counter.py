"""A counter: config, versions, plain methods and a live widget (counter.widget.js)."""
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
        """Adds ``n`` steps and returns the new count (every page showing the widget follows)."""
        self.count += n * self.config.step
        self.push_widget_change({"count": self.count})
        return self.count

    def value(self) -> int:
        """The current count."""
        return self.count

    def reset(self) -> int:
        """Back to the start."""
        self.count = self.config.start
        self.push_widget_change({"count": self.count})
        return self.count

    # The widget: its state lives here, in Python; the front end only proposes changes.

    def widget_state(self) -> dict:
        return {"count": self.count, "step": self.config.step}

    def widget_update(self, changes: dict) -> dict:
        """Accepts a new count (never below ``start``); ``step`` is config and stays read-only."""
        if set(changes) - {"count"}:
            raise ValueError("only 'count' can be changed")
        self.count = max(self.config.start, int(changes["count"]))
        return {"count": self.count}
