"""pvpython for test_dataset_reader.py: read a damaged dataset and keep going.
The error must come from ParaView's own error output (the driver checks it
names the file and the problem); this process must neither crash nor hang.

    pvpython pv_dataset_bad.py DATASET.JSON TIME [THEN]

THEN: a step read after the error, which must give data again.
"""
import sys

from paraview.simple import OpenDataFile, SlabcastDatasetReader

path, time = sys.argv[1], float(sys.argv[2])
try:
    reader = OpenDataFile(path)  # as File > Open would
except RuntimeError as e:
    # paraview.simple refuses a file that does not exist before any reader
    # sees it; the reader's own message is what is under test.
    print("OpenDataFile:", e, flush=True)
    reader = SlabcastDatasetReader(FileName=path)
print("reader:", reader.GetXMLName(), flush=True)
algo = reader.GetClientSideObject()
reader.UpdatePipeline(time)
print("points:", algo.GetOutputDataObject(0).GetNumberOfPoints(), flush=True)
if len(sys.argv) > 3:
    reader.UpdatePipeline(float(sys.argv[3]))
    image = algo.GetOutputDataObject(0)
    step = image.GetFieldData().GetArray("Step")
    print("then: step %d, points %d" % (step.GetValue(0) if step else -1, image.GetNumberOfPoints()), flush=True)
print("SURVIVED", flush=True)
