"""Floor: a raw Node<->Python pipe echo with the bridge's framing (no gateway logic)."""
import os
import struct


def main() -> None:
    inp = os.fdopen(3, "rb")
    out = os.fdopen(4, "wb", buffering=0)
    while True:
        prefix = inp.read(8)
        if len(prefix) < 8:
            return
        hlen, blen = struct.unpack(">II", prefix)
        out.write(prefix + inp.read(hlen + blen))


main()
