#!/usr/bin/env python3
"""A user-space WAN between two network namespaces, for tests: forwards UDP
datagrams from LISTEN to DEST after a one-way delay, dropping, duplicating and
reordering some on the way. This kernel has no netem, so this stands in for it.

Loss is exact, not just expected: in every block of --block datagrams of a
route, exactly round(loss x block) of them, chosen at random, are dropped. A
test can then hold the receiver's reported loss to a tight tolerance without
long runs. Duplication and reordering are random with the given probability.

With --spoof the relay sends each datagram from its original source address
and port (IP_TRANSPARENT), so the receiver's sender allowlist sees the real
sender, as it would behind a router.

On SIGTERM/SIGINT (or after --duration) it writes its counts as JSON to --stats
and exits. It also counts datagrams the kernel dropped at its own sockets
(SO_RXQ_OVFL), which would make its figures wrong; a test should require 0.

Standard library only."""

import argparse
import heapq
import json
import random
import selectors
import signal
import socket
import struct
import sys
import time

IP_TRANSPARENT = getattr(socket, "IP_TRANSPARENT", 19)
SO_RXQ_OVFL = getattr(socket, "SO_RXQ_OVFL", 40)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)
BUFFER_BYTES = 32 << 20


def parse_hostport(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError("expected HOST:PORT, got '%s'" % text)
    return host, int(port)


def parse_route(text):
    listen, eq, dest = text.partition("=")
    if not eq:
        raise argparse.ArgumentTypeError("expected LISTEN_HOST:PORT=DEST_HOST:PORT, got '%s'" % text)
    return parse_hostport(listen), parse_hostport(dest)


RUN_MAGIC = struct.unpack("<i", b"SCR\x80")[0]


def quad_records(data):
    """Values in a slabcast data packet: a quad packet's records, or a run
    packet's count (docs/wire-format.md); 0 for anything else."""
    if len(data) >= 36 and struct.unpack_from("<i", data, 0)[0] == RUN_MAGIC:
        n = struct.unpack_from("<i", data, 28)[0]
        return n if 0 <= n <= (len(data) - 36) // 4 else 0
    if len(data) < 8:
        return 0
    n = struct.unpack_from("<i", data, 4)[0]
    return n if 0 <= n <= (len(data) - 8) // 16 else 0


class ExactDropper:
    """Drops exactly `count` datagrams, at random places, in each block."""

    def __init__(self, fraction, block, rng):
        self.count = round(fraction * block)
        self.block, self.rng, self.left = block, rng, set()
        self.position = block

    def drop(self):
        if self.position == self.block:
            self.position = 0
            self.left = set(self.rng.sample(range(self.block), self.count))
        hit = self.position in self.left
        self.position += 1
        return hit


class Route:
    def __init__(self, listen, dest, args, rng):
        self.listen, self.dest = listen, dest
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, BUFFER_BYTES)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
        self.sock.bind(listen)
        self.sock.setblocking(False)
        self.dropper = ExactDropper(args.loss, args.block, rng)
        self.out = {}  # source address -> socket that sends as that source (--spoof) or None -> one socket
        self.spoof = args.spoof
        self.counts = dict(datagrams=0, records=0, dropped=0, records_dropped=0, duplicated=0, reordered=0,
                           forwarded=0, kernel_dropped=0, other=0)

    def sender(self, source):
        key = source if self.spoof else None
        s = self.out.get(key)
        if s is None:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, BUFFER_BYTES)
            if self.spoof:
                s.setsockopt(socket.SOL_IP, IP_TRANSPARENT, 1)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(source)
            self.out[key] = s
        return s


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--route", type=parse_route, action="append", required=True,
                   metavar="LISTEN_HOST:PORT=DEST_HOST:PORT")
    p.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay")
    p.add_argument("--loss", type=float, default=0.0, help="fraction of datagrams dropped, exactly per block")
    p.add_argument("--block", type=int, default=100, help="datagrams per loss block")
    p.add_argument("--duplicate", type=float, default=0.0, help="probability a datagram is sent twice")
    p.add_argument("--reorder", type=float, default=0.0, help="probability a datagram is held back")
    p.add_argument("--reorder-ms", type=float, default=1.0, help="how long a reordered datagram is held back")
    p.add_argument("--spoof", action="store_true", help="send from the original source address (IP_TRANSPARENT)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--duration", type=float, default=0.0, help="stop after this many seconds (0: on a signal)")
    p.add_argument("--stats", required=True, help="write the counts here as JSON on exit")
    args = p.parse_args()
    if not (0 <= args.loss <= 1 and 0 <= args.duplicate <= 1 and 0 <= args.reorder <= 1):
        p.error("--loss, --duplicate and --reorder are fractions 0..1")

    rng = random.Random(args.seed)
    routes = [Route(listen, dest, args, rng) for listen, dest in args.route]
    sel = selectors.DefaultSelector()
    for r in routes:
        sel.register(r.sock, selectors.EVENT_READ, r)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    delay = args.delay_ms / 1000.0
    queue, order = [], 0  # (due, order, route, source, data)
    end = time.monotonic() + args.duration if args.duration > 0 else None
    print("relay: %d route(s), delay %.1f ms, loss %.3f, duplicate %.3f, reorder %.3f" % (
        len(routes), args.delay_ms, args.loss, args.duplicate, args.reorder), flush=True)

    while not stopping and (end is None or time.monotonic() < end):
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            _, _, r, source, data = heapq.heappop(queue)
            r.sender(source).sendto(data, r.dest)
            r.counts["forwarded"] += 1
        timeout = max(0.0, queue[0][0] - now) if queue else 0.05
        for key, _ in sel.select(min(timeout, 0.05)):
            r = key.data
            while True:
                try:
                    data, ancillary, _, source = r.sock.recvmsg(65536, socket.CMSG_SPACE(4))
                except BlockingIOError:
                    break
                for level, kind, value in ancillary:
                    if level == socket.SOL_SOCKET and kind == SO_RXQ_OVFL and len(value) >= 4:
                        r.counts["kernel_dropped"] = struct.unpack("<I", value[:4])[0]
                records = quad_records(data)
                c = r.counts
                c["datagrams"] += 1
                c["records"] += records
                c["other"] += records == 0
                if r.dropper.drop():
                    c["dropped"] += 1
                    c["records_dropped"] += records
                    continue
                due = time.monotonic() + delay
                if rng.random() < args.reorder:
                    due += args.reorder_ms / 1000.0
                    c["reordered"] += 1
                copies = 2 if rng.random() < args.duplicate else 1
                c["duplicated"] += copies - 1
                for _ in range(copies):
                    order += 1
                    heapq.heappush(queue, (due, order, r, source, data))
    # Deliver what is still in flight, so every counted datagram left.
    for due, _, r, source, data in sorted(queue):
        r.sender(source).sendto(data, r.dest)
        r.counts["forwarded"] += 1
    stats = {"delay_ms": args.delay_ms, "loss": args.loss, "duplicate": args.duplicate, "reorder": args.reorder,
             "routes": [dict(listen="%s:%d" % r.listen, dest="%s:%d" % r.dest, **r.counts) for r in routes]}
    with open(args.stats, "w") as f:
        json.dump(stats, f)
    print("relay: " + json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
