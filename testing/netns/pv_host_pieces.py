"""pvbatch --symmetric under mpirun across the testbed's render hosts: each
rank reads its piece of the volume and reports the host it runs on, its
planes, whether the values are the dataset's bit for bit, whether they lie
inside its slab's mapping (no copy), and every slab file it maps, with the
device and inode that tell one host's tmpfs from another's.

    mpirun ... pvbatch --symmetric pv_host_pieces.py DESCRIPTOR DATASET_DIR STEP_FILE

Every rank prints one line, "RANK r/n HOST h OK planes a..b zero-copy 1 in
PATH maps PATH@DEV:INODE,..." or "RANK r/n HOST h FAIL: why"; a rank never
raises, so a failure cannot leave the others waiting at exit."""
import json
import os
import re
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "plugin"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from pv_checks import CheckFailed, address_of, check, mapping_of_address  # noqa: E402
from slabcast_testlib import source_planes  # noqa: E402

from paraview import servermanager  # noqa: E402
from paraview.simple import SlabcastReader  # noqa: E402

descriptor, dataset, step_file = sys.argv[1:4]
pm = servermanager.vtkProcessModule.GetProcessModule()
rank, ranks = pm.GetPartitionId(), pm.GetNumberOfLocalPartitions()
host = socket.gethostname()


def mapped_slabs():
    """{path: "DEV:INODE"} of every slab file this process maps."""
    found = {}
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and re.search(r"\.slab\d+$", parts[5].strip()):
                found[parts[5].strip()] = "%s:%s" % (parts[3], parts[4])
    return found


reader = SlabcastReader(FileName=descriptor)
reader.UpdatePipeline()  # every rank updates its own piece
image = reader.GetClientSideObject().GetOutputDataObject(0)
try:
    with open(descriptor) as f:
        dims = json.load(f)["dims"]
    ext = image.GetExtent()
    array = image.GetPointData().GetArray("density")
    check(array is not None, "no density array (extent %s)" % (ext,))
    want = source_planes(dataset, step_file, dims, ext[4], ext[5] + 1)
    check(bytes(memoryview(array)) == want, "values of planes %d..%d differ from the dataset's" % ext[4:])
    check(image.GetFieldData().GetArray("ZeroCopy").GetValue(0) == 1, "the piece was copied")
    region = mapping_of_address(address_of(array))
    check(region is not None and re.search(r"\.slab\d+$", region[2]), "values not inside a slab mapping: %s" % (region,))
    maps = mapped_slabs()
    print("RANK %d/%d HOST %s OK planes %d..%d zero-copy 1 in %s maps %s" % (
        rank, ranks, host, ext[4], ext[5], region[2], ",".join("%s@%s" % kv for kv in sorted(maps.items()))),
        flush=True)
except CheckFailed as e:
    print("RANK %d/%d HOST %s FAIL: %s" % (rank, ranks, host, e), flush=True)
