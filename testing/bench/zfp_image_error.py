#!/usr/bin/env python3
"""Benchmark: what the lossy zfp codec does to the values and to the rendered
picture at each fixed rate, against the lossless stream (issue 19).

One step (default step 3) of the 256^3 cosmology dataset the other benchmarks
use goes through the real roles for each codec: `slabcast receive` on cpu1,
one `slabcast shuffle --wire run --codec C` on cpu0 and `slabcast control`, on
loopback into /dev/shm, paced well below loss (--rate 2G). The receiver's
--stats-json step record must show the step whole (records == expected), or
the run is repeated: a lossy step would mix the codec's error with loss.

- Values: the ParaView reader's volume (testing/plugin/pv_dump_volume.py under
  pvpython, age array all 0) against the source raw step: max abs error, RMSE,
  and PSNR = 20 log10((max - min) / RMSE), max - min the source step's value
  range (as in docs/performance.md, "Codecs").
- Picture: plugin/python/slabcast_render.py under pvbatch (offscreen, a
  private Xvfb), one frame, --no-overlay, the same size, camera and colour
  range (the source step's min..max) for every codec; each image against the
  codec-none image (testing/plugin/pv_image_stats.py): max and mean pixel
  difference in 0..255 units over R, G, B, the fraction of pixels that differ,
  and image PSNR = 10 log10(255^2 / MSE). The none step is rendered twice, so
  "none again" is the renderer's own noise floor.

The PNGs go to --out (default: a new temporary directory), with results.json
and, with --montage FILE, one picture of none | zfp:4 | zfp:8 | zfp:16 (or the
codecs given) over a row of their differences from none, amplified.

Usage: SLABCAST_BUILD=build python3 testing/bench/zfp_image_error.py [--out DIR]
       [--codecs none,zfp:4,zfp:8,zfp:12,zfp:16] [--step 3] [--size 800x800] [--rate 2G]
       [--montage docs/zfp-rates.png]
Needs pvpython, pvbatch, Xvfb and the plugin build; SLABCAST_PLUGIN,
SLABCAST_RENDER and SLABCAST_SERVER default to their places under
SLABCAST_BUILD (default: build). As root the staging directory is a tmpfs
with huge pages, as in the other benchmarks. The montage is made by this file
run under pvpython (--compose, VTK and ParaView's numpy); the rest needs only
the standard library. Not part of the default ctest run.
"""
import argparse
import array
import glob
import json
import math
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
MONTAGE_TILE = 300     # px, each image's width and height in the montage
MONTAGE_LABEL = 26     # px, the label strip under each tile
DIFF_GAIN = 16         # the montage's difference row: |image - none| x DIFF_GAIN


def set_environment():
    """The paths ctest gives the plugin tests (testing/plugin/CMakeLists.txt),
    from SLABCAST_BUILD where they are not set. Before plugin_testlib and
    slabcast_testlib are imported: they read them once."""
    build = os.path.abspath(os.environ.get("SLABCAST_BUILD") or os.path.join(REPO, "build"))
    os.environ["SLABCAST_BUILD"] = build
    plugins = sorted(glob.glob(os.path.join(build, "plugin", "lib", "paraview-*", "plugins", "Slabcast",
                                            "Slabcast.so")))
    defaults = {"SLABCAST_PLUGIN": plugins[-1] if plugins else "",
                "SLABCAST_RENDER": os.path.join(build, "plugin", "slabcast_render.py"),
                "SLABCAST_SERVER": os.path.join(build, "server", "slabcast"),
                "PYTHONDONTWRITEBYTECODE": "1"}
    for name, value in defaults.items():
        if not os.environ.get(name):
            os.environ[name] = value
    for name in ("SLABCAST_PLUGIN", "SLABCAST_RENDER", "SLABCAST_SERVER"):
        if not os.path.exists(os.environ[name]):
            sys.exit("%s=%r does not exist: build the project (make build) or set it" % (name, os.environ[name]))


def stream_step(dims, data, codec, step, rate, tries=3):
    """Streams `step` in `codec` into a fresh receiver until it arrives whole;
    returns (workspace, descriptor, figures). The caller closes the workspace
    (the slabs stay readable until then)."""
    import benchlib
    from benchlib import lib
    for attempt in range(tries):
        ws = lib.Workspace("zfpimg")
        ws.cleanups = []
        try:
            ports, recv_json = benchlib.start_receiver(ws, dims, 1, dims[2])
            benchlib.prestage(ws, data)
            args = ["--wire", "run", "--codec", codec]
            sync_ports, shuffle_json = benchlib.start_shufflers(ws, data, dims[2], ports, rate, args)
            time.sleep(1.0)
            benchlib.control(ws, data, sync_ports, 1, ["--steps", str(step)])

            def reports():
                return [e for e in lib.read_json_lines(recv_json) if e.get("kind") == "step" and e["step"] == step]
            lib.wait_for(lambda: reports(), timeout=60, what="the receiver's report of step %d" % step)
            report = reports()[0]
            sent = [e for e in lib.read_json_lines(shuffle_json[0]) if e.get("kind") == "step" and e["step"] == step]
            if report["records"] == report["expected"] and sent and sent[0]["result"] == "finished":
                wire = sent[0]
                return ws, os.path.join(ws.shm, "bench.slabcast"), {
                    "packets": wire["packets_sent"], "wire_bytes": wire["gbps"] * wire["seconds"] / 8e-9,
                    "send_seconds": wire["seconds"], "records": report["records"], "expected": report["expected"],
                    "tries": attempt + 1}
            print("  %s: step %d arrived with %d of %d records (try %d), again" % (
                codec, step, report["records"], report["expected"], attempt + 1), flush=True)
        except BaseException:
            close(ws)
            raise
        close(ws)
    raise SystemExit("%s: step %d never arrived whole in %d tries at --rate %s" % (codec, step, tries, rate))


def close(ws):
    for role in reversed(ws.roles):
        role.stop()
    for cleanup in ws.cleanups:
        cleanup()
    ws.close()


def value_errors(got, want, lo, hi):
    """Max abs error, RMSE and PSNR over the source range hi - lo."""
    if got == want:
        return {"max_abs": 0.0, "rmse": 0.0, "psnr": math.inf}
    worst, squares = 0.0, 0.0
    for a, b in zip(got, want):
        d = a - b
        if d < 0:
            d = -d
        if d > worst:
            worst = d
        squares += d * d
    rmse = math.sqrt(squares / len(want))
    return {"max_abs": worst, "rmse": rmse, "psnr": 20 * math.log10((hi - lo) / rmse) if rmse else math.inf}


def read_back(t, descriptor, step, out):
    """The volume as the ParaView reader shows it (values as bytes), checked
    to be `step` with every value arrived in it."""
    stdout, _ = t.pvpython("pv_dump_volume.py", descriptor, out, timeout=300)
    if "DUMP step=%d " % step not in stdout:
        raise SystemExit("the reader did not show step %d: %s" % (step, stdout.strip()))
    with open(out + ".age", "rb") as f:
        if any(f.read()):
            raise SystemExit("the reader shows values older than step %d" % step)
    os.unlink(out + ".age")
    with open(out, "rb") as f:
        values = f.read()
    os.unlink(out)
    return values


def render(t, display, descriptor, step, png, size, value_range):
    out, _ = t.run(t.pvbatch_cmd(os.environ["SLABCAST_RENDER"], [
        descriptor, "--frames", 1, "--size", size, "--no-overlay", "--range", "%r,%r" % value_range,
        "--save", png]), env=t.paraview_env(display), timeout=300)
    if "frame 0: step %d" % step not in out:
        raise SystemExit("the renderer did not show step %d:\n%s" % (step, out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="256,256,256")
    ap.add_argument("--step", type=int, default=3)
    ap.add_argument("--codecs", default="none,zfp:4,zfp:8,zfp:12,zfp:16",
                    help="run packets' codecs, the first the reference (lossless)")
    ap.add_argument("--rate", default="2G", help="the shuffler's --rate: well below loss on loopback")
    ap.add_argument("--size", default="800x800")
    ap.add_argument("--out", default=None, help="directory for the PNGs and results.json (default: a new temp dir)")
    ap.add_argument("--montage", default=None, help="also write none | zfp:4 | zfp:8 | zfp:16 as one PNG here")
    ap.add_argument("--montage-codecs", default="none,zfp:4,zfp:8,zfp:16")
    args = ap.parse_args()
    set_environment()
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(REPO, "testing", "plugin"))
    import benchlib
    import plugin_testlib as t

    dims = tuple(int(v) for v in args.dims.split(","))
    codecs = args.codecs.split(",")
    out_dir = os.path.abspath(args.out) if args.out else tempfile.mkdtemp(prefix="slabcast-zfp-image-")
    os.makedirs(out_dir, exist_ok=True)
    data = benchlib.dataset(dims)
    with open(os.path.join(data, "dataset.json")) as f:
        step_file = [s["file"] for s in json.load(f)["steps"] if s["step"] == args.step][0]
    with open(os.path.join(data, step_file), "rb") as f:
        source_bytes = f.read()
    source = array.array("f", source_bytes)
    lo, hi = min(source), max(source)
    colour_range = (lo if lo > 0 else hi * 1e-3, hi)  # the renderer's log scale needs lo > 0
    print("step %d of %s: %d values, %.6g..%.6g; %s, --rate %s, images %s in %s" % (
        args.step, data, len(source), lo, hi, ",".join(codecs), args.rate, args.size, out_dir), flush=True)

    def png_of(codec, again=False):
        return os.path.join(out_dir, codec.replace(":", "") + ("-again" if again else "") + ".png")

    rows = []
    with benchlib.RaisedSocketLimits(), t.xvfb() as display:
        for codec in codecs:
            t0 = time.monotonic()
            ws, descriptor, row = stream_step(dims, data, codec, args.step, args.rate)
            try:
                got_bytes = read_back(t, descriptor, args.step, os.path.join(ws.dir, "shown.raw"))
                render(t, display, descriptor, args.step, png_of(codec), args.size, colour_range)
                if codec == codecs[0]:
                    render(t, display, descriptor, args.step, png_of(codec, again=True), args.size, colour_range)
            finally:
                close(ws)
            if len(got_bytes) != len(source_bytes):
                raise SystemExit("%s: the reader shows %d bytes, the step has %d" % (
                    codec, len(got_bytes), len(source_bytes)))
            row.update(codec=codec, image=png_of(codec),
                       **value_errors(array.array("f", got_bytes), source, lo, hi))
            rows.append(row)
            print("  %-7s %6d packets, %.1f MB, max abs %.4g, PSNR %.1f dB (%.0f s)" % (
                codec, row["packets"], row["wire_bytes"] / 1e6, row["max_abs"], row["psnr"],
                time.monotonic() - t0), flush=True)
            if codec == codecs[0] and row["max_abs"] != 0:
                raise SystemExit("the reference codec %s is not exact" % codec)

    reference = rows[0]
    again = dict(reference, codec=reference["codec"] + " again", image=png_of(reference["codec"], again=True))
    for row in [again] + rows[1:]:
        row["image_stats"] = t.read_image_stats(t.pvpython("pv_image_stats.py", row["image"], reference["image"])[0])
    reference["image_stats"] = t.read_image_stats(t.pvpython("pv_image_stats.py", reference["image"])[0])
    table = [again] + rows

    print("\nstep %d of the %s cosmology dataset, one stream on loopback at --rate %s, every step whole; "
          "values as the ParaView reader shows them against the source (range %.4g..%.4g, PSNR = 20 log10(range / "
          "RMSE)); images %s, slabcast_render.py --no-overlay, against the %s image (PSNR = 10 log10(255^2 / MSE) "
          "over R, G, B)" % (args.step, "x".join(map(str, dims)), args.rate, lo, hi, args.size, reference["codec"]))
    print("%-11s %8s %10s %10s %10s %10s %10s %9s %10s %9s %10s" % (
        "codec", "packets", "MB", "vs raw", "max abs", "RMSE", "PSNR dB", "img max", "img mean", "changed",
        "img PSNR"))
    for row in sorted(table, key=lambda r: codecs.index(r["codec"].split()[0]) + (0.5 if " " in r["codec"] else 0)):
        s = row.get("image_stats", {})
        print("%-11s %8d %10.2f %9.2fx %10.4g %10.4g %10s %9s %10s %9s %10s" % (
            row["codec"], row["packets"], row["wire_bytes"] / 1e6, reference["wire_bytes"] / row["wire_bytes"],
            row["max_abs"], row["rmse"], "exact" if math.isinf(row["psnr"]) else "%.1f" % row["psnr"],
            "%d" % s["maxdiff"] if "maxdiff" in s else "(ref)",
            "%.3f" % s["meandiff"] if "meandiff" in s else "",
            "%.2f%%" % (100 * s["changed"]) if "changed" in s else "",
            ("same" if math.isinf(s["psnr"]) else "%.1f" % s["psnr"]) if "psnr" in s else ""))
    print("reference image: %.1f%% of the pixels lit; images in %s" % (100 * reference["image_stats"]["lit"], out_dir))
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"step": args.step, "dims": dims, "rate": args.rate, "size": args.size, "range": [lo, hi],
                   "rows": table}, f, indent=1, default=str)

    if args.montage:
        shown = [c for c in args.montage_codecs.split(",") if c in codecs]
        tiles = []
        for c in shown:
            row = [r for r in rows if r["codec"] == c][0]
            label = "%s (lossless)" % c if c == reference["codec"] else "%s, %.1fx fewer bytes" % (
                c, reference["wire_bytes"] / row["wire_bytes"])
            diff_of = png_of(c, again=True) if c == reference["codec"] else row["image"]
            tiles.append("%s=%s=%s" % (row["image"], diff_of, label))
        t.run([t.PVPYTHON, os.path.abspath(__file__), "--compose", os.path.abspath(args.montage), reference["image"]]
              + tiles, env=t.paraview_env())
        print("montage: %s" % args.montage)


def montage_label(text):
    """pvpython: a MONTAGE_LABEL px strip, MONTAGE_TILE px wide, with `text`
    in white on black (progressive_cut.py's montage uses it too)."""
    import numpy as np
    from vtkmodules.util import numpy_support
    from vtkmodules.vtkCommonDataModel import vtkImageData
    from vtkmodules.vtkRenderingCore import vtkTextProperty, vtkTextRenderer
    import vtkmodules.vtkRenderingFreeType  # noqa: F401  (the text renderer's implementation)

    strip = np.zeros((MONTAGE_LABEL, MONTAGE_TILE, 3), np.uint8)
    prop = vtkTextProperty()
    prop.SetFontSize(16)
    prop.SetColor(1.0, 1.0, 1.0)
    image, size = vtkImageData(), [0, 0]
    if vtkTextRenderer.GetInstance().RenderString(prop, text, image, size, 72):
        # The text lies in the image's lower left corner, size[0] x size[1] px.
        w, h, _ = image.GetDimensions()
        rgba = numpy_support.vtk_to_numpy(image.GetPointData().GetScalars()).reshape(h, w, 4)
        alpha = rgba[:min(size[1], MONTAGE_LABEL), :min(size[0], MONTAGE_TILE - 8), 3][::-1]
        top = (MONTAGE_LABEL - alpha.shape[0]) // 2
        strip[top:top + alpha.shape[0], 8:8 + alpha.shape[1], :] = alpha[:, :, None]
    return strip


def montage_write(canvas, target, compression=None):
    """pvpython: an RGB canvas (rows top first, uint8) written as a PNG;
    `compression` 0..9 for zlib's level (None: VTK's default)."""
    import numpy as np
    from vtkmodules.util import numpy_support
    from vtkmodules.vtkCommonDataModel import vtkImageData
    from vtkmodules.vtkIOImage import vtkPNGWriter

    h, w, _ = canvas.shape
    image = vtkImageData()
    image.SetDimensions(w, h, 1)
    image.GetPointData().SetScalars(numpy_support.numpy_to_vtk(
        np.ascontiguousarray(canvas.astype(np.uint8)[::-1].reshape(-1, 3)), deep=1))
    writer = vtkPNGWriter()
    writer.SetFileName(target)
    writer.SetInputData(image)
    if compression is not None:
        writer.SetCompressionLevel(compression)
    writer.Write()
    print("wrote %s, %dx%d" % (target, w, h))


def compose(target, reference, tiles):
    """pvpython: a row of tiles (IMAGE=DIFF_IMAGE=LABEL), each IMAGE scaled to
    MONTAGE_TILE px with LABEL under it, over a row of |DIFF_IMAGE - reference|
    x DIFF_GAIN; written as one PNG."""
    import numpy as np
    from vtkmodules.util import numpy_support
    from vtkmodules.vtkCommonDataModel import vtkImageData
    from vtkmodules.vtkImagingCore import vtkImageResize
    from vtkmodules.vtkIOImage import vtkPNGReader

    def load(path):
        r = vtkPNGReader()
        r.SetFileName(path)
        r.Update()
        w, h, _ = r.GetOutput().GetDimensions()
        pixels = numpy_support.vtk_to_numpy(r.GetOutput().GetPointData().GetScalars())
        return pixels.reshape(h, w, -1)[::-1, :, :3].astype(np.int16)  # top row first, RGB

    def scaled(pixels):
        image = vtkImageData()
        h, w, _ = pixels.shape
        image.SetDimensions(w, h, 1)
        image.GetPointData().SetScalars(numpy_support.numpy_to_vtk(
            np.ascontiguousarray(np.clip(pixels, 0, 255).astype(np.uint8)[::-1].reshape(-1, 3)), deep=1))
        resize = vtkImageResize()
        resize.SetInputData(image)
        resize.SetOutputDimensions(MONTAGE_TILE, MONTAGE_TILE, 1)
        resize.Update()
        out = numpy_support.vtk_to_numpy(resize.GetOutput().GetPointData().GetScalars())
        return out.reshape(MONTAGE_TILE, MONTAGE_TILE, -1)[::-1, :, :3]

    ref = load(reference)
    top, bottom = [], []
    for tile in tiles:
        image, diff_of, text = tile.split("=", 2)
        top.append(np.vstack([scaled(load(image)), montage_label(text)]))
        diff = np.abs(load(diff_of) - ref) * DIFF_GAIN
        name = text.split()[0].rstrip(",")
        bottom.append(np.vstack([scaled(diff), montage_label("%s - none, x%d" % (name, DIFF_GAIN) if diff_of == image
                                                      else "%s again - %s, x%d" % (name, name, DIFF_GAIN))]))
    montage_write(np.vstack([np.hstack(top), np.hstack(bottom)]), target)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--compose"]:  # run by pvpython for --montage
        compose(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        main()
