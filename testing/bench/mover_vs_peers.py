#!/usr/bin/env python3
"""Benchmark: `slabcast move` against a per-file peer on loopback, memory to
memory (/dev/shm both ends, so the disks are not what is measured).

Datasets: a CMIP-like tree of 10,000 small files (80% 4-64 KiB, 20% 64 KiB-
4 MiB), 100 x 10 MiB, 10 x 100 MiB and 1 x 1 GiB. Peer: rsync over TCP to an
rsync daemon (the per-file protocol without ssh's encryption, which would only
slow it), once as `rsync -a` and once as 4 rsyncs in parallel over the
top-level directories, as its users parallelise it.

Goals (issue 7): throughput on 10 MiB files >= 0.95 x on 1 GiB files; on the
small-file tree >= 3 x the best peer. Prints the table and the ratios.

    python3 testing/bench/mover_vs_peers.py [--keep]
"""

import os
import random
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from slabcast_testlib import SLABCAST, wait_for  # noqa: E402

BASE = "/dev/shm/slabcast-bench-mover"
MIB = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write(path, size, rng):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 4 * MIB)
            f.write(rng.randbytes(n))
            left -= n


def make_datasets():
    rng = random.Random(11)
    sets = {}
    small = os.path.join(BASE, "src", "small")
    if not os.path.exists(small):
        for i in range(10_000):
            size = rng.randrange(4096, 65536) if rng.random() < 0.8 else int(65536 * 64 ** rng.random())
            write(os.path.join(small, "v%02d" % (i % 50), "tas_%05d.nc" % i), size, rng)
    sets["small"] = small
    for name, size, count in (("f10m", 10 * MIB, 100), ("f100m", 100 * MIB, 10), ("f1g", 1024 * MIB, 1)):
        path = os.path.join(BASE, "src", name)
        if not os.path.exists(path):
            for i in range(count):
                write(os.path.join(path, "d%02d" % (i % 10), "file_%03d.bin" % i), size, rng)
        sets[name] = path
    return sets


def tree_bytes(path):
    total = files = 0
    for root, _, names in os.walk(path):
        for n in names:
            total += os.path.getsize(os.path.join(root, n))
            files += 1
    return total, files


def clear(path):
    """Empties the destination (the server keeps its root directory open)."""
    os.makedirs(path, exist_ok=True)
    for name in os.listdir(path):
        shutil.rmtree(os.path.join(path, name), ignore_errors=True)


def timed(cmd_lists, cwd=None):
    """Runs the commands side by side; seconds until the last ends."""
    t0 = time.monotonic()
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd)
             for c in cmd_lists]
    for p, c in zip(procs, cmd_lists):
        _, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError("%s failed: %s" % (" ".join(c), err[-2000:]))
    return time.monotonic() - t0


def main():
    keep = "--keep" in sys.argv
    sets = make_datasets()
    dst = os.path.join(BASE, "dst")
    clear(dst)
    port, rport = free_port(), free_port()
    serve = subprocess.Popen([SLABCAST, "serve", "--root", dst, "--listen", "127.0.0.1", "--port", str(port),
                              "--writers", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conf = os.path.join(BASE, "rsyncd.conf")
    with open(conf, "w") as f:
        f.write("use chroot = no\nuid = root\ngid = root\n[dst]\npath = %s\nread only = no\n" % dst)
    rsyncd = subprocess.Popen(["rsync", "--daemon", "--no-detach", "--config", conf, "--address", "127.0.0.1",
                               "--port", str(rport)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    rows = {}
    try:
        for name, src in sets.items():
            size, files = tree_bytes(src)
            clear(dst)
            t_move = timed([[SLABCAST, "move", "--port", str(port), "--progress", "none", "--streams", "4",
                             "--readers", "2", src, "127.0.0.1:"]])
            clear(dst)
            t_rsync = timed([["rsync", "-a", src, "rsync://127.0.0.1:%d/dst/" % rport]])
            clear(dst)
            tops = sorted(os.path.join(src, d) for d in os.listdir(src))
            groups = [tops[i::4] for i in range(4)]
            t_rsync4 = timed([["rsync", "-a", "--relative"] + [os.path.relpath(p, os.path.dirname(src)) for p in g]
                              + ["rsync://127.0.0.1:%d/dst/" % rport] for g in groups if g],
                             cwd=os.path.dirname(src)) if len(tops) > 1 else None
            clear(dst)
            rows[name] = (size, files, t_move, t_rsync, t_rsync4)
    finally:
        serve.terminate()
        rsyncd.terminate()
        serve.wait()
        rsyncd.wait()
        if not keep:
            shutil.rmtree(BASE, ignore_errors=True)

    gbps = lambda size, t: size * 8e-9 / t  # noqa: E731
    print("%-6s %9s %6s | %14s | %14s | %14s | %s" % ("set", "MiB", "files", "slabcast move", "rsync -a",
                                                     "4 x rsync -a", "move / best peer"))
    for name, (size, files, tm, tr, tr4) in rows.items():
        best = min(t for t in (tr, tr4) if t)
        print("%-6s %9.0f %6d | %6.2f s %5.2f | %6.2f s %5.2f | %s | %.2f" % (
            name, size / MIB, files, tm, gbps(size, tm), tr, gbps(size, tr),
            "%6.2f s %5.2f" % (tr4, gbps(size, tr4)) if tr4 else "%14s" % "-", best / tm))
    r10 = gbps(rows["f10m"][0], rows["f10m"][2]) / gbps(rows["f1g"][0], rows["f1g"][2])
    small = rows["small"]
    r_small = min(t for t in small[3:] if t) / small[2]
    print("(Gbit/s after each time; %s cores)" % os.cpu_count())
    print("10 MiB files vs 1 GiB file, slabcast move: %.2f (goal >= 0.95)" % r10)
    print("small-file tree, slabcast move vs best per-file peer: %.2fx (goal >= 3)" % r_small)


if __name__ == "__main__":
    main()
