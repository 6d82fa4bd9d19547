"""Run by the ParaView GUI at start-up (`paraview --script=slabcast_gui_open.py`,
as `slabcast demo` does when there is a display): opens the live slabcast
volume named by SLABCAST_DESCRIPTOR as a volume rendering with the density
preset of slabcast_render.py (through SLABCAST_MAPPER's path, if set, and
at most SLABCAST_MAX_POINTS along the longest axis, which the demo sets where
the full volume would not fit in memory), and with SLABCAST_COMPARE a second volume in a
view beside it (the head-to-head), captions from SLABCAST_LABELS ("LEFT|RIGHT")
and the colour range from SLABCAST_RANGE ("LO,HI"). Then it returns to the
event loop: the reader's LiveSource hint keeps the view following the stream
with no Apply."""
import os
import sys

# The GUI runs this file as a string, without __file__: the demo says where it is.
sys.path.insert(0, os.environ["SLABCAST_SCRIPT_DIR"] if "SLABCAST_SCRIPT_DIR" in os.environ
                else os.path.dirname(os.path.abspath(__file__)))
from slabcast_mappers import apply_stride, resolve, volume_dims  # noqa: E402
from slabcast_mappers import show_volume as show_through  # noqa: E402
from slabcast_render import apply_cosmic_preset  # noqa: E402

from paraview.simple import (AssignViewToLayout, CreateView, GetActiveViewOrCreate, GetLayout, OpenDataFile,  # noqa: E402
                             Render, Show, Text)


def show_volume(descriptor, view, caption, value_range):
    reader = OpenDataFile(descriptor)
    mapper = os.environ.get("SLABCAST_MAPPER")
    max_points = int(os.environ.get("SLABCAST_MAX_POINTS", "0"))  # the demo's memory ceiling
    if max_points and not mapper:
        mapper = "auto"
    if mapper:  # the path once; a stride is the reader's own: set before it reads a step
        mapper = resolve(mapper, volume_dims(reader), max_points)[0]
        apply_stride(reader, mapper)
    reader.UpdatePipeline()
    field = [k for k in reader.PointData.keys() if not k.endswith("_age")][0]  # the values, not their age
    lo, hi = value_range or reader.PointData[field].GetRange()
    lo = lo if lo > 0 else hi * 1e-3
    b = reader.GetDataInformation().GetBounds()
    view.OrientationAxesVisibility = 0
    view.UseColorPaletteForBackground = 0
    view.Background = [0.0, 0.0, 0.0]
    display = show_through(reader, view, mapper) if mapper else Show(reader, view)
    apply_cosmic_preset(display, field, lo, hi, "Inferno (matplotlib)",
                        (b[1] - b[0], b[3] - b[2], b[5] - b[4]))
    if caption:
        label = Show(Text(Text=caption), view)
        label.WindowLocation = "Upper Center"
        label.FontSize = 24
    return reader


value_range = None
if os.environ.get("SLABCAST_RANGE"):
    value_range = tuple(float(v) for v in os.environ["SLABCAST_RANGE"].split(","))
others = [d for d in os.environ.get("SLABCAST_COMPARE", "").split(":") if d]
labels = (os.environ.get("SLABCAST_LABELS", "").split("|") + [""] * (1 + len(others)))[:1 + len(others)]

left = GetActiveViewOrCreate("RenderView")
show_volume(os.environ["SLABCAST_DESCRIPTOR"], left, labels[0], value_range)
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
    show_volume(descriptor, right, labels[1 + i], value_range)
    # The same camera: a smaller volume (the 1/8) sits where it would in the full one.
    right.CameraPosition = left.CameraPosition
    right.CameraFocalPoint = left.CameraFocalPoint
    right.CameraViewUp = left.CameraViewUp
    right.CameraParallelScale = left.CameraParallelScale
    Render(right)
Render(left)
