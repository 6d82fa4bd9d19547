#!/usr/bin/env python3
"""Benchmark: one slabcast stream (shuffler -> receiver, stores into /dev/shm
included) on loopback, one core per side, against iperf3 UDP with 8972-byte
datagrams run by this same script on the same cores.

Usage: loopback_vs_iperf3.py [--build build] [--rate 0] [--steps 24] [--dims 256,256,256]
Prints a table; not part of the default ctest run (timings vary with the host).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
import slabcast_testlib as lib  # noqa: E402


def run_slabcast(ws, dataset, dims, rate, steps, sender_cpu, receiver_cpu, receive_args):
    data_port, sync_port = lib.free_udp_ports(2)
    recv_json = os.path.join(ws.dir, "receive.json")
    shuffle_json = os.path.join(ws.dir, "shuffle.json")
    receiver = ws.start("receive", ["receive", "--name", "bench", "--dims", ",".join(map(str, dims)),
                                    "--slab-depth", str(dims[2]), "--listen", "127.0.0.1",
                                    "--stream", "0:%d" % data_port, "--shm-dir", ws.shm,
                                    "--cpus", str(receiver_cpu), "--stats-json", recv_json] + receive_args, cpu=receiver_cpu)
    lib.wait_for(lambda: os.path.exists(os.path.join(ws.shm, "bench.slabcast")), what="receiver")
    # The steps are staged once, before: the stager's copies are not what this
    # measures, and on a two-core machine they would steal the sender's time.
    os.makedirs(ws.staging, exist_ok=True)
    for name in os.listdir(dataset):
        if name != "dataset.json":
            shutil.copyfile(os.path.join(dataset, name), os.path.join(ws.staging, name))
    ws.start("shuffle", ["shuffle", "--stream", "0", "--to", "127.0.0.1:%d" % data_port, "--staging", ws.staging,
                         "--dataset", dataset, "--slab-depth", str(dims[2]), "--sync", "127.0.0.1:%d" % sync_port,
                         "--rate", rate, "--stats-json", shuffle_json], cpu=sender_cpu)
    time.sleep(1.0)
    t0 = time.monotonic()
    r = ws.run(["control", "--dataset", dataset, "--shuffler", "127.0.0.1:%d" % sync_port,
                "--loop", "--count", str(steps)], timeout=600)
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    time.sleep(0.3)
    for role in reversed(ws.roles):
        role.stop()
    sent = [e for e in lib.read_json_lines(shuffle_json) if e.get("kind") == "step" and e.get("result") == "finished"]
    reports = [e for e in lib.read_json_lines(recv_json) if e.get("kind") == "step"]
    packets = sum(e["packets_sent"] for e in sent)
    send_seconds = sum(e["seconds"] for e in sent)
    # Payload bytes of what was sent: every packet is full but the last of each step.
    records = sum(e["expected"] for e in reports)
    sent_bytes = sum(e["gbps"] * e["seconds"] / 8e-9 for e in sent)
    received = sum(e["records"] for e in reports)
    received_bytes = sent_bytes * received / max(records, 1)
    loss = 100.0 * (records - received) / max(records, 1)
    return {"sent_gbps": sent_bytes * 8e-9 / send_seconds, "recv_gbps": received_bytes * 8e-9 / send_seconds,
            "loss": loss, "packets": packets, "steps": len(reports), "wall": wall}


def run_iperf3(seconds, sender_cpu, receiver_cpu):
    port = lib.free_udp_ports(1)[0]
    server = subprocess.Popen(["taskset", "-c", str(receiver_cpu), "iperf3", "-s", "-1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    out = subprocess.run(["taskset", "-c", str(sender_cpu), "iperf3", "-c", "127.0.0.1", "-p", str(port), "-u",
                          "-b", "0", "-l", "8972", "-w", "64M", "-t", str(seconds), "-J"],
                         capture_output=True, text=True, timeout=seconds + 30)
    server.wait(10)
    result = json.loads(out.stdout)
    if "error" in result:
        raise SystemExit("iperf3: " + result["error"])
    s = result["end"]["sum"]
    sent = s["bits_per_second"] / 1e9
    return {"sent_gbps": sent, "recv_gbps": sent * (1 - s["lost_percent"] / 100), "loss": s["lost_percent"]}


class RaisedSocketLimits:
    """iperf3 -w 64M needs net.core.{r,w}mem_max >= 64 MiB (slabcast uses the FORCE
    socket options instead). Raised for the run when root, then restored."""

    KNOBS = ("/proc/sys/net/core/rmem_max", "/proc/sys/net/core/wmem_max")

    def __enter__(self):
        self.saved = {}
        if os.geteuid() == 0:
            for k in self.KNOBS:
                with open(k) as f:
                    self.saved[k] = f.read().strip()
                if int(self.saved[k]) < 64 << 20:
                    with open(k, "w") as f:
                        f.write(str(64 << 20))
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            with open(k, "w") as f:
                f.write(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", default="0", help="shuffler rate, 0 = unlimited")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--dims", default="256,256,256")
    ap.add_argument("--receive-args", default="", help="more options for slabcast receive, e.g. '--batch 8'")
    ap.add_argument("--seconds", type=int, default=5, help="iperf3 run length")
    args = ap.parse_args()
    dims = tuple(int(v) for v in args.dims.split(","))
    ws = lib.Workspace("bench")
    try:
        cache = os.path.join(os.path.dirname(__file__), "..", "..", "data", "cache", "bench-" + "x".join(map(str, dims)))
        if not os.path.exists(os.path.join(cache, "dataset.json")):
            subprocess.run([lib.DATAGEN, "--out", cache, "--dims", args.dims, "--steps", "4"], check=True)
        with RaisedSocketLimits():
            ours = run_slabcast(ws, cache, dims, args.rate, args.steps, 0, 1, args.receive_args.split())
            peer = run_iperf3(args.seconds, 0, 1)
    finally:
        ws.close()
    print("\nloopback, sender on cpu0, receiver on cpu1, %s, 8968-byte quad packets vs 8972-byte iperf3 datagrams"
          % "x".join(map(str, dims)))
    print("%-34s %10s %10s %8s" % ("", "sent Gb/s", "recv Gb/s", "loss %"))
    print("%-34s %10.2f %10.2f %8.3f" % ("slabcast shuffle -> receive (shm)", ours["sent_gbps"], ours["recv_gbps"],
                                          ours["loss"]))
    print("%-34s %10.2f %10.2f %8.3f" % ("iperf3 -u -b 0 -l 8972 -w 64M", peer["sent_gbps"], peer["recv_gbps"],
                                          peer["loss"]))
    print("ratio slabcast/iperf3 received: %.2f   (%d steps, %d packets)"
          % (ours["recv_gbps"] / peer["recv_gbps"], ours["steps"], ours["packets"]))


if __name__ == "__main__":
    main()
