"""pvpython: the live reader with History 4, on a stream whose step s holds
the value s everywhere (plugin_testlib.constant_dataset), stepping on.

Waits until the reader keeps 4 steps, steps back 3 of them with the time
control (UpdatePipeline at an older time) while the stream goes on, reads
each exactly (every value the step's own, Step and DATA_TIME_STEP saying so),
holds there while newer steps come, then asks for the newest time and
follows the stream again. Prints PASS lines; exits 1 on the first failure.

    pvpython pv_live_history.py DESCRIPTOR
    pvpython pv_live_history.py DESCRIPTOR capped
        a receiver of 3 buffers: History 4 keeps 1 step (the warning, on
        stderr, says why), and the reader still follows the stream.
"""
import sys
import time

from paraview import servermanager
from paraview.simple import OpenDataFile
from vtk.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkCommonDataModel import vtkDataObject

DEADLINE_S = 120  # only so that a broken build cannot hang the test


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def step_shown(image):
    a = image.GetFieldData().GetArray("Step")
    return int(a.GetTuple1(0)) if a is not None and image.GetNumberOfPoints() else -1


def read(reader, t=None):
    """What a live loop does (NeedsUpdate, then an update), at time t."""
    reader.UpdatePropertyInformation()
    if reader.GetPropertyValue("NeedsUpdate"):
        reader.MarkModified(reader)
    reader.UpdatePipeline(t) if t is not None else reader.UpdatePipeline()
    image = servermanager.Fetch(reader)
    return image, step_shown(image)


def times(reader):
    reader.UpdatePipelineInformation()
    return [int(v) for v in reader.TimestepValues] if reader.TimestepValues else []


def check_exact(image, step, what):
    values = vtk_to_numpy(image.GetPointData().GetScalars())
    if len(values) == 0 or not (values == float(step)).all():
        fail("%s: step %d shows other values (%s..%s)" % (what, step, values.min(), values.max()))
    t = image.GetInformation().Get(vtkDataObject.DATA_TIME_STEP())
    if t != step:
        fail("%s: DATA_TIME_STEP %s for step %d" % (what, t, step))


reader = OpenDataFile(sys.argv[1])
reader.History = 4
deadline = time.monotonic() + DEADLINE_S
if sys.argv[2:] == ["capped"]:
    seen = set()
    while len(seen) < 3:
        if time.monotonic() > deadline:
            fail("the reader showed steps %s only after %d s" % (sorted(seen), DEADLINE_S))
        image, shown = read(reader)
        if shown >= 0:
            check_exact(image, shown, "capped")
            seen.add(shown)
            if len(times(reader)) != 1:
                fail("3 buffers a slab: kept %s, not 1 step" % times(reader))
        time.sleep(0.05)
    print("PASS capped at 1 step, following the stream through %s" % sorted(seen), flush=True)
    sys.exit(0)
kept = []
while len(kept) < 4:
    if time.monotonic() > deadline:
        fail("the reader kept %s after %d s" % (kept, DEADLINE_S))
    read(reader)
    kept = times(reader)
    time.sleep(0.05)
print("PASS kept 4 steps: %s" % kept, flush=True)

# Back through the three older ones, exactly, while the stream goes on.
newest = kept[-1]
for step in reversed(kept[:3]):
    image, shown = read(reader, float(step))
    if shown != step:
        fail("asked for step %d (kept %s), shown %d" % (step, times(reader), shown))
    check_exact(image, step, "stepping back")
print("PASS stepped back to %s" % list(reversed(kept[:3])), flush=True)

# Held at the oldest asked for while newer steps come (it stays reachable only
# while kept: ask again for the same time before the stream moves it out).
held = kept[0]
image, shown = read(reader, float(held))
if shown != held:
    fail("held at %d, shown %d" % (held, shown))

# The newest time follows the stream again.
while True:
    now = times(reader)
    if now and now[-1] > newest:
        break
    if time.monotonic() > deadline:
        fail("the stream did not move on past step %d" % newest)
    read(reader, float(held))
    time.sleep(0.05)
latest = times(reader)[-1]
image, shown = read(reader, float(latest))
check_exact(image, shown, "back to the latest")
if shown < latest:
    fail("asked for the newest step %d, shown %d" % (latest, shown))
followed = shown
while followed <= shown:
    if time.monotonic() > deadline:
        fail("after returning to the latest (%d) the reader did not follow the stream" % shown)
    image, followed = read(reader, float(latest))  # the same time asked again: following
    time.sleep(0.05)
check_exact(image, followed, "following")
print("PASS back to the latest (%d) and following the stream (%d)" % (shown, followed), flush=True)
