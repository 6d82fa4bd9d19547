#!/usr/bin/env python3
"""Benchmark: voxels a second delivered into the slab by each data packet
format, the paper's quad packets (16 bytes a value; Balman et al., 2012,
section 4.2) against run packets (4 bytes a value) and their codecs (lz4,
zfp:8), with the library (libslabcast) and iperf3 as peers in the same run.

One stream of a 256^3 cosmology volume on loopback, the shuffler on cpu0 and
the receiver on cpu1, steps back to back. Staging is as the README deploys it:
a real `slabcast stage` on cpu0 beside the shuffler (part of the sending
host), staging into a plain directory under /dev/shm and following the
controller's syncs; the run starts once it has staged its first window, and
the "copies" column says how many steps it copied while the controller ran
(0: every step came from memory already staged). --staging prestaged copies
the steps in once before the run instead, with no stager.

Each format is run at the highest rate at which the receiver loses under
0.1% of the values (of every step sent: a step lost whole, with no report
from the receiver, counts): unpaced first, then at 90% of what arrived (the
bytes the receiver took in over its window), until the loss is under 0.1%.
Voxels a second count every value placed in the slab over the receiver's
wall clock, from the first packet's arrival to the last's
(benchlib.ReceiveWindow), so the time between steps counts; "wire Gb/s" is
the bytes sent over the same window.

A format is WIRE[/CODEC][+copy][@ORDER]: "+copy" runs the receiver with
`--land false`, so that every payload is copied from the receiver's buffer
into the slab (the peer for payloads landing straight in the slab); "@ORDER"
sends in that order (shuffle --order; default scan): run@progressive against
run is the progressive order's store rate against scan order's, landing and
all, as a receiver takes them.

The peers, when "run" (scan order, codec none) is among the formats: the
library (testing/bench/bench_sender_library: the public C++ API, one sender
holding the whole volume as its slab, run packets, codec none, the values of
one step file) into the same receiver, unpaced and at run's rate, counted the
same way, with the staged shuffler's voxels a second against it; and iperf3
sending as many bytes as run packets took.

Usage: SLABCAST_BUILD=build testing/bench/wire_formats.py [--dims 256,256,256] [--steps 8]
       [--formats quad,run,run+copy,run/lz4,run/zfp:8] [--staging stager|prestaged]
Not part of the default ctest run.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402

LOSS_LIMIT = 0.1  # percent


def shuffle_args(fmt):
    fmt, _, order = fmt.partition("@")
    wire, _, codec = fmt.partition("+")[0].partition("/")
    return ["--wire", wire] + (["--codec", codec] if codec else []) + ["--order", order or "scan"]


def receive_args(fmt):
    return ["--land", "false"] if fmt.partition("@")[0].endswith("+copy") else []


def wire_gbps(r):
    """The bytes sent over the receiver's window (benchlib.ReceiveWindow)."""
    return r["sent_bytes"] * 8e-9 / r["window_seconds"]


def run_format(dims, fmt, rate, steps, staging, budget=None):
    """Steps back to back at `rate`: benchlib.run_stream's figures, and wire_gbps()."""
    r = benchlib.run_stream(dims, rate, steps, receive_args(fmt), shuffle_args(fmt), staging=staging, budget=budget)
    return dict(r, wire_gbps=wire_gbps(r))


def best_rate(dims, fmt, steps, staging, budget=None, tries=6):
    """The first run under LOSS_LIMIT: unpaced, then 90% of what arrived
    (benchlib.received()'s placed_gbps)."""
    rate, runs = "0", []
    for _ in range(tries):
        r = run_format(dims, fmt, rate, steps, staging, budget)
        r["rate"] = rate
        runs.append(r)
        print("  %-10s --rate %-6s %9.1f Mvoxel/s, wire %6.2f Gbit/s, loss %7.3f%%" % (
            fmt, rate, r["voxels_per_s"] * 1e-6, r["wire_gbps"], r["loss"]), flush=True)
        if r["loss"] < LOSS_LIMIT:
            return r, runs
        rate = "%.2fG" % (0.9 * r["placed_gbps"])
    return None, runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="256,256,256")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--formats", default="quad,run,run+copy,run/lz4,run/zfp:8")
    ap.add_argument("--staging", default="stager", choices=sorted(benchlib.STAGING))
    ap.add_argument("--budget", help="the stager's --budget (default: its own, half the free space, which holds the "
                                     "whole 4-step dataset: no copies once staged); e.g. 128M: it copies every step")
    args = ap.parse_args()
    dims = tuple(int(v) for v in args.dims.split(","))
    data = benchlib.dataset(dims)
    best = {}
    with benchlib.RaisedSocketLimits():
        for fmt in args.formats.split(","):
            best[fmt], _ = best_rate(dims, fmt, args.steps, args.staging, args.budget)
        run = best.get("run")
        library, peer = {}, None
        if run:
            # The library sending the same slab, unpaced and at run's rate (once when that is unpaced).
            for rate in dict.fromkeys(("0", run["rate"])):
                library[rate] = benchlib.library_stream(dims, data, rate, args.steps)
            # iperf3 sending as many bytes as run packets took, unpaced and at run's rate.
            peer = [benchlib.iperf3(60, rate=rate, length=8968, total_bytes=int(run["sent_bytes"]))
                    for rate in ("0", run["rate"])]

    print("\nvoxels a second into the slab, %s in one stream on loopback (sender cpu0, receiver cpu1), %s, "
          "steps back to back, loss < %.1f%%, counted at the receiver over its first-to-last-packet window"
          % ("x".join(map(str, dims)), benchlib.staging_text(args.staging, args.budget), LOSS_LIMIT))
    benchlib.print_provenance()
    quad = best.get("quad")
    print("%-16s %8s %11s %10s %8s %9s %8s %9s %9s %7s" % ("format", "rate", "Mvoxel/s", "wire Gb/s", "loss %",
                                                             "packets", "landed", "vs quad", "vs scan", "copies"))
    for fmt, r in best.items():
        if r is None:
            print("%-10s no rate with loss under %.1f%%" % (fmt, LOSS_LIMIT))
            continue
        # An @ORDER format against the same format in scan order, run in this script.
        scan = best.get(fmt.partition("@")[0]) if "@" in fmt else None
        print("%-16s %8s %11.1f %10.2f %8.3f %9d %7.0f%% %8.2fx %8s %7s" % (
            fmt, r["rate"], r["voxels_per_s"] * 1e-6, r["wire_gbps"], r["loss"], r["packets"], 100 * r["landed"],
            r["voxels_per_s"] / quad["voxels_per_s"] if quad else float("nan"),
            "%.2fx" % (r["voxels_per_s"] / scan["voxels_per_s"]) if scan else "",
            "-" if r["stager_copies"] is None else r["stager_copies"]))
    if args.staging == "stager":
        print("copies: steps the stager copied while the controller ran (0: all were staged before)")
    if library:
        print("the library (bench_sender_library: libslabcast's C++ API, run packets, codec none, the same slab), "
              "%d steps into the same receiver, counted the same way:" % args.steps)
        for rate, r in library.items():
            print("  --rate %-6s %9.1f Mvoxel/s, wire %6.2f Gbit/s, loss %7.3f%%; run (shuffler) / library %.2fx"
                  % (rate, r["voxels_per_s"] * 1e-6, wire_gbps(r), r["loss"], run["voxels_per_s"] / r["voxels_per_s"]))
    if peer:
        for p, how in zip(peer, ("unpaced", "at run's rate %s" % run["rate"])):
            print("iperf3 -u -l 8968, the same %d bytes %s: sent %.2f Gbit/s, received %.2f, loss %.3f%%"
                  % (run["sent_bytes"], how, p["sent_gbps"], p["recv_gbps"], p["loss"]))


if __name__ == "__main__":
    main()
