#!/usr/bin/env python3
"""Benchmark: how well `slabcast shuffle --rate R` holds R over 1-second
windows, for R = 1, 2.81, 5, 10, 20 Gbit/s, with the library (libslabcast)
and iperf3 -b R (its own pacing) as peers in the same run. One stream of a
256^3 volume on loopback, sender and receiver each on their own core, steps
back to back for about --seconds.

Staging is as the README deploys it: a real `slabcast stage` on the sender's
core (part of the sending host), staging into a plain directory under
/dev/shm and following the controller's syncs; the run starts once it has
staged its first window, and "copies" says how many steps it copied while the
controller ran. --staging prestaged copies the steps in once before the run
instead, with no stager.

Usage: SLABCAST_BUILD=build testing/bench/pacing_accuracy.py [--rates 1G,2.81G,5G,10G,20G] [--seconds 6]
       [--wire run|quad] [--staging stager|prestaged]

For each rate: the mean over whole 1-second windows and the worst window,
both as a deviation from the target, at the shuffler (its own count) and at
the receiver (what arrived each second, from the receiver's status lines:
the gaps between steps count, and a second in which nothing arrived counts
as 0), and the receiver's loss (a burst that overran its socket buffer would
show there). The library (testing/bench/bench_sender_library: the public C++
API, one sender holding the whole volume as its slab, the values of one step
file) sends as many steps at the same rate into the same kind of receiver,
counted the same way; it sends run packets only, so with --wire quad its
columns are n/a. iperf3's figures are its sender's. Not part of the default
ctest run.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402


def deviation(windows, target):
    if not windows:
        return float("nan"), float("nan")
    mean = sum(windows) / len(windows)
    worst = max(windows, key=lambda w: abs(w - target))
    return 100.0 * (mean - target) / target, 100.0 * (worst - target) / target


def pacing(windows, target):
    """Mean Gbit/s of whole 1-second windows, its deviation and the worst window's."""
    mean_dev, worst_dev = deviation(windows, target)
    return "%8.3f %+7.2f%% %+8.2f%%" % (sum(windows) / max(len(windows), 1), mean_dev, worst_dev)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="1G,2.81G,5G,10G,20G")
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--dims", default="256,256,256")
    ap.add_argument("--wire", default="run", choices=["quad", "run"])
    ap.add_argument("--staging", default="stager", choices=sorted(benchlib.STAGING))
    ap.add_argument("--budget", help="the stager's --budget (default: its own, half the free space, which holds the "
                                     "whole 4-step dataset: no copies once staged); e.g. 128M: it copies every step")
    args = ap.parse_args()
    dims = tuple(int(v) for v in args.dims.split(","))
    data = benchlib.dataset(dims)
    step_bits = dims[0] * dims[1] * dims[2] * (16 if args.wire == "quad" else 4) * 8  # one step's packets
    rows = []
    with benchlib.RaisedSocketLimits():
        for rate in args.rates.split(","):
            target = benchlib.parse_rate(rate) / 1e9
            steps = max(3, math.ceil(args.seconds * target * 1e9 / step_bits))
            ours = benchlib.run_stream(dims, rate, steps, shuffle_args=["--wire", args.wire], staging=args.staging,
                                       budget=args.budget)
            library = benchlib.library_stream(dims, data, rate, steps) if args.wire == "run" else None
            peer = benchlib.iperf3(max(3, int(args.seconds)), rate=rate)
            rows.append((rate, target, ours, library, peer))
    print("\npacing over 1-second windows, %s in one stream of %s packets on loopback (sender cpu0, receiver cpu1), %s"
          % ("x".join(map(str, dims)), args.wire, benchlib.staging_text(args.staging, args.budget)))
    benchlib.print_provenance()
    print("%-7s | %-33s | %-42s | %-35s | %s" % ("", "slabcast shuffle --rate (sender)", "shuffle, at the receiver",
                                                 "library, at the receiver", "iperf3 -u -b (peer, sender)"))
    columns = "%8s %8s %9s" % ("mean", "mean dev", "worst dev")
    print("%-7s | %s %5s | %s %7s %6s | %s %7s | %s %3s" % ("target", columns, "n", columns, "loss %", "copies",
                                                            columns, "loss %", columns, "n"))
    for rate, target, ours, library, peer in rows:
        copies = "-" if ours["stager_copies"] is None else ours["stager_copies"]
        print("%-7s | %s %5d | %s %7.3f %6s | %s | %s %3d" % (
            rate, pacing(ours["windows"], target), len(ours["windows"]), pacing(ours["recv_windows"], target),
            ours["loss"], copies,
            "%s %7.3f" % (pacing(library["recv_windows"], target), library["loss"]) if library
            else "%-35s" % "n/a (run packets only)",
            pacing(peer["windows"][1:], target), len(peer["windows"]) - 1))  # iperf3's first interval: its start-up
    if args.staging == "stager":
        print("copies: steps the stager copied while the controller ran (0: all were staged before)")


if __name__ == "__main__":
    main()
