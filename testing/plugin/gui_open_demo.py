# Run by the ParaView GUI (paraview --script=...): slabcast_gui_open.py as
# `slabcast demo` runs it (from SLABCAST_SCRIPT_DIR), then a watcher on the
# same timer: once the view shows step SLABCAST_GUI_SAVE_STEP in full
# resolution it saves the view without its caption to SLABCAST_GUI_SAVE.png
# (ParaView's capture of the view, as pvbatch's --save) and its size and
# camera to SLABCAST_GUI_SAVE.json, for test_gui_frames.py to compare with
# pvbatch's picture of the same step.
import json
import os

from paraview.simple import Hide, SaveScreenshot, Show

script = os.path.join(os.environ["SLABCAST_SCRIPT_DIR"], "slabcast_gui_open.py")
with open(script) as f:
    exec(compile(f.read(), script, "exec"))  # noqa: S102 (the product's own start-up script)

watched = live_views[0]  # noqa: F821 (defined by slabcast_gui_open.py)
save_step = int(os.environ["SLABCAST_GUI_SAVE_STEP"])
saved = []


def save_when_refined(*unused):
    if saved or watched.level != 1 or watched.agreed != save_step:
        return
    saved.append(save_step)
    out = os.environ["SLABCAST_GUI_SAVE"]
    view = watched.view
    Hide(watched.caption, view)
    SaveScreenshot(out + ".png", view, ImageResolution=list(view.ViewSize))
    Show(watched.caption, view)
    camera = view.GetActiveCamera()
    with open(out + ".json.tmp", "w") as f:
        json.dump({"step": save_step, "size": list(view.ViewSize), "position": list(camera.GetPosition()),
                   "focal_point": list(camera.GetFocalPoint()), "view_up": list(camera.GetViewUp()),
                   "view_angle": camera.GetViewAngle()}, f)
    os.rename(out + ".json.tmp", out + ".json")


watched.view.GetInteractor().AddObserver("TimerEvent", save_when_refined)
