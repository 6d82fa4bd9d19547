"""pvbatch --symmetric under mpirun: the ranks show one step, the same on
every rank, when the volume's slabs hold different steps (issue 17).

    mpirun -np N pvbatch --symmetric pv_mpi_steps.py DESCRIPTOR NX,NY,NZ DEPTH WRITER

The driver has published step 0 in every slab and step 1 in the first half of
the slabs only, so a rank whose piece lies in those slabs would, on its own,
show step 1. After the collective Refresh every rank must show step 0 (the
newest step all slabs hold), agreed, with step 0's values. Rank 0 then
publishes step 1 in the other slabs with the test writer (WRITER) while the
others wait at a barrier; the next Refresh must move every rank to step 1.

Every rank prints one line per round, "RANK r/n ROUND k OK ..." or
"RANK r/n ROUND k FAIL: ..."; a rank never raises, so a failure cannot leave
the others waiting in a collective call.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pv_checks import CheckFailed, check, expected_index_values  # noqa: E402

from paraview import servermanager  # noqa: E402
from vtkmodules.vtkParallelCore import vtkMultiProcessController  # noqa: E402
from paraview.simple import SlabcastReader  # noqa: E402

descriptor = sys.argv[1]
dims = tuple(int(v) for v in sys.argv[2].split(","))
depth = int(sys.argv[3])
writer = sys.argv[4]
pm = servermanager.vtkProcessModule.GetProcessModule()
rank, ranks = pm.GetPartitionId(), pm.GetNumberOfLocalPartitions()
slabs = (dims[2] + depth - 1) // depth
late = ",".join(str(k) for k in range(slabs // 2, slabs))

reader = SlabcastReader(FileName=descriptor)


def field(image, name):
    array = image.GetFieldData().GetArray(name)
    return int(array.GetValue(0)) if array is not None else None


def round_(number, want_step):
    reader.SMProxy.InvokeCommand("Refresh")  # collective: every rank
    reader.UpdatePipeline()
    image = reader.GetClientSideObject().GetOutputDataObject(0)
    try:
        ext = image.GetExtent()
        array = image.GetPointData().GetArray("density")
        check(array is not None, "no density array")
        step, agreed = field(image, "Step"), field(image, "StepAgreed")
        check(step == want_step, "shows step %s, the ranks' common newest step is %d" % (step, want_step))
        check(agreed == 1, "StepAgreed %s: the step was not the ranks' agreement" % agreed)
        check(memoryview(array).tolist() == expected_index_values(dims, ext, want_step),
              "values of extent %s are not step %d's" % (ext, want_step))
        print("RANK %d/%d ROUND %d OK planes %d..%d step %d agreed" % (rank, ranks, number, ext[4], ext[5], step),
              flush=True)
    except CheckFailed as e:
        print("RANK %d/%d ROUND %d FAIL: %s" % (rank, ranks, number, e), flush=True)


round_(1, 0)
if rank == 0:
    d = os.path.dirname(descriptor)
    name = os.path.basename(descriptor).rsplit(".", 1)[0]
    subprocess.run([writer, "write", "--dir", d, "--name", name, "--dims", sys.argv[2], "--slab-depth", str(depth),
                    "--pattern", "index", "--step", "1", "--slabs", late, "--list", "all"],
                   check=True, stdout=subprocess.DEVNULL)
# Each rank looks at its slabs before the ranks exchange what they hold:
# without the barrier a rank could look before the writer is done, and the
# ranks would rightly agree on step 0 again.
vtkMultiProcessController.GetGlobalController().Barrier()
round_(2, 1)
