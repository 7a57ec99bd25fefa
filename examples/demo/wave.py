"""A sine wave whose frequency a slider sets; Python recomputes the curve on every change."""
import math

from portico import Interface


class Wave(Interface):
    """Samples ``sin(2π f t)`` on [0, 1]; the widget shows a slider for ``f`` and the plot."""

    class Config:
        samples: int = 200
        max_frequency: float = 10.0

    def __init__(self):
        self.frequency = 1.0

    def points(self) -> list:
        """The curve as [t, y] pairs."""
        n = self.config.samples
        return [[round(i / (n - 1), 4), round(math.sin(2 * math.pi * self.frequency * i / (n - 1)), 4)] for i in range(n)]

    def set_frequency(self, frequency: float) -> float:
        """Sets the frequency from code; every page showing the widget redraws."""
        self.push_widget_change(self._apply(frequency))
        return self.frequency

    def widget_state(self) -> dict:
        return {"frequency": self.frequency, "max_frequency": self.config.max_frequency, "points": self.points()}

    def widget_update(self, changes: dict) -> dict:
        if set(changes) - {"frequency"}:
            raise ValueError("only 'frequency' can be changed")
        return self._apply(changes["frequency"])

    def _apply(self, frequency) -> dict:
        self.frequency = min(max(float(frequency), 0.0), self.config.max_frequency)
        return {"frequency": self.frequency, "points": self.points()}
