"""pvbatch --symmetric under mpirun: each rank checks its own piece of the
volume: the z-slab ParaView assigned, values equal to the source, and (when
ranks == slabs) that the array lies inside that rank's slab mapping.

    mpirun -np N pvbatch --symmetric pv_mpi_pieces.py DESCRIPTOR NX,NY,NZ DEPTH

Every rank prints one line, "RANK r/n OK ..." or "RANK r/n FAIL: ..."; a rank
never raises, so a failure cannot leave the others waiting at exit.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pv_checks import (CheckFailed, address_of, check, expected_index_values, mapping_of_address,  # noqa: E402
                       slab_path)

from paraview import servermanager  # noqa: E402
from paraview.simple import SlabcastReader  # noqa: E402

descriptor = sys.argv[1]
dims = tuple(int(v) for v in sys.argv[2].split(","))
depth = int(sys.argv[3])
pm = servermanager.vtkProcessModule.GetProcessModule()
rank, ranks = pm.GetPartitionId(), pm.GetNumberOfLocalPartitions()
slabs = (dims[2] + depth - 1) // depth

reader = SlabcastReader(FileName=descriptor)
reader.UpdatePipeline()  # every rank updates its own piece
image = reader.GetClientSideObject().GetOutputDataObject(0)
try:
    ext = image.GetExtent()
    array = image.GetPointData().GetArray("density")
    check(array is not None, "no density array")
    got = memoryview(array).tolist()
    want = expected_index_values(dims, ext, 0)
    check(got == want, "values of extent %s differ from the source" % (ext,))
    zero_copy = image.GetFieldData().GetArray("ZeroCopy").GetValue(0)
    where = ""
    if ranks == slabs:
        stored = (max(0, rank * depth - 1), min(dims[2], (rank + 1) * depth) - 1)
        check(ext[4:] == stored, "planes %s, slab %d stores %s" % (ext[4:], rank, stored))
        check(zero_copy == 1, "one rank per slab, yet the piece was copied")
        region = mapping_of_address(address_of(array))
        check(region is not None and region[2] == slab_path(descriptor, rank),
              "array not inside the mapping of %s: %s" % (slab_path(descriptor, rank), region))
        where = " in " + os.path.basename(region[2])
    print("RANK %d/%d OK planes %d..%d, %d values exact, zero-copy %d%s" % (
        rank, ranks, ext[4], ext[5], len(got), zero_copy, where), flush=True)
except CheckFailed as e:
    print("RANK %d/%d FAIL: %s" % (rank, ranks, e), flush=True)
