"""portico.client against the real gateway: tokens, the lifetime of live instances, restarts.

Run: ``cd packages/server/python && python3 -m unittest tests.test_client_lifetime -v``
"""

from __future__ import annotations

import gc
import json
import os
import random
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_support import WAIT, GatewayTestCase, wait_until  # noqa: E402  (also puts portico on sys.path)

# The module, not its classes: a TestCase class imported by name would run here a second time.
import test_client_data as data  # noqa: E402

from portico.client import WIDGET_MIME_TYPE, Gateway, GatewayError, InterfaceProxy  # noqa: E402


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

    test_mime_bundle = data.WidgetTest.test_mime_bundle
    test_dispatch = data.ExecutionTest.test_dispatch_and_follow_the_output
    test_round_trip = data.BinaryTest.test_upload_and_read_round_trips_with_progress
    files = data.BinaryTest.files


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
        self.assertEqual(tally._listeners.callbacks["instance_restarted"], [])


if __name__ == "__main__":
    unittest.main()
