"""pvpython: open a damaged slabcast volume and keep going. The error must come
from ParaView's own error output (the driver checks it names the file and
the problem); this process must neither crash nor hang.

    pvpython pv_open_bad.py DESCRIPTOR [PIECE PIECES]
"""
import sys

from paraview import servermanager
from paraview.simple import OpenDataFile, SlabcastReader  # noqa: F401  (SlabcastReader: the plugin)

path = sys.argv[1]
try:
    reader = OpenDataFile(path)  # as File > Open would
except RuntimeError as e:
    # paraview.simple refuses a file that does not exist before any reader
    # sees it; the reader's own message is what is under test.
    print("OpenDataFile:", e, flush=True)
    reader = SlabcastReader(FileName=path)
print("reader:", reader.GetXMLName(), flush=True)
if len(sys.argv) > 3:
    algo = reader.GetClientSideObject()
    algo.UpdatePiece(int(sys.argv[2]), int(sys.argv[3]), 0)
    points = algo.GetOutputDataObject(0).GetNumberOfPoints()
else:
    reader.UpdatePipeline()
    points = servermanager.Fetch(reader).GetNumberOfPoints()
print("points:", points, flush=True)
print("SURVIVED", flush=True)
