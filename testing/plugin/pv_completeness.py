"""pvpython script for test_read_values.py: step 1 (constant 1.0) published,
step 2 (constant 2.0) written but not yet published, on every slab. "Whole
steps" shows step 1 everywhere, its age array all 0 and zero-copy like the
values; "Newest data" shows the step being written.

    pvpython pv_completeness.py DESCRIPTOR NSLABS
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pv_checks import address_of, check, mapping_of_address, slab_path  # noqa: E402

from paraview import servermanager  # noqa: E402
from paraview.simple import SlabcastReader  # noqa: E402
from vtkmodules.util.numpy_support import vtk_to_numpy  # noqa: E402

descriptor, slabs = sys.argv[1], int(sys.argv[2])


def read(reader):
    reader.MarkModified(reader)
    reader.UpdatePipeline()
    image = servermanager.Fetch(reader)
    return image, vtk_to_numpy(image.GetPointData().GetArray("density")), image.GetFieldData()


reader = SlabcastReader(FileName=descriptor)
image, values, fd = read(reader)
check(set(values.tolist()) == {1.0}, "Whole steps: values %s, not step 1's" % sorted(set(values.tolist()))[:5])
check(fd.GetArray("Step").GetValue(0) == 1 and fd.GetArray("WholeStep").GetValue(0) == 1, "Whole steps: not step 1")
ages = vtk_to_numpy(image.GetPointData().GetArray("density_age"))
check(ages.size == values.size and not ages.any(), "ages of a whole step are not all 0")
check([fd.GetArray("Completeness").GetValue(i) for i in range(slabs)] == [1.0] * slabs, "completeness")
check([fd.GetArray("HoleFraction").GetValue(i) for i in range(slabs)] == [0.0] * slabs, "hole fraction")
check(fd.GetArray("StepAgeMs").GetValue(0) >= 0, "step age")
# Forward error correction, as the writer published it: slab k's step had 5k datagrams rebuilt, k lost.
for name, want in (("SlabStepRepaired", [5 * k for k in range(slabs)]), ("SlabRepaired", [5 * k for k in range(slabs)]),
                   ("SlabUnrepaired", list(range(slabs)))):
    got = [fd.GetArray(name).GetValue(i) for i in range(slabs)]
    check(got == want, "%s: %s, want %s" % (name, got, want))

# One slab's piece: values and ages both point into that slab's mapping.
algo = reader.GetClientSideObject()
algo.UpdatePiece(1, slabs, 0)
piece = algo.GetOutputDataObject(0)
for name in ("density", "density_age"):
    region = mapping_of_address(address_of(piece.GetPointData().GetArray(name)))
    check(region is not None and region[2] == slab_path(descriptor, 1), "%s of piece 1 was copied" % name)

reader.Completeness = 1
image, values, fd = read(reader)
check(set(values.tolist()) == {2.0}, "Newest data: values %s, not step 2's" % sorted(set(values.tolist()))[:5])
check(fd.GetArray("Step").GetValue(0) == 2 and fd.GetArray("WholeStep").GetValue(0) == 0, "Newest data: not step 2")
print("PV_COMPLETENESS_OK", flush=True)
