#!/usr/bin/env python3
"""Benchmark: whole steps a second that each codec delivers over a WAN path
limited to 1 and to 5 Gbit/s, against run packets with no codec (run/none) on
the same path in the same run. A codec pays where the path, not the sender,
bounds the stream: the paper's streams fill a 100 Gbit/s path (Balman et al.,
2012, section 4.2); most sites have 1-10 Gbit/s to offer, where fewer bytes a
step are more steps a second, as long as the encoder keeps up.

The netns testbed (testing/netns/netns_testbed.py): the shuffler on the
sender host (pinned to cpu0, or unpinned with --encode-threads N > 1), the
receiver on the receiver host (cpu1), the wan between them forwarding at most
LIMIT Gbit/s to the receiver (tc tbf; what comes faster is dropped). One
stream of the whole volume: the 16 steps of a 256^3 cosmology dataset,
prestaged, looped over, back to back from the controller, the shuffler paced
at 95% of the limit (its --rate counts UDP payload). Counted at the receiver:
whole steps (every value arrived) over its wall clock from the first packet
to the last (benchlib.ReceiveWindow), the values placed a second, and the
loss: the share of the values of every step sent that did not arrive, a step
lost whole (no report from the receiver) included.

A format is CODEC[xTHREADS]: "quant:8x2" is quant:8 packed on 2 threads.

Usage (root): SLABCAST_BUILD=build testing/bench/codec_wan.py [--limits 1,5] [--seconds 8]
              [--formats none,lz4,zfp:8,quant:10,quant:8,quant:8x2]
Not part of the default ctest run (ctest -L benchmark).
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "netns"))
import benchlib  # noqa: E402
import netns_testbed  # noqa: E402

lib = benchlib.lib
# Bytes a step against raw float32, to size each run to about --seconds at the
# path's rate (a guess: the run counts what arrives).
RATIO_GUESS = {"none": 1.0, "lz4": 1.15, "zfp:8": 3.9, "quant:10": 4.4, "quant:8": 6.0}


def parse_format(fmt):
    codec, _, threads = fmt.partition("x")
    return codec, int(threads or 1)


def run_format(bed, data, dims, limit_gbps, fmt, seconds):
    codec, threads = parse_format(fmt)
    rate_bps = 0.95 * limit_gbps * 1e9
    step_bytes = dims[0] * dims[1] * dims[2] * 4
    steps = int(min(400, max(6, seconds * rate_bps / 8 / (step_bytes / RATIO_GUESS.get(codec, 1.0)))))
    with benchlib.workspace("codec-wan") as ws:
        benchlib.prestage(ws, data)
        port, sync = lib.free_udp_ports(2)  # each host has ports of its own: free here is free there
        recv_json, shuffle_json = os.path.join(ws.dir, "receive.json"), os.path.join(ws.dir, "shuffle.json")
        ws.start("receive", ["receive", "--name", "bench", "--dims", ",".join(map(str, dims)),
                             "--slab-depth", str(dims[2]), "--listen", netns_testbed.RECEIVER,
                             "--shm-dir", ws.shm, "--cpus", str(benchlib.RECEIVER_CPU), "--stats-json", recv_json,
                             "--stream", "0:%d" % port],
                 cpu=benchlib.RECEIVER_CPU, prefix=bed.prefix("receiver"))
        lib.wait_for(lambda: os.path.exists(os.path.join(ws.shm, "bench.slabcast")), what="receiver")
        shuffler = ws.start("shuffle", [
            "shuffle", "--stream", "0", "--to", "%s:%d" % (netns_testbed.RECEIVER, port), "--staging", ws.staging,
            "--dataset", data, "--slab-depth", str(dims[2]), "--sync", "127.0.0.1:%d" % sync,
            "--rate", "%.3fG" % (rate_bps * 1e-9), "--wire", "run", "--codec", codec,
            "--encode-threads", str(threads), "--stats-json", shuffle_json],
            cpu=benchlib.SENDER_CPU if threads == 1 else None, prefix=bed.prefix("sender"))
        shuffler.wait_for_text("sync on")
        with benchlib.ReceiveWindow([os.path.join(ws.shm, "bench.slab0")]) as window:
            r = subprocess.run(bed.prefix("sender") + [lib.SLABCAST, "control", "--dataset", data, "--loop",
                                                        "--count", str(steps), "--shuffler", "127.0.0.1:%d" % sync],
                               capture_output=True, text=True, timeout=900)
            assert r.returncode == 0, r.stderr
            benchlib.wait_sent(shuffle_json, steps)
        for role in reversed(ws.roles):
            role.stop()
        figures = benchlib.summarize(shuffle_json, recv_json, window.seconds)
        reports = [e for e in lib.read_json_lines(recv_json) if e.get("kind") == "step"]
        whole = sum(1 for e in reports if e.get("complete"))
        return dict(figures, fmt=fmt, steps=steps, whole=whole, whole_per_s=whole / window.seconds,
                    wire_gbps=figures["received_bytes"] * 8e-9 / window.seconds)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dims", default="256,256,256")
    ap.add_argument("--limits", default="1,5", help="the path's Gbit/s, one run each")
    ap.add_argument("--seconds", type=float, default=8.0, help="about how long each format streams")
    ap.add_argument("--formats", default="none,lz4,zfp:8,quant:10,quant:8,quant:8x2")
    args = ap.parse_args()
    why = netns_testbed.available()
    if why:
        sys.exit("codec_wan: " + why)
    dims = tuple(int(v) for v in args.dims.split(","))
    # 16 steps: a loop over the dataset laps in over half a second even at
    # 30 steps/s, as a simulation's steps would not repeat at all.
    data = benchlib.dataset(dims, steps=16)
    benchlib.print_provenance()
    formats = args.formats.split(",")
    if "none" not in formats:
        formats.insert(0, "none")
    results = {}
    for limit in (float(v) for v in args.limits.split(",")):
        bed = netns_testbed.Testbed()
        try:
            bed.limit("receiver", limit)
            for fmt in formats:
                r = run_format(bed, data, dims, limit, fmt, args.seconds)
                results[limit, fmt] = r
                print("  %4.1f Gbit/s %-10s %3d of %3d steps whole, %6.2f steps/s, %7.1f Mvoxel/s, wire %5.2f Gbit/s"
                      % (limit, fmt, r["whole"], r["steps"], r["whole_per_s"], r["voxels_per_s"] * 1e-6,
                         r["wire_gbps"]), flush=True)
        finally:
            bed.close()
    print()
    print("%-8s %-11s %12s %10s %10s %10s %8s" % ("path", "codec", "whole st/s", "x none", "Mvoxel/s", "wire Gb/s",
                                                 "loss %"))
    for (limit, fmt), r in results.items():
        base = results[limit, "none"]["whole_per_s"]
        print("%-8s %-11s %12.2f %10s %10.1f %10.2f %8.3f" % (
            "%gG" % limit, fmt, r["whole_per_s"], "%.2fx" % (r["whole_per_s"] / base) if base else "-",
            r["voxels_per_s"] * 1e-6, r["wire_gbps"], r["loss"]))


if __name__ == "__main__":
    main()
