"""Rich results (docs/writing/rich-results.md), issue 32: a method result IPython could display answers
with a MIME bundle as Jupyter's ``display_data`` carries one.

The worker's result frame gets ``display`` (MIME type → text or JSON; null where the data is
binary), ``metadata`` when there is any, and the binary data in the frame body, placed by
``buffer_paths`` (``[["image/png"]]``) and cut by ``buffer_lengths``. ``payload`` stays the JSON
value, or null when there is none. Plain JSON results have no ``display``. ``emit()`` events and
stream items carry a displayable value the same way; a bundle over ``DISPLAY_MAX_BYTES`` ends the
call with ``payload_too_large`` (from ``emit()``: ``DisplayTooLarge``, raised in the method).

The stdlib cases run in this interpreter; matplotlib, Pillow and pandas run a real worker with a
Python that has them (``<repo>/.cache/test-venv``, which ``npm test`` provisions).
"""

from __future__ import annotations

import os
import sys
import unittest
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import WorkerProcess, WorkerTestCase, python_with  # noqa: E402

from portico import _display  # noqa: E402
from portico._buffers import split_body  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))

SHOWN = '''
import asyncio
import dataclasses
from portico import Interface

PNG = b"\\x89PNG\\r\\n\\x1a\\n" + bytes(range(64))


class Picture:
    def __repr__(self):
        return "<Picture>"

    def _repr_html_(self):
        return "<b>picture</b>"

    def _repr_png_(self):
        return PNG, {"width": 8, "height": 8}


class Base64Png:
    def _repr_png_(self):
        import base64
        return base64.b64encode(PNG).decode("ascii")


@dataclasses.dataclass
class Row:
    name: str
    n: int

    def _repr_html_(self):
        return f"<tr><td>{self.name}</td><td>{self.n}</td></tr>"


class Bundled:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": "<i>from the bundle</i>", "application/vnd.demo+json": {"a": [1, 2]}}, {"text/html": {"isolated": True}}

    def _repr_html_(self):
        return "<i>never asked</i>"

    def _repr_latex_(self):
        return "$x^2$"


class HalfBroken:
    def __repr__(self):
        return "<HalfBroken>"

    def _repr_png_(self):
        raise ValueError("no renderer")

    def _repr_html_(self):
        return "<p>html still works</p>"

    def _repr_json_(self):
        return {"not json": object()}


class AllBroken:
    def __repr__(self):
        return "<AllBroken>"

    def _repr_html_(self):
        raise RuntimeError("boom")


@dataclasses.dataclass
class BrokenButJson:
    n: int

    def _repr_html_(self):
        raise RuntimeError("boom")


class Opaque:
    pass


class Huge:
    def _repr_png_(self):
        return b"\\x89PNG\\r\\n\\x1a\\n" + bytes(33 * 1024 * 1024)


class Shown(Interface):
    def picture(self):
        return Picture()

    def base64_png(self):
        return Base64Png()

    def row(self):
        return Row("a", 1)

    def bundled(self):
        return Bundled()

    def half_broken(self):
        return HalfBroken()

    def all_broken(self):
        return AllBroken()

    def broken_but_json(self):
        return BrokenButJson(3)

    def opaque(self):
        return Opaque()

    def a_class(self):
        return Picture

    def plain(self):
        return {"a": [1, 2.5, None]}

    async def later(self):
        await asyncio.sleep(0)
        return Picture()

    def emit_picture(self):
        self.emit({"progress": 0.5})
        self.emit(Picture())
        self.emit(Row("b", 2))
        return "emitted"

    def emit_huge(self):
        self.emit(Huge())

    def emit_huge_caught(self):
        try:
            self.emit(Huge())
        except ValueError as exc:
            return type(exc).__name__

    def emit_opaque(self):
        self.emit(Opaque())

    def pictures(self):
        yield Picture()
        yield {"n": 1}
        yield HalfBroken()

    async def async_pictures(self):
        yield Row("c", 3)
        await asyncio.sleep(0)
        yield Picture()

    def huge_items(self):
        yield 1
        yield Huge()
        yield 2
'''


def answered(worker: WorkerProcess, request_id: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The result frame and its display bundle with the binary data back in place."""
    frame = worker.terminal(request_id)
    if frame["op"] != "result":
        raise AssertionError(f"expected a result, got {frame}")
    return frame, placed(worker, frame)


def placed(worker: WorkerProcess, frame: dict[str, Any]) -> dict[str, Any]:
    """The display bundle of a frame (result, item or event) with the binary data back in place."""
    data = dict(frame.get("display") or {})
    buffers = split_body(frame.get("buffer_lengths"), worker.body_of(frame))
    for path, buffer in zip(frame.get("buffer_paths") or [], buffers):
        assert data[path[0]] is None, path
        data[path[0]] = buffer
    return data


class BundleTest(WorkerTestCase):
    """Objects with repr methods of their own, through a real worker."""

    FILES = {"shown.py": SHOWN}

    def call(self, method: str) -> int:
        return self.worker.call(method, module="shown", uuid="s1")

    def test_repr_methods_answer_a_bundle_binary_data_in_the_body(self) -> None:
        frame, data = answered(self.worker, self.call("picture"))
        self.assertIsNone(frame["payload"])  # a Picture is not JSON
        self.assertEqual(frame["display"], {"text/html": "<b>picture</b>", "image/png": None, "text/plain": "<Picture>"})
        self.assertEqual(frame["buffer_paths"], [["image/png"]])
        self.assertEqual(data["image/png"], PNG)
        self.assertEqual(frame["metadata"], {"image/png": {"width": 8, "height": 8}})

    def test_base64_text_of_an_image_travels_as_its_bytes(self) -> None:
        frame, data = answered(self.worker, self.call("base64_png"))
        self.assertEqual(data["image/png"], PNG)
        self.assertNotIn("metadata", frame)

    def test_a_value_json_carries_keeps_its_payload_beside_the_bundle(self) -> None:
        frame, data = answered(self.worker, self.call("row"))
        self.assertEqual(frame["payload"], {"name": "a", "n": 1})
        self.assertEqual(data["text/html"], "<tr><td>a</td><td>1</td></tr>")
        self.assertEqual(data["text/plain"], "Row(name='a', n=1)")

    def test_repr_mimebundle_comes_first_and_the_repr_methods_fill_in(self) -> None:
        frame, data = answered(self.worker, self.call("bundled"))
        self.assertEqual(data["text/html"], "<i>from the bundle</i>")
        self.assertEqual(data["application/vnd.demo+json"], {"a": [1, 2]})
        self.assertEqual(data["text/latex"], "$x^2$")
        self.assertEqual(frame["metadata"], {"text/html": {"isolated": True}})

    def test_a_repr_that_raises_is_left_out_and_the_others_answer(self) -> None:
        frame, data = answered(self.worker, self.call("half_broken"))
        self.assertEqual(data, {"text/html": "<p>html still works</p>", "text/plain": "<HalfBroken>"})
        self.worker.wait_output(b"HalfBroken._repr_png_() raised ValueError: no renderer; left out", "stderr")
        self.worker.wait_output(b"gave application/json of a HalfBroken that cannot be sent", "stderr")

    def test_when_every_repr_raises_the_text_answers(self) -> None:
        frame, data = answered(self.worker, self.call("all_broken"))
        self.assertIsNone(frame["payload"])
        self.assertEqual(data, {"text/plain": "<AllBroken>"})
        self.worker.wait_output(b"AllBroken._repr_html_() raised RuntimeError: boom; left out", "stderr")

    def test_when_every_repr_raises_a_json_value_answers_as_json(self) -> None:
        frame = self.worker.terminal(self.call("broken_but_json"))
        self.assertEqual(frame["payload"], {"n": 3})
        self.assertNotIn("display", frame)

    def test_plain_json_and_unknown_objects_are_as_before(self) -> None:
        frame = self.worker.terminal(self.call("plain"))
        self.assertEqual(frame, {"op": "result", "id": frame["id"], "payload": {"a": [1, 2.5, None]}})
        for method, kind in (("opaque", "Opaque"), ("a_class", "type")):
            error = self.worker.error(self.call(method))
            self.assertEqual(error["code"], "unserializable_result")
            self.assertIn(f"Object of type {kind} is not JSON serializable", error["message"])

    def test_an_async_method_answers_a_bundle_too(self) -> None:
        frame, data = answered(self.worker, self.call("later"))
        self.assertEqual(data["image/png"], PNG)


class EventsAndItemsTest(WorkerTestCase):
    """Bundles beyond results: ``emit()`` events and stream items, through a real worker."""

    FILES = {"shown.py": SHOWN}

    def call(self, method: str, stream: bool = False) -> int:
        return self.worker.call(method, module="shown", uuid="e1", stream=stream)

    def events_before(self, result: dict[str, Any]) -> list[dict[str, Any]]:
        with self.worker._cond:
            frames = list(self.worker.frames)
        return [f for f in frames[: frames.index(result)] if f["op"] == "event" and f["uuid"] == "e1"]

    def test_an_emitted_displayable_value_is_an_event_with_its_bundle_before_the_result(self) -> None:
        result = self.worker.terminal(self.call("emit_picture"))
        self.assertEqual(result["payload"], "emitted")
        progress, picture, row = self.events_before(result)[-3:]
        self.assertEqual(progress, {"op": "event", "uuid": "e1", "payload": {"progress": 0.5}})
        self.assertIsNone(picture["payload"])
        self.assertEqual(picture["buffer_paths"], [["image/png"]])
        self.assertEqual(
            placed(self.worker, picture), {"text/html": "<b>picture</b>", "image/png": PNG, "text/plain": "<Picture>"}
        )
        self.assertEqual(picture["metadata"], {"image/png": {"width": 8, "height": 8}})
        self.assertEqual(row["payload"], {"name": "b", "n": 2})
        self.assertEqual(row["display"]["text/html"], "<tr><td>b</td><td>2</td></tr>")

    def test_an_emitted_bundle_over_the_bound_raises_in_the_method(self) -> None:
        error = self.worker.error(self.call("emit_huge"))
        self.assertEqual(error["code"], "payload_too_large")
        self.assertEqual(error["exception"], "DisplayTooLarge")
        self.assertIn(f"at most {_display.DISPLAY_MAX_BYTES} are allowed (limits.displayMaxBytes)", error["message"])
        self.assertEqual(self.worker.result(self.call("emit_huge_caught")), "DisplayTooLarge")

    def test_emitting_what_is_neither_json_nor_displayable_raises_type_error_as_before(self) -> None:
        error = self.worker.error(self.call("emit_opaque"))
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "TypeError"))

    def test_stream_items_carry_their_bundle_and_a_repr_that_raises_falls_back(self) -> None:
        request_id = self.call("pictures", stream=True)
        self.worker.send({"op": "credit", "id": request_id, "n": 8})
        self.assertEqual(self.worker.terminal(request_id)["op"], "end")
        picture, plain, half = [f for f in self.worker.frames_for(request_id) if f["op"] == "item"]
        self.assertEqual(placed(self.worker, picture)["image/png"], PNG)
        self.assertEqual(plain, {"op": "item", "id": request_id, "payload": {"n": 1}})
        self.assertEqual(half["display"], {"text/html": "<p>html still works</p>", "text/plain": "<HalfBroken>"})

    def test_async_generator_items_carry_their_bundle(self) -> None:
        request_id = self.call("async_pictures", stream=True)
        self.worker.send({"op": "credit", "id": request_id, "n": 8})
        self.assertEqual(self.worker.terminal(request_id)["op"], "end")
        row, picture = [f for f in self.worker.frames_for(request_id) if f["op"] == "item"]
        self.assertEqual((row["payload"], row["display"]["text/plain"]), ({"name": "c", "n": 3}, "Row(name='c', n=3)"))
        self.assertEqual(placed(self.worker, picture)["image/png"], PNG)

    def test_a_stream_item_over_the_bound_fails_the_call_with_payload_too_large(self) -> None:
        request_id = self.call("huge_items", stream=True)
        self.worker.send({"op": "credit", "id": request_id, "n": 8})
        error = self.worker.error(request_id)
        self.assertEqual(error["code"], "payload_too_large")
        self.assertIn("An item of huge_items() has a display bundle of", error["message"])
        self.assertEqual(self.worker.items(request_id), [1])


class OwnBundleTest(unittest.TestCase):
    """``_display.own`` on its own: what IPython's formatter would compute for these classes."""

    def test_wrong_types_are_left_out(self) -> None:
        class Wrong:
            def _repr_png_(self) -> Any:
                return 3

            def _repr_html_(self) -> Any:
                return b"<b>text, as bytes</b>"

            def _repr_svg_(self) -> Any:
                return None

        shown = _display.own(Wrong())
        self.assertEqual(sorted(shown.data), ["text/plain"])
        self.assertFalse(shown.rich)
        self.assertFalse(_display.own(object()).rich)

    def test_a_repr_that_raises_falls_back_to_the_object_repr(self) -> None:
        class NoRepr:
            def __repr__(self) -> str:
                raise RuntimeError("no")

            def _repr_html_(self) -> str:
                return "<p/>"

        shown = _display.own(NoRepr())
        self.assertTrue(shown.data["text/plain"].startswith("<"))
        self.assertTrue(shown.rich)


SCIENCE = '''
import sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from PIL import Image
from portico import Interface


class Science(Interface):
    def figure(self):
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.plot([1, 3, 2])
        return fig

    def image(self):
        return Image.new("RGB", (3, 2), (255, 0, 0))

    def table(self):
        return pd.DataFrame({"n": [1, 2], "name": ["a", "b"]})

    def ipython_loaded(self):
        return "IPython" in sys.modules
'''

SCIENCE_PYTHON = python_with("matplotlib", "pandas", "PIL", "IPython")


@unittest.skipIf(SCIENCE_PYTHON is None, "matplotlib, pandas, Pillow and IPython are not installed here nor in the test venv")
class ScienceTest(WorkerTestCase):
    """A matplotlib figure, a Pillow image and a pandas DataFrame, as a notebook shows them."""

    PYTHON = SCIENCE_PYTHON
    FILES = {"science.py": SCIENCE}

    def call(self, method: str) -> int:
        return self.worker.call(method, module="science", uuid="x1")

    def test_1_a_dataframe_is_its_html_table_without_importing_ipython(self) -> None:
        frame, data = answered(self.worker, self.call("table"))
        self.assertIsNone(frame["payload"])
        self.assertIn('<table border="1" class="dataframe">', data["text/html"])
        self.assertIn("<td>b</td>", data["text/html"])
        self.assertIn("name", data["text/plain"])
        self.assertIs(self.worker.result(self.call("ipython_loaded")), False)

    def test_2_a_pil_image_is_png_and_jpeg(self) -> None:
        frame, data = answered(self.worker, self.call("image"))
        self.assertTrue(data["image/png"].startswith(b"\x89PNG\r\n\x1a\n"))
        self.assertTrue(data["image/jpeg"].startswith(b"\xff\xd8\xff"))
        self.assertIn("PIL.Image.Image image mode=RGB size=3x2", data["text/plain"])
        self.assertEqual(sorted(path[0] for path in frame["buffer_paths"]), ["image/jpeg", "image/png"])

    def test_3_a_figure_is_the_png_ipython_renders(self) -> None:
        frame, data = answered(self.worker, self.call("figure"))
        self.assertIsNone(frame["payload"])
        self.assertTrue(data["image/png"].startswith(b"\x89PNG\r\n\x1a\n"))
        self.assertEqual(data["text/plain"], "<Figure size 200x200 with 1 Axes>")
        self.assertIs(self.worker.result(self.call("ipython_loaded")), True)


NO_IPYTHON = '''
import sys
sys.modules["IPython"] = None  # as in an environment without IPython: importing it fails
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from portico import Interface


class Plots(Interface):
    def figure(self, fmt: str = "png"):
        matplotlib.rcParams["savefig.format"] = fmt
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.plot([1, 3, 2])
        return fig

    def opaque(self):
        class Opaque:
            def _repr_html_(self):
                return None
        return Opaque()
'''

FIGURE_PYTHON = python_with("matplotlib")


@unittest.skipIf(FIGURE_PYTHON is None, "matplotlib is not installed here nor in the test venv")
class FigureWithoutIPythonTest(WorkerTestCase):
    """Without IPython, a figure is drawn by matplotlib itself; what shows only as text is said so."""

    PYTHON = FIGURE_PYTHON
    FILES = {"plots.py": NO_IPYTHON}

    def call(self, method: str, *args: object) -> int:
        return self.worker.call(method, *args, module="plots", uuid="p1")

    def test_a_figure_is_png_drawn_by_matplotlib(self) -> None:
        frame, data = answered(self.worker, self.call("figure"))
        self.assertIsNone(frame["payload"])
        self.assertTrue(data["image/png"].startswith(b"\x89PNG\r\n\x1a\n"))
        self.assertEqual(data["text/plain"], "<Figure size 200x200 with 1 Axes>")

    def test_svg_where_savefig_format_asks_for_it(self) -> None:
        _, data = answered(self.worker, self.call("figure", "svg"))
        self.assertIn("<svg", data["image/svg+xml"])
        self.assertNotIn("image/png", data)

    def test_a_value_with_no_display_is_its_text_and_the_worker_says_so(self) -> None:
        frame, data = answered(self.worker, self.call("opaque"))
        self.assertEqual(set(data), {"text/plain"})
        self.worker.settle(0.3)
        self.assertIn("Opaque has no display here", self.worker.stderr.decode())
        self.assertIn("IPython is not installed", self.worker.stderr.decode())


if __name__ == "__main__":
    unittest.main()
