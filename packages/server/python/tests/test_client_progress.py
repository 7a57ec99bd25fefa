"""portico.client in a notebook kernel: progress events show as one bar in the cell, and events
and stream items that carry a MIME bundle arrive as ``Display`` objects (issue 32 items 2 and 4).

The kernel tests run a real ipykernel (from ``<repo>/.cache/test-venv``, which ``npm test``
provisions) through jupyter_client, as a notebook front end does, against a real gateway, and assert
the ``display_data`` / ``update_display_data`` messages the notebook receives.

Run: ``cd packages/server/python && python3 -m unittest tests.test_client_progress -v``
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gateway_support import PYTHON_DIR, GatewayProcess  # noqa: E402
from support import python_with  # noqa: E402

from portico.client import Display, Gateway  # noqa: E402

#: Bounds every wait in these tests (things that normally take milliseconds).
WAIT = 30.0

KERNEL_PYTHON = python_with("ipykernel", "jupyter_client")

FITTER = {
    "fitter.py": """
        from portico import Interface

        PNG = b"\\x89PNG\\r\\n\\x1a\\n" + bytes(range(16))


        class Badge:
            def __init__(self, n):
                self.n = n

            def __repr__(self):
                return f"<Badge {self.n}>"

            def _repr_html_(self):
                return f"<b>badge {self.n}</b>"

            def _repr_png_(self):
                return PNG


        class Fitter(Interface):
            \"\"\"Fits in steps, saying how far it got.\"\"\"

            def fit(self, steps: int = 3) -> dict:
                for i in range(1, steps + 1):
                    self.emit({"progress": i / steps, "message": f"step {i}/{steps}"})
                return {"steps": steps}

            def fail(self) -> None:
                self.emit({"progress": 0.5, "message": "halfway"})
                raise ValueError("diverged")

            def announce(self, message: str) -> None:
                self.emit({"progress": 1, "message": message})

            def quiet(self) -> int:
                self.emit({"loss": 0.5, "progress": "most"})  # not a progress event
                return 1

            def badges(self, n: int = 2):
                for i in range(n):
                    self.emit(Badge(i))
                    yield Badge(i)
    """,
}

# Runs cells in a fresh kernel and prints, per cell, what the notebook receives on iopub.
KERNEL_DRIVER = r"""
import json, os, sys
from jupyter_client.manager import start_new_kernel

cells = json.loads(os.environ["CELLS"])
km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60)
answers = []
try:
    for code in cells:
        msg_id = kc.execute(code)
        messages = []
        while True:
            msg = kc.get_iopub_msg(timeout=float(os.environ["WAIT"]))
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "status" and msg["content"]["execution_state"] == "idle":
                break
            if kind in ("display_data", "update_display_data", "execute_result", "stream", "error"):
                messages.append({"type": kind, "content": msg["content"]})
        answers.append(messages)
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
print(json.dumps(answers))
"""


def run_cells(url: str, cells: list[str]) -> list[list[dict]]:
    """Executes ``cells`` in a new kernel (the first one connects ``g`` to the gateway at ``url``)."""
    assert KERNEL_PYTHON is not None
    setup = f"import sys\nsys.path.insert(0, {PYTHON_DIR!r})\nfrom portico.client import Gateway\ng = Gateway({url!r}, timeout={WAIT})"
    env = {**os.environ, "CELLS": json.dumps([setup, *map(textwrap.dedent, cells)]), "WAIT": str(WAIT)}
    done = subprocess.run([KERNEL_PYTHON, "-c", KERNEL_DRIVER], env=env, capture_output=True, text=True, timeout=WAIT * 6)
    if done.returncode != 0:
        raise AssertionError(f"the kernel driver failed:\n{done.stderr[-4000:]}")
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    errors = [m for m in answers[0] if m["type"] == "error"]
    assert not errors, errors
    return answers[1:]


def texts(messages: list[dict]) -> list[tuple[str, str]]:
    """``(type, text/plain)`` of each display message."""
    return [(m["type"], m["content"]["data"]["text/plain"]) for m in messages if m["type"] in ("display_data", "update_display_data")]


def result(messages: list[dict]) -> str | None:
    shown = [m["content"]["data"]["text/plain"] for m in messages if m["type"] == "execute_result"]
    return shown[0] if shown else None


@unittest.skipIf(KERNEL_PYTHON is None, "ipykernel and jupyter_client are not installed here nor in the test venv")
class NotebookProgressTest(unittest.TestCase):
    """One kernel runs every cell (a notebook's worth); each test reads what its cell received."""

    CELLS = {
        "call": "g.interface('fitter').fit(3)",
        "failed": """
            from portico.client import GatewayError
            try:
                g.interface('fitter').fail()
            except GatewayError as err:
                print(err.code)
        """,
        "stream": "list(g.interface('streamer').ticks(4))",
        "count": "list(g.interface('streamer').aticks(3))",
        "left": """
            ticks = g.interface('streamer').ticks(10)
            next(ticks)
            ticks.close()
        """,
        "markup": "g.interface('fitter').announce('<img src=x onerror=alert(1)>')",
        "none": "g.interface('fitter').quiet(), g.interface('streamer').echo(5)",
        "off": """
            g.progress = False
            list(g.interface('streamer').ticks(2)), g.interface('fitter').fit(2)
        """,
    }

    @classmethod
    def setUpClass(cls) -> None:
        cls.gateway = GatewayProcess(extra=FITTER)
        try:
            cls.cells = dict(zip(cls.CELLS, run_cells(cls.gateway.url, list(cls.CELLS.values()))))
        except BaseException:
            cls.gateway.stop()
            raise

    @classmethod
    def tearDownClass(cls) -> None:
        cls.gateway.stop()

    def assertOneDisplay(self, messages: list[dict]) -> list[dict]:
        """Every display message of the cell updates the one display its first one made."""
        shown = [m for m in messages if m["type"] in ("display_data", "update_display_data")]
        self.assertTrue(shown, messages)
        self.assertEqual([m["type"] for m in shown], ["display_data"] + ["update_display_data"] * (len(shown) - 1))
        ids = {m["content"]["transient"]["display_id"] for m in shown}
        self.assertEqual(len(ids), 1, ids)
        return shown

    def test_a_call_that_emits_progress_shows_one_bar_updated_in_place_and_done(self):
        messages = self.cells["call"]
        shown = self.assertOneDisplay(messages)
        self.assertEqual(
            texts(messages),
            [
                ("display_data", "[###       ] 33% step 1/3"),
                ("update_display_data", "[######    ] 66% step 2/3"),
                ("update_display_data", "[##########] 100% step 3/3"),
                ("update_display_data", "[##########] 100% step 3/3 (done)"),
            ],
        )
        first, last = shown[0]["content"]["data"]["text/html"], shown[-1]["content"]["data"]["text/html"]
        self.assertIn('<progress value="0.333333" max="1"', first)
        self.assertIn('<progress value="1" max="1"', last)
        self.assertIn("step 3/3 (done)", last)
        self.assertEqual(result(messages), "{'steps': 3}")

    def test_a_failing_call_marks_its_bar_failed_with_the_code(self):
        messages = self.cells["failed"]
        self.assertOneDisplay(messages)
        self.assertEqual(
            texts(messages),
            [("display_data", "[#####     ] 50% halfway"), ("update_display_data", "[#####     ] 50% halfway (failed: call_failed)")],
        )
        self.assertIn("var(--jp-error-color1", messages[-2]["content"]["data"]["text/html"])
        self.assertEqual([m["content"]["text"] for m in messages if m["type"] == "stream"], ["call_failed\n"])

    def test_a_stream_shows_the_progress_its_method_emits(self):
        messages = self.cells["stream"]
        self.assertOneDisplay(messages)
        bars = [text for _, text in texts(messages) if text.startswith("[")]  # before the first event: a count
        self.assertEqual(bars, ["[##        ] 25%", "[#####     ] 50%", "[#######   ] 75%", "[##########] 100%", "[##########] 100% (done)"])
        self.assertEqual(result(messages), "['tick 0', 'tick 1', 'tick 2', 'tick 3']")

    def test_a_stream_without_progress_events_counts_its_items(self):
        messages = self.cells["count"]
        self.assertOneDisplay(messages)
        shown = texts(messages)
        self.assertEqual(shown[0], ("display_data", "1 item"))
        self.assertEqual(shown[-1], ("update_display_data", "3 items (done)"))
        self.assertNotIn("<progress", messages[-2]["content"]["data"]["text/html"])  # ended: no bar spinning
        self.assertEqual(result(messages), "[0, 1, 2]")

    def test_a_stream_left_early_is_marked_stopped(self):
        self.assertEqual(texts(self.cells["left"]), [("display_data", "1 item"), ("update_display_data", "1 item (stopped)")])

    def test_a_message_is_text_in_the_html_never_markup(self):
        messages = self.cells["markup"]
        self.assertOneDisplay(messages)
        for shown in messages:
            self.assertNotIn("<img", shown["content"]["data"]["text/html"])
            self.assertIn("&lt;img src=x onerror=alert(1)&gt;", shown["content"]["data"]["text/html"])
        self.assertEqual(texts(messages)[-1][1], "[##########] 100% <img src=x onerror=alert(1)> (done)")

    def test_calls_without_progress_events_show_nothing_but_their_result(self):
        messages = self.cells["none"]
        self.assertEqual([m["type"] for m in messages], ["execute_result"])
        self.assertEqual(result(messages), "(1, 5)")

    def test_progress_false_turns_it_off(self):
        messages = self.cells["off"]
        self.assertEqual([m["type"] for m in messages], ["execute_result"])
        self.assertEqual(result(messages), "(['tick 0', 'tick 1'], {'steps': 2})")


class OutsideNotebookTest(unittest.TestCase):
    """In plain Python the same calls print nothing and never import IPython."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.gateway = GatewayProcess(extra=FITTER)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.gateway.stop()

    def setUp(self) -> None:
        self.g = Gateway(self.gateway.url, timeout=WAIT)
        self.addCleanup(self.g.close)

    def test_progress_events_print_nothing_and_leave_ipython_alone(self):
        had_ipython = "IPython" in sys.modules
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            ticks = list(self.g.interface("streamer").ticks(3))
            fitted = self.g.interface("fitter").fit(2)
        self.assertEqual((ticks, fitted), (["tick 0", "tick 1", "tick 2"], {"steps": 2}))
        self.assertEqual((out.getvalue(), err.getvalue()), ("", ""))
        self.assertEqual("IPython" in sys.modules, had_ipython)

    def test_a_stream_of_a_proxy_nobody_holds_runs_to_its_end(self):
        # As a notebook cell writes it: the proxy is a temporary, only the iterator is held.
        self.assertEqual(list(self.g.interface("streamer").aticks(4, 0.1)), [0, 1, 2, 3])

    def test_displayable_events_and_stream_items_arrive_as_display_objects(self):
        badges = self.g.interface("fitter")
        events: list = []
        two = threading.Event()

        @badges.on_event
        def collect(event):
            events.append(event)
            if len(events) == 2:
                two.set()

        items = list(badges.badges(2))
        self.assertTrue(two.wait(WAIT))
        for shown, n in ((items, 0), (items, 1), (events, 0), (events, 1)):
            self.assertIsInstance(shown[n], Display)
            self.assertEqual(shown[n].data["text/html"], f"<b>badge {n}</b>")
            self.assertEqual(repr(shown[n]), f"<Badge {n}>")
            self.assertEqual(shown[n].bytes("image/png"), b"\x89PNG\r\n\x1a\n" + bytes(range(16)))
            self.assertIsNone(shown[n].payload)


if __name__ == "__main__":
    unittest.main()
