#!/usr/bin/env python3
"""Benchmark: send to pixel. libslabcast's Python module sends a volume as
--slabs streams, one step every --interval seconds, into a real `slabcast
receive` on loopback; each --paths entry draws the same stream in turn, under
a private Xvfb:

- `slabcast`: slabcast_render.py in pvbatch (on --ranks ranks), the plugin's
  CPU ray marcher, a new step first at 1/--coarsest of the pixels, refined;
- `smart`: the same script through ParaView's own volume mapper, the peer;
- `gui`: the ParaView GUI as `slabcast demo` opens it (slabcast_gui_open.py,
  its view fixed at --image), logging its frames (SLABCAST_FRAME_LOG).

Each frame names the step's timeline (plugin/python/slabcast_render.py):
sent->published (the transfer: from the senders' step stamps to the last
slab's publication), published->picked (the wait for the renderer to take
it) and picked->shown (reading and drawing). Per step:

- send->first pixel: the first frame that shows the step;
- send->full resolution: its first frame at full resolution (the first frame,
  for a path that draws only in full);

with p50/p95/p99 over the steps (nearest rank), each split into its parts,
beside the paper's 3.9 s from send to picture for a 16 GB step (Balman et
al., 2012, section 4: about 1.4 s to move it and 2.5 s to draw it). Steps
published before a renderer's first frame (its start-up) are left out. One
host, one clock: the senders and the receiver read the same CLOCK_REALTIME.

Usage: SLABCAST_BUILD=build python3 testing/bench/latency.py [--size 256] [--slabs 4] [--steps 100]
       [--interval 1.0] [--paths slabcast,smart,gui] [--coarsest 4] [--image 800x600] [--ranks 1]
"""
import argparse
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
# One queued step a sender: each sends from a thread of its own, the slabs at
# once, as one MPI rank a slab would (a synchronous sender sends them in turn).
senders = [slabcast.Sender(dims, (k * depth, (k + 1) * depth), to[k], rate=rate, slab_depth=depth, queue_steps=1)
           for k in range(slabs)]
rng = numpy.random.default_rng(1)
# A few blobs that move from step to step, made before the first step (separable
# Gaussians, VOLUMES of them in turn): the sending is all this process does once
# the steps begin.
VOLUMES = 8
axes = [numpy.linspace(-1, 1, n, dtype=numpy.float32) for n in (nz, ny, nx)]
centres = rng.uniform(-0.6, 0.6, (6, 3)).astype(numpy.float32)
volumes = []
for k in range(VOLUMES):
    v = numpy.full((nz, ny, nx), 1e-3, dtype=numpy.float32)
    for a, b, d in centres + 0.05 * k:
        gz, gy, gx = (numpy.exp(-(axis - c) ** 2 * 40) for axis, c in zip(axes, (d, b, a)))
        v += gz[:, None, None] * (gy[:, None] * gx[None, :])[None, :, :]
    volumes.append(v)
def senders_send(step):
    for k, s in enumerate(senders):
        s.send_step(step, volumes[step % VOLUMES][k * depth:(k + 1) * depth])
    for s in senders:
        s.flush()


senders_send(0)  # the first step before the renderer starts: it opens the stream with it
print("ready", flush=True)
sys.stdin.readline()  # the driver's go: the renderer is up
start = time.monotonic()
for step in range(1, steps):
    time.sleep(max(0.0, start + step * interval - time.monotonic()))
    senders_send(step)
    print("sent %d" % step, flush=True)
"""


def renderer_cmd(path, args, descriptor, display, work):
    """(command, environment, frame log or None: the lines come on stdout)."""
    import plugin_testlib as t
    env = t.paraview_env(display)
    if path == "gui":
        log = os.path.join(work, "gui-frames.log")
        env.update(SLABCAST_DESCRIPTOR=descriptor, SLABCAST_SCRIPT_DIR=os.path.dirname(t.env_path("SLABCAST_RENDER")),
                   SLABCAST_COARSEST=str(args.coarsest), SLABCAST_FRAME_LOG=log, SLABCAST_VIEW_SIZE=args.image,
                   XDG_CONFIG_HOME=os.path.join(work, "config"), XDG_RUNTIME_DIR=work)
        script = os.path.join(os.path.dirname(t.env_path("SLABCAST_RENDER")), "slabcast_gui_open.py")
        return [t.PARAVIEW, "--dr", "--script=" + script], env, log
    cmd = t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"), [
        descriptor, "--mapper", path, "--coarsest", args.coarsest if path == "slabcast" else 1,
        "--size", args.image, "--stop-file", os.path.join(work, "stop"), "--no-overlay"], ranks=args.ranks)
    return cmd, env, None


def run_path(path, args, dims):
    """Sends --steps steps while the renderer draws them with `path`; returns
    per step (first frame's parts, full resolution frame's parts), each
    (transfer, wait, draw) in ms."""
    import plugin_testlib as t
    with t.shm_dir("latency") as d, t.xvfb() as display:
        with t.receiver(d, "latency", dims, dims[2] // args.slabs, list(range(args.slabs))) as (ports, descriptor):
            sender = subprocess.Popen(
                [sys.executable, "-c", SENDER, os.path.join(benchlib.REPO, "server", "lib", "python"),
                 ",".join(map(str, dims)), str(args.slabs), ",".join("127.0.0.1:%d" % ports[k] for k in range(args.slabs)),
                 str(args.steps), str(args.interval), args.rate],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                env=dict(os.environ, SLABCAST_LIBRARY=os.path.join(lib.BUILD, "server", "lib", "libslabcast.so")))
            try:
                if sender.stdout.readline().strip() != "ready":
                    raise SystemExit("the sender failed (exit code %s)" % sender.wait())
                t.wait_published(d, 0, ports, name="latency")
                cmd, env, log = renderer_cmd(path, args, descriptor, display, d)
                print("$ " + " ".join(map(str, cmd)), flush=True)
                renderer = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                output = []
                reader = threading.Thread(target=lambda: output.extend(l.rstrip() for l in renderer.stdout), daemon=True)
                reader.start()

                def lines():
                    if log is None:
                        return list(output)
                    with open(log) if os.path.exists(log) else open(os.devnull) as f:
                        return [l.rstrip() for l in f]

                lib.wait_for(lambda: any(FRAME.match(l) for l in lines()) or renderer.poll() is not None,
                             timeout=300, what="the renderer's first frame", seen=lambda: output[-5:])
                sender.stdin.write("go\n")
                sender.stdin.flush()
                sender.wait(timeout=args.steps * args.interval + 300)
                # The last step's frames, to full resolution.
                last = args.steps - 1
                lib.wait_for(lambda: any((m.group(2), m.group(3) or "1") == (str(last), "1")
                                         for m in map(FRAME.match, lines()) if m) or renderer.poll() is not None,
                             timeout=120, what="step %d in full resolution" % last, seen=lambda: lines()[-3:])
            finally:
                if sender.poll() is None:
                    sender.kill()
                    sender.wait()
            open(os.path.join(d, "stop"), "w").close()
            try:
                renderer.wait(timeout=60 if log is None else 1)
            except subprocess.TimeoutExpired:
                renderer.terminate()
                renderer.wait(timeout=30)
            reader.join(timeout=10)
            shown = lines()
    steps, first_step = {}, None
    for line in shown:
        m = FRAME.match(line)
        if not m:
            continue
        step, level = int(m.group(2)), int(m.group(3) or 1)
        first_step = step if first_step is None else first_step
        if step == first_step:
            continue  # published before the renderer was up
        transfer, to_shown, picked = float(m.group(4)), float(m.group(5)), float(m.group(6))
        parts = (transfer, picked, to_shown - picked)
        first, full = steps.get(step, (None, None))
        steps[step] = (first or parts, full or (parts if level == 1 else None))
    if not steps:
        raise SystemExit("%s: no frame showed a step with its timeline; the renderer said:\n%s" % (
            path, "\n".join((shown or output)[-20:])))
    return steps


def report(path, steps):
    """Prints the path's figures; returns {measure: p50 in s}."""
    firsts = [f for f, _ in steps.values() if f]
    fulls = [g for _, g in steps.values() if g]
    print("%s: %d steps shown, %d of them in full resolution" % (path, len(firsts), len(fulls)))
    medians = {}
    for name, parts in (("send->first pixel", firsts), ("send->full resolution", fulls)):
        totals = [sum(p) / 1000 for p in parts]
        medians[name] = benchlib.nearest_rank(totals, 50)
        cells = ["p%d %.2f s" % (q, benchlib.nearest_rank(totals, q)) for q in (50, 95, 99)]
        split = ["%s p50 %.0f ms" % (n, benchlib.nearest_rank([p[i] for p in parts], 50))
                 for i, n in enumerate(("transfer", "wait", "draw"))]
        print("  %-22s %s; %s; %.2fx the paper's %.1f s" % (
            name, ", ".join(cells), ", ".join(split), medians[name] / PAPER_SEND_TO_PICTURE_S,
            PAPER_SEND_TO_PICTURE_S), flush=True)
    return medians


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=256, help="N: an N^3 volume")
    p.add_argument("--slabs", type=int, default=4)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--interval", type=float, default=1.0, help="seconds between steps")
    p.add_argument("--rate", default="2G", help="each stream's pace")
    p.add_argument("--paths", default="slabcast,smart,gui")
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
    medians = {}
    for path in args.paths.split(","):
        medians[path] = report(path, run_path(path, args, dims))
    base = "slabcast" if "slabcast" in medians else None
    for path in medians:
        if base and path != base:
            print("%s / %s, p50: %s" % (path, base, ", ".join(
                "%s %.2fx" % (name, medians[path][name] / medians[base][name]) for name in medians[base])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
