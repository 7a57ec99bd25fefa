"""A gallery: results a person looks at rather than reads, with the standard library alone.

Objects that define ``_repr_svg_`` or ``_repr_html_`` are answered with their MIME bundle (see
docs/writing/rich-results.md), as Jupyter displays them; the landing page shows them, the Python client
returns them so that a notebook cell does.
"""
import html
import math
import time

from portico import Interface


class Chart:
    """A line chart of ``values``, shown as SVG (what a notebook shows for ``_repr_svg_``)."""

    def __init__(self, values: list, title: str) -> None:
        self.values = values
        self.title = title

    def _repr_svg_(self) -> str:
        width, height, pad = 320, 160, 10
        low, high = min(self.values), max(self.values)
        span = (high - low) or 1.0
        step = (width - 2 * pad) / max(len(self.values) - 1, 1)
        points = " ".join(
            f"{pad + i * step:.1f},{height - pad - (v - low) / span * (height - 2 * pad):.1f}" for i, v in enumerate(self.values)
        )
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            f"<title>{html.escape(self.title)}</title>"
            f'<rect width="{width}" height="{height}" fill="#ffffff"/>'
            f'<polyline fill="none" stroke="#2b6cb0" stroke-width="2" points="{points}"/>'
            "</svg>"
        )

    def __repr__(self) -> str:
        return f"<Chart {self.title!r} of {len(self.values)} points>"


class Table:
    """Rows shown as an HTML table, as a pandas DataFrame is; text for everything else."""

    def __init__(self, columns: list, rows: list) -> None:
        self.columns = columns
        self.rows = rows

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in self.rows)
        return f'<table class="dataframe"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'

    def __repr__(self) -> str:
        lines = ["  ".join(f"{c:>8}" for c in self.columns)]
        lines += ["  ".join(f"{v!s:>8}" for v in row) for row in self.rows]
        return "\n".join(lines)


def _bounded(name: str, value: int, high: int) -> int:
    if not 1 <= value <= high:
        raise ValueError(f"{name} must be between 1 and {high}, not {value}")
    return value


class Gallery(Interface):
    """Pictures and tables: a chart as SVG, a table as HTML, and a render that reports its progress."""

    class Config:
        points: int = 60
        "Samples per chart."
        frames: int = 3
        "How many frames a run renders."
        delay: float = 0.0
        "Seconds per frame of a run."

    def chart(self, frequency: float = 1.0) -> Chart:
        """A sine wave of ``frequency`` as an SVG chart."""
        n = max(_bounded("points", self.config.points, 10_000), 2)
        return Chart([math.sin(2 * math.pi * frequency * i / (n - 1)) for i in range(n)], f"sin(2π·{frequency:g}·t)")

    def table(self, rows: int = 5) -> Table:
        """The squares and cubes of ``1..rows`` as an HTML table."""
        return Table(["n", "n²", "n³"], [[n, n**2, n**3] for n in range(1, _bounded("rows", rows, 1000) + 1)])

    def render(self, steps: int = 4) -> Chart:
        """Renders a chart in ``steps``, emitting ``{"progress": fraction, "message": …}`` after each."""
        for step in range(1, _bounded("steps", steps, 1000) + 1):
            self.emit({"progress": step / steps, "message": f"step {step} of {steps}"})
        return self.chart(steps)

    def sweep(self, n: int = 3):
        """Yields the charts of frequencies ``1..n``, one at a time, emitting progress after each."""
        for frequency in range(1, _bounded("n", n, 100) + 1):
            yield self.chart(frequency)
            self.emit({"progress": frequency / n, "message": f"chart {frequency} of {n}"})

    def __call__(self) -> None:
        """A run: renders ``frames`` frames, printing and emitting progress after each, then emits the chart."""
        frames = _bounded("frames", self.config.frames, 1000)
        for frame in range(1, frames + 1):
            time.sleep(self.config.delay)
            print(f"frame {frame}/{frames}", flush=True)
            self.emit({"progress": frame / frames, "message": f"frame {frame} of {frames}"})
        self.emit(self.chart(frames))
