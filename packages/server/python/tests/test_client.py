"""portico.client against the real gateway (``portico serve`` on a temporary copy of the demo).

Run: ``cd packages/server/python && python3 -m unittest tests.test_client -v``
"""

from __future__ import annotations

import gc
import hashlib
import io
import json
import os
import random
import signal
import socket
import sys
import tempfile
import threading
import time
import tracemalloc
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gateway_support import GatewayProcess  # noqa: E402  (also puts portico on sys.path)

from portico import _ws_client  # noqa: E402
from portico.client import WIDGET_MIME_TYPE, Execution, Gateway, GatewayError, InterfaceProxy  # noqa: E402

#: Bounds every wait in these tests (things that normally take milliseconds).
WAIT = 15.0

EXTRA_MODULES = {
    # A read hook over the interface's own folder, where uploads land.
    "clientfiles.py": """
        import os

        from portico import Interface


        class ClientFiles(Interface):
            \"\"\"Serves back the files uploaded into its folder.\"\"\"

            def read(self, params):
                name = params.get("name")
                if not isinstance(name, str) or not name:
                    raise ValueError("read needs params {'name': <file>}")
                return open(self.local_directory(name), "rb")

            def size(self, name: str) -> int:
                return os.path.getsize(self.local_directory(name))
    """,
    # A widget whose state lives in Python.
    "knob.py": """
        from portico import Interface


        class Knob(Interface):
            \"\"\"A value that widgets and code both change.\"\"\"

            def __init__(self):
                self.value = 0

            def bump(self) -> int:
                self.value += 1
                self.push_widget_change({"value": self.value})
                return self.value

            def widget_state(self) -> dict:
                return {"value": self.value}

            def widget_update(self, changes: dict) -> dict:
                if set(changes) - {"value"}:
                    raise ValueError("only 'value' can be changed")
                self.value = max(0, int(changes["value"]))
                return {"value": self.value}
    """,
    # A count kept in memory only (no widget, nothing saved): a fresh instance starts at 0 again.
    "tally.py": """
        from portico import Interface


        class Tally(Interface):
            \"\"\"Counts in memory.\"\"\"

            def __init__(self):
                self.count = 0

            def add(self, n: int = 1) -> int:
                self.count += n
                return self.count

            def value(self) -> int:
                return self.count
    """,
    "picture.py": """
        from portico import Interface

        class Picture(Interface):
            \"\"\"An image held as bytes, as an anywidget keeps binary state.\"\"\"

            def __init__(self):
                self.layers = [{"name": "base", "pixels": bytes(range(4))}]

            def invert(self) -> None:
                self.layers[0]["pixels"] = bytes(255 - b for b in self.layers[0]["pixels"])
                self.push_widget_change({"layers": self.layers})

            def widget_state(self) -> dict:
                return {"layers": self.layers}

            def widget_update(self, changes: dict) -> dict:
                self.layers = changes["layers"]
                return {"layers": self.layers}
    """,
}


def wait_until(predicate, timeout: float = WAIT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


class GatewayTestCase(unittest.TestCase):
    token: str | None = None
    gateway: GatewayProcess

    @classmethod
    def setUpClass(cls) -> None:
        cls.gateway = GatewayProcess(token=cls.token, extra=EXTRA_MODULES)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.gateway.stop()

    def setUp(self) -> None:
        self.g = Gateway(self.gateway.url, token=self.token, timeout=WAIT * 2)
        self.addCleanup(self.g.close)

    def proxy(self, target: str, version=None, **kwargs) -> InterfaceProxy:
        return self.g.interface(target, version, **kwargs)

    def assertCode(self, code: str, error: GatewayError, status: int | None = None) -> None:
        self.assertEqual(error.code, code, str(error))
        if status is not None:
            self.assertEqual(error.status, status)


class CallTest(GatewayTestCase):
    def test_plain_call_returns_the_result(self):
        counter = self.proxy("counter", ["~big"], uuid=f"client-plain-{random.getrandbits(32)}")
        self.assertEqual(counter.add(2), 20)
        self.assertEqual(counter.add(n=1), 30)
        self.assertEqual(counter.call("value"), 30)
        self.assertEqual(counter.info["config"], {"start": 0, "step": 10})
        self.assertEqual(counter.info["module"], "counter")
        self.assertEqual(counter.uuid, counter.info["uuid"])

    def test_generator_method_returns_an_iterator_and_events_reach_the_callback(self):
        streamer = self.proxy("streamer")
        events: list = []
        done = threading.Event()

        @streamer.on_event
        def collect(payload):
            events.append(payload)
            if payload.get("progress") == 1:
                done.set()

        ticks = streamer.ticks(4)
        self.assertNotIsInstance(ticks, list)
        self.assertEqual([tick for tick in ticks], ["tick 0", "tick 1", "tick 2", "tick 3"])
        self.assertTrue(done.wait(WAIT))
        self.assertEqual(events, [{"progress": 0.25}, {"progress": 0.5}, {"progress": 0.75}, {"progress": 1}])
        streamer.off_event(collect)
        self.assertEqual(list(streamer.aticks(3)), [0, 1, 2])
        self.assertEqual(list(streamer.ticks(0)), [])
        self.assertEqual(streamer.echo({"a": [1, 2]}), {"a": [1, 2]})

    def test_errors_carry_the_gateway_codes_and_the_socket_stays_usable(self):
        faulty = self.proxy("faulty")
        with self.assertRaises(GatewayError) as caught:
            faulty.explode("bad things")
        self.assertCode("call_failed", caught.exception)
        self.assertEqual(caught.exception.exception, "ValueError")
        self.assertIn("bad things", caught.exception.message)
        with self.assertRaises(GatewayError) as caught:
            faulty.not_json()
        self.assertCode("unserializable_result", caught.exception)
        with self.assertRaises(GatewayError) as caught:
            faulty.call("_secret")
        self.assertCode("forbidden", caught.exception)
        with self.assertRaises(GatewayError) as caught:
            faulty.no_such_method()
        self.assertCode("not_found", caught.exception)
        with self.assertRaises(GatewayError) as caught:
            faulty.explode(1, 2, 3, unknown=4)
        self.assertCode("invalid_argument", caught.exception)
        with self.assertRaises(AttributeError):
            faulty._secret  # private names never become remote calls
        self.assertEqual(self.proxy("streamer").echo(5), 5)
        with self.assertRaises(GatewayError) as caught:
            faulty.explode()
        self.assertCode("call_failed", caught.exception)

    def test_an_unresolvable_version_fails_the_connect_with_issues(self):
        proxy = self.proxy("counter", {"start": "zero", "nope": 1})
        with self.assertRaises(GatewayError) as caught:
            proxy.add()
        self.assertCode("invalid_config", caught.exception)
        paths = sorted(issue["path"] for issue in caught.exception.issues)
        self.assertEqual(paths, ["nope", "start"])
        with self.assertRaises(GatewayError) as caught:
            self.proxy("no_such_module").value()
        self.assertCode("unknown_module", caught.exception)

    def test_concurrent_calls_from_threads_share_one_socket(self):
        slow = self.proxy("slow")
        slow.quick()  # connected, worker warm
        results: list = []
        errors: list = []

        def wait():
            try:
                results.append(slow.wait(0.6))
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)

        threads = [threading.Thread(target=wait) for _ in range(4)]
        start = time.monotonic()
        for thread in threads:
            thread.start()
        self.assertEqual(slow.quick(), "quick")  # answered while the slow calls run
        quick_after = time.monotonic() - start
        for thread in threads:
            thread.join(WAIT)
        elapsed = time.monotonic() - start
        self.assertEqual(errors, [])
        self.assertEqual(len(results), 4)
        self.assertLess(quick_after, 0.5)
        self.assertLess(elapsed, 1.8, "the four 0.6 s calls did not overlap")

        streamer = self.proxy("streamer")
        mismatches: list = []

        def echo(worker: int):
            for i in range(25):
                value = {"worker": worker, "i": i}
                if streamer.echo(value) != value:
                    mismatches.append(value)

        threads = [threading.Thread(target=echo, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
        self.assertEqual(mismatches, [])

    def test_calls_inside_a_stream_loop(self):
        streamer = self.proxy("streamer")
        seen = [streamer.echo(tick) for tick in streamer.ticks(5)]
        self.assertEqual(seen, [f"tick {i}" for i in range(5)])

    def test_leaving_a_stream_early_stops_it_and_the_proxy_reconnects(self):
        streamer = self.proxy("streamer")
        ticks = streamer.ticks(100000)
        self.assertEqual(next(ticks), "tick 0")
        uuid = streamer.uuid
        ticks.close()
        self.assertEqual(streamer.echo("again"), "again")
        self.assertEqual(streamer.uuid, uuid)

    def test_closed_proxy_refuses_and_context_manager_closes(self):
        with self.proxy("streamer") as streamer:
            self.assertEqual(streamer.echo(1), 1)
            ws = streamer._conn.ws
        self.assertTrue(wait_until(lambda: ws.closed, 5))
        self.assertEqual(ws.close_code, 1000)
        with self.assertRaises(GatewayError) as caught:
            streamer.echo(2)
        self.assertCode("connection_closed", caught.exception)

    def test_a_dropped_socket_fails_what_waits_and_the_next_use_reconnects(self):
        slow = self.proxy("slow")
        uuid = slow.uuid
        failures: list = []

        def wait():
            try:
                slow.wait(5)
            except GatewayError as err:
                failures.append(err)

        thread = threading.Thread(target=wait)
        thread.start()
        time.sleep(0.3)
        slow._conn.ws.abort()  # as if the network went away
        thread.join(WAIT)
        self.assertEqual([err.code for err in failures], ["connection_closed"])
        self.assertEqual(slow.quick(), "quick")
        self.assertEqual(slow.uuid, uuid)

    def test_a_proxy_nobody_holds_closes_its_socket(self):
        streamer = self.proxy("streamer")
        self.assertEqual(streamer.echo(1), 1)
        ws = streamer._conn.ws
        del streamer
        gc.collect()
        self.assertTrue(wait_until(lambda: ws.closed, 5))

    def test_rest_call(self):
        self.assertEqual(self.g.call("streamer", "echo", [1, "x"]), [1, "x"])
        self.assertEqual(self.g.call("counter", "add", n=2, version={"step": 5}), 10)
        with self.assertRaises(GatewayError) as caught:
            self.g.call("streamer", "ticks", 2)
        self.assertCode("streaming_unsupported", caught.exception, 400)
        with self.assertRaises(GatewayError) as caught:
            self.g.call("faulty", "explode")
        self.assertCode("call_failed", caught.exception, 400)
        self.assertEqual(caught.exception.exception, "ValueError")


class WebSocketTest(GatewayTestCase):
    """The RFC 6455 client under the proxy, against the gateway's ws server."""

    def test_fragmented_messages_ping_and_close(self):
        streamer = self.proxy("streamer")
        self.assertEqual(streamer.echo("warm"), "warm")
        ws = streamer._conn.ws
        ws.fragment_size = 7  # every frame we send now goes out in 7-byte fragments
        text = "fragmented ✓ " * 50
        self.assertEqual(streamer.echo(text), text)
        ws.fragment_size = 4 << 20
        ws.ping(b"are you there")
        self.assertTrue(ws.wait_pong(b"are you there", WAIT))
        big = "x" * (3 << 20)  # a 64-bit length frame each way
        self.assertEqual(streamer.echo(big), big)
        streamer.close()
        self.assertTrue(wait_until(lambda: ws.closed, 5))
        self.assertEqual(ws.close_code, 1000)

    def test_unknown_path_is_refused_in_the_handshake(self):
        with self.assertRaises(_ws_client.HandshakeError) as caught:
            _ws_client.connect(self.gateway.url.replace("http", "ws") + "/v1/nope/ws", timeout=WAIT)
        self.assertEqual(caught.exception.status, 404)
        self.assertEqual(json.loads(caught.exception.body)["code"], "not_found")

    def test_a_wrong_accept_key_is_refused(self):
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]

        def answer():
            conn, _ = server.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(4096)
                conn.sendall(
                    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    b"Sec-WebSocket-Accept: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
                )
                conn.recv(1)

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        try:
            with self.assertRaises(_ws_client.HandshakeError) as caught:
                _ws_client.connect(f"ws://127.0.0.1:{port}/", timeout=5)
            self.assertIn("Sec-WebSocket-Accept", str(caught.exception))
        finally:
            thread.join(5)
            server.close()


class SearchTest(GatewayTestCase):
    def test_search_label_archive(self):
        step = random.randrange(10**6, 10**9)  # unique to this run
        made = [self.g.create("counter", {"start": start, "step": step}) for start in (3, 1, 2)]
        uuids = {record["config"]["start"]: record["uuid"] for record in made}

        page = self.g.search(module="counter", where={"step": step}, sort="config.start", limit=2)
        self.assertEqual(page["total"], 3)
        self.assertEqual([r["config"]["start"] for r in page["items"]], [1, 2])
        self.assertIsNotNone(page["next_cursor"])
        rest = self.g.search(module="counter", where={"step": step}, sort="config.start", limit=2, cursor=page["next_cursor"])
        self.assertEqual([r["config"]["start"] for r in rest["items"]], [3])
        self.assertIsNone(rest["next_cursor"])
        descending = self.g.search(where=[("step", "eq", step), ("start", "gte", 2)], sort=[("config.start", "desc")])
        self.assertEqual([r["config"]["start"] for r in descending["items"]], [3, 2])

        label = f"baseline-{step}"
        self.assertEqual(self.g.label(uuids[2], label)["label"], label)
        found = self.g.search(label=label)
        self.assertEqual([r["uuid"] for r in found["items"]], [uuids[2]])
        self.assertEqual(self.g.get(uuids[2])["label"], label)
        self.assertEqual(self.g.search(filters={"label": label}, where={"step": step})["total"], 1)

        self.assertTrue(self.g.archive(uuids[2])["archived"])
        self.assertEqual(self.g.search(label=label)["total"], 0)
        self.assertEqual(self.g.search(label=label, include_archived=True)["total"], 1)
        self.assertFalse(self.g.archive(uuids[2], restore=True)["archived"])
        self.assertEqual(self.g.search(label=label)["total"], 1)
        self.assertIsNone(self.g.label(uuids[2], None)["label"])

    def test_created_by_and_the_proxy_label(self):
        user = f"ada-{random.getrandbits(32)}"
        g = Gateway(self.gateway.url, token=self.token, user=user, timeout=WAIT)
        self.addCleanup(g.close)
        proxy = g.interface("counter", {"start": 7}, label=f"seven-{user}")
        self.assertEqual(proxy.add(), 8)
        self.assertEqual(proxy.info["created_by"], user)
        self.assertEqual(proxy.info["label"], f"seven-{user}")
        found = self.g.search(created_by=user)
        self.assertEqual([r["uuid"] for r in found["items"]], [proxy.uuid])

    def test_rest_errors(self):
        with self.assertRaises(GatewayError) as caught:
            self.g.get("no-such-uuid")
        self.assertCode("not_found", caught.exception, 404)
        with self.assertRaises(GatewayError) as caught:
            self.g.search(limit=0)
        self.assertCode("validation_error", caught.exception, 422)
        self.assertTrue(any(issue["path"] and "limit" in issue["path"] for issue in caught.exception.issues))
        with self.assertRaises(GatewayError) as caught:
            self.g.search(where={"a..b": 1})
        self.assertCode("validation_error", caught.exception, 422)
        with self.assertRaises(GatewayError) as caught:
            Gateway(f"http://127.0.0.1:{self.gateway.port + 0}/nothing-here", timeout=WAIT).get("x")
        self.assertIn(caught.exception.status, (404, None))
        unreachable = Gateway("http://127.0.0.1:9", timeout=5)
        with self.assertRaises(GatewayError) as caught:
            unreachable.health()
        self.assertCode("unreachable", caught.exception)
        with self.assertRaises(GatewayError) as caught:
            unreachable.interface("counter").add()
        self.assertCode("unreachable", caught.exception)


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


class TokenTest(GatewayTestCase):
    """A gateway with --api-token: the token rides as the WebSocket subprotocol ``bearer, <token>``."""

    token = "client-test-token_1"

    def test_rest_and_socket_need_the_token(self):
        self.assertEqual(self.g.health()["status"], "ok")
        streamer = self.proxy("streamer")
        self.assertEqual(streamer.echo("hi"), "hi")
        self.assertEqual(streamer._conn.ws.subprotocol, "bearer")
        self.assertEqual(list(streamer.ticks(2)), ["tick 0", "tick 1"])
        for token in (None, "wrong-token"):
            g = Gateway(self.gateway.url, token=token, timeout=WAIT)
            with self.assertRaises(GatewayError) as caught:
                g.search()
            self.assertCode("unauthorized", caught.exception, 401)
            with self.assertRaises(GatewayError) as caught:
                g.interface("streamer").echo(1)
            self.assertCode("unauthorized", caught.exception, 401)

    def test_the_token_never_shows(self):
        proxy = self.proxy("knob")
        bundle = proxy._repr_mimebundle_()
        self.assertIn(WIDGET_MIME_TYPE, bundle)
        self.assertNotIn(self.token, json.dumps(bundle) + repr(proxy) + repr(self.g) + str(proxy.info))

    test_mime_bundle = WidgetTest.test_mime_bundle
    test_dispatch = ExecutionTest.test_dispatch_and_follow_the_output
    test_round_trip = BinaryTest.test_upload_and_read_round_trips_with_progress
    files = BinaryTest.files


class HeaderTokenTest(GatewayTestCase):
    """A token a subprotocol cannot carry ('/' and '='): the upgrade sends the Authorization header."""

    token = "c2VjcmV0/dG9rZW4="

    def test_socket_with_the_authorization_header(self):
        streamer = self.proxy("streamer")
        self.assertEqual(streamer.echo("hi"), "hi")
        self.assertIsNone(streamer._conn.ws.subprotocol)
        with self.assertRaises(GatewayError) as caught:
            Gateway(self.gateway.url, token="c2VjcmV0/d3Jvbmc=", timeout=WAIT).interface("streamer").echo(1)
        self.assertCode("unauthorized", caught.exception, 401)


class LifetimeTest(GatewayTestCase):
    """An instance lives until released (or idle): closing a proxy only detaches."""

    def tally(self) -> tuple[str, InterfaceProxy]:
        uuid = f"tally-{random.getrandbits(32)}"
        return uuid, self.proxy("tally", uuid=uuid)

    def test_release_drops_the_instance_and_the_next_call_starts_fresh(self):
        uuid, tally = self.tally()
        self.assertEqual(tally.add(2), 2)
        self.assertEqual(tally.add(3), 5)
        self.assertIs(tally.release(), True)
        self.assertIs(tally.release(), False)  # nothing live any more
        self.assertEqual(tally.value(), 0)  # made again, fresh, over the same socket
        self.assertEqual(tally.add(), 1)
        self.assertEqual(tally.uuid, uuid)

    def test_release_over_rest(self):
        uuid, tally = self.tally()
        self.assertEqual(tally.add(4), 4)
        self.assertIs(self.g.release(uuid), True)
        self.assertIs(self.g.release(uuid), False)
        self.assertEqual(tally.value(), 0)
        with self.assertRaises(GatewayError) as caught:
            self.g.release(f"no-such-{random.getrandbits(32)}")
        self.assertCode("not_found", caught.exception, 404)

    def test_closing_a_proxy_only_detaches(self):
        uuid, tally = self.tally()
        self.assertEqual(tally.add(7), 7)
        tally.close()
        self.assertEqual(self.proxy("tally", uuid=uuid).value(), 7)
        # nor does a proxy nobody holds release anything when it is collected
        dropped = self.proxy("tally", uuid=uuid)
        self.assertEqual(dropped.add(), 8)
        ws = dropped._conn.ws
        del dropped
        gc.collect()
        self.assertTrue(wait_until(lambda: ws.closed, 5))
        self.assertEqual(self.proxy(uuid).value(), 8)


class RestartTest(GatewayTestCase):
    """The worker dies under a live instance: listeners hear ``instance_restarted``, the proxy keeps working."""

    def worker_pid(self) -> int:
        workers = [w for w in self.g.request("GET", "/v1/projects")["workers"] if w.get("pid")]
        self.assertEqual(len(workers), 1, workers)
        return workers[0]["pid"]

    def test_a_restart_listener_hears_the_worker_die_and_the_next_call_works(self):
        uuid = f"tally-{random.getrandbits(32)}"
        tally, other = self.proxy("tally", uuid=uuid), self.proxy("tally", uuid=uuid)
        self.assertEqual(tally.add(5), 5)
        heard: list = []
        other_heard: list = []
        done = threading.Event()

        @tally.on_restart
        def restarted(info):
            heard.append(info)
            done.set()

        other.on_restart(other_heard.append)
        slow = self.proxy("slow")
        slow.quick()
        failures: list = []

        def wait():
            try:
                slow.wait(30)
            except GatewayError as err:
                failures.append(err)

        thread = threading.Thread(target=wait)
        thread.start()
        time.sleep(0.3)
        os.kill(self.worker_pid(), signal.SIGKILL)
        self.assertTrue(done.wait(WAIT), "no instance_restarted reached the listener")
        self.assertEqual(len(heard), 1)
        self.assertEqual(heard[0]["uuid"], uuid)
        self.assertEqual(heard[0]["reason"], "worker_crashed")
        self.assertIsInstance(heard[0]["message"], str)
        self.assertTrue(wait_until(lambda: len(other_heard) == 1))  # every attached client hears it
        thread.join(WAIT)
        self.assertEqual([err.code for err in failures], ["worker_crashed"])  # what was in flight fails
        # the same proxies, the same sockets: the next call makes the instance again (fresh: a
        # tally keeps nothing), and a removed listener hears no more
        ws = tally._conn.ws
        self.assertEqual(tally.value(), 0)
        self.assertEqual(tally.add(2), 2)
        self.assertIs(tally._conn.ws, ws)
        self.assertEqual(slow.quick(), "quick")
        tally.off_restart(restarted)
        self.assertEqual(tally._listeners["instance_restarted"], [])


if __name__ == "__main__":
    unittest.main()
