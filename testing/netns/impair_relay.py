#!/usr/bin/env python3
"""A user-space WAN between two network namespaces, for tests: forwards UDP
datagrams from LISTEN to DEST after a one-way delay, dropping, duplicating and
reordering some on the way. This kernel has no netem, so this stands in for it.

Loss is exact, not just expected: in every block of --block datagrams of a
route, exactly round(loss x block) of them, chosen at random, are dropped. A
test can then hold the receiver's reported loss to a tight tolerance without
long runs. Duplication and reordering are exact the same way, over the
datagrams a route forwards: exactly round(duplicate x block) of every block of
them are sent twice, and round(reorder x block) held back (each chosen on its
own, so one datagram may be both), so that a route that forwards only a few
hundred datagrams is still duplicated and reordered.

With --spoof the relay sends each datagram from its original source address
and port (IP_TRANSPARENT), so the receiver's sender allowlist sees the real
sender, as it would behind a router.

Step stamps (the 24-byte datagram a sender puts before a step's first
packet, docs/wire-format.md) are datagrams like the others, lost and delayed
alike, and counted apart ("stamps"): they carry no values. So are forward
error correction's parity packets ("parity"); a data datagram behind its FEC
shim counts the values of the packet inside.

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
# Datagrams read from a route before what has fallen due is forwarded: a relay
# that drained its sockets until empty would forward nothing for as long as
# datagrams came faster than it reads them (a loaded machine), and the
# receiver would see a gap in the middle of a step.
BURST = 64


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
STAMP_MAGIC = struct.unpack("<i", b"SCT\x80")[0]
STAMP_BYTES = 24
FEC_DATA_MAGIC = struct.unpack("<i", b"SCE\x80")[0]
FEC_PARITY_MAGIC = struct.unpack("<i", b"SCP\x80")[0]
FEC_HEADER_BYTES = 16
RUN_HEADER_BYTES = 36
RUN_PAYLOAD_MAX = 8972 - RUN_HEADER_BYTES  # a 9000-byte MTU's UDP payload, less the header
CODEC_NONE, CODEC_LZ4, CODEC_ZFP, CODEC_QUANT = 0, 1, 2, 3
LZ4_MAX_VALUES = 8192
QUANT_MAX_VALUES = 16384


def run_values(data):
    """Values in a run packet, by its codec (shared/packets/include/slabcast/
    run_packet.h, docs/wire-format.md "Codecs"): magic, version, codec,
    codec_parameter, step, slab, x, y, z, count, payload_bytes, then the
    payload, whose size the codec fixes (the codec byte's bit 7 marks the
    progressive order's runs): 4 x count (none), zfp's fixed rate
    (zfp), anything up to the datagram (lz4, quant). 0 when the framing is wrong."""
    if len(data) < RUN_HEADER_BYTES:
        return 0
    version, codec, parameter = struct.unpack_from("<BBH", data, 4)
    codec &= 0x7F  # bit 7: a run of the progressive order
    count, payload = struct.unpack_from("<iI", data, 28)
    if version != 1 or count < 1 or len(data) != RUN_HEADER_BYTES + payload:
        return 0
    if codec == CODEC_NONE and parameter == 0:
        fits = count <= RUN_PAYLOAD_MAX // 4 and payload == 4 * count
    elif codec == CODEC_LZ4 and parameter == 0:
        fits = count <= LZ4_MAX_VALUES and 1 <= payload <= RUN_PAYLOAD_MAX
    elif codec == CODEC_QUANT and 4 <= parameter <= 16:
        fits = count <= QUANT_MAX_VALUES and 1 <= payload <= RUN_PAYLOAD_MAX
    elif codec == CODEC_ZFP and 4 <= parameter <= 32:
        fits = (count <= RUN_PAYLOAD_MAX * 8 // (4 * parameter) * 4
                and payload == ((count + 3) // 4 * 4 * parameter + 7) // 8)
    else:
        fits = False
    return count if fits else 0


def is_stamp(data):
    """A step stamp: 24 bytes that begin with its magic."""
    return len(data) == STAMP_BYTES and struct.unpack_from("<i", data, 0)[0] == STAMP_MAGIC


def fec_magic(data):
    return struct.unpack_from("<i", data, 0)[0] if len(data) >= FEC_HEADER_BYTES else 0


def packet_values(data):
    """Values in a slabcast data packet: a quad packet's records, or a run
    packet's count whatever its codec (run_values), behind an FEC shim or
    not; 0 for anything else."""
    if fec_magic(data) == FEC_DATA_MAGIC:
        data = data[FEC_HEADER_BYTES:]
    if len(data) >= 4 and struct.unpack_from("<i", data, 0)[0] == RUN_MAGIC:
        return run_values(data)
    if len(data) < 8:
        return 0
    n = struct.unpack_from("<i", data, 4)[0]
    return n if 0 <= n <= (len(data) - 8) // 16 else 0


class ExactPicker:
    """Picks exactly `count` datagrams, at random places, in each block."""

    def __init__(self, fraction, block, rng):
        self.count = round(fraction * block)
        self.block, self.rng, self.left = block, rng, set()
        self.position = block

    def pick(self):
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
        self.dropper = ExactPicker(args.loss, args.block, rng)
        self.duplicator = ExactPicker(args.duplicate, args.block, rng)  # of the datagrams forwarded
        self.reorderer = ExactPicker(args.reorder, args.block, rng)
        self.out = {}  # source address -> socket that sends as that source (--spoof) or None -> one socket
        self.spoof = args.spoof
        self.counts = dict(datagrams=0, records=0, dropped=0, records_dropped=0, duplicated=0, reordered=0,
                           forwarded=0, kernel_dropped=0, other=0, stamps=0, parity=0)

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
    p.add_argument("--block", type=int, default=100, help="datagrams per block (loss, duplication, reordering)")
    p.add_argument("--duplicate", type=float, default=0.0,
                   help="fraction of forwarded datagrams sent twice, exactly per block")
    p.add_argument("--reorder", type=float, default=0.0,
                   help="fraction of forwarded datagrams held back, exactly per block")
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
            for _ in range(BURST):
                try:
                    data, ancillary, _, source = r.sock.recvmsg(65536, socket.CMSG_SPACE(4))
                except BlockingIOError:
                    break
                for level, kind, value in ancillary:
                    if level == socket.SOL_SOCKET and kind == SO_RXQ_OVFL and len(value) >= 4:
                        r.counts["kernel_dropped"] = struct.unpack("<I", value[:4])[0]
                stamp = is_stamp(data)  # no values, though its bytes may read as a quad packet's
                parity = fec_magic(data) == FEC_PARITY_MAGIC
                records = 0 if stamp or parity else packet_values(data)
                c = r.counts
                c["datagrams"] += 1
                c["records"] += records
                c["stamps"] += stamp
                c["parity"] += parity
                c["other"] += records == 0 and not stamp and not parity
                if r.dropper.pick():
                    c["dropped"] += 1
                    c["records_dropped"] += records
                    continue
                due = time.monotonic() + delay
                if r.reorderer.pick():
                    due += args.reorder_ms / 1000.0
                    c["reordered"] += 1
                copies = 2 if r.duplicator.pick() else 1
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
