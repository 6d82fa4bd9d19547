#!/usr/bin/env python3
"""Benchmark: send to pixel. libslabcast's Python module sends a volume as
--slabs streams, one step every --interval seconds, into a real `slabcast
receive` on loopback; slabcast_render.py draws it in pvbatch under a private
Xvfb, once with each --paths entry, in the same run and on the same stream:
`slabcast` (the plugin's CPU ray marcher, progressive from --coarsest) and
`smart` (ParaView's own volume mapper, the peer).

Each frame prints the step's timeline (plugin/python/slabcast_render.py):
sent->published (the transfer: from the senders' step stamps to the last
slab's publication), published->picked (the wait for the renderer to take
it) and picked->shown (reading and drawing). Per step:

- send->first pixel: the first frame that shows the step;
- send->full resolution: its first frame at full resolution (the first frame,
  for a path that draws only in full);

with p50/p95/p99 over the steps (nearest rank), each split into its parts,
beside the paper's 3.9 s from send to picture for a 16 GB step (Balman et
al., 2012, section 4: about 1.4 s to move it and 2.5 s to draw it). One host,
one clock: the senders and the receiver read the same CLOCK_REALTIME.

Usage: SLABCAST_BUILD=build python3 testing/bench/latency.py [--size 256] [--slabs 4] [--steps 100]
       [--interval 1.0] [--paths slabcast,smart] [--coarsest 4] [--image 800x600] [--ranks 1]
"""
import argparse
import math
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "plugin"))
import benchlib  # noqa: E402
from benchlib import lib  # noqa: E402

PAPER_SEND_TO_PICTURE_S = 3.9  # Balman et al., 2012, section 4: 1.4 s to move a 16 GB step, 2.5 s to draw it
FRAME = re.compile(r"^frame (\d+): step (-?\d+), .*?(?:, level (\d+))?, read .*?"
                   r"\| latency: sent->published (-?[\d.]+) ms, published->shown (-?[\d.]+) ms "
                   r"\(picked after (-?[\d.]+) ms\)")

# The sender: a child process, so that the renderer's output is read here
# without sharing an interpreter with the sending. argv: library module dir,
# dims, slabs, destinations (comma separated), steps, interval, rate.
SENDER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy, slabcast
dims = tuple(int(v) for v in sys.argv[2].split(","))
slabs, to, steps, interval, rate = int(sys.argv[3]), sys.argv[4].split(","), int(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
nx, ny, nz = dims
depth = nz // slabs
senders = [slabcast.Sender(dims, (k * depth, (k + 1) * depth), to[k], rate=rate, slab_depth=depth) for k in range(slabs)]
rng = numpy.random.default_rng(1)
# A few blobs that move from step to step: something to see, as cheap to make as to send.
z, y, x = numpy.meshgrid(*(numpy.linspace(-1, 1, n, dtype=numpy.float32) for n in (nz, ny, nx)), indexing="ij")
centres = rng.uniform(-0.6, 0.6, (6, 3)).astype(numpy.float32)
start = time.monotonic()
for step in range(steps):
    time.sleep(max(0.0, start + step * interval - time.monotonic()))
    c = centres + 0.05 * step
    v = sum(numpy.exp(-((x - a) ** 2 + (y - b) ** 2 + (z - d) ** 2) * 40) for a, b, d in c).astype(numpy.float32) + 1e-3
    for k, s in enumerate(senders):
        s.send_step(step, v[k * depth:(k + 1) * depth])
    for s in senders:
        s.flush()
    print("sent %d" % step, flush=True)
"""


def nearest_rank(values, q):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)] if ordered else float("nan")


def run_path(path, args, dims):
    """Sends --steps steps while the renderer draws them with `path`; returns
    per step (first frame's parts, full resolution frame's parts), each
    (transfer, wait, draw) in ms."""
    import plugin_testlib as t
    with t.shm_dir("latency") as d, t.xvfb() as display:
        with t.receiver(d, "latency", dims, dims[2] // args.slabs, list(range(args.slabs))) as (ports, descriptor):
            render = t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"), [
                descriptor, "--mapper", path, "--coarsest", args.coarsest if path == "slabcast" else 1,
                "--size", args.image, "--timeout", args.steps * args.interval + 120, "--until-step", args.steps - 1,
                "--no-overlay"], ranks=args.ranks)
            renderer = subprocess.Popen(render, env=t.paraview_env(display), stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
            lines = []
            reader = threading.Thread(target=lambda: lines.extend(l.rstrip() for l in renderer.stdout), daemon=True)
            reader.start()
            lib.wait_for(lambda: any(l.startswith("slabcast_render:") for l in lines) or renderer.poll() is not None,
                         timeout=300, what="the renderer to start", seen=lambda: lines[-5:])
            sender = subprocess.run([sys.executable, "-c", SENDER, os.path.join(benchlib.REPO, "server", "lib", "python"),
                                     ",".join(map(str, dims)), str(args.slabs),
                                     ",".join("127.0.0.1:%d" % ports[k] for k in range(args.slabs)),
                                     str(args.steps), str(args.interval), args.rate],
                                    capture_output=True, text=True, timeout=args.steps * args.interval + 300,
                                    env=dict(os.environ, SLABCAST_LIBRARY=os.path.join(lib.BUILD, "server", "lib",
                                                                                       "libslabcast.so")))
            if sender.returncode != 0:
                raise SystemExit("the sender failed:\n" + sender.stderr)
            renderer.wait(timeout=args.steps * args.interval + 300)
            reader.join(timeout=10)
    steps = {}
    for line in lines:
        m = FRAME.match(line)
        if not m:
            continue
        step, level = int(m.group(2)), int(m.group(3) or 1)
        transfer, shown, picked = float(m.group(4)), float(m.group(5)), float(m.group(6))
        parts = (transfer, picked, shown - picked)
        first, full = steps.get(step, (None, None))
        steps[step] = (first or parts, full or (parts if level == 1 else None))
    if not steps:
        raise SystemExit("%s: no frame showed a step with its timeline; the renderer said:\n%s" % (
            path, "\n".join(lines[-20:])))
    return steps


def report(path, steps):
    firsts = [f for f, _ in steps.values() if f]
    fulls = [g for _, g in steps.values() if g]
    print("%s: %d steps shown, %d of them in full resolution" % (path, len(firsts), len(fulls)))
    for name, parts in (("send->first pixel", firsts), ("send->full resolution", fulls)):
        totals = [sum(p) / 1000 for p in parts]
        cells = []
        for q in (50, 95, 99):
            cells.append("p%d %.2f s" % (q, nearest_rank(totals, q)))
        split = ["%s p50 %.0f ms" % (n, nearest_rank([p[i] for p in parts], 50))
                 for i, n in enumerate(("transfer", "wait", "draw"))]
        print("  %-22s %s; %s; %.2fx the paper's %.1f s" % (
            name, ", ".join(cells), ", ".join(split), nearest_rank(totals, 50) / PAPER_SEND_TO_PICTURE_S,
            PAPER_SEND_TO_PICTURE_S))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=256, help="N: an N^3 volume")
    p.add_argument("--slabs", type=int, default=4)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--interval", type=float, default=1.0, help="seconds between steps")
    p.add_argument("--rate", default="2G", help="each stream's pace")
    p.add_argument("--paths", default="slabcast,smart")
    p.add_argument("--coarsest", type=int, default=4)
    p.add_argument("--image", default="800x600")
    p.add_argument("--ranks", type=int, default=1)
    args = p.parse_args(argv)
    os.environ.setdefault("SLABCAST_RENDER", os.path.join(lib.BUILD, "plugin", "slabcast_render.py"))
    os.environ.setdefault("SLABCAST_SERVER", os.path.join(lib.BUILD, "server", "slabcast"))
    os.environ.setdefault("SLABCAST_PLUGIN", os.path.join(lib.BUILD, "plugin", "lib", "paraview-5.11", "plugins",
                                                          "Slabcast", "Slabcast.so"))
    benchlib.print_provenance()
    dims = (args.size,) * 3
    for path in args.paths.split(","):
        report(path, run_path(path, args, dims))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
