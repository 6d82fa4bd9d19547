#!/usr/bin/env python3
"""Benchmark: what a step cut short looks like in each send order and fill
rule (issue 21): the scan order with the previous-step fill against the
progressive order (coarse first) with the nearest-coarse-sample fill.

One step S (default 3) of the 256^3 cosmology dataset, slab depth 64 (four
slabs), run packets. build/testing/slabcast_progressive_cut (source
progressive_cut.cpp next to this file) hands only the first share of each
slab's packets to the receiver's core, which publishes the step with its holes
filled, into a fresh /dev/shm directory; it prints the values' RMSE against the
whole step. That directory is rendered by plugin/python/slabcast_render.py
under pvbatch (a private Xvfb, one frame, --no-overlay, the same size, camera
and colour range, the whole step's min..max, for every image) and the image
compared with the whole step's (testing/plugin/pv_image_stats.py): image RMSE
= sqrt(MSE) in 0..255 units over R, G, B, and PSNR = 10 log10(255^2 / MSE).
The whole step is rendered twice: "whole again" is the renderer's own noise.

For each share (default 10%, 25%, 50%) and each of scan+previous,
scan+nearest, progressive+previous and progressive+nearest, two scenarios:
  1. nothing older to fall back on (a stream that starts, or a controller
     that jumps ahead): the step's holes have no older values under them;
  2. a slowly evolving simulation: step S-1 arrived whole before, so the
     previous-step fill has close values to show.
Printed: one table, the ratio the issue asks for in scenario 1 (progressive+
nearest image RMSE / scan+previous image RMSE, goal <= 1/3 at 25%), where
progressive+nearest is worse than scan+previous in scenario 2, a
recommendation per scenario, and the command, commit and date for
docs/performance.md. PNGs and results.json go to --out; --montage FILE writes
one PNG: progressive+nearest at 10%, 25%, 50%, 100% over scan+previous at the
same shares (scenario 1).

Usage: SLABCAST_BUILD=build python3 testing/bench/progressive_cut.py [--out DIR]
       [--step 3] [--shares 0.1,0.25,0.5] [--size 800x800] [--montage docs/progressive-frames.png]
Needs pvpython, pvbatch, Xvfb and the plugin build (see zfp_image_error.py,
whose environment and renderer call this reuses); SLABCAST_PROGRESSIVE_CUT
defaults to SLABCAST_BUILD/testing/slabcast_progressive_cut. The montage is
made by this file run under pvpython (--compose); the rest needs only the
standard library. Not part of the default ctest run (ctest plugin_progressive
is its small, asserted cousin).
"""
import argparse
import array
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "testing", "plugin"))
import benchlib  # noqa: E402
import zfp_image_error  # noqa: E402  (set_environment, render: the same renderer call)

DEPTH = 64
COMBOS = [("scan", "previous"), ("scan", "nearest"), ("progressive", "previous"), ("progressive", "nearest")]
SCENARIOS = [("nothing older", "nothing older to fall back on"),
             ("previous whole", "a slowly evolving simulation: step S-1 whole before")]
GOAL = 1.0 / 3.0       # scenario 1, 25%: progressive+nearest image RMSE / scan+previous image RMSE
MONTAGE_TILE = zfp_image_error.MONTAGE_TILE  # px, each frame's width and height, as its label strip's
MONTAGE_BITS = 6       # bits kept a colour channel: a volume rendering's noise does not compress, and
                       # docs/ wants the montage under ~400 KB (6 bits: ~340 KB, 8: ~530 KB, 1200x652)


def combo_name(order, fill):
    return "%s+%s" % (order, fill)


def cut(tool, data, step, previous, order, fill, share, shm, name="cut"):
    """The tool's JSON line: the step cut after `share` of each slab's packets,
    published with its holes filled in `shm`."""
    cmd = [tool, "--dataset", data, "--step", step, "--slab-depth", DEPTH, "--order", order, "--fill", fill,
           "--share", share, "--shm-dir", shm, "--name", name]
    if previous is not None:
        cmd += ["--previous", previous]
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("%s failed (%d):\n%s%s" % (" ".join(map(str, cmd)), p.returncode, p.stdout, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def recommend(rows, shares):
    """The order+fill with the lowest image RMSE at most shares (ties: the
    lowest summed image RMSE), and at which shares it is not the lowest."""
    wins = {combo_name(*c): 0 for c in COMBOS}
    total = {combo_name(*c): 0.0 for c in COMBOS}
    best_at = {}
    for share in shares:
        here = {r["combo"]: r["image_rmse"] for r in rows if r["share"] == share}
        best = min(here, key=here.get)
        best_at[share] = best
        wins[best] += 1
        for c, v in here.items():
            total[c] += v
    choice = min(wins, key=lambda c: (-wins[c], total[c]))
    return choice, [s for s in shares if best_at[s] != choice]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", type=int, default=3)
    ap.add_argument("--shares", default="0.1,0.25,0.5", help="shares of each slab's packets that arrive")
    ap.add_argument("--size", default="800x800")
    ap.add_argument("--out", default=None, help="directory for the PNGs and results.json (default: a new temp dir)")
    ap.add_argument("--montage", default=None, help="also write the frames of both streams as one PNG here")
    args = ap.parse_args()
    if args.step < 1:
        ap.error("--step must be at least 1: scenario 2 needs the step before it")
    zfp_image_error.set_environment()
    build = os.environ["SLABCAST_BUILD"]
    os.environ.setdefault("SLABCAST_PROGRESSIVE_CUT", os.path.join(build, "testing", "slabcast_progressive_cut"))
    tool = os.environ["SLABCAST_PROGRESSIVE_CUT"]
    if not os.path.exists(tool):
        sys.exit("SLABCAST_PROGRESSIVE_CUT=%r does not exist: build the project (make build) or set it" % tool)
    import benchlib
    import plugin_testlib as t

    shares = [float(s) for s in args.shares.split(",")]
    dims = (256, 256, 256)
    data = benchlib.dataset(dims)
    out_dir = os.path.abspath(args.out) if args.out else tempfile.mkdtemp(prefix="slabcast-progressive-")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(data, "dataset.json")) as f:
        step_file = [s["file"] for s in json.load(f)["steps"] if s["step"] == args.step][0]
    with open(os.path.join(data, step_file), "rb") as f:
        source = array.array("f", f.read())
    lo, hi = min(source), max(source)
    del source
    colour_range = (lo if lo > 0 else hi * 1e-3, hi)  # the renderer's log scale needs lo > 0, as zfp_image_error
    script = os.path.relpath(os.path.abspath(__file__), REPO)
    command = "SLABCAST_BUILD=%s python3 %s" % (shlex.quote(os.path.relpath(build, REPO)),
                                                " ".join(shlex.quote(a) for a in [script] + sys.argv[1:]))
    print("step %d of %s (%.6g..%.6g), slab depth %d, run packets; images %s in %s" % (
        args.step, data, lo, hi, DEPTH, args.size, out_dir), flush=True)

    def stream(tag, previous, order, fill, share, again=False):
        """Cut, render, clean up; returns (tool's figures, PNG path)."""
        png = os.path.join(out_dir, "%s-%s-%s-%03d%s.png" % (tag, order, fill, round(share * 100),
                                                             "-again" if again else ""))
        shm = tempfile.mkdtemp(prefix="slabcast-progressive-", dir="/dev/shm")  # 0700: the receiver wants it private
        try:
            figures = cut(tool, data, args.step, previous, order, fill, share, shm)
            zfp_image_error.render(t, display, os.path.join(shm, "cut.slabcast"), args.step, png, args.size,
                                   colour_range)
        finally:
            shutil.rmtree(shm, ignore_errors=True)
        return figures, png

    def against_reference(png):
        return t.read_image_stats(t.pvpython("pv_image_stats.py", png, reference_png)[0])

    t0 = time.monotonic()
    rows = []
    with t.xvfb() as display:
        _, reference_png = stream("whole", None, "scan", "previous", 1.0)
        _, again_png = stream("whole", None, "scan", "previous", 1.0, again=True)
        noise = against_reference(again_png)
        reference_stats = t.read_image_stats(t.pvpython("pv_image_stats.py", reference_png)[0])
        print("whole step: %.1f%% of the pixels lit; rendered again: image RMSE %.3f (the renderer's noise)" % (
            100 * reference_stats["lit"], math.sqrt(noise["mse"])), flush=True)
        # The progressive stream's last montage frame: the whole step sent in that order.
        whole_progressive, whole_progressive_png = stream("whole", None, "progressive", "nearest", 1.0)
        whole_progressive_stats = against_reference(whole_progressive_png)
        for (tag, _), previous in zip(SCENARIOS, (None, args.step - 1)):
            for share in shares:
                for order, fill in COMBOS:
                    figures, png = stream(tag.replace(" ", "-"), previous, order, fill, share)
                    stats = against_reference(png)
                    rows.append({"scenario": tag, "previous": previous, "share": share, "order": order, "fill": fill,
                                 "combo": combo_name(order, fill), "image": png, "image_stats": stats,
                                 "image_rmse": math.sqrt(stats["mse"]), "image_psnr": stats["psnr"],
                                 "value_rmse": figures["value_rmse"], "tool": figures})
                    print("  %-15s %4.0f%%  %-21s value RMSE %.4f, image RMSE %.3f (%.0f s so far)" % (
                        tag, 100 * share, combo_name(order, fill), figures["value_rmse"], rows[-1]["image_rmse"],
                        time.monotonic() - t0), flush=True)

    def row(tag, share, combo):
        return [r for r in rows if r["scenario"] == tag and r["share"] == share and r["combo"] == combo][0]

    commit, dirty = benchlib.provenance()
    date = time.strftime("%Y-%m-%d %H:%M %Z")
    print("\nstep %d of the 256^3 cosmology dataset (values %.4g..%.4g), 4 slabs of 64 planes, run packets, each "
          "slab cut after the share of its packets; value RMSE against the whole step (slabcast_progressive_cut); "
          "images %s, slabcast_render.py --no-overlay, against the whole step's image (RMSE in 0..255 units over "
          "R, G, B; PSNR = 10 log10(255^2 / MSE)); the whole step rendered again: image RMSE %.3f, PSNR %s" % (
              args.step, lo, hi, args.size, math.sqrt(noise["mse"]),
              "same" if math.isinf(noise["psnr"]) else "%.1f dB" % noise["psnr"]))
    print("%-16s %6s  %-21s %11s %11s %10s" % ("scenario", "share", "order+fill", "value RMSE", "image RMSE",
                                               "img PSNR"))
    for tag, _ in SCENARIOS:
        for share in shares:
            for order, fill in COMBOS:
                r = row(tag, share, combo_name(order, fill))
                print("%-16s %5.0f%%  %-21s %11.4f %11.3f %10s" % (
                    tag, 100 * share, r["combo"], r["value_rmse"], r["image_rmse"],
                    "same" if math.isinf(r["image_psnr"]) else "%.1f" % r["image_psnr"]))
    print("progressive+nearest at 100%%: value RMSE %.4g, image RMSE %.3f (the whole step in that order)" % (
        whole_progressive["value_rmse"], math.sqrt(whole_progressive_stats["mse"])))

    (first, first_text), (second, second_text) = SCENARIOS
    ratios = {}
    print("\nscenario 1, %s: progressive+nearest image RMSE / scan+previous image RMSE" % first_text)
    for share in shares:
        ratios[share] = row(first, share, "progressive+nearest")["image_rmse"] / row(first, share, "scan+previous")[
            "image_rmse"]
        goal = ""
        if abs(share - 0.25) < 1e-9:
            goal = "  (goal <= 1/3: %s)" % ("met" if ratios[share] <= GOAL else "NOT met")
        print("  %3.0f%%: %.3f = 1/%.1f%s" % (100 * share, ratios[share], 1 / ratios[share], goal))
    worse = [(share, what) for share in shares for what in ("image_rmse", "value_rmse")
             if row(second, share, "progressive+nearest")[what] > row(second, share, "scan+previous")[what]]
    print("scenario 2, %s: progressive+nearest worse than scan+previous: %s" % (second_text, "; ".join(
        "%.0f%% %s (%.4g > %.4g)" % (100 * s, w.replace("_rmse", " RMSE"), row(second, s, "progressive+nearest")[w],
                                     row(second, s, "scan+previous")[w]) for s, w in worse) or "nowhere"))
    recommendations = {}
    for (tag, text), n in zip(SCENARIOS, (1, 2)):
        choice, not_best = recommend([r for r in rows if r["scenario"] == tag], shares)
        order, fill = choice.split("+")
        recommendations[tag] = {"order": order, "fill": fill, "not_lowest_at": not_best}
        print("recommendation, scenario %d (%s): --fill %s (with --order %s: the lowest image RMSE at %s)" % (
            n, text, fill, order, "every share" if not not_best else "every share but %s" % ", ".join(
                "%.0f%%" % (100 * s) for s in not_best)))
    print("\ncommand: %s\ncommit: %s%s\ndate: %s\nimages in %s (%.0f s)" % (
        command, commit, " (with changes not committed)" if dirty else "", date, out_dir, time.monotonic() - t0))

    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"step": args.step, "dims": dims, "slab_depth": DEPTH, "size": args.size, "range": [lo, hi],
                   "colour_range": colour_range, "reference": reference_png, "noise": noise,
                   "reference_stats": reference_stats,
                   "whole_progressive": dict(whole_progressive, image=whole_progressive_png,
                                             image_stats=whole_progressive_stats),
                   "rows": rows, "ratio_progressive_nearest_to_scan_previous": {str(s): v for s, v in ratios.items()},
                   "scenario2_progressive_nearest_worse": [{"share": s, "what": w} for s, w in worse],
                   "recommendations": recommendations, "command": command, "commit": commit, "dirty": dirty,
                   "date": date}, f, indent=1, default=str)

    if args.montage:
        def label(r):
            return "%s %.0f%%, RMSE %.1f" % (r["combo"], 100 * r["share"], r["image_rmse"])
        grid = [[[row(first, s, "progressive+nearest")["image"], label(row(first, s, "progressive+nearest"))]
                 for s in shares] + [[whole_progressive_png, "progressive, whole step"]],
                [[row(first, s, "scan+previous")["image"], label(row(first, s, "scan+previous"))]
                 for s in shares] + [[reference_png, "scan, whole step"]]]
        t.run([t.PVPYTHON, os.path.abspath(__file__), "--compose", os.path.abspath(args.montage), json.dumps(grid)],
              env=t.paraview_env())
        print("montage: %s" % args.montage)


def compose(target, grid):
    """pvpython: rows of [IMAGE, LABEL], each IMAGE scaled to MONTAGE_TILE px
    with LABEL under it, written as one PNG with MONTAGE_BITS a channel (as
    zfp_image_error.compose, less its difference row)."""
    import numpy as np
    from vtkmodules.util import numpy_support
    from vtkmodules.vtkImagingCore import vtkImageResize
    from vtkmodules.vtkIOImage import vtkPNGReader

    def tile(path):
        r = vtkPNGReader()
        r.SetFileName(path)
        resize = vtkImageResize()
        resize.SetInputConnection(r.GetOutputPort())
        resize.SetOutputDimensions(MONTAGE_TILE, MONTAGE_TILE, 1)
        resize.Update()
        pixels = numpy_support.vtk_to_numpy(resize.GetOutput().GetPointData().GetScalars())
        return pixels.reshape(MONTAGE_TILE, MONTAGE_TILE, -1)[::-1, :, :3]  # top row first, RGB

    canvas = np.vstack([np.hstack([np.vstack([tile(path), zfp_image_error.montage_label(text)]) for path, text in row])
                        for row in grid])
    canvas = canvas.astype(np.uint8) & np.uint8((0xFF << (8 - MONTAGE_BITS)) & 0xFF)  # at most 3/255 darker
    # It goes into docs/: the smallest file, whatever it costs in time.
    zfp_image_error.montage_write(canvas, target, compression=9)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--compose"]:  # run by pvpython for --montage
        compose(sys.argv[2], json.loads(sys.argv[3]))
    else:
        main()
