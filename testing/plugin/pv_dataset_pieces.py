"""pvbatch --symmetric under mpirun, for test_dataset_reader.py: each rank's
piece of every step of a dataset on disk is a z-slab of whole planes, equal
bit for bit to those planes as written (values and ages), at the step's time
and half a step later.

    mpirun -np N pvbatch --symmetric pv_dataset_pieces.py DATASET.JSON EXPECTED_DIR

Every rank prints one line, "RANK r/n OK planes a..b ..." or "RANK r/n FAIL: ...";
a rank never raises, so a failure cannot leave the others waiting at exit.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pv_checks import check  # noqa: E402

import numpy as np  # noqa: E402
from paraview import servermanager  # noqa: E402
from paraview.simple import SlabcastDatasetReader  # noqa: E402
from vtkmodules.util.numpy_support import vtk_to_numpy  # noqa: E402

path, expected_dir = sys.argv[1], sys.argv[2]
pm = servermanager.vtkProcessModule.GetProcessModule()
rank, ranks = pm.GetPartitionId(), pm.GetNumberOfLocalPartitions()


def planes(kind, step, z0, z1):
    return np.load(os.path.join(expected_dir, "%s%d.npy" % (kind, step)))[z0:z1 + 1].reshape(-1)


def same_bits(array, want, what):
    check(array is not None, "%s: no array" % what)
    got = vtk_to_numpy(array)
    bits = np.dtype("u%d" % want.itemsize)
    check(got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got.view(bits), want.view(bits)),
          "%s differ from the planes written" % what)


try:
    with open(os.path.join(expected_dir, "expected.json")) as f:
        truth = json.load(f)
    nx, ny, nz = truth["dims"]
    field = truth["field"]
    reader = SlabcastDatasetReader(FileName=path)
    seen = set()
    # Each step at its own time and half a step later (the step at or below).
    updates = [(s, time) for s in sorted(truth["steps"], key=lambda s: s["step"])
               for time in (s["step"], s["step"] + 0.5)]
    for s, time in updates:
        step = s["step"]
        reader.UpdatePipeline(float(time))  # every rank updates its own piece
        image = reader.GetClientSideObject().GetOutputDataObject(0)
        ext = image.GetExtent()
        check(ext[:4] == (0, nx - 1, 0, ny - 1) and 0 <= ext[4] <= ext[5] < nz, "step %d: extent %s" % (step, ext))
        check(ranks == 1 or ext[4:] != (0, nz - 1), "step %d: %d ranks, yet this one read every plane" % (step, ranks))
        fd = image.GetFieldData()
        check(fd.GetArray("Step").GetValue(0) == step, "step %d: Step differs" % step)
        same_bits(image.GetPointData().GetArray(field), planes("values", step, ext[4], ext[5]),
                  "step %d values" % step)
        if s["ages"]:
            same_bits(image.GetPointData().GetArray(field + "_age"), planes("ages", step, ext[4], ext[5]),
                      "step %d ages" % step)
        seen.add(ext[4:])
    check(len(seen) == 1, "the piece's planes changed from step to step: %s" % sorted(seen))
    z0, z1 = seen.pop()
    print("RANK %d/%d OK planes %d..%d of %d steps exact, at %d times" % (
        rank, ranks, z0, z1, len(truth["steps"]), len(updates)), flush=True)
except Exception as e:  # never raise: see above (CheckFailed or any other)
    print("RANK %d/%d FAIL: %s" % (rank, ranks, e), flush=True)
