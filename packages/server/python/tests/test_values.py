"""Values as Jupyter sends them (docs/writing/values.md), issue 32.

Results, stream items, ``emit()`` events, widget state and widget messages carry numpy scalars
and arrays, NaN and infinities, dates and times, ``Decimal`` and paths; NaN and the infinities
travel as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` and come back as floats where
the receiver declares a float. Everything else keeps ``unserializable_result``.

The stdlib cases run in this interpreter; the numpy ones run a real worker with a Python that
has numpy (this one, ``PORTICO_TEST_PYTHON`` or ``<repo>/.cache/test-venv``, which ``npm test``
provisions), and the served-anywidget ones one that has anywidget too. The client cases drive
the real gateway (``portico serve``).
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import os
import pathlib
import sys
import unittest
import uuid
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import WorkerTestCase, python_with  # noqa: E402  (also puts portico on sys.path)

from portico._json import NONFINITE, dumps  # noqa: E402


NUMPY_PYTHON = python_with("numpy")
ANYWIDGET_NUMPY_PYTHON = python_with("numpy", "anywidget")


class EncodingTest(unittest.TestCase):
    """``_json.dumps``, the one encoder of every value that leaves Python, on stdlib values."""

    def test_nan_and_the_infinities_are_strings_javascript_and_python_read_back(self) -> None:
        values = [math.nan, math.inf, -math.inf, decimal.Decimal("NaN"), decimal.Decimal("-Infinity"), decimal.Decimal("sNaN")]
        written = json.loads(dumps({"v": values, "deep": [{"x": (math.nan,)}]}))
        self.assertEqual(written, {"v": ["NaN", "Infinity", "-Infinity", "NaN", "-Infinity", "NaN"], "deep": [{"x": ["NaN"]}]})
        for text in ("NaN", "Infinity", "-Infinity"):
            self.assertEqual(repr(float(text)), repr(NONFINITE[text]))  # Python's float() reads them as written

    def test_dates_times_decimals_and_paths(self) -> None:
        aware = datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
        values = {
            "aware": aware,
            "naive": datetime.datetime(2024, 5, 1, 12, 30, 0, 250000),
            "day": datetime.date(2024, 5, 1),
            "clock": datetime.time(12, 30, 15),
            "price": decimal.Decimal("1.25"),
            "path": pathlib.Path("data") / "run 1" / "out.csv",
            "windows": pathlib.PureWindowsPath("C:/data/out.csv"),
        }
        self.assertEqual(
            json.loads(dumps(values)),
            {
                "aware": "2024-05-01T12:30:00+02:00",
                "naive": "2024-05-01T12:30:00.250000",
                "day": "2024-05-01",
                "clock": "12:30:15",
                "price": 1.25,
                "path": os.path.join("data", "run 1", "out.csv"),
                "windows": "C:\\data\\out.csv",
            },
        )

    def test_keys_json_does_not_know_become_the_key_they_convert_to(self) -> None:
        keys = {datetime.date(2024, 5, 1): 1, math.inf: 2, decimal.Decimal("2.5"): 3, pathlib.PurePosixPath("a/b"): 4, True: 5}
        self.assertEqual(json.loads(dumps(keys)), {"2024-05-01": 1, "Infinity": 2, "2.5": 3, "a/b": 4, "true": 5})
        with self.assertRaisesRegex(TypeError, "keys must be str, int, float, bool or None, not tuple"):
            dumps({(1, 2): 3})

    def test_anything_else_is_refused_naming_its_type(self) -> None:
        for value, name in ((1j, "complex"), (datetime.timedelta(1), "timedelta"), (b"raw", "bytes"), ([object()], "object")):
            with self.subTest(value=value), self.assertRaisesRegex(TypeError, f"Object of type {name} is not JSON serializable"):
                dumps({"x": [math.nan, value]})  # a NaN beside it does not hide it
        loop: list[Any] = [math.nan]
        loop.append(loop)
        with self.assertRaisesRegex(ValueError, "Circular reference"):
            dumps(loop)


VALUES = """
import datetime
import decimal
import math
import pathlib

from portico import Interface, WidgetReply

WHEN = datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone.utc)


class Values(Interface):
    def __init__(self):
        self.state = {"level": math.nan, "day": datetime.date(2024, 5, 1), "limit": math.inf}
        self.updates = []

    def mixed(self):
        return {
            "nan": math.nan, "inf": math.inf, "-inf": -math.inf,
            "when": WHEN, "day": datetime.date(2024, 5, 1), "clock": datetime.time(12, 30, 15),
            "price": decimal.Decimal("1.25"), "path": pathlib.PurePosixPath("data/run 1/out.csv"),
        }

    def nan(self):
        return math.nan

    def items(self):
        yield math.nan
        yield decimal.Decimal("2.5")
        yield pathlib.PurePosixPath("a/b")

    def announce(self):
        self.emit({"loss": math.nan, "at": WHEN})
        return "announced"

    def take(self, x: float, y: "float | None" = None, z=None):
        return [repr(x), repr(y), repr(z)]

    def take_keywords(self, *, w: float = 0.0, n: "int | float" = 0, s: "str | float" = ""):
        return [repr(w), repr(n), repr(s)]

    def take_text(self, s: str):
        return repr(s)

    def complex(self):
        return 1j

    def widget_state(self):
        return self.state

    def widget_update(self, changes):
        self.updates.append(changes)
        return {**changes, "seen": math.nan}

    def widget_message(self, content, buffers):
        self.push_widget_message({"at": WHEN, "gap": -math.inf})
        return WidgetReply({"level": math.nan}, [bytearray(b"ab")])

    def last_update(self):
        return repr(self.updates[-1])
"""


class StdlibWorkerTest(WorkerTestCase):
    """Through a real worker: what a call, a stream, an event and a widget frame carry."""

    FILES = {"values.py": VALUES}

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self.worker.result(self.worker.call(method, *args, module="values", uuid="v1", **kwargs))

    def test_a_result_with_nan_dates_decimals_and_paths(self) -> None:
        self.assertEqual(
            self.call("mixed"),
            {
                "nan": "NaN", "inf": "Infinity", "-inf": "-Infinity",
                "when": "2024-05-01T12:30:00+00:00", "day": "2024-05-01", "clock": "12:30:15",
                "price": 1.25, "path": "data/run 1/out.csv",
            },
        )  # fmt: skip
        self.assertEqual(self.call("nan"), "NaN")  # a lone NaN too (result_frame's own path)

    def test_stream_items_and_events(self) -> None:
        request = self.worker.call("items", module="values", uuid="v1", stream=True)
        self.assertEqual(self.worker.terminal(request)["op"], "end")
        self.assertEqual(self.worker.items(request), ["NaN", 2.5, "a/b"])
        self.assertEqual(self.call("announce"), "announced")
        event = self.worker.wait_for(lambda f: f["op"] == "event" and f.get("uuid") == "v1")
        self.assertEqual(event["payload"], {"loss": "NaN", "at": "2024-05-01T12:30:00+00:00"})

    def test_nan_strings_come_back_as_floats_where_the_parameter_is_a_float(self) -> None:
        # The first call takes the general path, the next ones on_call's fast path (a live
        # instance, a checked method, positional arguments): both read them back.
        for _ in range(2):
            self.assertEqual(self.call("take", "NaN", "-Infinity", "NaN"), ["nan", "-inf", "'NaN'"])
        self.assertEqual(self.call("take", 1.5, "inf"), ["1.5", "inf", "None"])  # Jupyter's spelling is read too
        self.assertEqual(self.call("take", x="Infinity"), ["inf", "None", "None"])
        # keyword-only parameters; a union with str keeps the text
        self.assertEqual(self.call("take_keywords", w="NaN", n="Infinity", s="NaN"), ["nan", "inf", "'NaN'"])
        self.assertEqual(self.call("take_text", "NaN"), "'NaN'")  # a str parameter keeps the text

    def test_anything_else_keeps_unserializable_result(self) -> None:
        error = self.worker.error(self.worker.call("complex", module="values", uuid="v1"))
        self.assertEqual(error["code"], "unserializable_result")
        self.assertIn("Object of type complex is not JSON serializable", error["message"])

    def test_widget_state_changes_and_messages(self) -> None:
        def op(name: str, **fields: Any) -> int:
            return self.worker.request(name, uuid="w1", module="values", config={}, **fields)

        state = self.worker.result(op("widget_get"))
        self.assertEqual(state, {"state": {"level": "NaN", "day": "2024-05-01", "limit": "Infinity"}})
        changes = self.worker.result(op("widget_set", changes={"level": "NaN", "at": "2024-05-01"}))
        self.assertEqual(changes, {"changes": {"level": "NaN", "at": "2024-05-01", "seen": "NaN"}})
        # a plain widget_update declares no types: it gets the strings as sent (float() reads them)
        self.assertEqual(self.worker.result(self.worker.call("last_update", module="values", uuid="w1")), "{'level': 'NaN', 'at': '2024-05-01'}")
        reply = self.worker.terminal(op("widget_msg", content={"ask": 1}))
        self.assertEqual((reply["payload"], reply["buffer_lengths"]), ({"reply": {"level": "NaN"}, "has_reply": True}, [2]))
        self.assertEqual(self.worker.body_of(reply), b"ab")
        pushed = self.worker.wait_for(lambda f: f["op"] == "widget_msg" and f.get("uuid") == "w1")
        self.assertEqual(pushed["content"], {"at": "2024-05-01T12:30:00+00:00", "gap": "-Infinity"})


NUMPY_VALUES = """
import numpy as np

from portico import Interface, WidgetReply


class Arrays(Interface):
    def __init__(self):
        self.state = {"count": np.int64(3), "xs": np.linspace(0, 1, 3), "ok": np.bool_(True), "gap": np.float32("nan")}

    def scalars(self):
        return {
            "i64": np.int64(7), "u8": np.uint8(255), "big": np.uint64(2**64 - 1),
            "f32": np.float32(0.5), "f64": np.float64(2.25), "f16": np.float16(1.5),
            "yes": np.bool_(True), "no": np.bool_(False),
            "nan": np.float64("nan"), "inf": np.float32("inf"), "-inf": np.float64("-inf"),
            "stamp": np.datetime64("2024-05-01T12:30:00.123456789"), "text": np.str_("x"),
        }

    def arrays(self):
        return {
            "matrix": np.arange(6).reshape(2, 3),
            "floats": np.array([0.5, np.nan, -np.inf], dtype=np.float32),
            "flags": np.array([True, False]),
            "scalar": np.array(3.5),
            "days": np.array(["2024-05-01", "NaT"], dtype="datetime64[D]"),
            "empty": np.zeros((0, 2)),
            "counts": dict(zip(np.array([3, 1]), np.array([2, 5]))),
        }

    def column(self):
        yield from np.arange(3)
        yield np.array([np.nan, 1.0])

    def announce(self):
        self.emit({"step": np.int64(3), "loss": np.float32(0.25), "curve": np.array([1.0, np.inf])})
        return np.int64(1)

    def take(self, x: float):
        return [repr(x), type(x).__name__]

    def complex(self):
        return np.complex128(1j)

    def durations(self):
        return np.array([1, 2], dtype="timedelta64[s]")

    def widget_state(self):
        return self.state

    def widget_message(self, content, buffers):
        self.push_widget_message({"shape": np.array([2, 2])}, [np.array([1, 2], dtype=np.uint16)])
        return WidgetReply({"sum": np.int64(6)}, [np.arange(4, dtype=np.uint8)])
"""

# A served anywidget shaped like jupyter-scatter's tooltip: `tooltip(properties=[an int column])`
# puts numpy integers (the column's domain) and a numpy histogram into a synced Dict trait.
SCATTER = """
import anywidget
import numpy as np
import traitlets

from portico.widgets import serve


class ScatterWidget(anywidget.AnyWidget):
    _esm = "export default { render() {} };"
    tooltip_properties = traitlets.List(["x", "y"]).tag(sync=True)
    tooltip_properties_non_visual_info = traitlets.Dict({}).tag(sync=True)
    opacity = traitlets.Float(1.0).tag(sync=True)
    bounds = traitlets.List(traitlets.Float(), [0.0, 1.0]).tag(sync=True)
    label = traitlets.Unicode("").tag(sync=True)


COLUMNS = {"cluster": np.array([3, 1, 4, 1, 5, 9, 2, 6])}


class Scatter(serve(ScatterWidget)):
    def tooltip(self, properties: list):
        info = {}
        for name in properties:
            column = COLUMNS[name]
            counts = np.histogram(column, bins=4)[0]
            info[name] = {"scale": "linear", "domain": [column.min(), column.max()], "histogram": counts / counts.max()}
        self.widget.tooltip_properties = ["x", "y", *properties]
        self.widget.tooltip_properties_non_visual_info = info
        return self.widget.tooltip_properties_non_visual_info

    def widget_values(self):
        return {"opacity": repr(self.widget.opacity), "bounds": repr(self.widget.bounds), "label": self.widget.label}
"""


@unittest.skipIf(NUMPY_PYTHON is None, "numpy is not installed in this Python nor in the test venv")
class NumpyWorkerTest(WorkerTestCase):
    """numpy values through a real worker whose Python has numpy, as Jupyter's kernel sends them."""

    PYTHON = NUMPY_PYTHON
    FILES = {"arrays.py": NUMPY_VALUES}

    def call(self, method: str, *args: Any, uuid: str = "n1") -> Any:
        return self.worker.result(self.worker.call(method, *args, module="arrays", uuid=uuid))

    def test_numpy_scalars(self) -> None:
        self.assertEqual(
            self.call("scalars"),
            {
                "i64": 7, "u8": 255, "big": 2**64 - 1, "f32": 0.5, "f64": 2.25, "f16": 1.5, "yes": True, "no": False,
                "nan": "NaN", "inf": "Infinity", "-inf": "-Infinity", "stamp": "2024-05-01T12:30:00.123456789", "text": "x",
            },
        )  # fmt: skip

    def test_numpy_arrays_are_nested_lists(self) -> None:
        self.assertEqual(
            self.call("arrays"),
            {
                "matrix": [[0, 1, 2], [3, 4, 5]],
                "floats": [0.5, "NaN", "-Infinity"],
                "flags": [True, False],
                "scalar": 3.5,
                "days": ["2024-05-01", "NaT"],
                "empty": [],
                "counts": {"3": 2, "1": 5},
            },
        )

    def test_stream_items_events_and_a_numpy_result(self) -> None:
        request = self.worker.call("column", module="arrays", uuid="n1", stream=True)
        self.assertEqual(self.worker.terminal(request)["op"], "end")
        self.assertEqual(self.worker.items(request), [0, 1, 2, ["NaN", 1.0]])
        self.assertEqual(self.call("announce"), 1)
        event = self.worker.wait_for(lambda f: f["op"] == "event" and f.get("uuid") == "n1")
        self.assertEqual(event["payload"], {"step": 3, "loss": 0.25, "curve": [1.0, "Infinity"]})

    def test_a_nan_string_is_a_python_float_for_a_float_parameter(self) -> None:
        self.assertEqual(self.call("take", "NaN"), ["nan", "float"])

    def test_complex_and_timedelta_keep_unserializable_result(self) -> None:
        for method, name in (("complex", "complex128"), ("durations", "ndarray")):
            with self.subTest(method=method):
                error = self.worker.error(self.worker.call(method, module="arrays", uuid="n1"))
                self.assertEqual(error["code"], "unserializable_result")
                self.assertIn(f"Object of type {name} is not JSON serializable", error["message"])

    def test_widget_state_and_messages_with_numpy_values_and_array_buffers(self) -> None:
        def op(name: str, **fields: Any) -> int:
            return self.worker.request(name, uuid="nw", module="arrays", config={}, **fields)

        self.assertEqual(self.worker.result(op("widget_get")), {"state": {"count": 3, "xs": [0.0, 0.5, 1.0], "ok": True, "gap": "NaN"}})
        reply = self.worker.terminal(op("widget_msg", content="go"))
        self.assertEqual((reply["payload"], reply["buffer_lengths"]), ({"reply": {"sum": 6}, "has_reply": True}, [4]))
        self.assertEqual(self.worker.body_of(reply), bytes([0, 1, 2, 3]))  # an array as a buffer, as a kernel sends it
        pushed = self.worker.wait_for(lambda f: f["op"] == "widget_msg" and f.get("uuid") == "nw")
        self.assertEqual((pushed["content"], self.worker.body_of(pushed)), ({"shape": [2, 2]}, bytes([1, 0, 2, 0])))


@unittest.skipIf(ANYWIDGET_NUMPY_PYTHON is None, "numpy and anywidget are not installed in this Python nor in the test venv")
class ServedScatterTest(WorkerTestCase):
    """A published-anywidget-shaped widget whose traits hold numpy values, as jupyter-scatter's do."""

    PYTHON = ANYWIDGET_NUMPY_PYTHON
    FILES = {"scatter.py": SCATTER}

    def op(self, name: str, uuid: str, **fields: Any) -> int:
        return self.worker.request(name, uuid=uuid, module="scatter", config={}, **fields)

    def test_tooltip_of_an_int_column_sets_numpy_values_in_a_trait(self) -> None:
        self.worker.result(self.op("widget_get", "s1"))  # attached: the trait change is pushed
        info = self.worker.result(self.worker.call("tooltip", ["cluster"], module="scatter", uuid="s1"))
        expected = {"cluster": {"scale": "linear", "domain": [1, 9], "histogram": [1.0, 2 / 3, 2 / 3, 1 / 3]}}
        self.assertEqual(info, expected)
        pushed = self.worker.wait_for(lambda f: f["op"] == "widget_change" and "tooltip_properties_non_visual_info" in f["changes"])
        self.assertEqual(pushed["changes"]["tooltip_properties_non_visual_info"], expected)
        state = self.worker.result(self.op("widget_get", "s1"))["state"]
        self.assertEqual((state["tooltip_properties"], state["tooltip_properties_non_visual_info"]), (["x", "y", "cluster"], expected))

    def test_nan_and_infinity_strings_set_float_traits_and_stay_text_elsewhere(self) -> None:
        changes = self.worker.result(self.op("widget_set", "s2", changes={"opacity": "NaN", "bounds": ["-Infinity", "Infinity"], "label": "NaN"}))
        self.assertEqual(changes, {"changes": {"opacity": "NaN", "bounds": ["-Infinity", "Infinity"], "label": "NaN"}})
        values = self.worker.result(self.worker.call("widget_values", module="scatter", uuid="s2"))
        self.assertEqual(values, {"opacity": "nan", "bounds": "[-inf, inf]", "label": "NaN"})


CLIENT_VALUES = """
import math

from portico import Interface


class Echo(Interface):
    def __init__(self):
        self.level = 0.0

    def describe(self, x: float, when=None, price=None, where=None):
        return [repr(x), when, price, where]

    def worst(self):
        return {"loss": math.inf, "score": math.nan}

    def widget_state(self):
        return {"level": self.level}

    def widget_update(self, changes):
        self.level = float(changes["level"])  # a plain hook declares no types: float() reads the strings
        return {"level": self.level, "read": repr(self.level)}
"""


class ClientValuesTest(unittest.TestCase):
    """The Python client sends what the worker writes (a notebook's NaN, dates, Decimal, paths as
    arguments) and reads the strings back as they are, over REST and the WebSocket."""

    @classmethod
    def setUpClass(cls) -> None:
        from gateway_support import GatewayProcess

        cls.gateway = GatewayProcess(extra={"echo.py": CLIENT_VALUES})

    @classmethod
    def tearDownClass(cls) -> None:
        cls.gateway.stop()

    def test_nan_dates_decimals_and_paths_as_arguments_over_rest_and_websocket(self) -> None:
        from portico.client import Gateway

        g = Gateway(self.gateway.url, timeout=30)
        self.addCleanup(g.close)
        args = (math.nan, datetime.date(2024, 5, 1), decimal.Decimal("1.25"), pathlib.PurePosixPath("a/b"))
        expected = ["nan", "2024-05-01", 1.25, "a/b"]
        self.assertEqual(g.call("echo", "describe", *args), expected)  # REST
        echo = g.interface("echo")
        self.addCleanup(echo.close)
        self.assertEqual(echo.describe(*args), expected)  # WebSocket
        self.assertEqual(echo.describe(x=-math.inf), ["-inf", None, None, None])
        self.assertEqual(echo.worst(), {"loss": "Infinity", "score": "NaN"})
        self.assertEqual(echo.widget_set(level=math.inf), {"level": "Infinity", "read": "inf"})
        self.assertEqual(echo.widget_state(), {"level": "Infinity"})


if __name__ == "__main__":
    unittest.main()
