"""Render two to four slabcast volumes side by side in one frame: the SC11
head-to-head (the full volume over 90% of the bandwidth, 1/8 of it at the same
resolution over the other 10%), or the same volume in different data packet
formats at the same rate (`slabcast demo --compare-formats`). pvbatch, also
under mpirun:

    pvbatch --force-offscreen-rendering slabcast_head_to_head.py FIRST.slabcast SECOND.slabcast [...] \
        --labels "FIRST TEXT|SECOND TEXT|..." [--size 1920x540] [--range LO,HI] [--save 'f_%05d.png'
        [--save-new-only]] [--frames N] [--stop-file PATH]

The views share one camera, one colour/opacity preset and one value range, so
a smaller volume (a z-range of the first one, origin at z = 0) sits where it
would in the full volume. Each view's caption (--frame-caption, the default)
says what its stream delivers: the share of the step that arrived, Gbit/s and
loss. The X screen must be at least --size (Xvfb -screen 0 WxHx24), as for a
wall-sized frame. One line a frame: `frame 3: step 12 | step 11, 1530.2 ms`.
"""
import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slabcast_render import (add_frame_options, apply_cosmic_preset, fail, refresh,  # noqa: E402  (as the single view)
                             show_frame_extras, step_caption, value_field)

from paraview import servermanager  # noqa: E402
from paraview.simple import (AssignViewToLayout, CreateLayout, CreateView, Render, SaveScreenshot, Show,  # noqa: E402
                             Text)

STOP = False


def on_signal(signum, frame):
    global STOP
    STOP = True


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("volumes", nargs="+", help="two to four descriptors, left to right")
    p.add_argument("--labels", default="|", help="'FIRST|SECOND|...' captions")
    p.add_argument("--size", default="1920x540", help="whole frame WxH (all views)")
    p.add_argument("--range", required=True, help="colour/opacity range LO,HI shared by all views")
    p.add_argument("--save", default=None)
    p.add_argument("--save-new-only", action="store_true")
    p.add_argument("--frames", type=int, default=0)
    p.add_argument("--stop-file", default=None)
    p.add_argument("--preset", default="Inferno (matplotlib)")
    add_frame_options(p)
    return p.parse_args(argv)


def place_view(layout, view, i, count):
    """View i of `count` in equal columns, left to right: the first time,
    splits the layout's cells (cell 0 is the whole frame; splitting cell c
    gives 2c + 1 and 2c + 2)."""
    if count == 2:
        AssignViewToLayout(view=view, layout=layout, hint=i)
        return
    cell = 0
    for k in range(i):  # walk the right-hand children down to view i's cell
        cell = 2 * cell + 2
    if i < count - 1:
        layout.SplitHorizontal(cell, 1.0 / (count - i))
        cell = 2 * cell + 1
    layout.AssignView(cell, view)


def main(argv):
    args = parse_args(argv)
    if not 2 <= len(args.volumes) <= 4:
        fail("two to four volumes, got %d" % len(args.volumes))
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    if not hasattr(servermanager.sources, "SlabcastReader"):
        fail("the Slabcast plugin is not loaded: set PV_PLUGIN_PATH to its directory")
    width, height = (int(v) for v in args.size.lower().split("x"))
    lo, hi = (float(v) for v in args.range.split(","))
    labels = (args.labels.split("|") + [""] * len(args.volumes))[:len(args.volumes)]

    layout = CreateLayout("head-to-head")
    readers, views, captions = [], [], []
    for i, descriptor in enumerate(args.volumes):
        reader = servermanager.sources.SlabcastReader(FileName=descriptor)
        reader.Completeness = 0 if args.completeness == "whole" else 1
        refresh(reader, first=True)
        reader.UpdatePipeline()
        field = value_field(reader)
        if field is None:
            fail("no data from %s (see the error above)" % descriptor)
        view = CreateView("RenderView")
        place_view(layout, view, i, len(args.volumes))
        view.UseColorPaletteForBackground = 0
        view.Background = [0.0, 0.0, 0.0]
        view.OrientationAxesVisibility = 0
        b = reader.GetDataInformation().GetBounds()
        apply_cosmic_preset(Show(reader, view), field, lo, hi, args.preset, (b[1] - b[0], b[3] - b[2], b[5] - b[4]))
        # At the bottom, below the frame caption, sized to fit its view.
        caption = Show(Text(Text=labels[i]), view)
        caption.WindowLocation = "Lower Center"
        caption.FontSize = max(10, min(28, int(1.4 * width / len(args.volumes) / max(len(labels[i]), 1))))
        captions.append(show_frame_extras(reader, view, args))
        readers.append(reader)
        views.append(view)
    layout.SetSize(width, height)
    # One camera for all, framed on the full (first) volume.
    views[0].ResetCamera()
    views[0].GetActiveCamera().Azimuth(30)
    views[0].GetActiveCamera().Elevation(20)
    views[0].ResetCamera()
    for view in views[1:]:
        view.CameraPosition = views[0].CameraPosition
        view.CameraFocalPoint = views[0].CameraFocalPoint
        view.CameraViewUp = views[0].CameraViewUp
        view.CameraParallelScale = views[0].CameraParallelScale

    print("slabcast_head_to_head: %s, range %.4g..%.4g, %dx%d" % (" | ".join(args.volumes), lo, hi, width, height),
          flush=True)
    frame = 0
    while not STOP:
        t0 = time.monotonic()
        new = frame == 0
        for reader, step_text in zip(readers, captions):
            if refresh(reader):
                new = True
                if step_text is not None:
                    reader.UpdatePipeline()
                    step_text.Text = step_caption(reader)
        for view in views:
            Render(view)
        steps = []
        for reader in readers:
            reader.UpdatePropertyInformation()
            steps.append(reader.GetPropertyValue("Step"))
        if args.save and (new or not args.save_new_only):
            SaveScreenshot(args.save % frame if "%" in args.save else args.save, layout,
                           ImageResolution=[width, height])
        print("frame %d: %s, %.1f ms%s" % (frame, " | ".join("step %d" % s for s in steps),
                                           1000 * (time.monotonic() - t0), " (new step)" if new and frame else ""),
              flush=True)
        frame += 1
        if args.frames and frame >= args.frames:
            break
        if args.stop_file and os.path.exists(args.stop_file):
            break


if __name__ == "__main__":
    main(sys.argv[1:])
