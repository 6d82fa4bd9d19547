#!/usr/bin/env python3
"""Benchmark: how fast one shuffler sends on one core, against the iperf3 UDP
sender on the same core in the same run. Each sends unpaced from cpu0 to a
receiver on cpu1 that is not the bottleneck (slabcast receive, which must see
no loss, and iperf3's own server). On loopback the kernel's delivery work runs
on the sender's core for both, so the table also gives the sender core's busy
time and the rate per busy core. iperf3 3.12 sends one datagram a system call
(no UDP GSO); the shuffler hands the kernel 7 packets a message (GSO), so the
raw GSO/GRO pair (testing/bench/udp_gso_pair.cpp: the same offloads, no
packing) is the like-with-like peer, printed beside it.

Usage: SLABCAST_BUILD=build testing/bench/sender_vs_iperf3.py [--steps 24] [--seconds 5]
Not part of the default ctest run.
"""
import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402


class CpuBusy:
    """Busy fraction of one CPU between start and stop, from /proc/stat."""

    def __init__(self, cpu):
        self.cpu = "cpu%d" % cpu

    def sample(self):
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith(self.cpu + " "):
                    v = [int(x) for x in line.split()[1:9]]
                    return sum(v), v[3] + v[4]  # total, idle + iowait
        raise RuntimeError("no %s in /proc/stat" % self.cpu)

    def __enter__(self):
        self.start = self.sample()
        return self

    def __exit__(self, *exc):
        end = self.sample()
        total, idle = end[0] - self.start[0], end[1] - self.start[1]
        self.busy = (total - idle) / float(max(total, 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--dims", default="256,256,256")
    args = ap.parse_args()
    dims = tuple(int(v) for v in args.dims.split(","))
    rows = []
    with benchlib.RaisedSocketLimits():
        for order, huge in (("scan", True), ("scan", False), ("morton", True)):
            with CpuBusy(benchlib.SENDER_CPU) as busy:
                r = benchlib.run_stream(dims, "0", args.steps, shuffle_args=["--order", order], staging="prestaged",
                                       huge_pages=huge)
            # The run includes ~1.5 s of start-up and shutdown on an idle sender core.
            pages = "huge pages" if r["huge_staging"] else "4 KiB pages"
            rows.append(("slabcast shuffle, %s, %s" % (order, pages), r["sent_gbps"], r["loss"], busy.busy))
        with CpuBusy(benchlib.SENDER_CPU) as busy:
            p = benchlib.iperf3(args.seconds)
        rows.append(("iperf3 -u -b 0 -l 8972", p["sent_gbps"], p["loss"], busy.busy))
        with CpuBusy(benchlib.SENDER_CPU) as busy:
            g = benchlib.gso_pair(args.seconds)
        rows.insert(-1, ("GSO/GRO pair (raw, no packing)", g["sent_gbps"], g["loss"], busy.busy))
    print("\nsender alone: unpaced, cpu0 -> receiver on cpu1 (loopback), %s" % "x".join(map(str, dims)))
    benchlib.print_provenance()
    print("%-40s %10s %8s %14s %9s %9s" % ("", "sent Gb/s", "loss %", "cpu0 busy (run)", "vs iperf3", "vs pair"))
    for name, gbps, loss, b in rows:
        print("%-40s %10.2f %8.3f %13.0f%% %8.2fx %8.2fx" % (name, gbps, loss, 100 * b, gbps / rows[-1][1],
                                                            gbps / rows[-2][1]))


if __name__ == "__main__":
    main()
