#!/usr/bin/env python3
"""Benchmark: the volume rendering paths on this host (issues 22 and 40), the
paths slabcast_render.py offers with --mapper (plugin/python/slabcast_mappers.py):
ParaView's (smart = the GPU ray caster, on llvmpipe without a GPU; raycast =
VTK's CPU ray caster, the reference picture; the strided and resampled
levels of detail) and the plugin's CPU ray marcher (slabcast).

For each volume size and rank count, each path renders step 3 of the cosmology
dataset in data/cache (cosmo-NxNxN-4, else the benchmarks' generated
bench-NxNxN for N <= 512) with slabcast_render.py's colour preset and camera,
in pvbatch under a private Xvfb (`mpirun -np R` for R ranks, IceT
compositing). The volume comes from ParaView's raw image reader over the step
file (each rank reads its z-range): the reader is not what is measured here
(docs/performance.md, "Frame time": the slabcast reader renders at the same speed),
and a 1024^3 step needs no copy in /dev/shm.

- first frame: the first Render() after the data is read: the volume's upload
  (and, for resample:N, the resampling), as when a new step arrives;
- later frame: the median of --frames renders of the same view, turned by
  0.01 degree back and forth between them so that each is drawn anew;
- Mvox/s/core: voxels rendered (N^3 for resample:N, ((n-1)/K+1)^3 for stride:K) / later frame / cores of
  this host, beside the paper's 1024^3 / (2.5 s x 32 cores) = 13.4 (Balman et
  al., 2012, section 4);
- image RMSE and max: the last frame against `smart`'s (the default) at the
  same size and ranks in the first round, over R, G, B in 0..255
  (testing/plugin/pv_image_stats.py); smart's own figure in later rounds is
  the noise.

Rounds alternate the order of the paths (--repeats); figures are the median
over rounds, with the range. A 1024^3 run waits until MemAvailable covers its
estimate (up to 10 min), so as not to push another job out of memory; with
--lock FILE each run holds that flock (the measure lock, /tmp/slabcast-measure.lock).

Usage: SLABCAST_BUILD=build python3 testing/bench/render_paths.py [--sizes 256,1024] [--ranks 1,2]
       [--paths smart,gpu,raycast,ospray,slabcast,stride:2,resample:1/2,resample:1/4] [--size 800x800] [--frames 5]
       [--repeats 2] [--out DIR] [--montage FILE] [--lock FILE]
"""
import argparse
import contextlib
import fcntl
import json
import math
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
PAPER_MVOX_CORE = 1024 ** 3 / (2.5 * 32) / 1e6  # Balman et al., 2012, section 4: 1024^3 in 2.5 s on 32 cores
PAPER_CORE_S = 2.5 * 32  # the same: 80 core-seconds a 1024^3 frame
STEP = 3
COLOUR_PRESET = "Inferno (matplotlib)"  # slabcast_render.py's default


def step_file(n):
    """Step STEP of the n^3 cosmology dataset (None when there is none and n is too large to make here)."""
    name = "%dx%dx%d" % (n, n, n)
    for d in ("cosmo-%s-4" % name, "bench-" + name):
        path = os.path.join(REPO, "data", "cache", d)
        if os.path.exists(os.path.join(path, "dataset.json")):
            break
    else:
        if n > 512:
            return None
        import benchlib
        path = benchlib.dataset((n, n, n))
    with open(os.path.join(path, "dataset.json")) as f:
        return os.path.join(path, [s["file"] for s in json.load(f)["steps"] if s["step"] == STEP][0])


def expand(paths, n):
    """resample:1/K -> resample:n/K."""
    out = []
    for p in paths.split(","):
        if p.startswith("resample:1/"):
            p = "resample:%d" % (n // int(p[11:]))
        out.append(p)
    return out


def rendered_voxels(path, n):
    if path.startswith("stride:"):
        return ((n - 1) // int(path[7:]) + 1) ** 3
    return (int(path[9:]) if path.startswith("resample:") else n) ** 3


def memory_estimate(path, n, ranks):
    """Bytes a run needs: the reader's copy of the values, and for the GPU
    ray caster 1.5 more of what it renders (its texture and what it is made
    from: 2.5 copies in all, server/src/demo/demo_plan.cpp's measure), for
    the CPU one an unsigned short copy; 0.6 GiB a rank besides."""
    copies = 1 + (0.6 if path == "raycast" else 0.0 if path == "slabcast" else 1.5 * rendered_voxels(path, n) / n ** 3)
    return int(copies * 4 * n ** 3) + ranks * (600 << 20)


def mem_available():
    with open("/proc/meminfo") as f:
        return int([line for line in f if line.startswith("MemAvailable:")][0].split()[1]) * 1024


def wait_for_memory(need, patience=600):
    deadline = time.monotonic() + patience
    while mem_available() < need:
        if time.monotonic() > deadline:
            return False
        print("  waiting: %.1f GiB available, the run needs about %.1f GiB" % (mem_available() / 2 ** 30, need / 2 ** 30),
              flush=True)
        time.sleep(15)
    return True


@contextlib.contextmanager
def held(lock):
    if not lock:
        yield
        return
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def run_path(t, display, raw, n, path, ranks, args, png):
    """One pvbatch (under mpirun for ranks > 1); returns its RESULT fields or None when the path is unavailable."""
    cmd = t.pvbatch_cmd(os.path.abspath(__file__), ["--pvbatch", raw, n, path, args.size, args.frames, png,
                                                    os.path.dirname(os.environ["SLABCAST_RENDER"])], ranks=ranks)
    with held(args.lock):
        out, err = t.run(cmd, env=t.paraview_env(display), timeout=1800, expect_rc=None)
    line = [x for x in out.splitlines() if x.startswith("RESULT ")]
    if not line:  # killed, or out of memory: reported, the other paths go on
        print(err[-2000:])
        return {"unavailable": "failed: no result (stderr above)"}
    if line[0].startswith("RESULT unavailable "):
        return {"unavailable": "not available: " + line[0][19:]}
    fields = dict(kv.split("=", 1) for kv in line[0][7:].split())
    return {"first": float(fields["first"]), "later": [float(v) for v in fields["later"].split(",")],
            "rss_mb": int(fields["rss_mb"]), "read": float(fields["read"]), "png": png,
            "refine": [float(v) for v in fields.get("refine", "-").split(",") if v != "-"]}


def run_size(t, display, n, ranks, args, out_dir):
    raw = step_file(n)
    if raw is None:
        print("SKIPPED %d^3: no cosmo-%dx%dx%d-4 dataset in data/cache (make scale generates one)" % (n, n, n, n))
        return []
    paths = expand(args.paths, n)
    if "smart" not in paths:
        paths.insert(0, "smart")
    runs = {p: [] for p in paths}
    for r in range(args.repeats):
        order = list(paths) if r % 2 == 0 else list(reversed(paths))
        for p in order:
            need = memory_estimate(p, n, ranks)
            if n >= 512 and not wait_for_memory(need):
                print("  %s, %d^3, %d rank(s): skipped, less than %.1f GiB available for 10 min" % (
                    p, n, ranks, need / 2 ** 30))
                continue
            png = os.path.join(out_dir, "%d-%dr-%s-%d.png" % (n, ranks, p.replace(":", ""), r))
            result = run_path(t, display, raw, n, p, ranks, args, png)
            runs[p].append(result)
            if "unavailable" in result:
                print("  %s: %s" % (p, result["unavailable"]), flush=True)
                paths.remove(p)
                continue
            print("  %d^3, %d rank(s), %-13s first %.2f s,%s later %s s, rank 0 peak %d MiB" % (
                n, ranks, p, result["first"],
                " refining %s s," % ",".join("%.2f" % v for v in result["refine"]) if result["refine"] else "",
                ",".join("%.2f" % v for v in result["later"]), result["rss_mb"]), flush=True)
    # smart's image is the reference; where it is blank (llvmpipe cannot hold
    # the texture) the CPU ray caster's, the other full-resolution path.
    reference = None
    for p in ("smart", "raycast"):
        done = [x for x in runs.get(p, []) if "unavailable" not in x]
        if done and t.read_image_stats(t.pvpython("pv_image_stats.py", done[0]["png"])[0])["lit"] > 0.01:
            reference = done[0]["png"]
            break
    if reference is None:
        reference = runs["smart"][0].get("png", "")
    print("  %d^3, %d rank(s): images against %s" % (n, ranks, os.path.basename(reference)), flush=True)
    rows = []
    for p, results in runs.items():
        done = [x for x in results if "unavailable" not in x]
        if not done:
            rows.append({"n": n, "ranks": ranks, "path": p, "unavailable": results[0]["unavailable"]})
            continue
        raycast = [x for x in runs.get("raycast", []) if "unavailable" not in x]
        for x in done:
            if x["png"] != reference:
                x["stats"] = t.read_image_stats(t.pvpython("pv_image_stats.py", x["png"], reference)[0])
            else:
                x["stats"] = dict(t.read_image_stats(t.pvpython("pv_image_stats.py", x["png"])[0]), maxdiff=0, mse=0)
            # Against VTK's CPU ray caster (issue 40's reference): mean difference, share over 8/255.
            if raycast and x["png"] != raycast[0]["png"]:
                vs = t.read_image_stats(t.pvpython("pv_image_stats.py", x["png"], raycast[0]["png"])[0])
                x["vs_raycast"] = (vs["meandiff"], vs["over8"])
        later = [statistics.median(x["later"]) for x in done]
        rows.append({"n": n, "ranks": ranks, "path": p, "first": [x["first"] for x in done], "later": later,
                     "mvox_core": [rendered_voxels(p, n) / v / os.cpu_count() / 1e6 for v in later],
                     "rmse": [math.sqrt(x["stats"]["mse"]) for x in done], "max": [x["stats"]["maxdiff"] for x in done],
                     "lit": done[0]["stats"]["lit"], "rss_mb": max(x["rss_mb"] for x in done),
                     "pngs": [x["png"] for x in done], "refine": done[0].get("refine", []),
                     "vs_raycast": done[0].get("vs_raycast")})
    return rows


def span(values, fmt):
    """'median (lo-hi)' of several values, the value alone for one."""
    m = statistics.median(values)
    if len(values) == 1 or min(values) == max(values):
        return fmt % m
    return (fmt + " (" + fmt + "-" + fmt + ")") % (m, min(values), max(values))


def print_table(rows, args):
    import benchlib
    commit, dirty = benchlib.provenance()
    print("\nrender_paths.py, commit %s%s, %s; pvbatch %s, %d cores (%s), step %d of the cosmology dataset, "
          "median over %d round(s) (range); later frame = median of %d renders; images against smart's at the same "
          "size and ranks; paper: 1024^3 / (2.5 s x 32 cores) = %.1f Mvoxel/s/core" % (
              commit, "+changes" if dirty else "", time.strftime("%Y-%m-%d"), args.size, os.cpu_count(),
              "Mesa llvmpipe", STEP, args.repeats, args.frames, PAPER_MVOX_CORE))
    print("core-s = later frame x %d cores, against the paper's %.0f core-seconds a 1024^3 frame (vs paper: "
          "voxels a core-second, theirs / ours); vs raycast: mean |difference| in 0..255 and the share of pixels "
          "more than 8/255 apart from VTK's CPU ray caster's frame (issue 40's goal: <= 1 and <= 1%%); refining: "
          "slabcast's frames at 1/2, then 1/1 of the pixels after the first at 1/4" % (os.cpu_count(), PAPER_CORE_S))
    print("| volume | ranks | path | first frame s | refining s | later frame s | core-s | Mvox/s/core | vs paper "
          "| image RMSE | image max | vs raycast | lit | rank 0 peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "unavailable" in r:
            print("| %d^3 | %d | %s | %s | | | | | | | | | | |" % (r["n"], r["ranks"], r["path"], r["unavailable"]))
            continue
        blank = r["lit"] < 0.01  # nothing rendered: no rate to claim
        versus = r.get("vs_raycast")
        print("| %d^3 | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f%%%s | %d |" % (
            r["n"], r["ranks"], r["path"], span(r["first"], "%.2f"),
            ", ".join("%.2f" % v for v in r.get("refine", [])), span(r["later"], "%.2f"),
            "" if blank else "%.2f" % (statistics.median(r["later"]) * os.cpu_count()),
            "blank" if blank else span(r["mvox_core"], "%.2f"),
            "" if blank else "%.2fx" % (statistics.median(r["mvox_core"]) / PAPER_MVOX_CORE),
            span(r["rmse"], "%.2f"), span(r["max"], "%d"),
            "%.2f, %.2f%%" % (versus[0], 100 * versus[1]) if versus else "",
            100 * r["lit"], " BLANK" if blank else "", r["rss_mb"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="256,1024", help="volume edge lengths N (N^3)")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--paths", default="smart,gpu,raycast,ospray,slabcast,stride:2,resample:1/2,resample:1/4",
                    help="--mapper choices; resample:1/K is resample:N/K; stride:K goes through ExtractSubset here "
                         "(the raw reader), the same points the slabcast reader's Stride takes")
    ap.add_argument("--size", default="800x800")
    ap.add_argument("--frames", type=int, default=5, help="later frames timed in each run")
    ap.add_argument("--repeats", type=int, default=2, help="rounds, the paths' order alternating")
    ap.add_argument("--out", default=None, help="directory for the PNGs and results.json (default: a new temp dir)")
    ap.add_argument("--montage", default=None, help="also write the first size and rank count's images as one PNG")
    ap.add_argument("--lock", default=None, help="hold this flock during each run (e.g. /tmp/slabcast-measure.lock)")
    args = ap.parse_args()
    sys.path.insert(0, HERE)
    import zfp_image_error
    zfp_image_error.set_environment()
    sys.path.insert(0, os.path.join(REPO, "testing", "plugin"))
    import plugin_testlib as t

    out_dir = os.path.abspath(args.out) if args.out else tempfile.mkdtemp(prefix="slabcast-render-paths-")
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    with t.xvfb() as display:
        for n in (int(v) for v in args.sizes.split(",")):
            for ranks in (int(v) for v in args.ranks.split(",")):
                rows += run_size(t, display, n, ranks, args, out_dir)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"size": args.size, "rows": rows}, f, indent=1)
    print_table(rows, args)
    print("images and results.json in %s" % out_dir)
    if args.montage and rows:
        first = [r for r in rows if "pngs" in r and (r["n"], r["ranks"]) == (rows[0]["n"], rows[0]["ranks"])]
        tiles = ["%s=%s, %.2f s, RMSE %.2f" % (r["pngs"][0], r["path"], statistics.median(r["later"]),
                                                statistics.median(r["rmse"])) for r in first]
        t.run([t.PVPYTHON, os.path.abspath(__file__), "--compose", os.path.abspath(args.montage), first[0]["pngs"][0]]
              + tiles, env=t.paraview_env())
    print("BENCH_DONE")


def pvbatch_main(raw, n, path, size, frames, png, render_dir):
    """Under pvbatch (rank 0): read, show through `path`, time the first and later frames, save the last."""
    sys.path.insert(0, render_dir)
    import slabcast_mappers
    from slabcast_render import apply_cosmic_preset
    from paraview.simple import GetActiveViewOrCreate, ImageReader, Render, SaveScreenshot

    n, frames = int(n), int(frames)
    why = slabcast_mappers.unavailable(path)
    if why:
        print("RESULT unavailable " + why, flush=True)
        return
    width, height = (int(v) for v in size.split("x"))
    reader = ImageReader(FileNames=[raw], DataScalarType="float", DataByteOrder="LittleEndian",
                         DataExtent=[0, n - 1, 0, n - 1, 0, n - 1], ScalarArrayName="density")
    t0 = time.perf_counter()
    reader.UpdatePipeline()
    read = time.perf_counter() - t0
    lo, hi = reader.PointData["density"].GetRange()
    lo = lo if lo > 0 else hi * 1e-3  # as slabcast_render.py's --min-fraction
    view = GetActiveViewOrCreate("RenderView")
    view.ViewSize = [width, height]
    view.UseColorPaletteForBackground = 0
    view.Background = [0.0, 0.0, 0.0]
    view.OrientationAxesVisibility = 0
    display = slabcast_mappers.show_volume(reader, view, path)
    apply_cosmic_preset(display, "density", lo, hi, COLOUR_PRESET, (n - 1.0,) * 3)
    # slabcast_render.py's camera (--azimuth 30 --elevation 20).
    view.ResetCamera()
    view.GetActiveCamera().Azimuth(30.0)
    view.GetActiveCamera().Elevation(20.0)
    view.ResetCamera()
    # The CPU ray marcher draws a new step coarse first (slabcast_render.py's
    # --coarsest 4), then finer frame by frame: those frames are timed apart,
    # the later ones are all in full.
    levels = [4, 2] if path == "slabcast" else []
    if levels:
        display.SlabcastLevel = levels[0]
    t0 = time.perf_counter()
    Render(view)
    first = time.perf_counter() - t0
    refine = []
    for level in levels[1:] + [1] if levels else []:
        display.SlabcastLevel = level
        t0 = time.perf_counter()
        Render(view)
        refine.append(time.perf_counter() - t0)
    later = []
    camera = view.GetActiveCamera()
    for i in range(frames):
        # A view turned by a hundredth of a degree, back and forth, as a user
        # turning it: every path draws it anew (the plugin's mapper shows a
        # frame asked for again with nothing changed without marching it).
        camera.Azimuth(0.01 if i % 2 == 0 else -0.01)
        t0 = time.perf_counter()
        Render(view)
        later.append(time.perf_counter() - t0)
    SaveScreenshot(png, view, ImageResolution=[width, height])
    with open("/proc/self/status") as f:
        rss_mb = int([x for x in f if x.startswith("VmHWM:")][0].split()[1]) // 1024
    print("RESULT first=%.4f later=%s rss_mb=%d read=%.3f refine=%s" % (
        first, ",".join("%.4f" % v for v in later), rss_mb, read, ",".join("%.4f" % v for v in refine) or "-"),
        flush=True)



def compose(target, reference, tiles):
    """pvpython: each IMAGE=LABEL scaled to a tile with its label, over a row of
    |IMAGE - reference| x 16 (zfp_image_error.py's montage pieces)."""
    import numpy as np
    sys.path.insert(0, HERE)
    import zfp_image_error as z
    from vtkmodules.util import numpy_support
    from vtkmodules.vtkCommonDataModel import vtkImageData
    from vtkmodules.vtkImagingCore import vtkImageResize
    from vtkmodules.vtkIOImage import vtkPNGReader

    def load(path):
        r = vtkPNGReader()
        r.SetFileName(path)
        r.Update()
        w, h, _ = r.GetOutput().GetDimensions()
        return numpy_support.vtk_to_numpy(r.GetOutput().GetPointData().GetScalars()).reshape(h, w, -1)[:, :, :3]

    def tile(pixels):  # rows bottom first, as VTK holds them
        image = vtkImageData()
        h, w, _ = pixels.shape
        image.SetDimensions(w, h, 1)
        image.GetPointData().SetScalars(numpy_support.numpy_to_vtk(
            np.ascontiguousarray(np.clip(pixels, 0, 255).astype(np.uint8).reshape(-1, 3)), deep=1))
        resize = vtkImageResize()
        resize.SetInputData(image)
        resize.SetOutputDimensions(z.MONTAGE_TILE, z.MONTAGE_TILE, 1)
        resize.Update()
        out = numpy_support.vtk_to_numpy(resize.GetOutput().GetPointData().GetScalars())
        return out.reshape(z.MONTAGE_TILE, z.MONTAGE_TILE, -1)[::-1, :, :3]

    ref = load(reference).astype(np.int16)
    top, bottom = [], []
    for spec in tiles:
        image, label = spec.split("=", 1)
        pixels = load(image)
        top.append(np.vstack([tile(pixels), z.montage_label(label)]))
        bottom.append(np.vstack([tile(np.abs(pixels.astype(np.int16) - ref) * 16),
                                 z.montage_label("%s - smart, x16" % label.split(",")[0])]))
    z.montage_write(np.vstack([np.hstack(top), np.hstack(bottom)]), target, compression=9)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--pvbatch"]:
        pvbatch_main(*sys.argv[2:9])
    elif sys.argv[1:2] == ["--compose"]:
        compose(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        main()
