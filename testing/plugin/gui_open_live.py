# Run by the ParaView GUI (paraview --script=...): opens the live slabcast volume
# named by SLABCAST_GUI_DESCRIPTOR, volume-rendered, and returns to the event
# loop. From then on only the GUI's LiveSource timer can change the view.
import os

from paraview.simple import GetActiveViewOrCreate, GetColorTransferFunction, OpenDataFile, Render, Show

reader = OpenDataFile(os.environ["SLABCAST_GUI_DESCRIPTOR"])
view = GetActiveViewOrCreate("RenderView")
view.OrientationAxesVisibility = 0
display = Show(reader, view)
display.SetRepresentationType("Volume")
display.ColorArrayName = ["POINTS", "density"]
lut = GetColorTransferFunction("density")
lut.AutomaticRescaleRangeMode = "Never"
lut.RescaleTransferFunction(0.1, 6.1)
view.ResetCamera()
Render(view)
# The driver's sign that the volume is set up and rendered (test_gui_live.py):
# the GUI's start-up takes any time on a busy machine.
if os.environ.get("SLABCAST_GUI_READY"):
    open(os.environ["SLABCAST_GUI_READY"], "w").close()
