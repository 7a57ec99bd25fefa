"""One worker process at a time holds a uuid's widget state (``widget_state.py``, "One process at
a time"): the next gateway's worker waits for a killed gateway's worker to write its last save,
and an instance let go is taken by another worker at once.
"""

from __future__ import annotations

import time

from support import TIMEOUT
from test_widget_persist import FILES, PersistTestCase

SLOWER = """
    import time

    from portico import Interface


    class Slower(Interface):
        \"\"\"Its state takes longer to read than a fresh worker takes to start.\"\"\"

        def __init__(self):
            self.state = {"count": 0}

        def widget_state(self):
            time.sleep(1.0)
            return dict(self.state)

        def widget_update(self, changes):
            self.state.update(changes)
"""


class WidgetStateLockTest(PersistTestCase):
    files = {**FILES, "slower.py": SLOWER}

    def test_the_next_worker_waits_for_the_last_save_of_one_whose_gateway_died(self) -> None:
        # The gateway is killed (its pipes close) while its worker is still making the save of a
        # change its client was answered for; the next gateway's worker starts at once. Its
        # instance of that uuid gets the last state, never the file as it was before.
        old = self.start()
        self.answer(old, self.op(old, "widget_set", "t1", module="slower", changes={"count": 1}))
        self.saved("t1", lambda h, b: h["state"]["count"] == 1)
        self.answer(old, self.op(old, "widget_set", "t1", module="slower", changes={"count": 7}))
        time.sleep(0.1)  # the saver is inside the slow widget_state() now
        old.close_requests()
        fresh = self.start()
        frame, _ = self.answer(fresh, self.op(fresh, "widget_get", "t1", module="slower"))
        self.assertEqual(frame["payload"]["state"], {"count": 7})
        self.assertEqual(old.proc.wait(TIMEOUT), 0)

    def test_a_released_instance_lets_another_worker_take_its_state_at_once(self) -> None:
        first = self.start()
        self.answer(first, self.op(first, "widget_set", "h1", changes={"count": 3}))
        first.send({"op": "release", "uuid": "h1"})
        self.saved("h1", lambda h, b: h["state"]["count"] == 3)
        second = self.start()  # the first worker is still running
        frame, _ = self.answer(second, self.op(second, "widget_get", "h1"))
        self.assertEqual(frame["payload"]["state"]["count"], 3)
        # Taken because the first let it go, not after waiting out the takeover bound.
        self.assertNotIn("still held by another process", second.stderr.decode())
