#!/usr/bin/env python3
"""Benchmark: `slabcast record` beside a receiver taking a 256^3 stream (64 MiB
a step, one stream, shuffler -> receiver on loopback), at the demo's rate
(1 Gbit/s) and unpaced; for each, the receiver alone and with a recorder
(lz4, and none) writing every step to a directory on this machine's disk.

For each run it prints: the receiver's rate over its wall-clock window (first
packet to last, as iperf3's receiver counts), and with a recorder its ratio to
the run without one; steps published, recorded and skipped (disk busy or
full); the recorder's write rate (raw step bytes over the seconds its writer
spent on them, fsync included). Then, as the peers, `cp` + `sync` and
`dd bs=16M conv=fsync` writing the same bytes (the recording's files) to the
same disk, in the same run.

On a machine of 2 cores the shuffler and the recorder share core 0 (the
receiver has core 1 to itself): the recorder's copy and compression take the
sender's time, not the receiver's, as on a receive host with a core for it.

Usage: SLABCAST_BUILD=build testing/bench/record_rate.py [--dims 256,256,256] [--steps 20] [--repeat 3]
           [--out DIR (default: a directory under /var/tmp, on the disk)]
Not part of the default ctest run.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402
from benchlib import lib  # noqa: E402

DEMO_RATE = "1G"  # slabcast demo's --rate


def recording_events(path):
    return [e for e in lib.read_json_lines(path) if e.get("kind") == "step"]


def run(dims, steps, rate, codec, out_root):
    """One stream of `steps` steps; `codec` None: no recorder. Returns the figures."""
    with benchlib.workspace("record") as ws:
        data = benchlib.dataset(dims)
        ports, recv_json = benchlib.start_receiver(ws, dims, 1, dims[2], ("--buffers", "4"))
        benchlib.prestage(ws, data)
        sync_ports, shuffle_json = benchlib.start_shufflers(ws, data, dims[2], ports, rate)
        rec_dir = rec_json = recorder = None
        if codec:
            rec_dir = tempfile.mkdtemp(prefix="slabcast-recording-", dir=out_root)
            shutil.rmtree(rec_dir)
            rec_json = os.path.join(ws.dir, "record.json")
            recorder = ws.start("record", ["record", "--descriptor", os.path.join(ws.shm, "bench.slabcast"),
                                           "--out", rec_dir, "--codec", codec, "--stats-json", rec_json],
                                cpu=benchlib.SENDER_CPU)
            recorder.wait_for_text("record: following")
        with benchlib.ReceiveWindow([os.path.join(ws.shm, "bench.slab0")]) as window:
            benchlib.control(ws, data, sync_ports, steps)
            benchlib.wait_sent(shuffle_json[0], steps)
        events = lib.read_json_lines(recv_json)
        published = len([e for e in events if e.get("kind") == "step"])
        # Steps the receiver could not write: readers (the recorder) held every buffer.
        extra = {"dropped": len([e for e in events if e.get("kind") == "step_dropped"])}
        if recorder:
            # The recorder has looked at every step published and written or
            # given up every step it took, before the figures are read.
            def settled():
                status = [e for e in lib.read_json_lines(rec_json) if e.get("kind") == "status"]
                return status and status[-1]["published"] >= published and status[-1]["pending"] == 0
            lib.wait_for(settled, timeout=300, what="the recorder to account for the %d steps published" % published,
                         seen=lambda: recorder.text()[-400:])
            assert recorder.stop() == 0, recorder.text()
            done = [e for e in recording_events(rec_json) if e["result"] == "recorded"]
            final = [e for e in lib.read_json_lines(rec_json) if e.get("kind") == "status"][-1]
            busy = sum(e["seconds"] for e in done)  # the writer's time on the steps it wrote
            raw = len(done) * dims[0] * dims[1] * dims[2] * 5
            extra.update(recorded=len(done), skipped=final["skipped_busy"] + final["skipped_full"],
                         missed=published - len(done) - final["skipped_busy"] - final["skipped_full"],
                         rec_dir=rec_dir, raw=raw, stored=sum(e["stored_bytes"] for e in done),
                         write_gbytes_per_s=raw / busy * 1e-9 if busy else 0)
        for role in reversed(ws.roles):
            role.stop()
        figures = dict(benchlib.summarize(shuffle_json[0], recv_json, window.seconds), **extra)
        return figures


def peers(rec_dir, out_root):
    """cp + sync, and dd conv=fsync, of the recording's files to the same disk: GB/s each."""
    files = [os.path.join(rec_dir, n) for n in sorted(os.listdir(rec_dir)) if n != "dataset.json"]
    total = sum(os.path.getsize(f) for f in files)
    rates = {}
    for name in ("cp", "dd"):
        copy = tempfile.mkdtemp(prefix="slabcast-%s-" % name, dir=out_root)
        subprocess.run(["sync"], check=True)
        t0 = time.monotonic()
        if name == "cp":
            subprocess.run(["cp"] + files + [copy], check=True)
            subprocess.run(["sync", "-f", copy], check=True)
        else:
            for f in files:
                subprocess.run(["dd", "if=" + f, "of=" + os.path.join(copy, os.path.basename(f)), "bs=16M",
                                "conv=fsync", "status=none"], check=True)
        rates[name] = total / (time.monotonic() - t0) * 1e-9
        shutil.rmtree(copy)
    return total, rates


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dims", default="256,256,256")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", default="/var/tmp", help="where recordings go (the disk measured)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each configuration, in turn")
    args = ap.parse_args()
    dims = tuple(int(v) for v in args.dims.split(","))
    benchlib.print_provenance()
    print("host: %s; recordings in %s (%s)" % (os.uname().nodename, args.out,
                                                subprocess.run(["df", "--output=source", args.out], text=True,
                                                               capture_output=True).stdout.split()[-1]))
    print("\n%d steps a run, %d runs each; steps counted over all runs, rates the runs' medians" % (
        args.steps, args.repeat))
    print("\n| rate | recorder | receiver Gbit/s, median (range) | vs alone | published | dropped by the receiver | "
          "recorded | skipped | missed | write GB/s (raw) | stored / raw |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    last_dir = None
    for rate, label in ((DEMO_RATE, "1G (demo)"), ("0", "unpaced")):
        # Each configuration --repeat times, in turn: medians, the receiver's range.
        runs = {codec: [] for codec in (None, "lz4", "none")}
        for _ in range(args.repeat):
            for codec in runs:
                runs[codec].append(run(dims, args.steps, rate, codec, args.out))
                if codec:
                    if last_dir:
                        shutil.rmtree(last_dir, ignore_errors=True)
                    last_dir = runs[codec][-1]["rec_dir"]
        alone = statistics.median(f["placed_gbps"] for f in runs[None])
        for codec, figures in runs.items():
            gbps = [f["placed_gbps"] for f in figures]

            def med(key):
                return statistics.median(f[key] for f in figures)
            line = "| %s | %s | %.2f (%.2f-%.2f) | %.3f | %d | %d |" % (
                label, codec or "none (alone)", statistics.median(gbps), min(gbps), max(gbps),
                statistics.median(gbps) / alone, sum(f["steps"] for f in figures), sum(f["dropped"] for f in figures))
            if codec:
                line += " %d | %d | %d | %.2f | %.2f |" % (sum(f["recorded"] for f in figures),
                                                          sum(f["skipped"] for f in figures),
                                                          sum(f["missed"] for f in figures), med("write_gbytes_per_s"),
                                                     med("stored") / max(med("raw"), 1))
            else:
                line += " | | | | |"
            print(line, flush=True)
    total, rates = peers(last_dir, args.out)
    print("\nPeers writing the last recording's %d MiB to the same disk: cp + sync %.2f GB/s, dd bs=16M conv=fsync "
          "%.2f GB/s" % (total >> 20, rates["cp"], rates["dd"]))
    shutil.rmtree(last_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
