"""One instance, one queue: widget_set and widget_msg to one instance run one at a time in
arrival order (as a kernel handles a widget's comm messages), while other instances and method
calls keep running; a handler that raises answers an error to its own message only.
"""

from __future__ import annotations

import unittest
from typing import Any

from support import WorkerTestCase

LANE = """
    import threading

    from portico import Interface

    #: Set by any instance's "release" message: the only way a held handler goes on.
    RELEASE = threading.Event()


    class Lane(Interface):
        def __init__(self):
            self.log = []

        def widget_state(self):
            return {"seen": len(self.log)}

        def widget_update(self, changes):
            self.log.append(["set", changes["i"]])
            return None

        def widget_message(self, content, buffers):
            self.log.append(["msg", content])
            if content == "hold":
                RELEASE.wait(30)
            elif content == "release":
                RELEASE.set()
            elif content == "boom":
                raise RuntimeError("the handler broke")
            return content

        def peek(self):
            return list(self.log)
"""

ASYNC_LANE = """
    import asyncio

    from portico import Interface


    class AsyncLane(Interface):
        def __init__(self):
            self.log = []

        async def widget_message(self, content, buffers):
            self.log.append(["start", content])
            await asyncio.sleep(0.002 if content % 2 else 0)
            self.log.append(["end", content])
            return content

        def peek(self):
            return list(self.log)
"""


class WidgetLaneTest(WorkerTestCase):
    FILES = {"lane.py": LANE, "async_lane.py": ASYNC_LANE}

    def op(self, op: str, uuid: str, module: str = "lane", **fields: Any) -> int:
        return self.worker.request(op, uuid=uuid, module=module, config={}, **fields)

    def test_one_instance_runs_its_messages_in_order_while_others_and_calls_go_on(self) -> None:
        held = self.op("widget_msg", "a", content="hold")
        queued = []
        for i in range(200):
            if i % 2:
                queued.append(self.op("widget_msg", "a", content=i))
            else:
                queued.append(self.op("widget_set", "a", changes={"i": i}))
        # A remote call on the same instance answers while its widget is held: nothing queued ran.
        self.assertEqual(self.worker.result(self.worker.call("peek", module="lane", uuid="a")), [["msg", "hold"]])
        # Another instance is not queued behind it: its message releases the held one.
        self.assertEqual(self.worker.result(self.op("widget_msg", "b", content="release")), {"reply": "release", "has_reply": True})
        self.assertEqual(self.worker.result(held), {"reply": "hold", "has_reply": True})
        for request in queued:
            self.worker.terminal(request)
        expected = [["msg", "hold"]] + [["msg", i] if i % 2 else ["set", i] for i in range(200)]
        self.assertEqual(self.worker.result(self.worker.call("peek", module="lane", uuid="a")), expected)
        # The answers left in the same order.
        answers = [f["id"] for f in self.worker.frames if f.get("id") in set(queued)]
        self.assertEqual(answers, queued)

    def test_a_handler_that_raises_answers_an_error_to_that_message_only(self) -> None:
        before = self.op("widget_msg", "c", content="first")
        broken = self.op("widget_msg", "c", content="boom")
        after = self.op("widget_msg", "c", content="after")
        self.assertEqual(self.worker.result(before)["reply"], "first")
        error = self.worker.error(broken)
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "RuntimeError"))
        self.assertIn("the handler broke", error["message"])
        self.assertEqual(self.worker.result(after)["reply"], "after")
        self.assertEqual(self.worker.result(self.op("widget_set", "c", changes={"i": 1})), {"changes": {"i": 1}})

    def test_async_handlers_of_one_instance_do_not_interleave(self) -> None:
        requests = [self.op("widget_msg", "d", module="async_lane", content=i) for i in range(20)]
        for request in requests:
            self.worker.terminal(request)
        log = self.worker.result(self.worker.call("peek", module="async_lane", uuid="d"))
        self.assertEqual(log, [[edge, i] for i in range(20) for edge in ("start", "end")])


if __name__ == "__main__":
    unittest.main()
