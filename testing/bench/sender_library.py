#!/usr/bin/env python3
"""Benchmark: what libslabcast costs a simulation's rank, and whether it sends
as fast as `slabcast shuffle` does the same slab.

One stream of a 256^3 slab (the whole 256^3 cosmology volume as one rank's
slab, run packets, codec none) into a real `slabcast receive` on loopback
(receiver on cpu1, sender on cpu0), steps back to back:
  - the peer: `slabcast shuffle` sending the step files a real `slabcast
    stage` staged in plain /dev/shm, as the README deploys it (both synced by
    `slabcast control`; benchlib.run_stream), rate from its own step records:
    packet bytes over the time from a step's first batch to its last;
  - the library, synchronous (send_step returns once the step is sent) and
    queued (2 buffers, block: send_step copies and returns; the library's
    thread sends), through testing/bench/bench_sender_library (the public C++
    API; benchlib.library_stream), sending the values of one step file of the
    same dataset; rate: packet bytes over the time spent sending, counted the
    same way.
Both unpaced and paced at --rate; paced, also a queued sender whose caller
computes --compute-ms between steps (longer than a step's sending), so that
send_step costs it only the copy into the queue. Prints the caller's time per
send_step (median and max) and each sender's Gbit/s against the shuffler's.

Usage: SLABCAST_BUILD=build testing/bench/sender_library.py [--steps 8] [--rate 5G] [--compute-ms 150]
Not part of the default ctest run.
"""
import argparse
import statistics

import benchlib

DIMS = (256, 256, 256)


def shuffle_peer(rate, steps):
    r = benchlib.run_stream(DIMS, rate, steps)
    return {"gbps": r["sent_gbps"], "loss": r["loss"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--rate", default="5G", help="the paced rate, besides unpaced")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--compute-ms", type=float, default=150, help="the simulation's time between steps, queued run")
    args = ap.parse_args()
    data = benchlib.dataset(DIMS)
    rows = []
    with benchlib.RaisedSocketLimits():
        for rate in ("0", args.rate):
            for rep in range(args.repeat):  # the tools alternate, so that drift hits each alike
                peer = shuffle_peer(rate, args.steps)
                sync = benchlib.library_stream(DIMS, data, rate, args.steps, queue=0)
                queued = benchlib.library_stream(DIMS, data, rate, args.steps, queue=2)
                # A simulation computing longer than a step takes to send: the queue has
                # room, and send_step costs the caller only the copy.
                computing = (benchlib.library_stream(DIMS, data, rate, args.steps, queue=2, compute_ms=args.compute_ms)
                             if rate != "0" else None)
                rows.append((rate, rep, peer, sync, queued, computing))
                print("  rate %-4s: shuffle %.2f Gbit/s, library sync %.2f, queued %.2f" % (
                    rate, peer["gbps"], sync["gbps"], queued["gbps"]), flush=True)
    print("\nlibslabcast against `slabcast shuffle`, one 256^3 slab (64 MiB a step) in run packets, loopback, "
          "%d steps back to back" % args.steps)
    print("%-6s %-18s %10s %9s %14s %12s %8s" % ("rate", "sender", "Gbit/s", "vs shuffle", "call median ms",
                                                "call max ms", "loss %"))
    for rate, rep, peer, sync, queued, computing in rows:
        print("%-6s %-18s %10.2f %9s %14s %12s %8.3f" % (rate, "shuffle (staged)", peer["gbps"], "1.00x", "-", "-",
                                                       peer["loss"]))
        for name, r in (("library sync", sync), ("library queue 2", queued), ("queue 2, computing", computing)):
            if r is None:
                continue
            print("%-6s %-18s %10.2f %8.2fx %14.2f %12.2f %8.3f" % (
                rate, name, r["gbps"], r["gbps"] / peer["gbps"], r["call_median_ms"], r["call_max_ms"], r["loss"]))
    for rate in ("0", args.rate):
        ratios = [s["gbps"] / p["gbps"] for r, _, p, s, _, _ in rows if r == rate]
        print("rate %s: library sync / shuffle median %.3f" % (rate, statistics.median(ratios)))


if __name__ == "__main__":
    main()
