#!/usr/bin/env python3
"""Benchmark: one slabcast stream (shuffler -> receiver, stores into /dev/shm
included) on loopback, one core per side, against iperf3 UDP with 8972-byte
datagrams run by this same script on the same cores.

Usage: SLABCAST_BUILD=build testing/bench/loopback_vs_iperf3.py [--rate 26G] [--steps 24] [--dims 256,256,256]

Runs slabcast unpaced (what the receiver can take when flooded) and paced at
--rate (the rate to hold with no loss), then iperf3 -b 0. Prints a table and
the ratio of the best slabcast received rate with < 0.1% loss to iperf3's.
Not part of the default ctest run: timings vary with the host.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", default="26G", help="paced shuffler rate")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--dims", default="256,256,256")
    ap.add_argument("--receive-args", default="", help="more options for slabcast receive, e.g. '--batch 8'")
    ap.add_argument("--seconds", type=int, default=5, help="iperf3 run length")
    args = ap.parse_args()
    dims = tuple(int(v) for v in args.dims.split(","))
    with benchlib.RaisedSocketLimits():
        runs = [("slabcast unpaced", benchlib.run_stream(dims, "0", args.steps, receive_args=args.receive_args.split())),
                ("slabcast --rate " + args.rate,
                 benchlib.run_stream(dims, args.rate, args.steps, receive_args=args.receive_args.split()))]
        peer = benchlib.iperf3(args.seconds)
    print("\nloopback, sender on cpu0, receiver on cpu1, %s in one stream, stores into /dev/shm included;"
          % "x".join(map(str, dims)))
    print("8968-byte quad packets vs 8972-byte iperf3 datagrams")
    print("%-34s %10s %10s %8s" % ("", "sent Gb/s", "recv Gb/s", "loss %"))
    for name, r in runs:
        print("%-34s %10.2f %10.2f %8.3f" % (name, r["sent_gbps"], r["recv_gbps"], r["loss"]))
    print("%-34s %10.2f %10.2f %8.3f" % ("iperf3 -u -b 0 -l 8972 -w 64M", peer["sent_gbps"], peer["recv_gbps"],
                                          peer["loss"]))
    clean = [r["recv_gbps"] for _, r in runs if r["loss"] < 0.1]
    print("ratio slabcast/iperf3 received, unpaced: %.2f; best with < 0.1%% loss: %s"
          % (runs[0][1]["recv_gbps"] / peer["recv_gbps"],
             "%.2f" % (max(clean) / peer["recv_gbps"]) if clean else "none under 0.1% loss"))


if __name__ == "__main__":
    main()
