"""``waiting`` notices (``--workers slurm``, docs/running/slurm-workers.md "Waiting for an allocation"):
a connect or call whose worker's Slurm job is pending hears where the job stands; the client prints
each notice on stderr and goes on waiting for the request's answer. The gateway side (the notices
themselves, on a real Slurm cluster) is test/slurm-workers.test.ts.

Run: ``cd packages/server/python && python3 -m unittest tests.test_client_waiting -v``
"""

from __future__ import annotations

import contextlib
import io
import os
import queue
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from portico.client import GatewayError  # noqa: E402
from portico.client.connection import Connection  # noqa: E402
from portico.client.listeners import Listeners  # noqa: E402


def notice(frame_id: int, state: str, reason: str | None) -> dict:
    message = f"Slurm job 123: {state}" + (f" ({reason})" if reason else "")
    return {"type": "waiting", "id": frame_id, "payload": {"job": "123", "state": state, "reason": reason, "message": message}}


class WaitingNotices(unittest.TestCase):
    def setUp(self) -> None:
        self.listeners = Listeners()  # held: the connection keeps only a weak reference
        self.conn = Connection(self.listeners, ws=None)  # type: ignore[arg-type]  # frames are routed by hand, nothing is sent
        self.waiter: queue.SimpleQueue = queue.SimpleQueue()
        self.id = self.conn.register(self.waiter)

    def answer(self) -> tuple[dict | GatewayError, str]:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                return self.conn.next(self.waiter, timeout=5), err.getvalue()
            except GatewayError as failure:
                return failure, err.getvalue()

    def test_each_notice_is_printed_and_the_answer_after_them_is_the_requests(self) -> None:
        self.conn._route(notice(self.id, "PENDING", None))
        self.conn._route(notice(self.id, "PENDING", "Priority"))
        self.conn._route({"type": "connected", "id": self.id, "payload": {"uuid": "u1"}})
        answer, printed = self.answer()
        self.assertEqual(answer, {"type": "connected", "id": self.id, "payload": {"uuid": "u1"}})
        self.assertEqual(printed, "portico: Slurm job 123: PENDING\nportico: Slurm job 123: PENDING (Priority)\n")
        self.assertIn(self.id, self.conn.pending)  # a notice is not the answer: the waiter stays until the caller forgets it

    def test_a_wait_past_worker_wait_raises_the_gateways_503_after_its_notices(self) -> None:
        self.conn._route(notice(self.id, "PENDING", "Resources"))
        detail = {"code": "worker_unavailable", "message": "Slurm job 123 of the Python worker did not start within 5 s: PENDING (Resources); the job was cancelled"}
        self.conn._route({"type": "error", "id": self.id, "payload": detail})
        failure, printed = self.answer()
        self.assertIsInstance(failure, GatewayError)
        self.assertEqual(failure.code, "worker_unavailable")  # type: ignore[union-attr]
        self.assertEqual(printed, "portico: Slurm job 123: PENDING (Resources)\n")

    def test_after_a_notice_the_clients_timeout_no_longer_applies(self) -> None:
        # The gateway answers (it bounds the wait with --worker-wait); a job can stay pending for minutes.
        self.conn._route(notice(self.id, "PENDING", "Priority"))
        threading.Timer(0.5, lambda: self.conn._route({"type": "connected", "id": self.id, "payload": {"uuid": "u1"}})).start()
        with contextlib.redirect_stderr(io.StringIO()):
            answer = self.conn.next(self.waiter, timeout=0.1)
        self.assertEqual(answer["type"], "connected")

    def test_a_notice_without_a_message_prints_nothing(self) -> None:
        self.conn._route({"type": "waiting", "id": self.id, "payload": {"state": "PENDING"}})
        self.conn._route({"type": "result", "id": self.id, "payload": 1})
        answer, printed = self.answer()
        self.assertEqual((answer["payload"], printed), (1, ""))  # type: ignore[index]


if __name__ == "__main__":
    unittest.main()
