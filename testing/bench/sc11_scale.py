#!/usr/bin/env python3
"""Benchmark: the SC11 configuration end to end on this machine (Balman et al.,
2012, sections 4.2 and 4.6): a 1024^3 float32 cosmology volume, 4 GiB a step,
in 32 streams of 1024x1024x32 slabs, through stage, shuffle, control and
receive over loopback into /dev/shm, rendered by pvbatch on 2 ranks with
IceT; then the same for 512^3. It runs `slabcast demo` itself, the command a
user runs, and reads what the roles log.

Usage: SLABCAST_BUILD=build testing/bench/sc11_scale.py [--sizes 512,1024]
       [--streams 32] [--ranks 2] [--count 8] [--rate 1G] [--step-interval 0]
       [--json OUT.json]

Per step it prints:
- sync->published: from the controller's sync to the step published in
  the last of the receiver's slabs (CLOCK_REALTIME stamps in the roles'
  --stats-json); it includes waiting for the stager, whose read rate
  (stage GB/s, from the dataset's disk) is its own column, and so is the
  time it took to set the step up before reading (stage setup s: reserving
  every page of the step in tmpfs);
- latency: from the first shuffler starting the step (staged) to the last
  slab published: the transfer, what the paper's 1.4 s measures;
- Gbit/s: the step's values (NX*NY*NZ*4 bytes) over that latency, counted
  at the receiver;
- loss: the receiver's lost values, all slabs;
- first: pvbatch's time for the frame that first showed the step (read,
  composite, render; its log), coarse where the renderer draws a new step
  coarse first (slabcast demo's --coarsest 4 on the CPU ray marcher);
- frame: its time for the step's first frame in full resolution (the same
  frame where nothing is coarse); the renderer's first frame, which
  also loads and uploads everything, is reported on its own. On one
  2-core machine the renderer and the stream share the cores: steps come
  faster than frames, and a step the renderer skips has no frame.
And over the steps, send->first pixel and send->full resolution (p50,
p95): from the senders' step stamps to the step's first frame, and to its
first in full resolution, from the renderer's frame lines, beside the
paper's 3.9 s from send to picture (section 4).
And, per role, the largest resident memory seen (sampled every 0.5 s):
private (RssAnon) and the tmpfs pages it maps (RssShmem), which the slabs'
readers share and so are not added up.

Beside them, the paper's figures: 16 GB a step (4 GB of values, sent as
16-byte quad records) in ~1.4 s to 4 render hosts, rendered in ~2.5 s by
4 x 8 cores (section 4.6); so 13.4 Mvoxel/s per core of rendering, and
22.9 Gbit/s of quad records (5.7 of values) per receiving host.
Figures: docs/performance.md, "Scale". Not part of the default ctest run.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402

PAPER_RENDER_MVOXEL_PER_CORE = 1024 ** 3 / 2.5 / 32 / 1e6
PAPER_STEP_S = 1.4
PAPER_SEND_TO_PICTURE_S = 3.9  # section 4: ~1.4 s to the booth, ~2.5 s more to the image
# The renderer's frame line: "... | latency: sent->published X ms, published->shown Y ms (picked after Z ms)"
LATENCY = re.compile(r"\| latency: sent->published (-?[\d.]+) ms, published->shown (-?[\d.]+) ms"
                     r"(?: \(picked after (-?[\d.]+) ms\))?")
PAPER_HOST_GBPS_VALUES = 4e9 * 8 / PAPER_STEP_S / 4 / 1e9
CORES = os.cpu_count()


def role_of(cmdline):
    """The demo role a process plays, from its command line; None if not one."""
    words = cmdline.split("\0")
    name = os.path.basename(words[0]) if words else ""
    if name == "slabcast" and len(words) > 1 and words[1] in ("receive", "stage", "shuffle", "control"):
        return words[1]
    if name in ("pvbatch", "Xvfb"):
        return name
    return None


class MemorySampler(threading.Thread):
    """Largest RssAnon / RssShmem (MiB) seen per role among `root`'s descendants."""

    def __init__(self, root):
        super().__init__(daemon=True)
        self.root, self.peak, self.stop = root, {}, threading.Event()

    def descendants(self):
        parent = {}
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open("/proc/%s/stat" % pid) as f:
                        parent[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    pass
        found, frontier = set(), {self.root}
        while frontier:
            frontier = {p for p, pp in parent.items() if pp in frontier} - found
            found |= frontier
        return found

    def run(self):
        while not self.stop.wait(0.5):
            for pid in self.descendants():
                try:
                    with open("/proc/%d/cmdline" % pid) as f:
                        role = role_of(f.read())
                    if not role:
                        continue
                    fields = {}
                    with open("/proc/%d/status" % pid) as f:
                        for line in f:
                            key, _, value = line.partition(":")
                            if key in ("RssAnon", "RssShmem"):
                                fields[key] = int(value.split()[0]) / 1024
                except OSError:
                    continue
                anon, shmem = self.peak.get(role, (0, 0))
                self.peak[role] = (max(anon, fields.get("RssAnon", 0)), max(shmem, fields.get("RssShmem", 0)))


def json_lines(path):
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def first_after(entries, t):
    """The earliest of (time, ...) entries at or after t; None if none."""
    later = [e for e in entries if e[0] >= t]
    return min(later) if later else None


def per_step(out_dir, n, streams):
    """One row per step the controller synced that the receiver then
    published in every slab (a step's entries are the first after its sync,
    so laps over the dataset's steps do not mix)."""
    logs = os.path.join(out_dir, "logs")
    syncs = sorted((j["time"], j["step"]) for j in json_lines(os.path.join(logs, "control.json"))
                   if j.get("kind") == "sync")
    published, sending, staged = {}, {}, {}  # step -> stream -> [(time, ...)]; step -> [(time, seconds, GB/s)]
    for j in json_lines(os.path.join(logs, "full-receive.json")):
        if j.get("kind") == "step":
            published.setdefault(j["step"], {}).setdefault(j["stream"], []).append(
                (j["time"], j["expected"] - j["records"], j["expected"]))
    for name in os.listdir(logs):
        if name.startswith("full-shuffle") and name.endswith(".json"):
            for j in json_lines(os.path.join(logs, name)):
                if j.get("kind") == "step" and j.get("result") == "finished":
                    sending.setdefault(j["step"], {}).setdefault(j["stream"], []).append(
                        (j["time"] - j["seconds"], j["time"]))
    for j in json_lines(os.path.join(logs, "full-stage.json")):
        if j.get("kind") == "step" and j.get("result") == "staged":
            staged.setdefault(j["step"], []).append((j["time"], j["seconds"], j["gbytes_per_s"],
                                                     j.get("setup_seconds")))
    # (step, seconds, level) of each frame after the renderer's first, in
    # order; level 1 in full resolution (the CPU ray marcher draws a new
    # step's first frame coarse, then refines: "level 4", "level 2", "level 1").
    frames, first, mapper = [], None, ""
    with open(os.path.join(logs, "render.log")) as f:
        for line in f:
            if line.startswith("slabcast_render: ") and ", mapper " in line:
                mapper = line.split(", mapper ", 1)[1].strip()  # "stride:4 (auto, ...)"
            # "frame 3: step 5, 3343.1 ms[, level 1], read 120 ms, draw 3200 ms | caption ..."
            if line.startswith("frame ") and ": step " in line and "(cut: " not in line:
                index = int(line.split(":")[0].split()[1])
                step = int(line.split(": step ")[1].split(",")[0])
                seconds = float(line.split(", ")[1].split(" ms")[0]) / 1000
                level = int(line.split(", level ")[1].split(",")[0]) if ", level " in line else 1
                # "| latency: sent->published X ms, published->shown Y ms (picked after Z ms)":
                # send to this frame, and its parts (transfer, wait, draw) in seconds.
                timeline = LATENCY.search(line)
                to_shown = None
                if timeline:
                    transfer, shown = float(timeline.group(1)) / 1000, float(timeline.group(2)) / 1000
                    wait = float(timeline.group(3)) / 1000 if timeline.group(3) else None
                    to_shown = (transfer + shown, transfer, wait, shown - wait if wait is not None else None)
                if index == 0:
                    first = (step, seconds)
                else:
                    frames.append((step, seconds, level, to_shown))
    rows = []
    for t_sync, step in syncs:
        got = [first_after(e, t_sync) for e in published.get(step, {}).values()]
        sent = [first_after(e, t_sync) for e in sending.get(step, {}).values()]
        if len(got) < streams or None in got or len(sent) < streams or None in sent:
            continue  # skipped by a shuffler (not staged in time) or dropped by the receiver
        last = max(g[0] for g in got)
        start = min(x[0] for x in sent)
        lost, expected = sum(g[1] for g in got), sum(g[2] for g in got)
        stage = [x for x in staged.get(step, []) if x[0] <= start]
        rows.append({"step": step, "sync_to_published_s": last - t_sync, "latency_s": last - start,
                     "gbps": n ** 3 * 4 * 8 / (last - start) / 1e9, "loss_percent": 100.0 * lost / expected,
                     "frame_s": None, "first_frame_s": None, "send_to_first_s": None, "send_to_full_s": None,
                     "parts_first": None, "parts_full": None,
                     "stage_gbytes_per_s": max(stage)[2] if stage else None,
                     "stage_setup_s": max(stage)[3] if stage else None})
    # Frames and steps both go forward in time: each frame belongs to the
    # next row of its step (the log has no clock; laps repeat step numbers).
    # frame_s: the step's first frame in full resolution; first_frame_s: its
    # first frame at all (coarse where progressive).
    at = 0
    for step, seconds, level, to_shown in frames:
        for i in range(at, len(rows)):
            if rows[i]["step"] == step:
                if rows[i]["first_frame_s"] is None:
                    rows[i]["first_frame_s"] = seconds
                    if to_shown:
                        rows[i]["send_to_first_s"], rows[i]["parts_first"] = to_shown[0], to_shown[1:]
                if rows[i]["frame_s"] is None and level == 1:
                    rows[i]["frame_s"] = seconds
                    if to_shown:
                        rows[i]["send_to_full_s"], rows[i]["parts_full"] = to_shown[0], to_shown[1:]
                at = i
                break
    return rows, first, mapper


def run_size(n, a, cache):
    out_dir = os.path.join(a.work, "demo-%d" % n)
    argv = [benchlib.lib.SLABCAST, "demo", "--dims", "%d,%d,%d" % (n, n, n),
            "--streams", str(a.streams), "--ranks", str(a.ranks), "--count", str(a.count), "--rate", a.rate,
            "--dataset-steps", "4",
            "--step-interval", str(a.step_interval if a.step_interval is not None else 4 if n <= 512 else 0), "--headless", "--out", out_dir, "--cache", cache,
            "--base-port", "61000"]  # above the ephemeral ports (32768-60999)
    print("$ " + " ".join(argv), flush=True)
    t0 = time.monotonic()
    demo = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sampler = MemorySampler(demo.pid)
    sampler.start()
    log = []
    for line in demo.stdout:
        log.append(line)
        if "demo:" in line and any(w in line for w in ("generating", "error", "buffers a slab", "streaming", "last status")):
            print("  " + line.rstrip(), flush=True)
    demo.wait()
    sampler.stop.set()
    sampler.join()
    if demo.returncode != 0:
        sys.exit("demo %d^3 failed (%d):\n%s" % (n, demo.returncode, "".join(log[-20:])))
    rows, first_frame, mapper = per_step(out_dir, n, a.streams)
    if not rows:
        sys.exit("demo %d^3: no step was published in every slab; see %s/logs" % (n, out_dir))
    chosen = [l for l in log if "buffers a slab" in l]
    return {"n": n, "rows": rows, "first_frame": first_frame, "mapper": mapper, "memory": sampler.peak,
            "seconds": time.monotonic() - t0,
            "fit": chosen[0].split("demo: ", 1)[1].strip() if chosen else ""}


def rendered_points(mapper, n):
    """Points per axis the renderer drew of an n^3 volume, from the render
    log's path ("stride:4 (...)", "resample:256 (...)", "smart (...)")."""
    path = mapper.split(" ")[0]
    if path.startswith("stride:"):
        return (n - 1) // int(path[7:]) + 1
    if path.startswith("resample:"):
        return min(n, int(path[9:]))
    return n


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def report(result, a):
    n, rows = result["n"], result["rows"]
    print("\n%d^3: %s\nrendered through: %s" % (n, result["fit"], result["mapper"] or "?"))
    print("%6s %14s %10s %8s %8s %9s %9s %10s %13s" % ("step", "sync->pub. s", "latency s", "Gbit/s", "loss %",
                                                        "first s", "frame s", "stage GB/s", "stage setup s"))
    for r in rows:
        first = "%9.2f" % r["first_frame_s"] if r.get("first_frame_s") is not None else "%9s" % "-"
        frame = "%9.2f" % r["frame_s"] if r["frame_s"] is not None else "%9s" % "-"
        stage = "%10.2f" % r["stage_gbytes_per_s"] if r["stage_gbytes_per_s"] is not None else "%10s" % "-"
        setup = "%13.2f" % r["stage_setup_s"] if r.get("stage_setup_s") is not None else "%13s" % "-"
        print("%6d %14.2f %10.2f %8.2f %8.3f %s %s %s %s" % (r["step"], r["sync_to_published_s"], r["latency_s"],
                                                           r["gbps"], r["loss_percent"], first, frame, stage, setup))
    lat, gbps, frame = median(r["latency_s"] for r in rows), median(r["gbps"] for r in rows), \
        median(r["frame_s"] for r in rows)
    mvox = n ** 3 / frame / CORES / 1e6
    drawn = rendered_points(result["mapper"], n)
    mvox_drawn = drawn ** 3 / frame / CORES / 1e6
    if result["first_frame"]:
        print("first frame (pvbatch's first read, upload and render, not in the median): step %d, %.2f s"
              % result["first_frame"])
    print("median: latency %.2f s, %.2f Gbit/s of values, frame %.2f s: %.1f Mvoxel/s per core (%d cores) rendered "
          "(%d^3), %.1f of the step's %d^3" % (lat, gbps, frame, mvox_drawn, CORES, drawn, mvox, n))
    if n == 1024:
        print("against SC11 (section 4.6): step %.2f s vs %.1f s (%.2fx); per receiving host %.2f vs %.2f Gbit/s of "
              "values (%.2fx); render %.1f Mvoxel/s per core rendered vs %.1f at full resolution (%.2fx), frame "
              "%.2f s vs 2.5 s"
              % (lat, PAPER_STEP_S, PAPER_STEP_S / lat, gbps, PAPER_HOST_GBPS_VALUES, gbps / PAPER_HOST_GBPS_VALUES,
                 mvox_drawn, PAPER_RENDER_MVOXEL_PER_CORE, mvox_drawn / PAPER_RENDER_MVOXEL_PER_CORE, frame))
    for name, key, parts in (("send->first pixel", "send_to_first_s", "parts_first"),
                             ("send->full resolution", "send_to_full_s", "parts_full")):
        values = sorted(r[key] for r in rows if r[key] is not None)
        if values:
            # Each part's own p50 over the steps (they need not add up to the total's).
            split = ["%s %.2f s" % (part, benchlib.nearest_rank(
                         [r[parts][j] for r in rows if r[parts] and r[parts][j] is not None], 50))
                     for j, part in enumerate(("transfer", "wait", "draw"))]
            print("%s (the senders' step stamps to the frame drawn, %d steps): p50 %.2f s, p95 %.2f s (p50 of each "
                  "part: %s); the paper's send to picture %.1f s"
                  % (name, len(values), benchlib.nearest_rank(values, 50), benchlib.nearest_rank(values, 95),
                     ", ".join(split), PAPER_SEND_TO_PICTURE_S))
    print("largest resident memory (MiB, private / tmpfs pages mapped):")
    for role, (anon, shmem) in sorted(result["memory"].items()):
        print("  %-8s %8.0f / %8.0f" % (role, anon, shmem))
    return {"n": n, "median_latency_s": lat, "median_gbps": gbps, "median_frame_s": frame,
            "rendered_points": drawn, "mvoxel_per_s_per_core_rendered": mvox_drawn, "mvoxel_per_s_per_core_of_step": mvox}


def check(result, a):
    """What the scale test asserts, nothing about time: every step streamed
    reached every slab (the controller waits for the shufflers, and they for
    the stager: a step given up is a fault, not slowness), the renderer
    showed several of them, and nothing that maps the slabs made a private
    copy of a step."""
    rows, n = result["rows"], result["n"]
    problems = []
    if len(rows) < a.count:
        problems.append("only %d of %d steps were published in every slab" % (len(rows), a.count))
    if sum(1 for r in rows if r["frame_s"] is not None) + (1 if result["first_frame"] else 0) < 2:
        problems.append("the renderer showed fewer than 2 steps")
    step_mib = n ** 3 * 4 / 2 ** 20
    receive_private = result["memory"].get("receive", (0, 0))[0]
    if receive_private > step_mib / 2:
        problems.append("the receiver holds %.0f MiB of its own, more than half a step (%.0f MiB)"
                        % (receive_private, step_mib))
    print("scale check %s at %d^3%s" % ("failed" if problems else "passed", n, ": " + "; ".join(problems)
                                        if problems else ""))
    return not problems


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="512,1024")
    p.add_argument("--streams", type=int, default=32)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--count", type=int, default=12,
                   help="steps streamed per size (the renderer's first frame takes 15-30 s at these sizes)")
    p.add_argument("--rate", default="1G", help="per stream (demo --rate)")
    p.add_argument("--step-interval", type=float, default=None,
                   help="demo --step-interval (default: 4 s, the paper's 1.4 s + 2.5 s a step; above 512^3, where "
                        "each step is read from disk, 0: the next step when every shuffler has sent this one, as "
                        "fast as the stager reads; a fixed 12 s let the controller pass steps still being read, "
                        "and the stager gave them up)")
    p.add_argument("--cache", default=os.path.join(benchlib.REPO, "data", "cache"))
    p.add_argument("--work", default="/tmp/slabcast-sc11-scale")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--check", action="store_true",
                   help="as a test (ctest scale_sc11): fail unless it ran as it should (below)")
    a = p.parse_args()
    commit, dirty = benchlib.provenance()
    results, passed = [], True
    for n in (int(s) for s in a.sizes.split(",")):
        result = run_size(n, a, a.cache)
        results.append({**result, "summary": report(result, a)})
        if a.check:
            passed = check(result, a) and passed
    print("\ncommand: %s\ncommit: %s%s\ndate: %s\nhost: %d cores, %.1f GiB"
          % (" ".join(sys.argv), commit, " (with changes not committed)" if dirty else "",
             time.strftime("%Y-%m-%d %H:%M %Z"), CORES, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2 ** 30))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"results": results, "commit": commit, "dirty": dirty, "argv": sys.argv}, f, indent=1, default=str)
    if not passed:
        sys.exit("scale check failed")


if __name__ == "__main__":
    main()
