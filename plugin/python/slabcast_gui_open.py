"""Run by the ParaView GUI at start-up (`paraview --script=slabcast_gui_open.py`,
as `slabcast demo` does when there is a display): opens the live slabcast
volume named by SLABCAST_DESCRIPTOR and draws it as slabcast_render.py does
in pvbatch: the same path (SLABCAST_MAPPER, default auto: without a GPU the
plugin's CPU ray marcher; at most SLABCAST_MAX_POINTS along the longest axis
where the demo sets that memory ceiling), the same density preset and colour
range (SLABCAST_RANGE "LO,HI"), the same caption (step, how whole, how old,
the stream's rate and loss) and the same progressive frames (a new step
first at 1/SLABCAST_COARSEST of the pixels, refined frame by frame). With
SLABCAST_COMPARE a second volume in a view beside it (the head-to-head),
labelled from SLABCAST_LABELS ("LEFT|RIGHT").

Then it returns to the event loop, where a timer (LiveView) does what
slabcast_render.py's loop does between frames: every few milliseconds it
reads the receiver's headers, and a newly published step is on screen at
once, coarse, then refined down to full resolution, with nobody clicking.
SLABCAST_FRAME_LOG names a file for one line a frame, as slabcast_render.py
prints them (the step, its level, its latency), and SLABCAST_VIEW_SIZE
("WxH") fixes the views' size, for tests and benchmarks."""
import os
import sys
import time

# The GUI runs this file as a string, without __file__: the demo says where it is.
sys.path.insert(0, os.environ["SLABCAST_SCRIPT_DIR"] if "SLABCAST_SCRIPT_DIR" in os.environ
                else os.path.dirname(os.path.abspath(__file__)))
from slabcast_mappers import CPU_VOLUME, apply_stride, resolve, volume_dims  # noqa: E402
from slabcast_mappers import show_volume as show_through  # noqa: E402
from slabcast_render import (apply_cosmic_preset, drawn_level, frame_line, has_news,  # noqa: E402
                             show_caption, step_caption, take_news, value_field)
from slabcast_refinement import Refinement  # noqa: E402

from paraview.simple import (AssignViewToLayout, CreateView, GetActiveViewOrCreate, GetLayout,  # noqa: E402
                             OpenDataFile, Render, Show, Text)

# How often the timer looks at the receiver's headers: the GUI's wait for a
# publication (ParaView's own LiveSource poll is every 500 ms).
TICK_MS = 5
# A step on screen in full resolution is drawn again this often (the caption's age).
REDRAW_S = 1.0


class LiveView:
    """One view's frames, driven by an interactor timer on the GUI's thread."""

    def __init__(self, reader, view, display, caption, coarsest, log):
        self.reader, self.view, self.display, self.caption, self.log = reader, view, display, caption, log
        # Progressive on the plugin's CPU ray marcher only (Slabcast Volume).
        self.coarsest = coarsest if display.Representation == CPU_VOLUME else None
        self.refinement = Refinement(coarsest or 1)
        self.agreed = take_news(reader)
        self.level = None
        self.frame = 0
        self.frame_ms = None
        self.next_frame = 0.0  # time.monotonic() of the next redraw without news
        self.draw(True)

    def tick(self, *unused):
        new = False
        if has_news(self.reader):
            step = take_news(self.reader)
            new, self.agreed = step != self.agreed, step
        if new or time.monotonic() >= self.next_frame:
            self.draw(new)

    def draw(self, new):
        t0 = time.monotonic()
        marches = False  # whether this frame marches (its level's first for the step)
        if self.coarsest is not None:
            before, self.level = self.level, self.refinement.next(new)
            marches = new or self.level != before
            self.display.SlabcastLevel = self.level
        text = ""
        if self.caption is not None:
            self.reader.UpdatePipeline()
            text = step_caption(self.reader, self.frame_ms, self.level if (self.coarsest or 1) > 1 else None)
            self.caption.Text = text
        t_read = time.monotonic()
        Render(self.view)
        shown = time.time()
        t1 = time.monotonic()
        self.frame_ms = 1000 * (t1 - t0)
        if marches and not drawn_level(self.display)[1]:
            self.refinement.marched(self.level, t1 - t_read)
        refining = self.level is not None and self.level > 1
        self.next_frame = t1 + (0.0 if refining else REDRAW_S)
        if self.log:
            self.reader.UpdatePropertyInformation()
            drawn, cut = drawn_level(self.display) if self.coarsest is not None else (None, False)
            self.log.write(frame_line(self.frame, self.reader.GetPropertyValue("Step"), self.frame_ms,
                                      new and self.frame > 0, drawn, t_read - t0, t1 - t_read, self.reader, shown,
                                      text, cut) + "\n")
            self.log.flush()
        self.frame += 1


def show_volume(descriptor, view, label, value_range):
    reader = OpenDataFile(descriptor)
    # The same path as slabcast_render.py's: auto unless the demo names one.
    mapper = resolve(os.environ.get("SLABCAST_MAPPER") or "auto", volume_dims(reader),
                     int(os.environ.get("SLABCAST_MAX_POINTS", "0")))[0]
    apply_stride(reader, mapper)  # a stride is the reader's own: set before it reads a step
    reader.UpdatePipeline()
    field = value_field(reader)
    lo, hi = value_range or reader.PointData[field].GetRange()
    lo = lo if lo > 0 else hi * 1e-3
    b = reader.GetDataInformation().GetBounds()
    view.OrientationAxesVisibility = 0
    view.UseColorPaletteForBackground = 0
    view.Background = [0.0, 0.0, 0.0]
    display = show_through(reader, view, mapper)
    apply_cosmic_preset(display, field, lo, hi, "Inferno (matplotlib)", (b[1] - b[0], b[3] - b[2], b[5] - b[4]))
    if label:
        shown = Show(Text(Text=label), view)
        shown.WindowLocation = "Upper Center"
        shown.FontSize = 24
    return reader, display, show_caption(reader, view)


value_range = None
if os.environ.get("SLABCAST_RANGE"):
    value_range = tuple(float(v) for v in os.environ["SLABCAST_RANGE"].split(","))
others = [d for d in os.environ.get("SLABCAST_COMPARE", "").split(":") if d]
labels = (os.environ.get("SLABCAST_LABELS", "").split("|") + [""] * (1 + len(others)))[:1 + len(others)]
coarsest = int(os.environ.get("SLABCAST_COARSEST", "4"))
frame_log = open(os.environ["SLABCAST_FRAME_LOG"], "a") if os.environ.get("SLABCAST_FRAME_LOG") else None

left = GetActiveViewOrCreate("RenderView")
if os.environ.get("SLABCAST_VIEW_SIZE"):  # "WxH": the views' layout at a fixed size (ParaView's preview mode)
    GetLayout(left).SetSize(*(int(v) for v in os.environ["SLABCAST_VIEW_SIZE"].lower().split("x")))
shown = [(left,) + show_volume(os.environ["SLABCAST_DESCRIPTOR"], left, labels[0], value_range)]
left.ResetCamera()
left.GetActiveCamera().Azimuth(30)
left.GetActiveCamera().Elevation(20)
left.ResetCamera()
cell = 0
for i, descriptor in enumerate(others):
    # Split the rightmost cell: the views so far keep the left part
    # (cell c splits into 2c + 1 and 2c + 2), equal columns in the end.
    layout = GetLayout(left)
    layout.SplitHorizontal(cell, 1.0 / (len(others) + 1 - i))
    cell = 2 * cell + 2
    right = CreateView("RenderView")
    AssignViewToLayout(view=right, layout=layout, hint=cell)
    shown.append((right,) + show_volume(descriptor, right, labels[1 + i], value_range))
    # The same camera: a smaller volume (the 1/8) sits where it would in the full one.
    right.CameraPosition = left.CameraPosition
    right.CameraFocalPoint = left.CameraFocalPoint
    right.CameraViewUp = left.CameraViewUp
    right.CameraParallelScale = left.CameraParallelScale

# Kept at module level: the GUI holds this script's globals, and with them the
# views' drivers and the timers' callbacks.
live_views = []
for view, reader, display, caption in shown:
    live = LiveView(reader, view, display, caption, coarsest, frame_log if view is left else None)
    interactor = view.GetInteractor()
    interactor.AddObserver("TimerEvent", live.tick)
    interactor.CreateRepeatingTimer(TICK_MS)
    live_views.append(live)
