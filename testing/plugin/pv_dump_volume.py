"""pvpython: the whole volume as the reader shows it, written out as raw
float32 (x fastest), with the step it shows and its age array.

    pvpython pv_dump_volume.py DESCRIPTOR OUT.raw [FILL]

FILL sets the reader's Fill property ("As published", the default, or
"Nearest"). Prints 'DUMP step=S values=N' and writes OUT.raw and OUT.raw.age (uint8)."""
import sys

from paraview import servermanager
from paraview.simple import OpenDataFile

reader = OpenDataFile(sys.argv[1])
if len(sys.argv) > 3:
    reader.Fill = sys.argv[3]
reader.UpdatePipeline()
image = servermanager.Fetch(reader)
density = image.GetPointData().GetArray("density")
age = image.GetPointData().GetArray("density_age")
step = image.GetFieldData().GetArray("Step")
with open(sys.argv[2], "wb") as f:
    f.write(memoryview(density).cast("B"))
with open(sys.argv[2] + ".age", "wb") as f:
    f.write(memoryview(age).cast("B"))
print("DUMP step=%d values=%d" % (int(step.GetTuple1(0)) if step else -1, density.GetNumberOfTuples()), flush=True)
