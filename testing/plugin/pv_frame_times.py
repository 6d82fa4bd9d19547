"""pvbatch script for bench_frame.py: the same volume, rendered the same way,
from the slabcast reader (slabs mapped from /dev/shm) and from ParaView's own
raw image reader (one float32 file in /dev/shm), frame times side by side.

    pvbatch pv_frame_times.py DESCRIPTOR RAW_FILE --render-script slabcast_render.py [--frames 8] [--size 800x800]

The raw file is written by this script from what the slabcast reader read.
Three measures for each source, alternating sources so that drift on a busy
host hits both alike: the first frame after the source is shown (the
renderer uploads its volume and builds its textures), a frame of the view
alone, and a frame after the reader was told its data changed (a new step:
the raw reader reads its file again, the slabcast reader maps what the
receiver wrote; then the renderer uploads the new values). Prints one table
line per source and measure, then BENCH_DONE.
"""
import argparse
import os
import statistics
import sys
import time

from paraview import servermanager
from paraview.simple import GetActiveViewOrCreate, Hide, ImageReader, OpenDataFile, Render, Show
from vtkmodules.util.numpy_support import vtk_to_numpy


def frame_times(view, source, frames, modified):
    times = []
    for _ in range(frames):
        t0 = time.perf_counter()
        if modified:
            # As a new step does: the reader executes again, the view uploads its output.
            source.GetClientSideObject().Modified()
            source.SMProxy.MarkModified(source.SMProxy)
            source.UpdatePipeline()
        Render(view)
        times.append(time.perf_counter() - t0)
    return times


def main():
    p = argparse.ArgumentParser()
    p.add_argument("descriptor")
    p.add_argument("raw")
    p.add_argument("--render-script", required=True, help="slabcast_render.py, for its colour preset")
    p.add_argument("--frames", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--size", default="800x800")
    args = p.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.render_script)))
    from slabcast_render import apply_cosmic_preset

    slabcast = OpenDataFile(args.descriptor)
    slabcast.UpdatePipeline()
    field = [k for k in slabcast.PointData.keys() if not k.endswith("_age")][0]
    info = slabcast.GetDataInformation()
    b = info.GetBounds()
    extent = info.GetExtent()
    # The raw reader's file: the same values, written from what slabcast read.
    volume = servermanager.Fetch(slabcast)
    vtk_to_numpy(volume.GetPointData().GetArray(field)).astype("<f4").tofile(args.raw)
    raw = ImageReader(FileNames=[args.raw])
    raw.DataScalarType = "float"
    raw.DataByteOrder = "LittleEndian"
    raw.DataExtent = list(extent)
    raw.ScalarArrayName = field
    raw.UpdatePipeline()
    lo, hi = slabcast.PointData[field].GetRange()
    assert raw.PointData[field].GetRange() == (lo, hi), "the raw file does not hold the same volume"
    lo = lo if lo > 0 else hi * 1e-3

    view = GetActiveViewOrCreate("RenderView")
    view.ViewSize = [int(v) for v in args.size.split("x")]
    view.OrientationAxesVisibility = 0
    sources = {"slabcast reader": slabcast, "raw image reader": raw}
    for source in sources.values():
        apply_cosmic_preset(Show(source, view), field, lo, hi, "Inferno (matplotlib)", (b[1] - b[0], b[3] - b[2], b[5] - b[4]))
        Hide(source, view)
    view.ResetCamera()
    measures = ("shown", "view", "new step")
    results = {(name, m): [] for name in sources for m in measures}
    for r in range(args.rounds):
        order = list(sources.items()) if r % 2 == 0 else list(reversed(sources.items()))
        for name, source in order:
            t0 = time.perf_counter()
            Show(source, view)
            Render(view)  # the first frame after a switch uploads the volume and builds textures
            results[(name, "shown")].append(time.perf_counter() - t0)
            results[(name, "view")] += frame_times(view, source, args.frames, False)
            results[(name, "new step")] += frame_times(view, source, args.frames, True)
            Hide(source, view)
    print("%-18s %-9s %10s %10s" % ("source", "frame", "median ms", "min ms"))
    medians = {}
    for (name, m), t in results.items():
        medians[(name, m)] = statistics.median(t)
        print("%-18s %-9s %10.1f %10.1f" % (name, m, 1e3 * statistics.median(t), 1e3 * min(t)))
    for m in measures:
        print("ratio slabcast / raw, %s: %.3f" % (m, medians[("slabcast reader", m)] / medians[("raw image reader", m)]))
    print("BENCH_DONE")


main()
