"""Widget state that comes back: saved to ``.portico/interfaces/<uuid>/.widget-state`` after each
accepted ``widget_set`` and each ``push_widget_change`` (coalesced, atomic, binary values raw),
handed to ``widget_update`` of the next instance of that uuid (a fresh worker, or after a release),
flushed when the worker exits. Classes with the default ``widget_update`` or
``_persist_widget = False`` write nothing.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from typing import Any, Callable
from unittest import mock

import support
from support import TIMEOUT, WorkerProcess, make_project

from portico._frames import read_frame

COUNTER = """
    import time

    from portico import Interface


    class Counter(Interface):
        \"\"\"A counter with a binary blob; counts how often its state is read.\"\"\"

        def __init__(self):
            self.state = {"count": 0, "blob": b"", "label": "counter"}
            self.state_reads = 0
            self.updates = []

        def widget_state(self):
            self.state_reads += 1
            return dict(self.state)

        def widget_update(self, changes):
            if changes.get("count") == -1:
                raise ValueError("the counter refuses -1")
            self.updates.append(sorted(changes))
            self.state.update(changes)

        def bump(self, by=1):
            self.state["count"] += by
            self.push_widget_change({"count": self.state["count"]})
            return self.state["count"]

        def widget_message(self, content, buffers):
            if content == "zero":
                self.state["count"] = 0
            return None

        def reads(self):
            return self.state_reads

        def seen_updates(self):
            return self.updates
"""

SLOW = """
    import time

    from portico import Interface


    class Slow(Interface):
        \"\"\"Its state takes a while to read: a save of it is in flight when the worker is told to go.\"\"\"

        def __init__(self):
            self.state = {"count": 0}

        def widget_state(self):
            time.sleep(0.4)
            return dict(self.state)

        def widget_update(self, changes):
            self.state.update(changes)
"""

OPTED_OUT = """
    from portico import Interface


    class OptedOut(Interface):
        _persist_widget = False

        def __init__(self):
            self.state = {"count": 0}

        def widget_state(self):
            return dict(self.state)

        def widget_update(self, changes):
            self.state.update(changes)

        def bump(self):
            self.state["count"] += 1
            self.push_widget_change({"count": self.state["count"]})
"""

PLAIN = """
    from portico import Interface


    class Plain(Interface):
        \"\"\"The default hooks: the state is the config, read-only.\"\"\"

        class Config:
            count: int = 0

        def shout(self):
            self.push_widget_change({"count": 99})
"""

STEPPER = """
    from portico import Interface


    class Stepper(Interface):
        \"\"\"As the demo counter: its state shows the config's step, which widget_update refuses.\"\"\"

        class Config:
            step: int = 2

        def __init__(self):
            self.count = 0

        def widget_state(self):
            return {"count": self.count, "step": self.config.step}

        def widget_update(self, changes):
            if set(changes) - {"count"}:
                raise ValueError("only 'count' can be changed")
            self.count = changes["count"]
"""

FILES = {"counter.py": COUNTER, "slow.py": SLOW, "opted_out.py": OPTED_OUT, "plain.py": PLAIN, "stepper.py": STEPPER}


def state_path(project: str, uuid: str) -> str:
    return os.path.join(project, ".portico", "interfaces", uuid, ".widget-state")


def read_state_file(path: str) -> tuple[dict[str, Any], bytes] | None:
    """The file's header and body, read as the bridge frame it is; None when there is no file.
    Fails the test on a file that is not exactly one whole frame (a torn write)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return None
    stream = io.BytesIO(raw)
    frame = read_frame(stream)  # FrameError on a torn file
    assert frame is not None, "empty state file"
    assert stream.read() == b"", "bytes after the state frame"
    header, body = frame
    assert header["op"] == "widget_state" and header["version"] == 1, header
    assert sum(header.get("buffer_lengths", [])) == len(body), header
    return header, body


def wait_until(predicate: Callable[[], Any], timeout: float = TIMEOUT, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class PersistTestCase(unittest.TestCase):
    """A temporary project of ``FILES`` per test, and workers started on it as the test needs."""

    files = FILES

    def setUp(self) -> None:
        self.project = make_project(self, self.files)

    def start(self, python: str | None = None) -> WorkerProcess:
        if python is None:
            worker = WorkerProcess(self.project)
        else:  # support.WorkerProcess runs sys.executable
            with mock.patch.object(support.sys, "executable", python):
                worker = WorkerProcess(self.project)
        self.addCleanup(worker.close)
        worker.wait_for(lambda f: f["op"] == "ready")
        return worker

    def stop(self, worker: WorkerProcess) -> None:
        worker.send({"op": "shutdown"})
        self.assertEqual(worker.proc.wait(TIMEOUT), 0, worker.stderr.decode())

    def op(self, worker: WorkerProcess, op: str, uuid: str, module: str = "counter", body: bytes = b"", **fields: Any) -> int:
        return worker.request(op, body, uuid=uuid, module=module, config={}, **fields)

    def answer(self, worker: WorkerProcess, request: int) -> tuple[dict[str, Any], bytes]:
        frame = worker.terminal(request)
        self.assertEqual(frame["op"], "result", frame)
        return frame, worker.body_of(frame)

    def saved(self, uuid: str, check: Callable[[dict[str, Any], bytes], bool] = lambda h, b: True) -> tuple[dict[str, Any], bytes]:
        """The saved file of ``uuid`` once it exists and passes ``check``."""
        path = state_path(self.project, uuid)

        def found() -> tuple[dict[str, Any], bytes] | None:
            frame = read_state_file(path)
            return frame if frame is not None and check(*frame) else None

        return wait_until(found, what=f"the saved widget state of {uuid}")


class WidgetPersistTest(PersistTestCase):
    def test_a_widget_set_is_saved_and_a_fresh_worker_restores_it(self) -> None:
        worker = self.start()
        frame, _ = self.answer(worker, self.op(worker, "widget_set", "c1", changes={"count": 5}))
        self.assertEqual(frame["payload"], {"changes": {"count": 5}})
        header, body = self.saved("c1", lambda h, b: h["state"]["count"] == 5)
        self.assertEqual(header["state"], {"count": 5, "blob": None, "label": "counter"})
        self.assertEqual((header["buffer_paths"], header["buffer_lengths"], body), ([["blob"]], [0], b""))
        # No temp file left; the lock this worker holds while it has the instance.
        self.assertEqual(sorted(os.listdir(os.path.dirname(state_path(self.project, "c1")))), [".widget-state", ".widget-state.lock"])
        self.stop(worker)

        fresh = self.start()
        inode = os.stat(state_path(self.project, "c1")).st_ino
        frame, _ = self.answer(fresh, self.op(fresh, "widget_get", "c1"))
        self.assertEqual(frame["payload"]["state"], {"count": 5, "blob": None, "label": "counter"})
        # Restored once, through widget_update, with the keys that differ from a new instance's
        # state (blob and label are what it starts with); not pushed, not saved again.
        self.assertEqual(fresh.result(fresh.call("seen_updates", uuid="c1")), [["count"]])
        fresh.settle(0.2)
        self.assertEqual([f for f in fresh.frames if f["op"] == "widget_change"], [])
        self.assertEqual(os.stat(state_path(self.project, "c1")).st_ino, inode)
        # Another uuid of the same class starts afresh.
        frame, _ = self.answer(fresh, self.op(fresh, "widget_get", "c2"))
        self.assertEqual(frame["payload"]["state"]["count"], 0)

    def test_push_widget_change_from_a_method_is_saved(self) -> None:
        worker = self.start()
        self.assertEqual(worker.result(worker.call("bump", 3, uuid="p1")), 3)
        self.assertEqual(worker.wait_for(lambda f: f["op"] == "widget_change")["changes"], {"count": 3})
        self.saved("p1", lambda h, b: h["state"]["count"] == 3)
        self.stop(worker)
        fresh = self.start()
        self.assertEqual(fresh.result(fresh.call("bump", 1, uuid="p1")), 4)

    def test_a_widget_message_whose_hook_changed_the_state_is_saved_and_one_that_did_not_writes_nothing(self) -> None:
        worker = self.start()
        self.answer(worker, self.op(worker, "widget_set", "m1", changes={"count": 7}))
        self.saved("m1", lambda h, b: h["state"]["count"] == 7)
        self.answer(worker, self.op(worker, "widget_msg", "m1", content="zero"))
        self.saved("m1", lambda h, b: h["state"]["count"] == 0)
        inode = os.stat(state_path(self.project, "m1")).st_ino
        # A message that changes nothing: the state is read, found as written, and not written again.
        reads = worker.result(worker.call("reads", uuid="m1"))
        self.answer(worker, self.op(worker, "widget_msg", "m1", content="hello"))
        wait_until(lambda: worker.result(worker.call("reads", uuid="m1")) > reads, what="the save to read the state")
        self.assertEqual(os.stat(state_path(self.project, "m1")).st_ino, inode)
        self.stop(worker)
        fresh = self.start()
        frame, _ = self.answer(fresh, self.op(fresh, "widget_get", "m1"))
        self.assertEqual(frame["payload"]["state"]["count"], 0)

    def test_a_hook_that_refuses_read_only_keys_still_gets_its_changed_ones_back(self) -> None:
        worker = self.start()
        self.answer(worker, self.op(worker, "widget_set", "s1", module="stepper", changes={"count": 7}))
        self.saved("s1", lambda h, b: h["state"] == {"count": 7, "step": 2})
        self.stop(worker)
        fresh = self.start()
        frame, _ = self.answer(fresh, self.op(fresh, "widget_get", "s1", module="stepper"))
        self.assertEqual(frame["payload"]["state"], {"count": 7, "step": 2})

    def test_binary_values_are_saved_raw_and_come_back_byte_exact(self) -> None:
        blob = bytes(range(256)) * 1024 + b"\x00tail\xff"
        worker = self.start()
        request = self.op(worker, "widget_set", "b1", changes={"blob": None}, buffer_paths=[["blob"]], buffer_lengths=[len(blob)], body=blob)
        self.answer(worker, request)
        header, body = self.saved("b1", lambda h, b: len(b) == len(blob))
        self.assertEqual((header["buffer_paths"], header["buffer_lengths"], body), ([["blob"]], [len(blob)], blob))
        # Raw: the file is the frame, a few hundred bytes more than the blob (base64 would be a third more).
        self.assertLess(os.path.getsize(state_path(self.project, "b1")), len(blob) + 512)
        self.stop(worker)
        fresh = self.start()
        frame, body = self.answer(fresh, self.op(fresh, "widget_get", "b1"))
        self.assertEqual((frame["payload"]["buffer_paths"], frame["buffer_lengths"]), ([["blob"]], [len(blob)]))
        self.assertEqual(body, blob)

    def test_opted_out_and_default_hook_classes_write_nothing(self) -> None:
        worker = self.start()
        self.answer(worker, self.op(worker, "widget_set", "o1", module="opted_out", changes={"count": 2}))
        worker.result(worker.call("bump", module="opted_out", uuid="o1"))
        self.assertEqual(worker.error(self.op(worker, "widget_set", "d1", module="plain", changes={"count": 2}))["code"], "read_only")
        worker.result(worker.call("shout", module="plain", uuid="d1"))
        # A persisting instance of the same worker, changed after them, is saved...
        self.answer(worker, self.op(worker, "widget_set", "c1", changes={"count": 1}))
        self.saved("c1")
        self.stop(worker)  # ...and the exit flushes whatever was pending
        # ...while theirs have no file, not even a folder.
        self.assertFalse(os.path.exists(os.path.join(self.project, ".portico", "interfaces", "o1")))
        self.assertFalse(os.path.exists(os.path.join(self.project, ".portico", "interfaces", "d1")))
        fresh = self.start()
        frame, _ = self.answer(fresh, self.op(fresh, "widget_get", "o1", module="opted_out"))
        self.assertEqual(frame["payload"]["state"], {"count": 0})

    def test_a_bad_file_is_logged_and_ignored(self) -> None:
        cases = {
            "garbage": b"not a frame at all",
            "torn": b"\x00\x00\x00\x30\x00\x00\x00\x00" + b'{"op":"widget_state","version":1,"st',
            "refused": None,  # a whole file whose state widget_update refuses
        }
        refused_path = state_path(self.project, "refused")
        worker = self.start()
        self.answer(worker, self.op(worker, "widget_set", "refused", changes={"count": 8}))
        self.saved("refused")
        self.stop(worker)
        with open(refused_path, "rb") as handle:
            refused = handle.read().replace(b'"count":8', b'"count":-1')
        cases["refused"] = refused
        for uuid, raw in cases.items():
            os.makedirs(os.path.dirname(state_path(self.project, uuid)), exist_ok=True)
            with open(state_path(self.project, uuid), "wb") as handle:
                handle.write(raw)
        fresh = self.start()
        for uuid, raw in cases.items():
            with self.subTest(uuid=uuid):
                frame, _ = self.answer(fresh, self.op(fresh, "widget_get", uuid))
                self.assertEqual(frame["payload"]["state"]["count"], 0)  # a fresh instance, working
                fresh.wait_output(f"saved widget state of {uuid}".encode(), stream="stderr")
                with open(state_path(self.project, uuid), "rb") as handle:
                    self.assertEqual(handle.read(), raw)  # left as it was
                self.assertEqual(fresh.result(fresh.call("bump", uuid=uuid)), 1)

    def test_a_burst_of_changes_is_coalesced_and_every_file_read_is_whole(self) -> None:
        blob = b"\xab" * (256 * 1024)  # big enough that a write takes a while
        worker = self.start()
        path = state_path(self.project, "burst")
        seen: list[int] = []
        problems: list[str] = []
        stop = threading.Event()

        def poll() -> None:  # a reader racing the writes sees no file or a whole one, never a torn one
            while not stop.is_set():
                try:
                    frame = read_state_file(path)
                except Exception as exc:
                    problems.append(repr(exc))
                    return
                if frame is not None:
                    seen.append(frame[0]["state"]["count"])

        poller = threading.Thread(target=poll)
        poller.start()
        try:
            requests = []
            for count in range(100):
                requests.append(
                    self.op(worker, "widget_set", "burst", changes={"count": count, "blob": None}, buffer_paths=[["blob"]], buffer_lengths=[len(blob)], body=blob)
                )
            for request in requests:
                self.answer(worker, request)
            header, body = self.saved("burst", lambda h, b: h["state"]["count"] == 99)
            self.assertEqual(body, blob)
            time.sleep(0.2)
        finally:
            stop.set()
            poller.join(TIMEOUT)
        self.assertEqual(problems, [])
        self.assertTrue(seen)
        # One widget_state() per write: far fewer than the 100 changes (3 to 7 here; 100 uncoalesced).
        writes = worker.result(worker.call("reads", uuid="burst"))
        self.assertGreaterEqual(writes, 1)
        self.assertLessEqual(writes, 20, f"{writes} writes for 100 changes")
        self.assertEqual(sorted(os.listdir(os.path.dirname(path))), [".widget-state", ".widget-state.lock"])

    def test_a_release_right_after_a_change_still_hands_the_change_on(self) -> None:
        worker = self.start()
        # One write: the new instance is made while the save of the released one is still due.
        fields = {"uuid": "r1", "module": "counter", "config": {}}
        worker.send_raw(
            support.encode({"op": "widget_set", "id": 1001, "changes": {"count": 7}, **fields})
            + support.encode({"op": "release", "uuid": "r1"})
            + support.encode({"op": "widget_get", "id": 1002, **fields})
        )
        first, after = 1001, 1002
        self.answer(worker, first)
        frame, _ = self.answer(worker, after)
        self.assertEqual(frame["payload"]["state"]["count"], 7)

    def test_exit_writes_the_pending_save(self) -> None:
        with self.subTest("shutdown right behind a change"):
            worker = self.start()
            self.op(worker, "widget_set", "s1", changes={"count": 4})
            worker.send({"op": "shutdown"})  # in the same batch: the save is still due
            self.assertEqual(worker.proc.wait(TIMEOUT), 0)
            frame = read_state_file(state_path(self.project, "s1"))
            self.assertIsNotNone(frame)
            self.assertEqual(frame[0]["state"]["count"], 4)
        with self.subTest("EOF while a save is being made"):
            worker = self.start()
            self.answer(worker, self.op(worker, "widget_set", "s2", module="slow", changes={"count": 6}))
            time.sleep(0.1)  # the saver is inside the slow widget_state() now
            worker.close_requests()
            self.assertEqual(worker.proc.wait(TIMEOUT), 0)
            frame = read_state_file(state_path(self.project, "s2"))
            self.assertIsNotNone(frame)
            self.assertEqual(frame[0]["state"], {"count": 6})


KNOB = """
    import anywidget
    import traitlets

    from portico.widgets import serve


    class KnobWidget(anywidget.AnyWidget):
        _esm = "export default { render() {} };"
        value = traitlets.Int(1).tag(sync=True)
        double = traitlets.Int(2).tag(sync=True)
        image = traitlets.Bytes(b"").tag(sync=True)

        @traitlets.observe("value")
        def _follow(self, change):
            self.double = 2 * change["new"]


    class Knob(serve(KnobWidget)):
        def turn(self, by):
            self.widget.value += by
            return self.widget.value
"""


def _anywidget_python() -> str | None:
    """A Python with anywidget: this one, else the test venv (``PORTICO_TEST_PYTHON`` or
    ``<repo>/.cache/test-venv``, which ``npm test`` provisions)."""
    repo = os.path.abspath(os.path.join(support.PYTHON_DIR, "..", "..", ".."))
    for python in (sys.executable, os.environ.get("PORTICO_TEST_PYTHON"), os.path.join(repo, ".cache", "test-venv", "bin", "python")):
        if python and os.path.exists(python):
            probe = subprocess.run([python, "-c", "import anywidget"], capture_output=True)
            if probe.returncode == 0:
                return python
    return None


ANYWIDGET_PYTHON = _anywidget_python()


@unittest.skipIf(ANYWIDGET_PYTHON is None, "anywidget is not installed in this Python nor in the test venv")
class ServedWidgetPersistTest(PersistTestCase):
    def test_a_served_anywidget_gets_its_traits_back(self) -> None:
        self.project = tempfile.mkdtemp(prefix="portico-test-")
        self.addCleanup(shutil.rmtree, self.project, True)
        support.write_files(self.project, {"knob.py": KNOB})
        worker = self.start(ANYWIDGET_PYTHON)
        image = bytes(range(256)) * 4
        request = self.op(worker, "widget_set", "k1", module="knob", changes={"value": 5, "image": None}, buffer_paths=[["image"]], buffer_lengths=[len(image)], body=image)
        frame, _ = self.answer(worker, request)
        self.assertEqual(frame["payload"]["changes"]["double"], 10)
        self.saved("k1", lambda h, b: h["state"]["value"] == 5 and b == image)
        # A trait set in Python is pushed, and saved.
        self.assertEqual(worker.result(worker.call("turn", 2, module="knob", uuid="k1")), 7)
        header, body = self.saved("k1", lambda h, b: h["state"]["value"] == 7)
        self.assertEqual((header["state"]["double"], body), (14, image))
        self.stop(worker)

        fresh = self.start(ANYWIDGET_PYTHON)
        frame, body = self.answer(fresh, self.op(fresh, "widget_get", "k1", module="knob"))
        self.assertEqual({k: frame["payload"]["state"][k] for k in ("value", "double")}, {"value": 7, "double": 14})
        self.assertEqual(body, image)
        fresh.settle(0.2)
        self.assertEqual([f for f in fresh.frames if f["op"] == "widget_change"], [])


if __name__ == "__main__":
    unittest.main()
