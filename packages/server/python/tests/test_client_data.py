"""portico.client against the real gateway: executions, widgets, uploads and reads.

Run: ``cd packages/server/python && python3 -m unittest tests.test_client_data -v``
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import sys
import tempfile
import threading
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_support import WAIT, GatewayTestCase, wait_until  # noqa: E402  (also puts portico on sys.path)

from portico.client import WIDGET_MIME_TYPE, Execution, Gateway, GatewayError, InterfaceProxy  # noqa: E402


class ExecutionTest(GatewayTestCase):
    def test_dispatch_and_follow_the_output(self):
        run = self.g.dispatch("trainer", {"epochs": 3, "delay": 0.05})
        self.assertIsInstance(run, Execution)
        text = "".join(run.follow(poll=0.05))
        self.assertEqual(text.splitlines(), ["epoch 1/3 loss=0.5000", "epoch 2/3 loss=0.2500", "epoch 3/3 loss=0.1250"])
        info = run.wait(timeout=WAIT)
        self.assertEqual(info["status"], "finished")
        self.assertTrue(run.ended)
        self.assertEqual(run.output(tail=12)["output"], "loss=0.1250\n")
        self.assertEqual(self.g.execution(run.uuid).info["status"], "finished")
        window = run.output(offset=0, limit=10)
        self.assertEqual(window["output"], "epoch 1/3 ")
        self.assertEqual(window["size"], len(text.encode()))

    def test_cancel_a_running_run(self):
        run = self.g.dispatch("trainer", [{"epochs": 200, "delay": 0.1}], context=["counter"])
        for text in run.follow(poll=0.05):
            if "epoch 1/" in text:
                break
        self.assertEqual(run.status()["status"], "running")
        run.cancel()
        info = run.wait(timeout=WAIT)
        self.assertEqual(info["status"], "interrupted")
        self.assertTrue(info["cancelled"])

    def test_a_failing_run_and_a_wait_timeout(self):
        run = self.g.dispatch("trainer", [{"epochs": 3, "fail_at": 2}])
        info = run.wait(timeout=WAIT)
        self.assertEqual(info["status"], "failed")
        self.assertEqual(info["error"]["exception"], "RuntimeError")
        slow = self.g.dispatch("trainer", [{"epochs": 100, "delay": 0.1}])
        try:
            with self.assertRaises(TimeoutError):
                slow.wait(timeout=0.3)
        finally:
            slow.cancel()
            self.assertEqual(slow.wait(timeout=WAIT)["status"], "interrupted")


class WidgetTest(GatewayTestCase):
    def test_mime_bundle(self):
        g = Gateway(self.gateway.url + "/v1/", token=self.token, project=self.gateway.project, timeout=WAIT)
        self.addCleanup(g.close)
        knob = g.interface("knob")
        bundle = knob._repr_mimebundle_()
        self.assertEqual(set(bundle), {WIDGET_MIME_TYPE, "text/html", "text/plain"})
        self.assertEqual(
            bundle[WIDGET_MIME_TYPE],
            {"url": self.gateway.url, "uuid": knob.uuid, "module": "knob", "project": self.gateway.project, "version": 1},
        )
        self.assertIn("knob", bundle["text/html"])
        self.assertIn(knob.uuid, bundle["text/html"])
        self.assertIn(f'href="{self.gateway.url}', bundle["text/html"])
        # Without anywidget in this Python, the text says both ways to the live widget.
        self.assertIn("%pip install anywidget", bundle["text/html"])
        self.assertIn("Portico extension", bundle["text/html"])
        self.assertIn(knob.uuid, bundle["text/plain"])
        self.assertEqual(set(knob._repr_mimebundle_(include=["text/plain"])), {"text/plain"})
        self.assertEqual(set(knob._repr_mimebundle_(exclude=["text/html"])), {WIDGET_MIME_TYPE, "text/plain"})
        if self.token:
            everything = json.dumps(bundle) + repr(knob) + repr(g)
            self.assertNotIn(self.token, everything)

    def test_widget_state_and_changes(self):
        uuid = f"knob-{random.getrandbits(32)}"
        mine, theirs = self.proxy("knob", uuid=uuid), self.proxy("knob", uuid=uuid)
        self.assertEqual(mine.widget_state(), {"value": 0})
        pushed: list = []
        theirs.on_widget_change(pushed.append)
        self.assertEqual(mine.widget_set(value=-5), {"value": 0})  # normalized by widget_update
        self.assertEqual(mine.widget_set(value=4), {"value": 4})
        self.assertEqual(theirs.widget_state(), {"value": 4})
        self.assertEqual(mine.bump(), 5)  # push_widget_change from Python
        self.assertTrue(wait_until(lambda: {"value": 5} in pushed))
        self.assertEqual(pushed[:2], [{"value": 0}, {"value": 4}])
        with self.assertRaises(GatewayError) as caught:
            mine.widget_set(other=1)
        self.assertCode("invalid_argument", caught.exception)
        with self.assertRaises(GatewayError) as caught:
            self.proxy("streamer").widget_set(prefix="x")
        self.assertCode("read_only", caught.exception)

    def test_binary_widget_values_are_bytes(self):
        uuid = f"picture-{random.getrandbits(32)}"
        mine, theirs = self.proxy("picture", uuid=uuid), self.proxy("picture", uuid=uuid)
        self.assertEqual(mine.widget_state(), {"layers": [{"name": "base", "pixels": b"\x00\x01\x02\x03"}]})
        pushed: list = []
        theirs.on_widget_change(pushed.append)
        sent = [{"name": "base", "pixels": b"\xff" * 3}, {"name": "top", "pixels": bytearray(b"\x07")}]
        self.assertEqual(mine.widget_set(layers=sent), {"layers": [{"name": "base", "pixels": b"\xff" * 3}, {"name": "top", "pixels": b"\x07"}]})
        self.assertEqual(theirs.widget_state()["layers"][1]["pixels"], b"\x07")
        mine.invert()
        self.assertTrue(wait_until(lambda: any(c["layers"][0]["pixels"] == b"\x00" * 3 for c in pushed)), pushed)


class BinaryTest(GatewayTestCase):
    def files(self) -> InterfaceProxy:
        return self.proxy("clientfiles", uuid=f"files-{random.getrandbits(32)}")

    def test_upload_and_read_round_trips_with_progress(self):
        files = self.files()
        data = os.urandom((3 << 20) + 12345)
        progress: list = []
        done = files.upload("data/blob.bin", data, progress=lambda sent, total: progress.append((sent, total)))
        self.assertEqual(done, {"path": "data/blob.bin", "bytes_written": len(data), "mode": "write"})
        self.assertEqual(progress, [(1 << 20, len(data)), (2 << 20, len(data)), (3 << 20, len(data)), (len(data), len(data))])
        self.assertEqual(files.size("data/blob.bin"), len(data))

        seen: list = []
        self.assertEqual(files.read({"name": "data/blob.bin"}, progress=lambda got, total: seen.append((got, total))), data)
        self.assertEqual(seen[-1], (len(data), None))
        self.assertTrue(all(total is None for _, total in seen))
        self.assertEqual([got for got, _ in seen], sorted(got for got, _ in seen))

        appended = files.upload("data/blob.bin", b"tail", mode="append", block=3)
        self.assertEqual(appended, {"path": "data/blob.bin", "bytes_written": 4, "mode": "append"})
        with tempfile.TemporaryDirectory() as tmp:
            target = os.path.join(tmp, "copy.bin")
            self.assertEqual(files.read_to({"name": "data/blob.bin"}, target), len(data) + 4)
            with open(target, "rb") as handle:
                self.assertEqual(handle.read(), data + b"tail")
            buffer = io.BytesIO()
            self.assertEqual(files.read_to({"name": "data/blob.bin"}, buffer), len(data) + 4)
            self.assertEqual(buffer.getvalue(), data + b"tail")

            source = os.path.join(tmp, "source.txt")
            with open(source, "wb") as handle:
                handle.write(b"from a path\n" * 1000)
            totals: list = []
            files.upload("from-path.txt", source, block=4096, progress=lambda sent, total: totals.append(total))
            self.assertEqual(set(totals), {12000})
        self.assertEqual(files.read({"name": "from-path.txt"}), b"from a path\n" * 1000)

        unknown: list = []
        files.upload("stream.bin", io.BytesIO(b"abc" * 100), block=64, progress=lambda sent, total: unknown.append((sent, total)))
        self.assertEqual(unknown[-1], (300, None))
        self.assertEqual(files.read({"name": "stream.bin"}), b"abc" * 100)
        self.assertEqual(files.upload("empty.bin", b"")["bytes_written"], 0)
        self.assertEqual(files.read({"name": "empty.bin"}), b"")

    def test_transfer_errors(self):
        files = self.files()
        with self.assertRaises(GatewayError) as caught:
            files.read({"name": "missing.bin"})
        self.assertCode("not_found", caught.exception)
        with self.assertRaises(GatewayError) as caught:
            files.upload("../escape.bin", b"x" * 100, block=10)
        self.assertCode("forbidden", caught.exception)
        with self.assertRaises(GatewayError) as caught:
            self.proxy("streamer").read({})
        self.assertCode("read_unsupported", caught.exception)
        with self.assertRaises(GatewayError) as caught:
            files.read({})  # the hook raises ValueError
        self.assertIn(caught.exception.code, ("call_failed", "invalid_argument"))
        self.assertEqual(files.upload("ok.bin", b"ok")["bytes_written"], 2)  # the socket still works
        self.assertEqual(files.read({"name": "ok.bin"}), b"ok")

    def test_transfers_and_calls_from_threads(self):
        files = self.files()
        blobs = {f"t{n}.bin": os.urandom(300_000 + n) for n in range(4)}
        errors: list = []

        def round_trip(name: str, data: bytes):
            try:
                files.upload(name, data, block=65536)
                if files.read({"name": name}) != data:
                    errors.append(f"{name} differs")
                if files.size(name) != len(data):
                    errors.append(f"{name} size")
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)

        threads = [threading.Thread(target=round_trip, args=item) for item in blobs.items()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT * 2)
        self.assertEqual(errors, [])

    def test_large_transfers_stay_bounded_in_memory(self):
        files = self.files()
        size = 48 << 20
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "big.bin")
            digest = hashlib.sha256()
            with open(source, "wb") as handle:
                block = os.urandom(1 << 20)
                for i in range(size >> 20):
                    piece = bytes([i % 256]) + block[1:]
                    digest.update(piece)
                    handle.write(piece)
            files.info  # connect before measuring
            tracemalloc.start()
            try:
                done = files.upload("big.bin", source)
                upload_peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.reset_peak()
                target = os.path.join(tmp, "back.bin")
                got = files.read_to({"name": "big.bin"}, target)
                read_peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            self.assertEqual(done["bytes_written"], size)
            self.assertEqual(got, size)
            back = hashlib.sha256()
            with open(target, "rb") as handle:
                for piece in iter(lambda: handle.read(1 << 20), b""):
                    back.update(piece)
            self.assertEqual(back.hexdigest(), digest.hexdigest())
        self.assertLess(upload_peak, 16 << 20, f"upload held {upload_peak} bytes")
        self.assertLess(read_peak, 16 << 20, f"read_to held {read_peak} bytes")
