"""Framing (u32be lengths + JSON header + body) and the JSON encoding of results."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import io
import json
import os
import pathlib
import struct
import threading
import unittest
import uuid

import support  # puts the portico package on sys.path
from portico._frames import HEADER_MAX_BYTES, HOLD_MAX_BYTES, HOLD_MAX_FRAMES, FrameError, FrameReader, FrameWriter, encode_frame, read_frame, result_frame
from portico._json import dumps
from portico._view import ConfigView

try:
    import pydantic
except ImportError:  # pragma: no cover - pydantic is optional
    pydantic = None


@dataclasses.dataclass
class Point:
    x: int
    y: int


class FramingTest(unittest.TestCase):
    def test_frame_layout_is_two_big_endian_lengths_then_header_then_body(self) -> None:
        frame = encode_frame({"op": "x", "id": 1}, b"\x00\x01")
        header = b'{"op":"x","id":1}'
        self.assertEqual(frame, struct.pack(">II", len(header), 2) + header + b"\x00\x01")

    def test_read_frame_round_trips_header_and_body(self) -> None:
        stream = io.BufferedReader(io.BytesIO(encode_frame({"op": "a"}) + encode_frame({"op": "b"}, b"raw")))
        self.assertEqual(read_frame(stream), ({"op": "a"}, b""))
        self.assertEqual(read_frame(stream), ({"op": "b"}, b"raw"))
        self.assertIsNone(read_frame(stream))  # clean EOF between frames

    def test_truncated_frame_is_malformed(self) -> None:
        data = encode_frame({"op": "a"})
        for cut in (3, 8, len(data) - 1):
            with self.subTest(cut=cut), self.assertRaises(FrameError):
                read_frame(io.BytesIO(data[:cut]))

    def test_header_over_the_limit_is_malformed_before_reading_it(self) -> None:
        with self.assertRaisesRegex(FrameError, "exceeds"):
            read_frame(io.BytesIO(struct.pack(">II", HEADER_MAX_BYTES + 1, 0)))

    def test_header_must_be_a_json_object(self) -> None:
        for header in (b"[1]", b"not json", b"\xff\xfe"):
            with self.subTest(header=header), self.assertRaises(FrameError):
                read_frame(io.BytesIO(struct.pack(">II", len(header), 0) + header))

    def test_writer_batches_frames_in_order_and_flush_waits_for_them(self) -> None:
        read_fd, write_fd = os.pipe()
        self.addCleanup(os.close, read_fd)
        self.addCleanup(os.close, write_fd)
        writer = FrameWriter(write_fd, on_broken=lambda exc: None)
        frames = [encode_frame({"op": "item", "id": i}) for i in range(100)]
        for frame in frames:
            writer.put(frame)
        self.assertTrue(writer.flush(5))
        expected = b"".join(frames)
        received = b""
        while len(received) < len(expected):
            received += os.read(read_fd, 65536)
        self.assertEqual(received, expected)


    def test_a_holding_thread_keeps_its_frames_until_it_sends_them(self) -> None:
        read_fd, write_fd = os.pipe()
        self.addCleanup(os.close, read_fd)
        self.addCleanup(os.close, write_fd)
        os.set_blocking(read_fd, False)
        writer = FrameWriter(write_fd, on_broken=lambda exc: None)
        writer.hold(threading.get_ident())
        held = [encode_frame({"op": "result", "id": i}) for i in range(3)]
        for frame in held:
            writer.put(frame)
        with self.assertRaises(BlockingIOError):
            os.read(read_fd, 65536)  # nothing written yet
        writer.send_held()
        self.assertEqual(os.read(read_fd, 65536), b"".join(held))

        # Another thread's frame takes the held ones along, in the order they were put.
        writer.put(held[0])
        other = encode_frame({"op": "event"})
        thread = threading.Thread(target=writer.put, args=(other,))
        thread.start()
        thread.join()
        self.assertEqual(os.read(read_fd, 65536), held[0] + other)

        # At most HOLD_MAX_FRAMES, or HOLD_MAX_BYTES, wait; then they go out anyway.
        many = [encode_frame({"op": "result", "id": i}) for i in range(HOLD_MAX_FRAMES)]
        for frame in many:
            writer.put(frame)
        self.assertEqual(os.read(read_fd, 1 << 20), b"".join(many))
        big = encode_frame({"op": "result", "payload": "x" * HOLD_MAX_BYTES})
        expected = held[0] + big
        received = bytearray()

        def receive() -> None:  # the pipe holds less than the big frame: read while it is written
            os.set_blocking(read_fd, True)
            while len(received) < len(expected):
                received.extend(os.read(read_fd, 1 << 20))

        reading = threading.Thread(target=receive, daemon=True)
        reading.start()
        writer.put(held[0])
        writer.put(big)  # over the byte bound: written now, with the frame held before it
        reading.join(support.TIMEOUT)
        self.assertEqual(bytes(received), expected)
        os.set_blocking(read_fd, False)
        writer.hold(None)
        writer.put(other)
        self.assertEqual(os.read(read_fd, 65536), other)


class ResultFrameTest(unittest.TestCase):
    def test_result_frame_is_encode_frame_of_the_result_header(self) -> None:
        # result_frame formats the header itself: byte for byte what encode_frame gives, and the same errors.
        payloads = ["", "\u00e9\n\u2028\ud800\"", "x" * 300, 0, -3, 10**40, True, False, None, 1.5, [1, Point(1, 2)], {"k": (1,)}, float("nan")]
        for request_id in (0, 7, -5, 10**20, 2.5, True, "x"):
            for payload in payloads:
                self.assertEqual(
                    result_frame(request_id, payload), encode_frame({"op": "result", "id": request_id, "payload": payload})
                )
        for bad in (10**5000, object(), {1j: 2}):
            for encode in (lambda: result_frame(1, bad), lambda: encode_frame({"op": "result", "id": 1, "payload": bad})):
                with self.assertRaises((TypeError, ValueError)):
                    encode()


class FrameReaderTest(unittest.TestCase):
    def test_reads_frames_across_chunk_boundaries(self) -> None:
        read_fd, write_fd = os.pipe()
        self.addCleanup(os.close, read_fd)
        reader = FrameReader(read_fd, chunk_bytes=7)  # tiny chunks: every frame spans several reads
        big = bytes(range(256)) * 40
        os.write(write_fd, encode_frame({"op": "a"}) + encode_frame({"op": "b"}, big))
        self.assertEqual(reader.read(), ({"op": "a"}, b""))
        self.assertEqual(reader.read(), ({"op": "b"}, big))
        os.close(write_fd)
        self.assertIsNone(reader.read())  # clean EOF between frames

    def test_headers_read_as_json_loads_reads_them(self) -> None:
        read_fd, write_fd = os.pipe()
        self.addCleanup(os.close, read_fd)
        reader = FrameReader(read_fd)
        for raw in (b' {"op": "a"} ', b'{"op":"\u00e9","n":1.5,"x":[null,true]}'):
            os.write(write_fd, struct.pack(">II", len(raw), 0) + raw)
            self.assertEqual(reader.read(), (json.loads(raw), b""))
        for raw in (b'{"op":"a"} x', b'{"op":"a"', b"[1]", b"\xff"):
            with self.subTest(raw=raw):
                other_r, other_w = os.pipe()
                self.addCleanup(os.close, other_r)
                os.write(other_w, struct.pack(">II", len(raw), 0) + raw)
                os.close(other_w)
                with self.assertRaises(FrameError):
                    FrameReader(other_r).read()
        os.close(write_fd)

    def test_eof_inside_a_frame_is_an_error(self) -> None:
        read_fd, write_fd = os.pipe()
        self.addCleanup(os.close, read_fd)
        os.write(write_fd, encode_frame({"op": "a"})[:-2])
        os.close(write_fd)
        with self.assertRaises(FrameError):
            FrameReader(read_fd).read()


class JsonEncodingTest(unittest.TestCase):
    def test_extra_types_encode_as_documented(self) -> None:
        value = {
            "tuple": (1, 2),
            "set": {3, 1, 2},
            "mixed_set": frozenset({1}),
            "dataclass": Point(1, 2),
            "datetime": datetime.datetime(2024, 5, 1, 12, 30),
            "date": datetime.date(2024, 5, 1),
            "time": datetime.time(8, 15),
            "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
            "path": pathlib.PurePosixPath("a/b.txt"),
            "decimal": decimal.Decimal("1.5"),
            "view": ConfigView({"a": {"b": [1]}}),
        }
        self.assertEqual(
            json.loads(dumps(value)),
            {
                "tuple": [1, 2],
                "set": [1, 2, 3],
                "mixed_set": [1],
                "dataclass": {"x": 1, "y": 2},
                "datetime": "2024-05-01T12:30:00",
                "date": "2024-05-01",
                "time": "08:15:00",
                "uuid": "12345678123456781234567812345678",
                "path": "a/b.txt",
                "decimal": 1.5,
                "view": {"a": {"b": [1]}},
            },
        )

    def test_unsortable_set_keeps_its_members(self) -> None:
        self.assertCountEqual(json.loads(dumps({1, "a"})), [1, "a"])

    @unittest.skipIf(pydantic is None, "pydantic is not installed")
    def test_pydantic_models_dump_in_json_mode(self) -> None:
        class Model(pydantic.BaseModel):
            when: datetime.date
            n: int = 1

        self.assertEqual(json.loads(dumps([Model(when=datetime.date(2024, 1, 2))])), [{"when": "2024-01-02", "n": 1}])

    def test_unsupported_values_are_refused_naming_the_type(self) -> None:
        for value, pattern in ((b"x", "bytes"), (object(), "object"), ({"k": Point}, "type")):
            with self.subTest(value=value), self.assertRaisesRegex(TypeError, pattern):
                dumps(value)

    def test_nan_and_infinity_are_written_as_strings(self) -> None:
        # The encoding test_values.py covers in full: strict JSON that JavaScript's Number() reads back.
        values = [float("nan"), float("inf"), -float("inf"), decimal.Decimal("NaN")]
        self.assertEqual(json.loads(dumps(values)), ["NaN", "Infinity", "-Infinity", "NaN"])


if __name__ == "__main__":
    unittest.main()


class LoneReplyTest(unittest.TestCase):
    def test_a_lone_calls_reply_is_written_before_the_reader_reads_again(self) -> None:
        # A batch's replies wait for its last call, but a call with nothing read after it must
        # not hold its reply until the reading thread comes back to the pipe.
        import concurrent.futures

        from portico.worker.pipe import Pipe

        reply_r, reply_w = os.pipe()
        os.set_blocking(reply_r, False)
        pool = concurrent.futures.ThreadPoolExecutor(2)
        pipe = Pipe(reply_w, pool)
        seen: list[bytes] = []

        class Reader:
            before_read = None
            buffered = False

            def __init__(self) -> None:
                self.frames = [({"op": "call", "id": 1}, b""), ({"op": "call", "id": 2}, b"")]

            def read(self):
                try:  # what reached the gateway before this read, without before_read's help
                    seen.append(os.read(reply_r, 65536))
                except BlockingIOError:
                    seen.append(b"")
                return self.frames.pop(0) if self.frames else None

        def dispatch(header, body):
            return lambda: pipe.send({"op": "result", "id": header["id"]})

        try:
            self.assertEqual(pipe.serve(Reader(), dispatch), 0)
        finally:
            pool.shutdown()
            os.close(reply_r)
            os.close(reply_w)
        self.assertIn(b'"op":"ready"', seen[0])
        self.assertIn(b'"id":1', seen[1])
        self.assertIn(b'"id":2', seen[2])
