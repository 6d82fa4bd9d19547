"""Render two slabcast volumes side by side in one frame: the SC11 head-to-head
(the full volume over 90% of the bandwidth, 1/8 of it at the same resolution
over the other 10%). pvbatch, also under mpirun:

    pvbatch --force-offscreen-rendering slabcast_head_to_head.py LEFT.slabcast RIGHT.slabcast \
        --labels "LEFT TEXT|RIGHT TEXT" [--size 1920x540] [--range LO,HI] [--save 'f_%05d.png' [--save-new-only]]
        [--frames N] [--stop-file PATH]

Both views share one camera, one colour/opacity preset and one value range, so
the right volume (a z-range of the left one, origin at z = 0) sits where it
would in the full volume. The X screen must be at least --size (Xvfb -screen 0
WxHx24), as for a wall-sized frame. One line a frame: `frame 3: step 12 | step 11, 1530.2 ms`.
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
    p.add_argument("left")
    p.add_argument("right")
    p.add_argument("--labels", default="|", help="'LEFT|RIGHT' captions")
    p.add_argument("--size", default="1920x540", help="whole frame WxH (both views)")
    p.add_argument("--range", required=True, help="colour/opacity range LO,HI shared by both views")
    p.add_argument("--save", default=None)
    p.add_argument("--save-new-only", action="store_true")
    p.add_argument("--frames", type=int, default=0)
    p.add_argument("--stop-file", default=None)
    p.add_argument("--preset", default="Inferno (matplotlib)")
    add_frame_options(p)
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    if not hasattr(servermanager.sources, "SlabcastReader"):
        fail("the Slabcast plugin is not loaded: set PV_PLUGIN_PATH to its directory")
    width, height = (int(v) for v in args.size.lower().split("x"))
    lo, hi = (float(v) for v in args.range.split(","))
    labels = (args.labels.split("|") + ["", ""])[:2]

    layout = CreateLayout("head-to-head")
    readers, views, captions = [], [], []
    for i, descriptor in enumerate((args.left, args.right)):
        reader = servermanager.sources.SlabcastReader(FileName=descriptor)
        reader.Completeness = 0 if args.completeness == "whole" else 1
        refresh(reader, first=True)
        reader.UpdatePipeline()
        field = value_field(reader)
        if field is None:
            fail("no data from %s (see the error above)" % descriptor)
        view = CreateView("RenderView")
        AssignViewToLayout(view=view, layout=layout, hint=i)
        view.UseColorPaletteForBackground = 0
        view.Background = [0.0, 0.0, 0.0]
        view.OrientationAxesVisibility = 0
        b = reader.GetDataInformation().GetBounds()
        apply_cosmic_preset(Show(reader, view), field, lo, hi, args.preset, (b[1] - b[0], b[3] - b[2], b[5] - b[4]))
        caption = Show(Text(Text=labels[i]), view)
        caption.WindowLocation = "Upper Center"
        caption.FontSize = 28
        captions.append(show_frame_extras(reader, view, args))
        readers.append(reader)
        views.append(view)
    layout.SetSize(width, height)
    # One camera for both, framed on the full (left) volume.
    views[0].ResetCamera()
    views[0].GetActiveCamera().Azimuth(30)
    views[0].GetActiveCamera().Elevation(20)
    views[0].ResetCamera()
    views[1].CameraPosition = views[0].CameraPosition
    views[1].CameraFocalPoint = views[0].CameraFocalPoint
    views[1].CameraViewUp = views[0].CameraViewUp
    views[1].CameraParallelScale = views[0].CameraParallelScale

    print("slabcast_head_to_head: %s | %s, range %.4g..%.4g, %dx%d" % (args.left, args.right, lo, hi, width, height),
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
        print("frame %d: step %d | step %d, %.1f ms%s" % (frame, steps[0], steps[1], 1000 * (time.monotonic() - t0),
                                                         " (new step)" if new and frame else ""), flush=True)
        frame += 1
        if args.frames and frame >= args.frames:
            break
        if args.stop_file and os.path.exists(args.stop_file):
            break


if __name__ == "__main__":
    main(sys.argv[1:])
