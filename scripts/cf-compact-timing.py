#!/usr/bin/env python3
"""Times Cuckoo filter compaction on a server at 127.0.0.1:PORT.

For each sub-filter count S, a CF.LOADCHUNK header declares S sub-filters of
BYTES bytes (EXPANSION 1, bucket size 2). CF.COMPACT is timed on one whose
slots are all filled (nothing can move: every fingerprint looks at every
older sub-filter in the literal algorithm), and one CF.DEL on one of random
bytes with a small item counter (so the delete compacts, and fingerprints
move a long way down).

    python3 scripts/cf-compact-timing.py PORT [BYTES] [S ...]
    e.g. python3 scripts/cf-compact-timing.py 6379 16384 128 256 512
"""
import random
import socket
import struct
import sys
import time


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Client:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.f = self.s.makefile("rb")

    def reply(self):
        line = self.f.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        if kind == b":":
            return int(rest)
        if kind == b"-":
            raise RuntimeError(rest.decode())
        return rest.decode()

    def cmd(self, *args):
        self.s.sendall(encode(*args))
        return self.reply()

    def pipeline(self, cmds):
        self.s.sendall(b"".join(encode(*c) for c in cmds))
        return [self.reply() for _ in cmds]


def main():
    port = int(sys.argv[1])
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 16384
    counts = [int(a) for a in sys.argv[3:]] or [128, 256, 512]
    c = Client(port)
    for s in counts:
        for key, items in ((f"compact:{s}", 1 << 40), (f"del:{s}", 10)):
            c.cmd("DEL", key)
            header = struct.pack("<QQQQHHH", items, size // 2, 0, s, 2, 20, 1)
            c.cmd("CF.LOADCHUNK", key, 1, header)
            rng = random.Random(s)
            fill = ((lambda: b"\x07" * size) if key.startswith("compact")
                    else (lambda: rng.randbytes(size)))
            c.pipeline([("CF.LOADCHUNK", key, 1 + (i + 1) * size, fill())
                        for i in range(s)])
        t = time.monotonic()
        c.cmd("CF.COMPACT", f"compact:{s}")
        compact = time.monotonic() - t
        item = next(f"x{i}" for i in range(100000)
                    if c.cmd("CF.COUNT", f"del:{s}", f"x{i}") > 0)
        t = time.monotonic()
        c.cmd("CF.DEL", f"del:{s}", item)
        delete = time.monotonic() - t
        print(f"{s} sub-filters of {size} bytes: CF.COMPACT {compact:.3f} s, "
              f"CF.DEL {delete:.3f} s")
        c.cmd("DEL", f"compact:{s}", f"del:{s}")


if __name__ == "__main__":
    main()
