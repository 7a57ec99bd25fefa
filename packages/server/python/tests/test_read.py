"""Worker: the `read` op (binary reads through an interface's read(params) hook).

Every kind of hook and return value, chunking at `block`, the credit window, cancel (which must
close what the hook returned), the errors, and a 1 GiB file streamed with bounded memory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import unittest

from support import TIMEOUT, WorkerProcess, WorkerTestCase, write_files

READER = """
    import array
    import io
    import threading
    import time

    from portico import CallCancelled, Interface, NotFound

    STATE = {}


    class Tracked(io.BytesIO):
        def __init__(self, key, data):
            super().__init__(data)
            self.key = key
            STATE[key] = "open"

        def close(self):
            STATE[self.key] = "closed"
            super().close()


    class ReadOnlyFile:
        \"\"\"Only read(n) and close(); its read gives more than asked (the worker splits it).\"\"\"

        def __init__(self, key, pieces):
            self.key = key
            self.pieces = list(pieces)
            STATE[key] = "open"

        def read(self, n):
            return self.pieces.pop(0) if self.pieces else b""

        def close(self):
            STATE[self.key] = "closed"


    class SlowFile(io.RawIOBase):
        \"\"\"Each read takes a while: cancel lands inside it.\"\"\"

        def __init__(self, key):
            self.key = key
            STATE[key] = "open"

        def readable(self):
            return True

        def readinto(self, buffer):
            try:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    time.sleep(0.01)
            except CallCancelled:
                STATE[self.key + ".interrupted"] = True
                raise
            return 0

        def close(self):
            STATE[self.key] = "closed"
            super().close()


    def pattern(n):
        return bytes(i % 251 for i in range(n))


    class Reader(Interface):
        def read(self, params):
            kind = params.get("kind")
            n = params.get("n", 0)
            if kind == "bytes":
                return pattern(n)
            if kind == "bytearray":
                return bytearray(pattern(n))
            if kind == "memoryview":
                return memoryview(pattern(n))
            if kind == "ints":  # a memoryview whose items are not bytes
                return memoryview(array.array("i", [1, 2, 3]))
            if kind == "list":
                return [b"ab", b"", bytearray(b"cdef"), memoryview(b"g"), pattern(25)]
            if kind == "tuple":
                return (b"x", b"y")
            if kind == "file":
                return Tracked(params["key"], pattern(n))
            if kind == "real_file":
                return open(params["path"], "rb")
            if kind == "read_only_file":
                return ReadOnlyFile(params["key"], [b"0123456789abcdef", b"", b"xyz"])
            if kind == "slow_file":
                return SlowFile(params["key"])
            if kind == "generator":
                return (bytes([i]) * 3 for i in range(n))
            if kind == "async_generator":
                async def chunks():
                    yield b"as"
                    yield b"ync"
                return chunks()
            if kind == "coroutine":
                async def later():
                    return b"awaited"
                return later()
            if kind == "missing_file":
                return open(params["path"], "rb")
            if kind == "not_found":
                raise NotFound(f"no record {params.get('name')!r}")
            if kind == "raise":
                raise RuntimeError("read broke")
            if kind == "str":
                return "text"
            if kind == "int":
                return 42
            if kind == "none":
                return None
            if kind == "dict":
                return {"a": 1}
            if kind == "text_file":
                f = open(params["path"], "r")
                STATE["text_file"] = f
                return f
            if kind == "bad_item":
                return [b"fine", "not bytes"]
            if kind == "params":
                return repr(params).encode()
            raise ValueError(f"unknown kind {kind!r}")

        def state(self, key):
            value = STATE.get(key)
            if key == "text_file":
                return value.closed if value is not None else None
            return value

        def fetch(self, name):
            raise NotFound(f"no record {name!r}")


"""

GEN_READER = """
    import time

    from portico import CallCancelled, Interface, NotFound

    class GenReader(Interface):
        def __init__(self):
            self.st = {"advanced": 0}

        def read(self, params):
            STATE = self.st
            STATE["closed"] = False
            try:
                for i in range(params.get("n", 10**9)):
                    STATE["advanced"] += 1
                    if params.get("fail_at") == i:
                        raise KeyError("gone midway")
                    if params.get("missing_at") == i:
                        raise NotFound("went missing")
                    if params.get("emit"):
                        self.emit({"at": i})
                    if params.get("stuck") and i == 1:
                        try:
                            while True:
                                time.sleep(0.01)
                        except CallCancelled:
                            STATE["interrupted"] = True
                            raise
                    yield bytes([65 + i % 26]) * params.get("size", 1)
            finally:
                STATE["closed"] = True

        def state(self):
            return self.st
"""

ASYNC_READER = """
    import asyncio
    import io

    from portico import Interface

    STATE = {}


    class Tracked(io.BytesIO):
        def close(self):
            STATE["file"] = "closed"
            super().close()


    class AsyncFile:
        \"\"\"read() and close() are coroutines (like aiofiles).\"\"\"

        def __init__(self, data):
            self.data = data

        async def read(self, n):
            await asyncio.sleep(0)
            piece, self.data = self.data[:n], self.data[n:]
            return piece

        async def close(self):
            STATE["async_file"] = "closed"


    class AsyncReader(Interface):
        async def read(self, params):
            await asyncio.sleep(0)
            if params.get("kind") == "file":
                return Tracked(b"from an async hook")
            if params.get("kind") == "async_file":
                return AsyncFile(b"0123456789" * 3)
            if params.get("kind") == "missing":
                raise FileNotFoundError(2, "No such file", "gone.bin")
            return b"async bytes"

        def state(self):
            return STATE
"""

AGEN_READER = """
    import asyncio

    from portico import Interface

    class AgenReader(Interface):
        def __init__(self):
            self.st = {"advanced": 0}

        async def read(self, params):
            STATE = self.st
            STATE["closed"] = False
            try:
                for i in range(params.get("n", 10**9)):
                    STATE["advanced"] += 1
                    await asyncio.sleep(0)
                    yield bytes([97 + i % 26]) * params.get("size", 1)
            finally:
                STATE["closed"] = True

        def state(self):
            return self.st
"""

NO_READ = """
    from portico import Interface


    class NoRead(Interface):
        def ping(self):
            return "pong"
"""

BROKEN_INIT = """
    from portico import Interface


    class BrokenInit(Interface):
        def __init__(self):
            raise RuntimeError("init broke")

        def read(self, params):
            return b""
"""


def pattern(n: int) -> bytes:
    return bytes(i % 251 for i in range(n))


class ReadTest(WorkerTestCase):
    FILES = {
        "reader.py": READER,
        "gen_reader.py": GEN_READER,
        "async_reader.py": ASYNC_READER,
        "agen_reader.py": AGEN_READER,
        "noread.py": NO_READ,
        "broken_init.py": BROKEN_INIT,
        "data/hello.bin": "hello, file\n" * 100,
        "data/hello.txt": "some text\n",
    }

    def read(self, params: dict, **kwargs: object) -> int:
        return self.worker.read(params, **kwargs)  # type: ignore[arg-type]

    def read_all(self, params: dict, **kwargs: object) -> tuple[list[bytes], dict]:
        """The chunks and the end frame of a read that must succeed."""
        request = self.read(params, **kwargs)
        end = self.worker.terminal(request)
        self.assertEqual(end["op"], "end", end)
        return self.worker.chunks(request), end

    def assert_chunked(self, chunks: list[bytes], end: dict, expected: bytes, block: int) -> None:
        self.assertEqual(b"".join(chunks), expected)
        self.assertTrue(all(0 < len(chunk) <= block for chunk in chunks), [len(c) for c in chunks])
        self.assertEqual(end["bytes"], len(expected))

    def state(self, key: str | None = None, module: str = "reader", uuid: str = "r1") -> object:
        args = (key,) if key is not None else ()
        return self.worker.result(self.worker.call("state", *args, module=module, uuid=uuid))

    def wait_state(self, expected: object, key: str | None = None, module: str = "reader", uuid: str = "r1") -> None:
        deadline = time.monotonic() + TIMEOUT
        while True:
            value = self.state(key, module, uuid)
            if (value == expected) if not callable(expected) else expected(value):
                return
            if time.monotonic() > deadline:
                self.fail(f"state {key!r} of {module} is {value!r}, expected {expected!r}")
            time.sleep(0.02)

    # -- what a hook may return -----------------------------------------------------------------

    def test_bytes_are_split_at_block_and_end_counts_them(self) -> None:
        chunks, end = self.read_all({"kind": "bytes", "n": 2500}, block=1000)
        self.assertEqual([len(c) for c in chunks], [1000, 1000, 500])
        self.assert_chunked(chunks, end, pattern(2500), 1000)
        self.assertEqual(set(end), {"op", "id", "bytes"})

    def test_bytearray_and_memoryview_are_sent_like_bytes(self) -> None:
        for kind in ("bytearray", "memoryview"):
            with self.subTest(kind=kind):
                chunks, end = self.read_all({"kind": kind, "n": 300}, block=128)
                self.assert_chunked(chunks, end, pattern(300), 128)

    def test_a_memoryview_of_other_items_is_sent_as_its_bytes(self) -> None:
        import array

        chunks, end = self.read_all({"kind": "ints"}, block=5)
        self.assert_chunked(chunks, end, array.array("i", [1, 2, 3]).tobytes(), 5)

    def test_empty_result_is_just_the_end(self) -> None:
        request = self.read({"kind": "bytes", "n": 0})
        self.assertEqual(self.worker.terminal(request), {"op": "end", "id": request, "bytes": 0})
        self.assertEqual([f["op"] for f in self.worker.frames_for(request)], ["end"])

    def test_an_iterable_is_sent_item_by_item_with_big_items_split_and_empty_ones_skipped(self) -> None:
        chunks, end = self.read_all({"kind": "list"}, block=10)
        self.assertEqual(chunks, [b"ab", b"cdef", b"g", pattern(25)[:10], pattern(25)[10:20], pattern(25)[20:]])
        self.assertEqual(end["bytes"], 32)
        chunks, end = self.read_all({"kind": "tuple"})
        self.assertEqual(chunks, [b"x", b"y"])

    def test_a_returned_generator_async_generator_or_coroutine_is_followed(self) -> None:
        chunks, end = self.read_all({"kind": "generator", "n": 3})
        self.assertEqual(chunks, [b"\x00" * 3, b"\x01" * 3, b"\x02" * 3])
        chunks, end = self.read_all({"kind": "async_generator"})
        self.assertEqual(chunks, [b"as", b"ync"])
        chunks, end = self.read_all({"kind": "coroutine"})
        self.assertEqual(chunks, [b"awaited"])

    def test_a_file_object_is_read_in_blocks_and_closed(self) -> None:
        chunks, end = self.read_all({"kind": "file", "key": "f1", "n": 5000}, block=2048)
        self.assertEqual([len(c) for c in chunks], [2048, 2048, 904])
        self.assert_chunked(chunks, end, pattern(5000), 2048)
        self.assertEqual(self.state("f1"), "closed")

    def test_a_real_file_is_read_and_closed(self) -> None:
        path = os.path.join(self.project, "data", "hello.bin")
        with open(path, "rb") as handle:
            expected = handle.read()
        chunks, end = self.read_all({"kind": "real_file", "path": path}, block=512)
        self.assert_chunked(chunks, end, expected, 512)

    def test_a_file_with_only_read_is_split_to_block(self) -> None:
        chunks, end = self.read_all({"kind": "read_only_file", "key": "ro"}, block=6)
        # Its read(6) gave 16 bytes: split, and its empty read ended the file (xyz never read).
        self.assertEqual(chunks, [b"012345", b"6789ab", b"cdef"])
        self.assertEqual(end["bytes"], 16)
        self.assertEqual(self.state("ro"), "closed")

    def test_params_are_passed_verbatim(self) -> None:
        params = {"kind": "params", "nested": {"a": [1, 2.5, None, "é"]}}
        chunks, _ = self.read_all(params)
        self.assertEqual(b"".join(chunks).decode(), repr(params))

    def test_generator_hook_streams_and_is_closed(self) -> None:
        chunks, end = self.read_all({"n": 5, "size": 3}, module="gen_reader", uuid="g0")
        self.assertEqual(chunks, [b"AAA", b"BBB", b"CCC", b"DDD", b"EEE"])
        self.assertEqual(end["bytes"], 15)
        self.assertTrue(self.state(module="gen_reader", uuid="g0")["closed"])

    def test_async_hooks_return_bytes_files_or_async_files(self) -> None:
        chunks, _ = self.read_all({}, module="async_reader", uuid="a0")
        self.assertEqual(chunks, [b"async bytes"])
        chunks, _ = self.read_all({"kind": "file"}, module="async_reader", uuid="a0", block=4)
        self.assertEqual(b"".join(chunks), b"from an async hook")
        self.assertEqual(self.state(module="async_reader", uuid="a0")["file"], "closed")
        chunks, end = self.read_all({"kind": "async_file"}, module="async_reader", uuid="a0", block=7)
        self.assert_chunked(chunks, end, b"0123456789" * 3, 7)
        self.assertEqual(self.state(module="async_reader", uuid="a0")["async_file"], "closed")

    def test_async_generator_hook_streams_and_is_closed(self) -> None:
        chunks, end = self.read_all({"n": 4, "size": 2}, module="agen_reader", uuid="ag0")
        self.assertEqual(chunks, [b"aa", b"bb", b"cc", b"dd"])
        self.assertTrue(self.state(module="agen_reader", uuid="ag0")["closed"])

    def test_large_async_chunks_are_split_and_sent(self) -> None:
        chunks, end = self.read_all({"n": 3, "size": 200_000}, module="agen_reader", uuid="ag1", block=150_000)
        self.assertEqual([len(c) for c in chunks], [150_000, 50_000] * 3)
        self.assertEqual(b"".join(chunks), b"a" * 200_000 + b"b" * 200_000 + b"c" * 200_000)

    def test_events_emitted_while_reading_precede_the_chunks_after_them(self) -> None:
        request = self.read({"n": 3, "emit": True}, module="gen_reader", uuid="g-emit")
        self.worker.terminal(request)
        frames = [f for f in self.worker.frames if f.get("uuid") == "g-emit" or f.get("id") == request]
        self.assertEqual([f["op"] for f in frames], ["event", "chunk", "event", "chunk", "event", "chunk", "end"])

    def test_a_failing_init_fails_the_read(self) -> None:
        request = self.read({"kind": "bytes", "n": 1}, module="broken_init", uuid="b0")
        error = self.worker.error(request)
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "RuntimeError"))

    # -- flow control ---------------------------------------------------------------------------

    def test_generator_stops_at_the_window_until_credited(self) -> None:
        request = self.read({"n": 40}, module="gen_reader", uuid="gw", auto_credit=False)
        self.assertEqual(len(self.worker.wait_chunks(request, 16)), 16)
        self.worker.settle()
        self.assertEqual(len(self.worker.chunks(request)), 16)
        self.assertEqual(self.state(module="gen_reader", uuid="gw")["advanced"], 16)  # not advanced while full
        self.worker.send({"op": "credit", "id": request, "n": 4})
        self.assertEqual(len(self.worker.wait_chunks(request, 20)), 20)
        self.worker.settle()
        self.assertEqual(len(self.worker.chunks(request)), 20)
        self.worker.send({"op": "credit", "id": request, "n": 100})
        self.assertEqual(self.worker.terminal(request), {"op": "end", "id": request, "bytes": 40})
        self.assertEqual(b"".join(self.worker.chunks(request)), bytes(65 + i % 26 for i in range(40)))

    def test_file_stops_at_the_window_until_credited(self) -> None:
        request = self.read({"kind": "file", "key": "fw", "n": 100}, block=2, auto_credit=False)
        self.worker.wait_chunks(request, 16)
        self.worker.settle()
        self.assertEqual(len(self.worker.chunks(request)), 16)
        self.assertEqual(self.state("fw"), "open")
        self.worker.send({"op": "credit", "id": request, "n": 1000})
        end = self.worker.terminal(request)
        self.assert_chunked(self.worker.chunks(request), end, pattern(100), 2)
        self.assertEqual(self.state("fw"), "closed")

    def test_async_generator_stops_at_the_window_until_credited(self) -> None:
        request = self.read({"n": 30}, module="agen_reader", uuid="agw", auto_credit=False)
        self.worker.wait_chunks(request, 16)
        self.worker.settle()
        self.assertEqual(len(self.worker.chunks(request)), 16)
        self.assertEqual(self.state(module="agen_reader", uuid="agw")["advanced"], 16)
        self.worker.send({"op": "credit", "id": request, "n": 100})
        self.assertEqual(self.worker.terminal(request)["bytes"], 30)

    # -- cancel -----------------------------------------------------------------------------------

    def test_cancel_closes_a_parked_generator(self) -> None:
        request = self.read({}, module="gen_reader", uuid="gc", auto_credit=False)  # endless
        self.worker.wait_chunks(request, 16)
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state(lambda state: state["closed"] is True, module="gen_reader", uuid="gc")
        self.worker.settle()
        self.assertEqual([f["op"] for f in self.worker.frames_for(request)], ["chunk"] * 16 + ["error"])

    def test_cancel_closes_a_parked_file(self) -> None:
        request = self.read({"kind": "file", "key": "fc", "n": 1000}, block=10, auto_credit=False)
        self.worker.wait_chunks(request, 16)
        self.assertEqual(self.state("fc"), "open")
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state("closed", "fc")

    def test_cancel_interrupts_a_file_read_in_progress_and_closes_it(self) -> None:
        request = self.read({"kind": "slow_file", "key": "slow"})
        self.wait_state("open", "slow")
        time.sleep(0.1)  # inside readinto
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state("closed", "slow")
        self.assertTrue(self.state("slow.interrupted"))

    def test_cancel_interrupts_a_generator_advancing_and_closes_it(self) -> None:
        request = self.read({"stuck": True}, module="gen_reader", uuid="gs")
        self.worker.wait_chunks(request, 1)
        time.sleep(0.1)
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state(lambda state: state.get("interrupted") and state["closed"], module="gen_reader", uuid="gs")

    def test_cancel_closes_a_parked_async_generator(self) -> None:
        request = self.read({}, module="agen_reader", uuid="agc", auto_credit=False)
        self.worker.wait_chunks(request, 16)
        self.worker.send({"op": "cancel", "id": request})
        self.assertEqual(self.worker.error(request)["code"], "cancelled")
        self.wait_state(lambda state: state["closed"] is True, module="agen_reader", uuid="agc")

    def test_credit_and_cancel_after_the_end_are_ignored(self) -> None:
        chunks, end = self.read_all({"kind": "bytes", "n": 3})
        self.worker.send({"op": "credit", "id": end["id"], "n": 5})
        self.worker.send({"op": "cancel", "id": end["id"]})
        self.worker.settle()
        self.assertEqual([f["op"] for f in self.worker.frames_for(end["id"])], ["chunk", "end"])

    # -- errors ---------------------------------------------------------------------------------

    def test_missing_file_and_not_found_are_not_found(self) -> None:
        request = self.read({"kind": "missing_file", "path": os.path.join(self.project, "nope.bin")})
        error = self.worker.error(request)
        self.assertEqual((error["code"], error["exception"]), ("not_found", "FileNotFoundError"))
        self.assertIn("nope.bin", error["message"])
        request = self.read({"kind": "not_found", "name": "x7"})
        error = self.worker.error(request)
        self.assertEqual((error["code"], error["exception"]), ("not_found", "NotFound"))
        self.assertIn("no record 'x7'", error["message"])
        request = self.read({"kind": "missing"}, module="async_reader", uuid="a1")
        self.assertEqual(self.worker.error(request)["code"], "not_found")

    def test_not_found_midway_follows_the_chunks_sent(self) -> None:
        request = self.read({"missing_at": 2}, module="gen_reader", uuid="gm")
        self.assertEqual(self.worker.error(request)["code"], "not_found")
        self.assertEqual([f["op"] for f in self.worker.frames_for(request)], ["chunk", "chunk", "error"])

    def test_not_found_from_a_method_is_not_found(self) -> None:
        error = self.worker.error(self.worker.call("fetch", "k", module="reader", uuid="r1"))
        self.assertEqual((error["code"], error["exception"]), ("not_found", "NotFound"))
        self.assertIn("no record 'k'", error["message"])

    def test_a_class_without_read_is_read_unsupported(self) -> None:
        error = self.worker.error(self.read({}, module="noread", uuid="n0"))
        self.assertEqual(error["code"], "read_unsupported")
        self.assertIn("NoRead", error["message"])

    def test_an_exception_is_call_failed_with_its_name(self) -> None:
        error = self.worker.error(self.read({"kind": "raise"}))
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "RuntimeError"))
        self.assertIn("read broke", error["message"])
        error = self.worker.error(self.read({"fail_at": 1}, module="gen_reader", uuid="gf"))
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "KeyError"))
        self.assertEqual([f["op"] for f in self.worker.frames_for(error["id"])], ["chunk", "error"])

    def test_wrong_return_types_are_call_failed_saying_what_is_allowed(self) -> None:
        for kind, named in (("str", "str"), ("int", "int"), ("none", "None"), ("dict", "dict")):
            with self.subTest(kind=kind):
                error = self.worker.error(self.read({"kind": kind}))
                self.assertEqual((error["code"], error["exception"]), ("call_failed", "TypeError"))
                self.assertIn(f"read() returned {named};", error["message"])
                self.assertIn("bytes, bytearray, memoryview", error["message"])
                self.assertIn("binary file object", error["message"])

    def test_a_text_file_is_refused_and_closed(self) -> None:
        error = self.worker.error(self.read({"kind": "text_file", "path": os.path.join(self.project, "data", "hello.txt")}))
        self.assertEqual(error["code"], "call_failed")
        self.assertIn("text file", error["message"])
        self.assertIn("'rb'", error["message"])
        self.assertIs(self.state("text_file"), True)

    def test_a_wrong_item_fails_after_the_chunks_before_it(self) -> None:
        request = self.read({"kind": "bad_item"})
        error = self.worker.error(request)
        self.assertEqual((error["code"], error["exception"]), ("call_failed", "TypeError"))
        self.assertIn("read() yielded str", error["message"])
        self.assertEqual(self.worker.chunks(request), [b"fine"])

    def test_malformed_requests_are_bad_requests(self) -> None:
        for fields in ({"block": 0}, {"block": "big"}, {"block": 2**40}, {"uuid": 5}, {"module": None}):
            with self.subTest(fields=fields):
                self.worker._next_id += 1
                request = self.worker._next_id
                header = {"op": "read", "id": request, "uuid": "r1", "module": "reader", "config": {}, "params": {}, "block": 16}
                header.update(fields)
                self.worker.send(header)
                self.assertEqual(self.worker.error(request)["code"], "bad_request")

    def test_unknown_module_is_module_not_found(self) -> None:
        self.assertEqual(self.worker.error(self.read({}, module="nowhere", uuid="zz"))["code"], "module_not_found")

    def test_read_is_a_hook_not_a_callable_method(self) -> None:
        error = self.worker.error(self.worker.call("read", {"kind": "bytes"}, module="reader", uuid="r1"))
        self.assertEqual(error["code"], "method_forbidden")
        request = self.worker.request("schema", module="reader")
        names = [method["name"] for method in self.worker.terminal(request)["methods"]]
        self.assertNotIn("read", names)
        self.assertIn("state", names)


class BigReadTest(unittest.TestCase):
    """A 1 GiB file streams through with the worker's memory bounded."""

    SIZE = 1 << 30

    def test_one_gib_file_streams_with_bounded_memory(self) -> None:
        project = tempfile.mkdtemp(prefix="portico-test-")
        self.addCleanup(shutil.rmtree, project, True)
        write_files(
            project,
            {
                "big.py": """
                    from portico import Interface

                    class Big(Interface):
                        def read(self, params):
                            return open(params["path"], "rb")
                """
            },
        )
        path = os.path.join(project, "big.bin")
        with open(path, "wb") as handle:
            handle.truncate(self.SIZE)  # sparse: no disk space, and reads come from the page cache
            handle.seek(self.SIZE - 4)
            handle.write(b"tail")
        worker = WorkerProcess(project, keep_bodies=False)
        self.addCleanup(worker.close)
        worker.wait_for(lambda f: f["op"] == "ready")
        start = time.perf_counter()
        request = worker.read({"path": path}, module="big", uuid="big")
        end = worker.terminal(request, timeout=120)
        elapsed = time.perf_counter() - start
        self.assertEqual(end, {"op": "end", "id": request, "bytes": self.SIZE})
        sizes = worker.chunk_sizes(request)
        self.assertEqual(sum(sizes), self.SIZE)
        self.assertEqual(max(sizes), 1 << 20)
        self.assertGreater(min(sizes), 0)
        peak = _peak_rss_kib(worker.proc.pid)
        if peak is not None:
            self.assertLess(peak, 100 * 1024, f"worker peak RSS {peak} KiB after a 1 GiB read")
        if os.environ.get("PORTICO_VERBOSE"):
            print(f"\n1 GiB read in {elapsed:.2f}s ({self.SIZE / elapsed / 1e6:.0f} MB/s), peak RSS {peak} KiB")


def _peak_rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


if __name__ == "__main__":
    unittest.main()
