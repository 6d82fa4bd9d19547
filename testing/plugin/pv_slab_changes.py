"""pvpython: a slab file changed under the reader's mappings, during live polling.

    pvpython pv_slab_changes.py truncate DESCRIPTOR SLAB PIECE PIECES
        reads that piece of the volume, cuts SLAB to 100 bytes (below its
        header) as someone else might, polls NeedsUpdate as a live loop does,
        and updates: an error naming SLAB, and no SIGBUS.
    pvpython pv_slab_changes.py rewrite DESCRIPTOR SLAB
        reads the volume, cuts SLAB to nothing and grows it back to its size
        (the same file, every byte zero) and updates twice: each time an
        error naming SLAB (stderr), never a silent empty output.
    pvpython pv_slab_changes.py stalled DESCRIPTOR SLAB
        reads the volume, leaves every buffer of SLAB mid-write (each seq
        odd, as a receiver that stopped inside a step would) and updates, then
        again 2 s later: an empty output, and the second time a warning naming
        the slab (stderr); with the buffers published again, the whole volume.
    pvpython pv_slab_changes.py reshape DESCRIPTOR NX,NY,NZ DEPTH PIECE PIECES
        reads that piece (one slab: zero-copy), has the test writer rewrite the
        volume with other dims as a restarted receiver would (every slab
        replaced), checks the old array still holds its values, then polls and
        reads the new volume whole.
"""
import os
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pv_checks import check, expected_index_values  # noqa: E402

from paraview.simple import OpenDataFile  # noqa: E402


def values(array):
    return [array.GetValue(i) for i in range(array.GetNumberOfTuples())]


def points_read(algo):
    """Updates the whole volume and counts its points."""
    algo.UpdatePiece(0, 1, 0)
    return algo.GetOutputDataObject(0).GetNumberOfPoints()


def poll(reader):
    reader.UpdatePropertyInformation()
    return reader.GetPropertyValue("NeedsUpdate")


how, descriptor = sys.argv[1], sys.argv[2]
reader = OpenDataFile(descriptor)
algo = reader.GetClientSideObject()

if how == "truncate":
    slab, piece, pieces = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    algo.UpdatePiece(piece, pieces, 0)
    print("points before the cut:", algo.GetOutputDataObject(0).GetNumberOfPoints(), flush=True)
    check(poll(reader) == 0, "NeedsUpdate set with nothing new")
    os.truncate(slab, 100)
    print("NeedsUpdate after the cut: %d" % poll(reader), flush=True)
    reader.MarkModified(reader)
    algo.UpdatePiece(piece, pieces, 0)
    print("points after the cut:", algo.GetOutputDataObject(0).GetNumberOfPoints(), flush=True)
    print("NeedsUpdate after the error: %d" % poll(reader), flush=True)
    print("SURVIVED", flush=True)
elif how == "rewrite":
    slab = sys.argv[3]
    check(points_read(algo) > 0, "nothing read before the rewrite")
    size = os.path.getsize(slab)
    os.truncate(slab, 0)
    os.truncate(slab, size)
    for attempt in (1, 2):
        reader.MarkModified(reader)
        print("points after the rewrite, update %d: %d" % (attempt, points_read(algo)), flush=True)
    print("SURVIVED", flush=True)
elif how == "stalled":
    slab = sys.argv[3]
    whole = points_read(algo)
    check(whole > 0, "nothing read before the stall")
    # docs/shared-memory.md: u32 buffers at 124; each buffer's publication is
    # 64 bytes from 512, its seq (u64) first; odd: the writer has the buffer.
    fd = os.open(slab, os.O_RDWR)
    buffers = struct.unpack("<I", os.pread(fd, 4, 124))[0]
    seqs = [struct.unpack("<Q", os.pread(fd, 8, 512 + 64 * b))[0] for b in range(buffers)]
    for b, seq in enumerate(seqs):
        os.pwrite(fd, struct.pack("<Q", seq | 1), 512 + 64 * b)
    algo.Modified()  # what the other slabs' next publications would do
    print("points with every buffer of the slab mid-write: %d" % points_read(algo), flush=True)
    time.sleep(2.2)  # a slab is named once it has held no step for 2 s (a stream's first steps come apart)
    algo.Modified()
    print("points 2 s later: %d" % points_read(algo), flush=True)
    for b, seq in enumerate(seqs):  # published again, as they were, and counted (live.publications, at 384)
        os.pwrite(fd, struct.pack("<Q", (seq | 1) + 1 if seq else 0), 512 + 64 * b)
    publications = struct.unpack("<Q", os.pread(fd, 8, 384))[0]
    os.pwrite(fd, struct.pack("<Q", publications + 1), 384)
    os.close(fd)
    check(poll(reader) == 1, "NeedsUpdate did not notice the slab publish again")
    again = points_read(algo)
    check(again == whole, "%d points once the slab published again, %d before" % (again, whole))
    print("STALLED_OK", flush=True)
elif how == "reshape":
    new_dims = tuple(int(v) for v in sys.argv[3].split(","))
    depth, piece, pieces = sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
    algo.UpdatePiece(piece, pieces, 0)
    image = algo.GetOutputDataObject(0)
    old_extent = image.GetExtent()
    check(image.GetFieldData().GetArray("ZeroCopy").GetValue(0) == 1, "piece %d was not zero-copy" % piece)
    array = image.GetPointData().GetArray("density")  # a reference of our own: it outlives the output
    before = values(array)
    name = os.path.basename(descriptor)[: -len(".slabcast")]
    subprocess.run([os.environ["SLABCAST_TEST_WRITER"], "write", "--dir", os.path.dirname(descriptor), "--name",
                    name, "--dims", sys.argv[3], "--slab-depth", depth, "--step", "1"], check=True,
                   stdout=subprocess.DEVNULL)
    # The slab was replaced, not truncated in place: the old mapping still holds step 0.
    check(values(array) == before, "the old array changed under the reader when its slab was replaced")
    print("ok: the array of extent %s kept its values while the volume was reshaped" % (old_extent,), flush=True)
    check(poll(reader) == 1, "NeedsUpdate did not notice the reshaped volume")
    reader.MarkModified(reader)
    algo.UpdatePiece(0, 1, 0)
    image = algo.GetOutputDataObject(0)
    whole = (0, new_dims[0] - 1, 0, new_dims[1] - 1, 0, new_dims[2] - 1)
    check(image.GetExtent() == whole, "extent %s after the reshape, expected %s" % (image.GetExtent(), whole))
    got = values(image.GetPointData().GetArray("density"))
    check(got == expected_index_values(new_dims, whole, 1), "the reshaped volume does not read back as written")
    print("ok: the reshaped volume %s reads back exactly" % (new_dims,), flush=True)
    print("RESHAPE_OK", flush=True)
else:
    sys.exit("unknown mode " + how)
