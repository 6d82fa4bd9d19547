"""pvpython, for the booth soak: the live reader with History N on a stream
whose step s holds the value s everywhere, for SECONDS. It follows the
stream a frame every 50 ms and, every BACK_EVERY seconds, steps back to the
oldest step it keeps (the time controls' UpdatePipeline at an older time),
holds there for a second while newer steps come (taking none of them into
History meanwhile, as a view that stays at a time does), and returns to the
newest.
Every read is checked: each value that arrived in the step shown (age 0)
is that step's (BAD counts reads where it is not). A step asked for by its
time is shown while History keeps it (EXACT: the first read of each step
back, right after the times were read, showed the step asked for); the
stream goes on meanwhile, and once History lets the step go (it keeps the
newest N), the reader shows the lowest step it keeps, as it should.

    pvpython pv_history_soak.py DESCRIPTOR HISTORY SECONDS [BACK_EVERY]

Prints "HISTORY READS r BACK b EXACT e HELD h BAD x KEPT k" (h: reads of
the step asked for while holding; k: the most steps it kept at once), and
the first bad read; exits 1 when a read was bad or no step back was exact."""
import sys
import time

from paraview.simple import SlabcastReader
from vtkmodules.util.numpy_support import vtk_to_numpy

descriptor, depth, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
back_every = float(sys.argv[4]) if len(sys.argv) > 4 else 5.0
reader = SlabcastReader(FileName=descriptor)
reader.History = depth
reads = back = exact = held = bad = kept = 0
first_bad = ""


def check(t=None):
    """One read at time t (None: the newest, taking the stream's news into
    History); the step shown, or -1. A read at an older time takes no news:
    the step looked at stays kept while the stream goes on."""
    global reads, bad, first_bad
    if t is None:
        reader.UpdatePropertyInformation()
        if reader.GetPropertyValue("NeedsUpdate"):
            reader.MarkModified(reader)
        reader.UpdatePipeline()
    else:
        reader.UpdatePipeline(t)
    image = reader.GetClientSideObject().GetOutputDataObject(0)
    step_array = image.GetFieldData().GetArray("Step") if image else None
    array = image.GetPointData().GetArray(0) if image else None
    if step_array is None or array is None or array.GetNumberOfTuples() == 0:
        return -1
    step = int(step_array.GetValue(0))
    values = vtk_to_numpy(array)
    ages = image.GetPointData().GetArray(array.GetName() + "_age")
    if ages is not None:
        values = values[vtk_to_numpy(ages) == 0]
    reads += 1
    wrong = values.size and (float(values.min()) != step or float(values.max()) != step)
    if wrong:
        bad += 1
        if not first_bad:
            first_bad = " first: asked %s, step %d, values %g..%g" % (
                t, step, values.min() if values.size else 0, values.max() if values.size else 0)
    return step


end = time.monotonic() + seconds
next_back = time.monotonic() + back_every
while time.monotonic() < end:
    check()
    reader.UpdatePipelineInformation()
    times = list(reader.TimestepValues) if reader.TimestepValues else []
    kept = max(kept, len(times))
    if time.monotonic() >= next_back and len(times) >= 2:
        oldest = times[0]
        back += 1
        exact += check(oldest) == int(oldest)
        hold_until = time.monotonic() + 1.0
        while time.monotonic() < hold_until:
            time.sleep(0.05)
            held += check(oldest) == int(oldest)
        next_back = time.monotonic() + back_every
    time.sleep(0.05)
print("HISTORY READS %d BACK %d EXACT %d HELD %d BAD %d KEPT %d%s" % (reads, back, exact, held, bad, kept, first_bad),
      flush=True)
sys.exit(1 if bad or not exact else 0)
