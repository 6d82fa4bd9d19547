#!/usr/bin/env python3
"""Benchmark: how well `slabcast shuffle --rate R` holds R over 1-second
windows, for R = 1, 2.81, 5, 10, 20 Gbit/s, with iperf3 -b R (its own pacing)
as the peer in the same run. One stream of a 256^3 volume on loopback, sender
and receiver each on their own core, steps back to back for about --seconds.

Usage: SLABCAST_BUILD=build testing/bench/pacing_accuracy.py [--rates 1G,2.81G,5G,10G,20G] [--seconds 6]
       [--wire quad|run]

For each run: the mean over whole 1-second windows, the worst window, both as
a deviation from the target, at the sender and at the receiver (what arrived
each second, the gaps between steps included), and the receiver's loss (a
burst that overran its socket buffer would show there). Not part of the
default ctest run.
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="1G,2.81G,5G,10G,20G")
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--dims", default="256,256,256")
    ap.add_argument("--wire", default="quad", choices=["quad", "run"])
    args = ap.parse_args()
    dims = tuple(int(v) for v in args.dims.split(","))
    step_bits = dims[0] * dims[1] * dims[2] * (16 if args.wire == "quad" else 4) * 8  # one step's packets
    rows = []
    with benchlib.RaisedSocketLimits():
        for rate in args.rates.split(","):
            target = benchlib.parse_rate(rate) / 1e9
            steps = max(3, math.ceil(args.seconds * target * 1e9 / step_bits))
            ours = benchlib.run_stream(dims, rate, steps, shuffle_args=["--wire", args.wire])
            peer = benchlib.iperf3(max(3, int(args.seconds)), rate=rate)
            rows.append((rate, target, ours, peer))
    print("\npacing over 1-second windows, %s in one stream of %s packets on loopback (sender cpu0, receiver cpu1)"
          % ("x".join(map(str, dims)), args.wire))
    print("%-7s | %-34s | %-34s | %-30s" % ("", "slabcast shuffle --rate (sender)", "at the receiver",
                                             "iperf3 -u -b (peer, sender)"))
    print("%-7s | %8s %8s %9s %5s | %8s %8s %9s %7s | %8s %8s %9s %3s" % (
        "target", "mean", "mean dev", "worst dev", "n", "mean", "mean dev", "worst dev", "loss %",
        "mean", "mean dev", "worst dev", "n"))
    for rate, target, ours, peer in rows:
        om, ow = deviation(ours["windows"], target)
        rm, rw = deviation(ours["recv_windows"], target)
        pm, pw = deviation(peer["windows"][1:], target)  # iperf3's first interval includes its start-up
        mean = lambda w: sum(w) / max(len(w), 1)  # noqa: E731
        print("%-7s | %8.3f %+7.2f%% %+8.2f%% %5d | %8.3f %+7.2f%% %+8.2f%% %7.3f | %8.3f %+7.2f%% %+8.2f%% %3d"
              % (rate, mean(ours["windows"]), om, ow, len(ours["windows"]), mean(ours["recv_windows"]), rm, rw,
                 ours["loss"], mean(peer["windows"][1:]), pm, pw, len(peer["windows"]) - 1))

if __name__ == "__main__":
    main()
