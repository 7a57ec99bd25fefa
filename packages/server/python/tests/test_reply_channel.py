"""The worker's reply channel (fd 4) holds a whole read chunk, whether the gateway gave a socket or a pipe."""

from __future__ import annotations

import os
import socket
import unittest

from portico.worker.pipe import REPLY_PIPE_BYTES, widen_pipe


class ReplyChannelTest(unittest.TestCase):
    def test_a_socket_pair_gets_a_send_buffer_for_a_whole_chunk(self) -> None:
        ours, theirs = socket.socketpair()
        with ours, theirs:
            widen_pipe(ours.fileno())
            self.assertGreaterEqual(ours.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF), REPLY_PIPE_BYTES)
            # The descriptor still works: widening it did not close it.
            ours.sendall(b"chunk")
            self.assertEqual(theirs.recv(5), b"chunk")

    def test_a_pipe_is_left_working_and_no_descriptor_leaks(self) -> None:
        read_end, write_end = os.pipe()
        try:
            before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
            widen_pipe(write_end)
            if before is not None:
                self.assertEqual(len(os.listdir("/proc/self/fd")), before)
            os.write(write_end, b"chunk")
            self.assertEqual(os.read(read_end, 5), b"chunk")
        finally:
            os.close(read_end)
            os.close(write_end)


if __name__ == "__main__":
    unittest.main()
