"""Reads a live volume as fast as ParaView can while constant-per-step steps
stream in (step s holds the value s everywhere) and counts torn frames: reads
whose values are not all one value, or not the value of the Step the reader
reports. Several ranks run it with pvbatch --symmetric; every rank reads its
own piece and prints its own line, and the driver checks that the ranks
showed the same step in every frame.

    [mpirun -np N pvbatch --symmetric] pv_torn_frames.py DESCRIPTOR FRAMES [whole|newest [SECONDS]]

SECONDS (one rank only: ranks must run the same number of frames, each
frame's Refresh is collective) stops it earlier.

Frames are at least 20 ms apart, so that they fall at every phase of the
steps' arrival instead of racing through one step.

A step that lost packets is published with its holes filled from an earlier
step, and the reader's `<field>_age` array marks those values (age > 0): a read is
torn when a value that arrived in the step shown (age 0) is not that step's
value. Reads with holes are counted apart. (A reader from before issue 17 has
no age array: every value must be the step's.)

Prints "RANK r/n READS k TORN t HOLED h STEPS s0,s1,..." (one step per frame),
and, with SLABCAST_TORN_OUT=PREFIX, also writes it to PREFIX.r: mpirun may
forward several ranks' long lines interleaved, and a file is each rank's own.
"""
import os
import sys
import time

from paraview import servermanager
from paraview.simple import SlabcastReader
from vtkmodules.util.numpy_support import vtk_to_numpy

descriptor, frames = sys.argv[1], int(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else "whole"
deadline = time.monotonic() + float(sys.argv[4]) if len(sys.argv) > 4 else None
pm = servermanager.vtkProcessModule.GetProcessModule()
rank, ranks = pm.GetPartitionId(), pm.GetNumberOfLocalPartitions()

reader = SlabcastReader(FileName=descriptor)
# A reader of before issue 17 has neither property: it re-executes on its own
# slabs' counters, which is what the "before" figure measures.
has_refresh = reader.GetProperty("Refresh") is not None
if reader.GetProperty("Completeness") is not None:
    reader.Completeness = 0 if mode == "whole" else 1
torn, holed, steps, reads, first_torn = 0, 0, [], 0, ""
for frame in range(frames):
    started = time.monotonic()
    if deadline is not None and started > deadline:
        break
    if has_refresh:
        reader.SMProxy.InvokeCommand("Refresh")  # collective: every rank, every frame
    else:
        reader.MarkModified(reader)
    reader.UpdatePipeline()
    image = reader.GetClientSideObject().GetOutputDataObject(0)
    array = image.GetPointData().GetArray(0) if image else None
    step_array = image.GetFieldData().GetArray("Step") if image else None
    step = int(step_array.GetValue(0)) if step_array else -1
    steps.append(step)
    if array is None or array.GetNumberOfTuples() == 0 or step < 0:
        continue  # nothing published yet
    values = vtk_to_numpy(array)
    ages = image.GetPointData().GetArray(array.GetName() + "_age")
    if ages is not None:
        ages = vtk_to_numpy(ages)
        holed += 1 if ages.any() else 0
        values = values[ages == 0]  # arrived in the step shown
    reads += 1
    if values.size == 0:
        continue
    low, high = float(values.min()), float(values.max())
    if low != high or low != step:
        torn += 1
        if not first_torn:
            first_torn = " first: frame %d step %d values %g..%g" % (frame, step, low, high)
    time.sleep(max(0.0, 0.02 - (time.monotonic() - started)))
line = "RANK %d/%d READS %d TORN %d HOLED %d STEPS %s%s" % (rank, ranks, reads, torn, holed,
                                                           ",".join(map(str, steps)), first_torn)
print(line, flush=True)
if os.environ.get("SLABCAST_TORN_OUT"):
    with open("%s.%d" % (os.environ["SLABCAST_TORN_OUT"], rank), "w") as f:
        f.write(line + "\n")
