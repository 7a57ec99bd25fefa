"""portico.client against the real gateway (``portico serve`` on a temporary copy of the demo):
calls, streams, the socket, search.

Run: ``cd packages/server/python && python3 -m unittest tests.test_client -v``
"""

from __future__ import annotations

import gc
import json
import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_support import WAIT, GatewayTestCase, wait_until  # noqa: E402  (also puts portico on sys.path)

from portico import _ws_client  # noqa: E402
from portico.client import Gateway, GatewayError  # noqa: E402


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

    def test_a_streams_events_reach_the_callback_in_order_with_its_items(self):
        streamer = self.proxy("streamer")
        seen: list = []
        streamer.on_event(lambda payload: seen.append(("event", payload["progress"])))
        for tick in streamer.ticks(3):
            seen.append(("item", tick))
        # The demo streamer emits its progress after each item; the frames come in that order.
        self.assertEqual(seen, [("item", "tick 0"), ("event", 1 / 3), ("item", "tick 1"), ("event", 2 / 3), ("item", "tick 2"), ("event", 1)])

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
        # kind is the record kind, as the reference has it; the class is class_name.
        self.assertEqual({(r["kind"], r["class_name"]) for r in page["items"]}, {("Interface", "Counter")})
        self.assertEqual(self.g.search(class_name="Counter", kind="Interface", where={"step": step})["total"], 3)
        self.assertEqual(self.g.search(class_name="Trainer", where={"step": step})["total"], 0)
        self.assertEqual(self.g.search(kind="Execution", where={"step": step})["total"], 0)

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
        self.assertEqual(proxy.class_name, "Counter")
        self.assertIs(proxy.info["cached"], False)
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
