"""pvpython: the Slabcast Volume mapper does not march a step it has drawn
again when the reader runs again for news that is not a new whole step.

    pvpython pv_same_step_again.py DESCRIPTOR SLAB_WRITER DIR NAME DIMS DEPTH

Shows DESCRIPTOR's step 0 (written by the test writer, pattern blobs) through
the plugin's mapper in full, then has the writer publish step 1 into slab 0
alone, as a receiver does while a step's first slabs arrive: the reader runs
again (Refresh and an update, as slabcast_render.py's take_news) and still
shows step 0, and a frame drawn then is shown without a march
(SlabcastMarches unchanged). Once every slab holds step 1, the next frame
marches step 1. Prints SAME_STEP_OK.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pv_checks import check  # noqa: E402

from paraview.simple import ColorBy, GetActiveViewOrCreate, OpenDataFile, Render, Show  # noqa: E402

descriptor, writer, directory, name, dims, depth = sys.argv[1:7]


def publish(step, slabs):
    subprocess.run([writer, "write", "--dir", directory, "--name", name, "--dims", dims, "--slab-depth", depth,
                    "--pattern", "blobs", "--step", str(step), "--slabs", slabs, "--list", "all"],
                   check=True, stdout=subprocess.DEVNULL)


def frame(reader, display, view):
    """Takes any news as the live renderer does, draws, and says (step shown,
    marches so far)."""
    reader.SMProxy.InvokeCommand("Refresh")
    reader.MarkModified(reader)
    reader.UpdatePipeline()
    Render(view)
    reader.UpdatePropertyInformation()
    display.UpdatePropertyInformation()
    return reader.GetPropertyValue("Step"), display.GetPropertyValue("SlabcastMarches")


reader = OpenDataFile(descriptor)
reader.UpdatePipeline()
view = GetActiveViewOrCreate("RenderView")
view.ViewSize = [160, 160]
display = Show(reader, view)
display.SetRepresentationType("Slabcast Volume")
ColorBy(display, ("POINTS", [k for k in reader.PointData.keys() if not k.endswith("_age")][0]))
display.SlabcastLevel = 1
view.ResetCamera()

step, drawn = frame(reader, display, view)
check(step == 0 and drawn >= 1, "the first frame: step %s after %s marches, expected step 0 marched" % (step, drawn))

publish(1, "0")
again, marches = frame(reader, display, view)
print("slab 0 at step 1: the reader shows step %s, marches %d (before: %d)" % (again, marches, drawn), flush=True)
check(again == 0, "with one slab at step 1 the reader shows step %s, not the whole step 0" % again)
check(marches == drawn, "step 0 was marched again (%d marches, %d before) when only the reader ran again"
      % (marches, drawn))

slabs = -(-int(dims.split(",")[2]) // int(depth))
check(slabs >= 2, "the volume needs at least 2 slabs, it has %d" % slabs)
publish(1, ",".join(str(k) for k in range(1, slabs)))
newer, after = frame(reader, display, view)
print("every slab at step 1: the reader shows step %s, marches %d" % (newer, after), flush=True)
check(newer == 1, "with every slab at step 1 the reader shows step %s" % newer)
check(after == marches + 1, "step 1 was not marched once (%d marches, %d before)" % (after, marches))
print("SAME_STEP_OK", flush=True)
