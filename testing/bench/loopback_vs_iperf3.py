#!/usr/bin/env python3
"""Benchmark: one slabcast stream (shuffler -> receiver, stores into /dev/shm
included) on loopback, one core per side, against iperf3 UDP with 8972-byte
datagrams and against the raw GSO/GRO socket pair, all run by this same script
on the same cores, in alternating order, --repeats times.

Usage: SLABCAST_BUILD=build testing/bench/loopback_vs_iperf3.py [--rate 26G] [--steps 24]
       [--dims 256,256,256] [--wire quad] [--repeats 3] [--seconds 5]

Every received rate is counted the same way, at the receiver, as iperf3
counts its own: bytes of the datagrams the receiver took in over its
wall-clock window, from the first datagram's arrival to the last (slabcast:
benchlib.ReceiveWindow, the bytes all stored into slabs; iperf3: its server's
sum_received; the pair: its receiver thread). So gaps between slabcast's steps
count against it.

iperf3 3.12 (Debian 12) sends and receives one datagram per system call,
without UDP GSO or GRO; slabcast's shuffler and receiver use both. The pair
(testing/bench/udp_gso_pair.cpp) uses them too and does nothing else: it is
the ceiling of the socket path here, and slabcast's share of it is what its
packing and placing cost. Not part of the default ctest run.
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", default="26G", help="paced shuffler rate")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--dims", default="256,256,256")
    ap.add_argument("--wire", default="quad", help="data packets: quad (8968-byte packets, as iperf3's datagrams) or run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--receive-args", default="", help="more options for slabcast receive, e.g. '--batch 8'")
    ap.add_argument("--seconds", type=int, default=5, help="iperf3 and pair run length")
    args = ap.parse_args()
    dims = tuple(int(v) for v in args.dims.split(","))
    stream = dict(receive_args=args.receive_args.split(), shuffle_args=["--wire", args.wire])
    tools = [("slabcast unpaced", lambda: benchlib.run_stream(dims, "0", args.steps, **stream)),
             ("slabcast --rate " + args.rate, lambda: benchlib.run_stream(dims, args.rate, args.steps, **stream)),
             ("iperf3 -u -b 0 -l 8972 -w 64M", lambda: benchlib.iperf3(args.seconds)),
             ("GSO/GRO pair (raw ceiling)", lambda: benchlib.gso_pair(args.seconds))]
    results = {name: [] for name, _ in tools}
    with benchlib.RaisedSocketLimits():
        for r in range(args.repeats):
            for name, run in (tools if r % 2 == 0 else list(reversed(tools))):
                results[name].append(run())

    print("\nloopback, sender on cpu0, receiver on cpu1, %s in one stream of %s packets, stores into /dev/shm included"
          % ("x".join(map(str, dims)), args.wire))
    print("received = bytes taken in by the receiver / its first-to-last-datagram window, for every row;")
    print("iperf3 3.12 runs without UDP GSO/GRO (one datagram a system call); slabcast and the pair use both")
    benchlib.print_provenance()
    print("%-32s %-40s %-40s %s" % ("", "sent Gb/s (each run)", "received Gb/s (each run)", "loss % (each run)"))
    for name, runs in results.items():
        # slabcast's receiver, or the peer's own.
        received = [x["placed_gbps"] if "placed_gbps" in x else x["recv_gbps"] for x in runs]
        print("%-32s %-40s %-40s %s" % (name, " ".join("%.2f" % x["sent_gbps"] for x in runs),
                                        " ".join("%.2f" % v for v in received),
                                        " ".join("%.3f" % x["loss"] for x in runs)))
        for k, x in enumerate(runs):
            if x.get("not_placed"):
                print("  (run %d: %d packets rejected, stale or duplicate: not all received bytes were placed)"
                      % (k + 1, x["not_placed"]))
    peers = {"iperf3": results[tools[2][0]], "the GSO/GRO pair": results[tools[3][0]]}
    print("received rate ratios, each slabcast run against the peer's run of the same repetition:")
    for name, _ in tools[:2]:
        for peer_name, peer in peers.items():
            ratios = [s["placed_gbps"] / p["recv_gbps"] for s, p in zip(results[name], peer)]
            clean = [v for v, s in zip(ratios, results[name]) if s["loss"] < 0.1]
            print("  %s / %s: median %.2f, range %.2f-%.2f; %s" % (
                name, peer_name, statistics.median(ratios), min(ratios), max(ratios),
                "runs with < 0.1%% loss: %s" % " ".join("%.2f" % v for v in clean) if clean
                else "no run under 0.1% loss"))


if __name__ == "__main__":
    main()
