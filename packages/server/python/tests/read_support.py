"""What the read suites share: a project with one module per kind of read hook, and ReadCase."""

from __future__ import annotations

import time

from support import TIMEOUT, WorkerTestCase

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


class ReadCase(WorkerTestCase):
    """The read suites' project (one module per kind of hook) and their helpers."""

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
