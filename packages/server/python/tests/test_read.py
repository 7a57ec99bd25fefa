"""Worker: the `read` op (binary reads through an interface's read(params) hook): every kind of
hook and return value, and chunking at `block`. Flow control, cancel, errors and a 1 GiB file are
in test_read_flow.py.
"""

from __future__ import annotations

import os
import unittest

from read_support import ReadCase, pattern


class ReadTest(ReadCase):
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


if __name__ == "__main__":
    unittest.main()
