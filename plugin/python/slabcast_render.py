"""Render a slabcast volume continuously with ParaView (pvbatch, also under mpirun).

    [mpirun -np N] pvbatch [--force-offscreen-rendering] slabcast_render.py \
        /dev/shm/slabcast/NAME.slabcast [--frames N] [--save 'frames/f_%05d.png'] ...

Each frame: ask the reader whether its slabs published a new step, and if so
have every rank agree on the newest step all slabs hold (the reader's Refresh
command) and re-execute; render, with the step, how whole it is and how old in
a corner; optionally save the image; print one line: frame number, step shown,
frame time and the step's latency (sent->published, published->shown).
Between frames it waits on the receiver: a publication ends the wait within
a few milliseconds and the new step is drawn at once (with --coarsest, coarse
first, then refined frame by frame, --refine-interval apart, unless a newer
step comes first: the CPU ray marcher also stops a frame of a replaced
step); a step already in full resolution is drawn again only every --redraw
seconds. --show-holes colours the values the step lost (shown from an
earlier step, see the reader's `<field>_age` array); --completeness newest shows each
slab as it is being written instead of whole steps. Runs for
--frames frames (0: until stopped), until --until-step is on screen, until
--stop-file exists, or until SIGINT/SIGTERM. With several ranks each rank reads its own z-slab (without a
copy when ranks == slabs) and ParaView composites the images sort-last (IceT).
With --connect it is a pvpython client of `mpirun -np N pvserver`, which then
does the reading and rendering on its ranks; a pvserver started as a tiled wall
(--tdx/--tdy, one screen per rank) shows each rank's tile of every frame.
With --wall COLSxROWS [--mullion X,Y] under `mpirun pvbatch --symmetric` each
rank shows its own tile of every frame on its own X screen, the hidden bezels
between screens counted in (see Wall).

The plugin is found through PV_PLUGIN_PATH (set it for mpirun so every rank
loads it) or --plugin PATH.
"""
import argparse
import math
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slabcast_mappers import (CPU_VOLUME, add_mapper_option, apply_stride, resolve, show_volume, unavailable,  # noqa: E402
                              volume_dims)
from slabcast_refinement import Refinement  # noqa: E402

from paraview import servermanager  # noqa: E402
from paraview.simple import (AssignViewToLayout, Connect, GetActiveViewOrCreate, GetColorTransferFunction, GetLayout,
                             GetOpacityTransferFunction, LoadPlugin, Render, SaveScreenshot, Show, Text, Threshold)

STOP = False


def fail(message):
    """Exit with an error. Not sys.exit(): that runs the process's exit-time
    destructors before ParaView has finalised, and pvbatch then crashes while
    tearing down its OpenGL context."""
    print("slabcast_render: " + message, file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(2)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("descriptor", help="the .slabcast descriptor written by `slabcast receive`")
    p.add_argument("--plugin", help="path of Slabcast.so (default: found through PV_PLUGIN_PATH)")
    p.add_argument("--connect", metavar="HOST:PORT",
                   help="render on a running pvserver (pvpython client; PV_PLUGIN_PATH on both sides)")
    p.add_argument("--frames", type=int, default=0, help="frames to render, 0 = until stopped")
    p.add_argument("--until-step", type=int, default=None, help="stop once this step is on screen")
    p.add_argument("--timeout", type=float, default=0, help="stop after this many seconds (0: never)")
    p.add_argument("--size", default="800x600", help="image size WxH")
    p.add_argument("--save", default=None, help="save frames, e.g. 'out/frame_%%05d.png' (png, jpg, ppm ...)")
    p.add_argument("--save-new-only", action="store_true",
                   help="save one frame a step: its first (with --coarsest, its first in full resolution)")
    p.add_argument("--range", default=None, help="colour/opacity range LO,HI (default: from the first frame)")
    p.add_argument("--min-fraction", type=float, default=1e-3,
                   help="lowest value mapped, as a fraction of the maximum, when the data reaches 0")
    p.add_argument("--preset", default="Inferno (matplotlib)", help="colour preset")
    p.add_argument("--azimuth", type=float, default=30.0)
    p.add_argument("--elevation", type=float, default=20.0)
    p.add_argument("--interval", type=float, default=0.0, help="minimum seconds between frames")
    p.add_argument("--refine-interval", type=float, default=0.0,
                   help="seconds between a step's progressive frames (--coarsest); a newly published step "
                        "ends the wait at once and is drawn coarse")
    p.add_argument("--redraw", type=float, default=1.0,
                   help="with the step on screen in full resolution and nothing new, draw it again after this "
                        "many seconds (the caption's age); a publication ends the wait at once")
    p.add_argument("--every-frame", action="store_true",
                   help="re-execute the reader every frame, new step or not (measures the full update path)")
    p.add_argument("--stop-file", default=None,
                   help="stop cleanly once this file exists (under mpirun, Ctrl-C ends the other ranks abruptly)")
    p.add_argument("--wall", metavar="COLSxROWS", type=pair("x"), default=None,
                   help="a tiled wall, one rank per screen (mpirun -np COLS*ROWS pvbatch --displays=A,B,... "
                        "--symmetric): each rank shows its tile of every frame; --size is one tile (a screen)")
    p.add_argument("--mullion", metavar="X[,Y]", type=pair(","), default=(0, 0),
                   help="with --wall: pixels hidden between neighbouring screens (their bezels), across and down")
    add_frame_options(p)
    add_mapper_option(p)
    return p.parse_args(argv)


def pair(separator):
    """argparse type: 'AxB' (or 'A' for A, A) as two integers >= 0."""
    def parse(text):
        parts = text.lower().split(separator)
        if len(parts) == 1:
            parts *= 2
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise argparse.ArgumentTypeError("%r: expected two whole numbers N%sM" % (text, separator))
        return int(parts[0]), int(parts[1])
    return parse


def add_frame_options(p):
    """What every slabcast renderer offers about the step on screen."""
    p.add_argument("--completeness", choices=("whole", "newest"), default="whole",
                   help="whole: every frame one published step, the same on every rank (default); "
                        "newest: each slab as it is being written")
    p.add_argument("--show-holes", action="store_true",
                   help="colour the values the step lost (shown from an earlier step) instead of hiding them")
    p.add_argument("--no-overlay", "--no-annotation", dest="no_overlay", action="store_true",
                   help="no figures in the corner (step, completeness, age, Gbit/s, loss, frame time)")


def has_news(reader):
    """True when the reader's slabs published since its last agreement (it
    reads only the NeedsUpdate property, on the root rank: the slabs'
    headers, no re-execution, no figures gathered)."""
    proxy = reader.SMProxy
    proxy.UpdatePropertyInformation(proxy.GetProperty("NeedsUpdate"))
    return reader.GetPropertyValue("NeedsUpdate") == 1


def take_news(reader):
    """Every rank agrees on the newest step all slabs hold (Refresh, a
    command ParaView runs on every rank in order) and the view is to
    re-execute the reader. Returns the agreed step."""
    reader.SMProxy.InvokeCommand("Refresh")
    reader.MarkModified(reader)
    proxy = reader.SMProxy
    proxy.UpdatePropertyInformation(proxy.GetProperty("AgreedStep"))
    return reader.GetPropertyValue("AgreedStep")


def refresh(reader, first=False):
    """True when the reader has news to show (always on the first frame):
    then every rank agrees on the step (take_news)."""
    if not first and not has_news(reader):
        return False
    take_news(reader)
    return True


# While it waits between frames the renderer reads its slabs' headers this
# often (has_news): a step is taken within this long of its publication, not
# at the end of a frame or a pause.
NEWS_POLL_S = 0.002


def news_for_all(reader, wall, timed_out=False):
    """"news" (has_news), "done" (`timed_out` or a signal) or "wait". With
    --wall every rank runs this script and Refresh is collective: rank 0's
    answer, for every rank."""
    state = "news" if has_news(reader) else "done" if timed_out or STOP else "wait"
    return wall.decide(state, ("news", "done", "wait")) if wall else state


def wait_for_news(reader, until, agreed, wall=None):
    """Waits until time.monotonic() reaches `until` (on rank 0, with --wall)
    or a step newer than `agreed` is agreed on, whichever comes first. A
    publication that leaves the newest whole step as it was (one slab of
    several) is taken and the wait goes on. Returns (True when a newer step
    was taken, the agreed step)."""
    while True:
        state = news_for_all(reader, wall, time.monotonic() >= until)
        if state == "done":
            return False, agreed
        if state == "news":
            step = take_news(reader)
            if step != agreed:
                return True, step
            continue
        time.sleep(max(0.0, min(until - time.monotonic(), NEWS_POLL_S)))


def first_agreement(reader, args, wall=None):
    """The step of the first frame. Started before its stream's first step
    (the receiver's descriptor there, nothing published yet), the renderer
    says so and waits for one (until --timeout); without a descriptor the
    reader's error stands."""
    start = time.monotonic()
    step = take_news(reader)
    if step < 0 and min(reader.GetPropertyValue("VolumeDimensions")) > 0:
        print("slabcast_render: waiting for the first step of %s" % args.descriptor, flush=True)
        while step < 0:
            until = start + args.timeout if args.timeout else time.monotonic() + 1.0
            _, step = wait_for_news(reader, until, step, wall)
            if step < 0 and (STOP or (args.timeout and time.monotonic() >= until)):
                fail("no step of %s was published in %.0f s" % (args.descriptor, time.monotonic() - start))
    return step


def value_field(reader):
    """The name of the values' array (the reader also outputs their age, as
    "<field>_age"); None without data."""
    names = list(reader.PointData.keys())
    for name in names:
        if name + "_age" in names:
            return name
    return names[0] if names else None


def field_range(reader, name, default=(0.0, 0.0)):
    array = reader.FieldData[name]
    return array.GetRange() if array is not None else default


def step_caption(reader, frame_ms=None, level=None):
    """Two lines, 'step 40, 100.0% arrived, 120 ms old' and '2.01 Gbit/s,
    loss 0.000%, frame 35 ms', from the output's field data (the least
    complete slab; its age now: the oldest over every rank when the reader
    took the step, and the time since; the whole stream's rate and
    the loss of its last finished step, gathered from every rank) and the
    last frame's time; with `level` (slabcast's progressive frames) a third,
    'full resolution' or '1/4 resolution, refining'."""
    step = int(field_range(reader, "Step", (-1, -1))[0])
    if step < 0:
        return "waiting for the first step"
    complete = 100.0 * field_range(reader, "Completeness")[0]
    stream = "%.2f Gbit/s, loss %.3f%%" % (field_range(reader, "StreamGbps")[1],
                                           field_range(reader, "StreamLossPercent")[1])
    frame = "" if frame_ms is None else ", frame %.0f ms" % frame_ms
    drawn = ""
    if level is not None:
        drawn = "\nfull resolution" if level <= 1 else "\n1/%d resolution, refining" % level
    if int(field_range(reader, "WholeStep", (1, 1))[0]) == 0:
        return "step %d, being written, %.1f%% arrived\n%s%s%s" % (step, complete, stream, frame, drawn)
    # Its age when the reader took it, and since: how old the step on screen is now.
    age = field_range(reader, "StepAgeMs")[1]
    picked = step_timeline(reader)["picked"]
    if picked is not None:
        age += 1000 * max(0.0, time.time() - picked)
    return "step %d, %.1f%% arrived, %s old\n%s%s%s" % (
        step, complete, "%.0f ms" % age if age < 10000 else "%.0f s" % (age / 1000), stream, frame, drawn)


def step_timeline(reader):
    """The shown step's timeline from the reader's field data, in CLOCK_REALTIME
    seconds (None: unknown): when it was sent (the earliest of its senders'
    step stamps, their clocks), published whole (its last slab) and picked
    by the reader."""
    def at(name, end):
        ns = field_range(reader, name, (0, 0))[end]
        return ns / 1e9 if ns > 0 else None
    return {"sent": at("StepSentNs", 0), "published": at("StepPublishedNs", 1), "picked": at("StepPickedNs", 1)}


def latency_text(timeline, shown):
    """'latency: sent->published 120.0 ms, published->shown 80.0 ms (picked
    after 30.0 ms)' for a frame shown at `shown` (time.time()): the step's
    transfer, then its wait for this renderer to take it and the drawing; the
    parts not known are left out."""
    sent, published, picked = timeline["sent"], timeline["published"], timeline["picked"]
    if published is None:
        return ""
    text = "published->shown %.1f ms" % (1000 * (shown - published))
    if sent is not None:
        text = "sent->published %.1f ms, " % (1000 * (published - sent)) + text
    if picked is not None:
        text += " (picked after %.1f ms)" % (1000 * (picked - published))
    return "latency: " + text


def frame_line(frame, step, frame_ms, new, level, read_s, draw_s, reader, shown, caption, cut=False):
    """A frame's line: 'frame 3: step 40, 95.0 ms (new step), level 4, read
    2 ms, draw 93 ms | latency: ... | caption: ...'. Read: the reader's update
    and the caption's field data; draw: the render (and composite); level:
    the level drawn (None: not progressive); shown: time.time() when the
    frame was on screen; cut: the CPU mapper stopped the frame for a newer
    step ('(cut: a newer step)'; the frame before it stayed on screen)."""
    latency = latency_text(step_timeline(reader), shown)
    return "frame %d: step %d, %.1f ms%s%s%s, read %.0f ms, draw %.0f ms%s%s" % (
        frame, step, frame_ms, " (new step)" if new else "", " (cut: a newer step)" if cut else "",
        "" if level is None else ", level %d" % level,
        1000 * read_s, 1000 * draw_s, " | " + latency if latency else "",
        " | caption: " + caption.replace("\n", " / ") if caption else "")


def drawn_level(display):
    """(the level of the picture on screen, whether its last frame was cut for
    a newer step) of a Slabcast Volume representation."""
    display.UpdatePropertyInformation()
    return display.GetPropertyValue("SlabcastRenderedLevel"), display.GetPropertyValue("SlabcastFrameCut") == 1


def show_frame_extras(reader, view, args):
    """The caption in the upper left corner and, with --show-holes, the values
    the step lost as a translucent cyan overlay (cells touching a value whose
    age is not 0). Returns the caption's Text source (None without one)."""
    if args.show_holes:
        holes = Threshold(Input=reader, Scalars=["POINTS", value_field(reader) + "_age"], LowerThreshold=1,
                          UpperThreshold=255)
        holes.AllScalars = 0
        overlay = Show(holes, view)
        overlay.SetRepresentationType("Surface")
        overlay.ColorArrayName = ["POINTS", ""]
        overlay.AmbientColor = overlay.DiffuseColor = [0.0, 0.9, 1.0]
        overlay.Opacity = 0.35
    return None if args.no_overlay else show_caption(reader, view)


def show_caption(reader, view):
    """The step's caption (step_caption) in the view's upper left corner;
    returns its Text source, whose Text each frame sets."""
    caption = Text(Text=step_caption(reader))
    shown = Show(caption, view)
    shown.WindowLocation = "Upper Left Corner"
    # About 40 characters a line: sized to the view, 18 points at 800 wide.
    shown.FontSize = max(10, min(24, int(view.ViewSize[0]) // 44))
    shown.Justification = "Left"
    shown.Color = [0.9, 0.9, 0.9]
    return caption


def on_signal(signum, frame):
    global STOP
    STOP = True


def make_reader(args):
    if args.connect:
        host, _, port = args.connect.rpartition(":")
        if not Connect(host or "localhost", int(port)):
            fail("cannot connect to pvserver at " + args.connect)
    if args.plugin:
        # remote=True: pvbatch's satellite ranks need the reader class as well.
        LoadPlugin(args.plugin, remote=True, ns=globals())
    if not hasattr(servermanager.sources, "SlabcastReader"):
        fail("the Slabcast plugin is not loaded: set PV_PLUGIN_PATH to its directory or give --plugin")
    reader = servermanager.sources.SlabcastReader(FileName=args.descriptor)
    reader.Completeness = 0 if args.completeness == "whole" else 1
    # The age array only marks the holes; without --show-holes a rank whose
    # piece spans several slabs need not copy it (a quarter of the values).
    reader.AgeArray = 1 if args.show_holes else 0
    return reader


def show_on_tile_display(view):
    """A pvserver in tile-display mode (--tdx/--tdy) pastes onto its ranks'
    screens only the views of the layout a client names with
    ShowViewsOnTileDisplay. The ParaView GUI names its active tab; pvpython
    names none, and the tile windows stay blank although every rank renders
    and composites its tile. Without tile-display mode this changes nothing."""
    layout = GetLayout(view) or AssignViewToLayout(view)
    layout.SMProxy.ShowViewsOnTileDisplay()


def wall_tiles(tiles, tile, mullion=(0, 0)):
    """A tiled wall's whole image and each rank's part of it: ((width, height),
    [(x, y) of rank r's tile from the image's top left]). A tile is one
    screen; the mullions are the bezels between screens, part of the whole
    image but shown by no screen, so tile (i, j) starts at (i * (tile width +
    mullion x), j * (tile height + mullion y)). Ranks fill the rows from the
    top left, as pvserver --tdx/--tdy numbers its tiles."""
    (nx, ny), (w, h), (mx, my) = tiles, tile, mullion
    size = (nx * w + (nx - 1) * mx, ny * h + (ny - 1) * my)
    return size, [((r % nx) * (w + mx), (r // nx) * (h + my)) for r in range(nx * ny)]


class Wall:
    """--wall: each frame is rendered and composited once (IceT, as for any
    number of ranks) at the whole wall's size; rank 0's image goes to every
    rank, and each shows its tile in a borderless window at the top left of
    its own X screen (pvbatch --displays=A,B,..., or DISPLAY set per rank).
    pvserver's own tile-display mode renders each tile on its rank instead,
    but its mullions (--tmx/--tmy) do not show crops of one image in
    ParaView 5.11 (plugin/README.md, "Wall displays")."""

    def __init__(self, tiles, tile, mullion):
        from paraview.modules.vtkRemotingCore import vtkProcessModule, vtkRemotingCoreConfiguration
        from vtkmodules.vtkParallelCore import vtkMultiProcessController
        from vtkmodules.vtkRenderingCore import vtkRenderWindow
        import vtkmodules.vtkRenderingOpenGL2  # noqa: F401 (the OpenGL render window behind vtkRenderWindow)
        self.controller = vtkMultiProcessController.GetGlobalController()
        ranks, self.rank = self.controller.GetNumberOfProcesses(), self.controller.GetLocalProcessId()
        if ranks != tiles[0] * tiles[1]:
            fail("--wall %dx%d needs %d ranks (mpirun -np %d), not %d" % (
                tiles + (tiles[0] * tiles[1], tiles[0] * tiles[1], ranks)))
        if ranks > 1 and not vtkProcessModule.GetProcessModule().GetSymmetricMPIMode():
            fail("--wall shows a tile on every rank: run pvbatch --symmetric")
        self.size, origins = wall_tiles(tiles, tile, mullion)
        self.tile, self.origin = tile, origins[self.rank]
        display = vtkRemotingCoreConfiguration.GetInstance().GetDisplay()  # this rank's of --displays
        if display:
            os.environ["DISPLAY"] = display  # read when the window opens
        self.window = vtkRenderWindow()
        self.window.SetSize(*tile)
        self.window.SetPosition(0, 0)
        self.window.SetBorders(0)
        self.window.SetWindowName("slabcast wall, rank %d, tile at %d,%d" % ((self.rank,) + self.origin))
        self.window.Render()  # opens it

    def show(self, view):
        """Renders the frame on every rank (CaptureWindow composites it on
        rank 0), then this rank's tile of it on its screen."""
        import numpy
        from vtkmodules.util.numpy_support import numpy_to_vtk, vtk_to_numpy
        from vtkmodules.vtkCommonDataModel import vtkImageData
        captured = view.SMProxy.CaptureWindow(1)
        frame = captured if self.rank == 0 else vtkImageData()
        self.controller.Broadcast(frame, 0)
        self.frame = frame
        (width, height), (w, h), (x, y) = self.size, self.tile, self.origin
        # The image's rows run bottom-up: the tile's top row is height - y - 1.
        pixels = vtk_to_numpy(frame.GetPointData().GetScalars()).reshape(height, width, -1)
        tile = numpy.ascontiguousarray(pixels[height - y - h:height - y, x:x + w, :3]).reshape(-1, 3)
        self.window.SetPixelData(0, 0, w - 1, h - 1, numpy_to_vtk(tile, deep=1), 0, 0)
        self.window.Frame()

    def across_ranks(self, lows, highs):
        """([minimum over every rank of each of lows], [maximum of each of highs])."""
        from vtkmodules.vtkCommonCore import vtkDoubleArray
        from vtkmodules.vtkParallelCore import vtkCommunicator
        result = []
        for values, op in ((lows, vtkCommunicator.MIN_OP), (highs, vtkCommunicator.MAX_OP)):
            mine, everyone = vtkDoubleArray(), vtkDoubleArray()
            for v in values:
                mine.InsertNextValue(v)
            self.controller.AllReduce(mine, everyone, op)
            result.append([everyone.GetValue(i) for i in range(len(values))])
        return result

    # --save's formats: the frame is on rank 0 already, written without rendering it again.
    WRITERS = {".png": "vtkPNGWriter", ".jpg": "vtkJPEGWriter", ".jpeg": "vtkJPEGWriter", ".ppm": "vtkPNMWriter"}

    def save(self, path):
        """Rank 0 saves the whole frame it last showed."""
        from vtkmodules import vtkIOImage
        if self.rank == 0:
            writer = getattr(vtkIOImage, self.WRITERS[os.path.splitext(path)[1].lower()])()
            writer.SetFileName(path)
            writer.SetInputData(self.frame)
            writer.Write()

    def decide(self, choice, choices):
        """Rank 0's `choice` (one of `choices`), for every rank."""
        from vtkmodules.vtkCommonCore import vtkIntArray
        index = vtkIntArray()
        index.InsertNextValue(choices.index(choice))
        self.controller.Broadcast(index, 0)
        return choices[index.GetValue(0)]

    def agree(self, reason):
        """Rank 0's decision to stop, for every rank: a rank leaving the loop
        alone would leave the others waiting in the next frame's render."""
        return (reason or "stopping with rank 0") if self.decide(bool(reason), (False, True)) else ""


def value_range(reader, field, args, wall=None):
    if args.range:
        lo, hi = (float(v) for v in args.range.split(","))
        return lo, hi
    info = reader.PointData[field]
    if info is None:
        fail("%s has no point array '%s'" % (args.descriptor, field))
    lo, hi = info.GetRange()
    if wall:  # pvbatch --symmetric: each rank sees only its own piece's range
        (lo,), (hi,) = wall.across_ranks([lo], [hi])
    hi = max(hi, 1e-30)
    # Log scale needs a positive floor; density fields often have an exact 0 background.
    lo = lo if lo > 0 else hi * args.min_fraction
    return lo, max(hi, lo * 1.0001)


# The GPU ray caster turns each transfer function into a texture sampled linearly
# over [lo, hi], as wide as the range divided by the closest pair of points, and
# at most 16384 texels here (Mesa); past that VTK warns and maps colours wrongly.
# Points spread evenly in log(value) crowd together at the low end, where the
# opacity is near zero anyway, so those closer than 1/8192 of the range are
# dropped: the table stays within 8192 texels whatever the range.
TRANSFER_POINTS = 33
MAX_TEXELS = 8192


def log_positions(lo, hi, count=TRANSFER_POINTS):
    """(value, position in [0, 1]) pairs, evenly spaced in log(value) from lo to hi."""
    min_gap = (hi - lo) / MAX_TEXELS
    kept = []
    for i in range(count):
        t = i / float(count - 1)
        v = math.exp(math.log(lo) + t * (math.log(hi) - math.log(lo)))
        if kept and i < count - 1 and v - kept[-1][0] < min_gap:
            continue
        kept.append((v, t))
    return kept


def preset_colour_at(points, t):
    """The colour of a preset (flat x,r,g,b list over x in [0, 1]) at position t."""
    quads = [points[i:i + 4] for i in range(0, len(points), 4)]
    for (x0, *c0), (x1, *c1) in zip(quads, quads[1:]):
        if t <= x1:
            f = 0.0 if x1 <= x0 else max(0.0, (t - x0) / (x1 - x0))
            return [a + f * (b - a) for a, b in zip(c0, c1)]
    return quads[-1][1:]


def apply_cosmic_preset(display, field, lo, hi, preset, box):
    """Log-scaled colour and opacity: a density field spans decades, and faint
    structure matters as much as dense halos. The log scale is built into the
    control points (spread evenly in log(density)) rather than asked for with
    UseLogScale: VTK 9.2's GPU ray caster samples a log-scale table in log
    space but looks it up linearly over each rank's own data range, so colours
    would change with the number of ranks. Opacity rises as the cube of the
    log-position: the background stays clear, filaments faint, clumps glow."""
    if display.Representation not in ("Volume", CPU_VOLUME):
        display.SetRepresentationType("Volume")
    display.ColorArrayName = ["POINTS", field]
    lut = GetColorTransferFunction(field)
    lut.ApplyPreset(preset, True)
    lut.AutomaticRescaleRangeMode = "Never"
    lut.UseLogScale = 0
    lut.RescaleTransferFunction(0.0, 1.0)  # the preset's points at their positions in [0, 1]
    preset_points = list(lut.RGBPoints)
    points = log_positions(lo, hi)
    rgb = []
    for v, t in points:
        rgb += [v] + preset_colour_at(preset_points, t)
    lut.RGBPoints = rgb
    # ParaView colours by the array itself on a switch to "Volume", not to
    # another volume representation (Slabcast Volume): given here for both.
    display.LookupTable = lut
    pwf = GetOpacityTransferFunction(field)
    pwf.UseLogScale = 0
    opacity = []
    for v, t in points:
        opacity += [v, 0.6 * t ** 3, 0.5, 0.0]
    pwf.Points = opacity
    display.ScalarOpacityFunction = pwf
    # Opacity per 1/32 of the box: the look does not depend on the resolution.
    display.ScalarOpacityUnitDistance = max(box) / 32.0 if max(box) > 0 else 1.0


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    width, height = (int(v) for v in args.size.lower().split("x"))
    wall = None
    if args.mullion != (0, 0) and not args.wall:
        fail("--mullion is for --wall (a pvserver wall takes --tmx/--tmy)")
    if args.wall:
        if args.connect:
            fail("--wall renders in pvbatch; a pvserver shows tiles itself (pvserver --tdx/--tdy)")
        if args.save and os.path.splitext(args.save)[1].lower() not in Wall.WRITERS:
            fail("--save %s with --wall: expected a %s file" % (args.save, ", ".join(sorted(Wall.WRITERS))))
        wall = Wall(args.wall, (width, height), args.mullion)
        width, height = wall.size  # the frame is the whole wall's image

    reader = make_reader(args)
    # The view before the path: a pvserver answers for its OpenGL (auto asks)
    # only once its views are set up (a tile display's above all).
    view = GetActiveViewOrCreate("RenderView")
    view.ViewSize = [width, height]
    view.UseColorPaletteForBackground = 0
    view.Background = [0.0, 0.0, 0.0]
    view.OrientationAxesVisibility = 0
    if args.connect:
        show_on_tile_display(view)
    # The path before the first read: a stride is the reader's own.
    mapper, why = resolve(args.mapper, volume_dims(reader), args.max_points)
    if unavailable(mapper):
        fail(unavailable(mapper))
    apply_stride(reader, mapper)
    agreed = first_agreement(reader, args, wall)
    reader.UpdatePipeline()
    field = value_field(reader)
    if field is None:
        fail("no data from %s (see the error above)" % args.descriptor)
    lo, hi = value_range(reader, field, args, wall)

    display = show_volume(reader, view, mapper)
    progressive = mapper == "slabcast"
    if mapper in ("slabcast", "raycast"):
        # ParaView 5.11 peels translucent geometry (the --show-holes overlay)
        # in passes a CPU volume mapper's picture does not take part in: on 2
        # or more ranks IceT then composited garbage (dots, stray colour)
        # for VTK's CPU ray caster and ours alike. Drawn in order instead.
        view.DepthPeeling = 0
    b = reader.GetDataInformation().GetBounds()
    if wall:
        lows, highs = wall.across_ranks(b[0::2], b[1::2])
        b = [v for low_high in zip(lows, highs) for v in low_high]
    apply_cosmic_preset(display, field, lo, hi, args.preset, (b[1] - b[0], b[3] - b[2], b[5] - b[4]))
    view.ResetCamera()
    camera = view.GetActiveCamera()
    camera.Azimuth(args.azimuth)
    camera.Elevation(args.elevation)
    view.ResetCamera()
    caption = show_frame_extras(reader, view, args)

    print("slabcast_render: %s, field %s, range %.4g..%.4g (log), %dx%d, mapper %s (%s)" % (
        args.descriptor, field, lo, hi, width, height, mapper, why), flush=True)
    start = time.monotonic()
    frame = 0
    frame_ms = None  # the last frame's time, shown in the next one's caption
    level = None     # the level of detail of the last frame (slabcast's progressive frames)
    refinement = Refinement(args.coarsest)
    unsaved = False  # --save-new-only: this step has no saved frame yet
    new = True       # this frame shows a step for the first time
    while True:
        t0 = time.monotonic()
        # Between frames wait_for_news took any news; --every-frame does not wait.
        if args.every_frame:
            if news_for_all(reader, wall) == "news":
                step = take_news(reader)
                new, agreed = new or step != agreed, step
            else:
                reader.MarkModified(reader)
        text = ""
        marches = False  # whether this frame marches (its level's first for the step)
        if progressive:
            before, level = level, refinement.next(new)
            if wall:  # every rank draws rank 0's level
                level = refinement.level = wall.decide(level, refinement.levels())
            marches = new or level != before
            display.SlabcastLevel = level
        if caption is not None:
            reader.UpdatePipeline()
            text = step_caption(reader, frame_ms, level if progressive and args.coarsest > 1 else None)
            caption.Text = text
        t_read = time.monotonic()
        if wall:
            wall.show(view)
        else:
            Render(view)
        shown = time.time()  # drawn (and with --wall on the screens): what the timeline ends with
        drawn, cut = drawn_level(display) if progressive else (None, False)
        reader.UpdatePropertyInformation()
        step = reader.GetPropertyValue("Step")
        t1 = time.monotonic()
        frame_ms = 1000 * (t1 - t0)
        if marches and not cut:
            refinement.marched(level, t1 - t_read)
        unsaved = unsaved or new
        # A frame cut for a newer step is not saved: the picture on screen is
        # the whole one before it, of another level than this frame's.
        if args.save and not cut and (not args.save_new_only or (unsaved and level in (None, 1))):
            unsaved = False
            path = args.save % frame if "%" in args.save else args.save
            if wall:
                wall.save(path)
            else:
                SaveScreenshot(path, view, ImageResolution=[width, height])
        if not (wall and wall.rank):  # with --wall, rank 0 speaks for all
            print(frame_line(frame, step, frame_ms, new and frame, drawn, t_read - t0, t1 - t_read, reader, shown,
                             text, cut), flush=True)
        frame += 1
        reason = stop_reason(args, frame, step, start)
        if wall:
            reason = wall.agree(reason)
        if reason:
            if reason != "done":
                print("slabcast_render: " + reason, flush=True)
            break
        new = False
        time.sleep(max(0.0, args.interval - (time.monotonic() - t0)))
        if not args.every_frame:
            refining = progressive and level > 1
            new, agreed = wait_for_news(
                reader, t0 + max(args.interval, args.refine_interval if refining else args.redraw), agreed, wall)


def stop_reason(args, frame, step, start):
    """Why the loop ends after this frame: "done" (--frames, --until-step),
    a message, or "" to go on."""
    if STOP:
        return "stopped by a signal"
    if (args.frames and frame >= args.frames) or (args.until_step is not None and step >= args.until_step):
        return "done"
    if args.stop_file and os.path.exists(args.stop_file):
        return "%s exists, stopping" % args.stop_file
    if args.timeout and time.monotonic() - start > args.timeout:
        return "timeout after %.0f s" % args.timeout
    return ""


# pvbatch runs this file as a script; falling off its end lets ParaView
# finalise in order (see fail()).
if __name__ == "__main__":
    main(sys.argv[1:])
