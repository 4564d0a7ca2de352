#!/usr/bin/env python3
"""Time a LOADCHUNK sequence of many disjoint chunks (the cost of tracking
which bytes arrived), on a redis-server this script starts and stops.

    python3 scripts/loadchunk-progress.py --module target/release/libferrobloom.so \
        [--server redis-server] [--chunks 80000] [--type bf|cf]

A filter is reserved, its SCANDUMP header loaded into another key, then
`--chunks` one-byte data chunks are sent at every other byte offset (so no
two received ranges touch and none merge), pipelined in batches of 1,000.
Prints the total time, the time per chunk of the first and last tenth, and
the key's MEMORY USAGE and INFO bf_loading_bytes at the end, before the
missing bytes are sent. Only the standard library is used.
"""

import argparse
import os
import shutil
import socket
import subprocess
import tempfile
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


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionError("server closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            self.buf += self.sock.recv(1 << 16)
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            if kind == b"-":
                raise RuntimeError(rest.decode())
            return rest.decode()
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise RuntimeError("unexpected reply %r" % line)

    def cmd(self, *args):
        self.sock.sendall(encode(*args))
        return self.reply()

    def pipeline(self, commands):
        self.sock.sendall(b"".join(encode(*c) for c in commands))
        return [self.reply() for _ in commands]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--module", required=True)
    p.add_argument("--server", default=shutil.which("redis-server") or "redis-server")
    p.add_argument("--chunks", type=int, default=80000)
    p.add_argument("--type", choices=["bf", "cf"], default="bf")
    args = p.parse_args()

    port = free_port()
    workdir = tempfile.mkdtemp(prefix="loadchunk-progress-")
    server = subprocess.Popen(
        [args.server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", workdir,
         "--loadmodule", os.path.abspath(args.module)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                c = Conn(port)
                c.cmd("PING")
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("the server did not start")
        prefix = args.type.upper()
        need = 2 * args.chunks + 16
        if args.type == "bf":
            c.cmd("BF.RESERVE", "src", "0.01", str(need), "NONSCALING")
        else:
            c.cmd("CF.RESERVE", "src", str(need), "BUCKETSIZE", "1", "EXPANSION", "0")
        c.cmd(prefix + ".ADD", "src", "x")
        it, header = c.cmd(prefix + ".SCANDUMP", "src", 0)
        c.cmd(prefix + ".LOADCHUNK", "dst", it, header)
        # The data chunks, one byte at even stream offsets: iterator =
        # offset + len + 1.
        commands = [(prefix + ".LOADCHUNK", "dst", 2 * i + 2, b"\x01")
                    for i in range(args.chunks)]
        times = []
        start = time.perf_counter()
        for b in range(0, len(commands), 1000):
            t = time.perf_counter()
            c.pipeline(commands[b:b + 1000])
            times.append((time.perf_counter() - t) / len(commands[b:b + 1000]))
        total = time.perf_counter() - start
        tenth = max(1, len(times) // 10)
        first = sum(times[:tenth]) / tenth * 1e6
        last = sum(times[-tenth:]) / tenth * 1e6
        usage = c.cmd("MEMORY", "USAGE", "dst")
        info = c.cmd("INFO", "bf").decode()
        fields = dict(l.split(":", 1) for l in info.splitlines() if ":" in l)
        print("type %s, %d disjoint chunks: %.2f s total; %.1f us per chunk in the first "
              "tenth, %.1f us in the last" % (args.type, args.chunks, total, first, last))
        print("MEMORY USAGE dst %s, MEMORY USAGE src %s, bf_loading_bytes %s, bf_filters_loading %s"
              % (usage, c.cmd("MEMORY", "USAGE", "src"), fields.get("bf_loading_bytes", "-"),
                 fields.get("bf_filters_loading", "-")))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
