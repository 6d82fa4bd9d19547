#!/usr/bin/env python3
"""Benchmark: step latency, from the controller's sync to the step published
(whole, readers may show it) in every one of the receiver's slabs, for 256^3
and 512^3 volumes in 8 streams on loopback (8 shufflers on cpu0, the
receiver's 8 threads on cpu1; unpaced, or each stream paced at --rate / 8),
in each data packet format and codec.

Usage: SLABCAST_BUILD=build testing/bench/step_latency.py [--sizes 256,512] [--steps 4]
       [--formats quad,run,run/lz4,run/zfp:8] [--rate 0]

The controller stamps each sync in its --stats-json; the receiver stamps each
publication (CLOCK_REALTIME, in the slab's publication record), which this
script reads every ~0.5 ms. The floor for comparison is the step's packet
bytes at the link's capacity, measured apart from slabcast: paced, the rate
the streams are paced at; unpaced, the raw UDP ceiling of these two cores
measured by this script before the runs (testing/bench/udp_gso_pair.cpp: GSO
sender on cpu0, GRO receiver on cpu1, counting bytes only). Not the rate of
the same run, which would make a slow run its own excuse. Not part of the
default ctest run.
"""
import argparse
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402
from benchlib import lib  # noqa: E402

STREAMS = 8


def watch(slab_paths, steps_wanted, deadline):
    """step -> realtime when every slab had published the step (the receiver's
    own CLOCK_REALTIME stamp in each buffer's publication record)."""
    per_slab = [dict() for _ in slab_paths]
    while time.monotonic() < deadline:
        for seen, path in zip(per_slab, slab_paths):
            for p in lib.read_slab_header(path)["publications_of"]:
                if p["published"]:
                    seen.setdefault(p["step"], p["published_ns"] / 1e9)
        done = set.intersection(*(set(seen) for seen in per_slab))
        if len(done) >= steps_wanted:
            break
        time.sleep(0.0005)
    return {step: max(seen[step] for seen in per_slab) for step in set.intersection(*(set(s) for s in per_slab))}


def per_stream(rate):
    """Each stream's share of the aggregate --rate ("0": unpaced)."""
    return "0" if rate == "0" else "%.6gG" % (benchlib.parse_rate(rate) / STREAMS / 1e9)


def shuffle_args(fmt):
    wire, _, codec = fmt.partition("/")
    return ["--wire", wire] + (["--codec", codec] if codec else [])


def run(n, steps, fmt, rate):
    dims = (n, n, n)
    depth = n // STREAMS
    with benchlib.workspace("latency") as ws:
        data = benchlib.dataset(dims, steps=steps)
        ports, _ = benchlib.start_receiver(ws, dims, STREAMS, depth)
        benchlib.prestage(ws, data)
        sync_ports, shuffle_json = benchlib.start_shufflers(ws, data, depth, ports, per_stream(rate), shuffle_args(fmt))
        time.sleep(1.5)
        control_json = os.path.join(ws.dir, "control.json")
        slabs = [os.path.join(ws.shm, "bench.slab%d" % k) for k in range(STREAMS)]
        result = {}
        watcher = threading.Thread(target=lambda: result.update(watch(slabs, steps, time.monotonic() + 300)))
        watcher.start()
        benchlib.control(ws, data, sync_ports, steps, extra=["--stats-json", control_json])
        watcher.join()
        syncs = {e["step"]: e["time"] for e in lib.read_json_lines(control_json) if e.get("kind") == "sync"}
        latencies = [result[s] - syncs[s] for s in syncs if s in result]
        sent = [e for path in shuffle_json for e in lib.read_json_lines(path)
                if e.get("kind") == "step" and e.get("result") == "finished"]
        # Aggregate rate: all streams' bytes of a step over the step's wall time.
        by_step = {}
        for e in sent:
            by_step.setdefault(e["step"], []).append(e)
        rates = [sum(x["gbps"] * x["seconds"] for x in v) / max(x["seconds"] for x in v) for v in by_step.values()]
        for role in reversed(ws.roles):
            role.stop()
        # The step's packet bytes in this format, as the shufflers counted them.
        step_gbit = statistics.median(sum(x["gbps"] * x["seconds"] for x in v) for v in by_step.values())
        return {"latencies": latencies, "gbps": statistics.median(rates), "step_gbit": step_gbit,
                "missed": steps - len(latencies)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256,512")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--formats", default="quad,run,run/lz4,run/zfp:8")
    ap.add_argument("--rate", default="0", help="aggregate rate of the 8 streams, e.g. 20G (default 0: unpaced)")
    ap.add_argument("--seconds", type=int, default=5, help="length of the raw ceiling's run (unpaced)")
    args = ap.parse_args()
    def ceiling():
        with benchlib.RaisedSocketLimits():
            return benchlib.gso_pair(args.seconds)["recv_gbps"] if args.rate == "0" else None

    raw = [ceiling()]
    rows = [(n, fmt, run(n, args.steps, fmt, args.rate)) for n in (int(v) for v in args.sizes.split(","))
            for fmt in args.formats.split(",")]
    raw.append(ceiling())
    if args.rate == "0":
        # The ceiling is the better of its runs before and after: on a shared host the worse one is the noise.
        floor_gbps, floor_is = max(raw), ("the raw UDP ceiling of cpu0 -> cpu1, the better of %.2f before and "
                                          "%.2f after the runs (GSO/GRO pair, counting bytes only)" % tuple(raw))
    else:
        floor_gbps, floor_is = benchlib.parse_rate(args.rate) / 1e9, "the paced rate, %s in all" % args.rate
    print("\nstep latency: sync -> published in every slab, %d streams on loopback (8 shufflers on cpu0, receiver on cpu1), %s"
          % (STREAMS, "unpaced" if args.rate == "0" else "paced at %s in all" % args.rate))
    print("floor: the step's packet bytes at %.2f Gbit/s, %s; the rate column is the run's own aggregate rate"
          % (floor_gbps, floor_is))
    benchlib.print_provenance()
    print("%-8s %-10s %6s %10s %10s %10s %9s %9s %10s %7s %9s" % (
        "volume", "format", "steps", "median ms", "min ms", "max ms", "MB/step", "floor ms", "run Gb/s",
        "/floor", "vs quad"))
    quad = {n: statistics.median(r["latencies"]) for n, fmt, r in rows if fmt == "quad" and r["latencies"]}
    for n, fmt, r in rows:
        lat = r["latencies"]
        if not lat:
            print("%-8s %-10s no step published" % ("%d^3" % n, fmt))
            continue
        floor = r["step_gbit"] / floor_gbps * 1e3
        print("%-8s %-10s %6d %10.1f %10.1f %10.1f %9.1f %9.1f %10.1f %7.2f %9s%s"
              % ("%d^3" % n, fmt, len(lat), 1e3 * statistics.median(lat), 1e3 * min(lat), 1e3 * max(lat),
                 r["step_gbit"] * 1e3 / 8, floor, r["gbps"], 1e3 * statistics.median(lat) / floor,
                 "%.2fx" % (quad[n] / statistics.median(lat)) if n in quad else "-",
                 "" if not r["missed"] else "  (%d step(s) never reached 99.9%%)" % r["missed"]))


if __name__ == "__main__":
    main()
