"""pvpython: Save Animation over a dataset or recording, as a user does from
File > Save Animation: one frame a time step, each a slice of that step.

    pvpython pv_dataset_animation.py DATASET_JSON OUT_DIR

Prints "FRAMES n" and "TIMES t0,t1,...".
"""
import os
import sys

from paraview.simple import ColorBy, GetAnimationScene, GetColorTransferFunction, OpenDataFile, Render, \
    SaveAnimation, Show, CreateView

path, out = sys.argv[1], sys.argv[2]
reader = OpenDataFile(path)
reader.UpdatePipelineInformation()
scene = GetAnimationScene()
scene.UpdateAnimationUsingDataTimeSteps()
view = CreateView("RenderView")
view.ViewSize = [160, 120]
field = reader.PointData.keys()[0]
shown = Show(reader, view)
shown.SetRepresentationType("Slice")
ColorBy(shown, ("POINTS", field))
GetColorTransferFunction(field).RescaleTransferFunction(-300.0, 300.0)
view.ResetCamera()
Render(view)
SaveAnimation(os.path.join(out, "frame.png"), view, ImageResolution=[160, 120])
frames = sorted(n for n in os.listdir(out) if n.startswith("frame"))
print("FRAMES %d" % len(frames))
print("TIMES " + ",".join("%g" % t for t in reader.TimestepValues))
