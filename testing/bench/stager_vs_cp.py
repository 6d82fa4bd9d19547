#!/usr/bin/env python3
"""Benchmark: `slabcast stage` copying a dataset's steps from the page cache
into a /dev/shm staging directory, against `cp` and `dd bs=16M` copying the
same files into a /dev/shm directory, each pinned to cpu0, in alternating
order, --repeats times.

Usage: SLABCAST_BUILD=build testing/bench/stager_vs_cp.py [--dims 512,512,512] [--repeats 3]
           [--baseline OTHER_BUILD_DIR]

--baseline also runs the stager of another build (OTHER_BUILD_DIR/server/slabcast)
in the same alternating runs: before and after figures of a change.

Every tool's time is wall-clock, from its launch to its last byte in place
(the stager's: its "staged" report of the last step), so the stager's start
counts against it as cp's does. The dataset's files are read once before, so
every tool reads them from the page cache; before each run as many bytes as
the dataset holds are written and deleted in /dev/shm (benchlib.warm_pages),
so that no tool alone pays this VM's slow first touch of memory. Prints GB/s
per run and the stager's ratio to each peer, median and range. Not part of
the default ctest run.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402
from benchlib import lib  # noqa: E402


def steps_of(data):
    return sorted(os.path.join(data, n) for n in os.listdir(data) if n != "dataset.json")


OWN_RATES = {}  # each stager's own count of each step's copy, GB/s


def stage(ws, data, total, name, program=lib.SLABCAST):
    """Seconds from the stager's launch to its report of the last step staged."""
    os.makedirs(ws.staging, mode=0o700)
    stats = os.path.join(ws.dir, "stage-%d.json" % time.monotonic_ns())
    count = len(steps_of(data))
    t0 = time.time()
    role = ws.start("stage", ["stage", "--dataset", data, "--staging", ws.staging, "--streams", "0",
                              "--budget", str(total + (64 << 20)), "--stats-json", stats], cpu=benchlib.SENDER_CPU,
                    program=program)

    def staged():
        return [e for e in lib.read_json_lines(stats) if e.get("kind") == "step" and e.get("result") == "staged"]

    lib.wait_for(lambda: len(staged()) >= count, timeout=120, what="the stager to stage %d steps" % count)
    seconds = max(e["time"] for e in staged()) - t0
    OWN_RATES.setdefault(name, []).extend(e["gbytes_per_s"] for e in staged())
    assert role.stop() == 0, role.text()
    shutil.rmtree(ws.staging)
    return seconds


def copy_with(cmds, dest):
    """Seconds for the commands, run one after another, to copy into `dest`."""
    os.makedirs(dest)
    t0 = time.perf_counter()
    for cmd in cmds:
        subprocess.run(["taskset", "-c", str(benchlib.SENDER_CPU)] + cmd, check=True)
    seconds = time.perf_counter() - t0
    shutil.rmtree(dest)
    return seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="512,512,512")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline", metavar="BUILD_DIR", help="also the stager of another build: before/after")
    args = ap.parse_args()
    data = benchlib.dataset(tuple(int(v) for v in args.dims.split(",")))
    files = steps_of(data)
    total = sum(os.path.getsize(f) for f in files)
    for f in files:  # into the page cache, for every tool alike
        with open(f, "rb") as src:
            while src.read(16 << 20):
                pass
    with benchlib.workspace("stagebench") as ws:
        dest = ws.shm + "-copy"
        tools = [("slabcast stage", lambda: stage(ws, data, total, "slabcast stage")),
                 ("cp", lambda: copy_with([["cp"] + files + [dest]], dest)),
                 ("dd bs=16M", lambda: copy_with([["dd", "if=" + f, "of=" + os.path.join(dest, os.path.basename(f)),
                                                   "bs=16M", "status=none"] for f in files], dest))]
        if args.baseline:
            before = lib.slabcast_in(args.baseline)
            tools.insert(1, ("stage, baseline", lambda: stage(ws, data, total, "stage, baseline", program=before)))
        seconds = {name: [] for name, _ in tools}
        try:
            for r in range(args.repeats):
                for name, run in (tools if r % 2 == 0 else list(reversed(tools))):
                    benchlib.warm_pages(total)
                    seconds[name].append(run())
        finally:
            shutil.rmtree(dest, ignore_errors=True)
    print("\n%d steps of %d MiB (%s), page cache -> /dev/shm, each tool pinned to cpu0, launch to last byte in place"
          % (len(files), total // len(files) >> 20, args.dims))
    benchlib.print_provenance()
    print("%-16s %s" % ("", "GB/s (each run)"))
    for name, s in seconds.items():
        print("%-16s %s" % (name, " ".join("%.2f" % (total / t * 1e-9) for t in s)))
    for name, rates in OWN_RATES.items():
        print("%s: its own count, each step's copy alone (no start-up): GB/s median %.2f, range %.2f-%.2f"
              % (name, statistics.median(rates), min(rates), max(rates)))
    for name, s in list(seconds.items())[1:]:
        ratios = [p / t for t, p in zip(seconds["slabcast stage"], s)]
        print("ratio slabcast stage / %s (rate, same repetition): median %.2f, range %.2f-%.2f"
              % (name, statistics.median(ratios), min(ratios), max(ratios)))


if __name__ == "__main__":
    main()
