"""pvpython: values read through ParaView equal what the test writer stored, and
the zero-copy claim holds (the array's data lies inside the slab's mapping,
the mapping lives exactly as long as an array uses it).

    pvpython pv_read_values.py MULTI.slabcast NX,NY,NZ DEPTH SINGLE.slabcast NX,NY,NZ

MULTI: several slabs, "index" pattern at step 0; SINGLE: one slab, step 0.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pv_checks import (address_of, check, expected_index_values, mapping_of_address, slab_path)  # noqa: E402

from paraview import servermanager  # noqa: E402
from paraview.simple import Delete, OpenDataFile  # noqa: E402

VTK_FLOAT = 10


def values(image):
    return memoryview(image.GetPointData().GetArray("density")).tolist()


def check_output(image, dims, what):
    array = image.GetPointData().GetArray("density")
    check(array is not None, "%s: no 'density' point array" % what)
    check(array.GetDataType() == VTK_FLOAT and array.GetNumberOfComponents() == 1,
          "%s: array is %s x %d, expected float x 1" % (what, array.GetDataTypeAsString(),
                                                       array.GetNumberOfComponents()))
    ext = image.GetExtent()
    got = values(image)
    want = expected_index_values(dims, ext, 0)
    check(len(got) == len(want), "%s: %d values for extent %s, expected %d" % (what, len(got), ext, len(want)))
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    check(not bad, "%s: %d values differ, first at %d: %s != %s" % (
        what, len(bad), bad[0] if bad else 0, got[bad[0]] if bad else 0, want[bad[0]] if bad else 0))


def check_strides(reader, algo, dims, slabs):
    """Stride K (the level of detail): point i of the output is point K*i of
    the volume, spacing K times the volume's, whole and in pieces (a piece may
    end on a plane of the next slab), always a copy; Stride 1 is the volume again."""
    nx, ny, nz = dims
    for k in (2, 3, 7):
        reader.Stride = k
        reader.UpdatePipeline()
        whole = servermanager.Fetch(reader)
        n = [(v - 1) // k + 1 for v in dims]
        check(whole.GetExtent() == (0, n[0] - 1, 0, n[1] - 1, 0, n[2] - 1),
              "stride %d: whole extent %s, expected %s points" % (k, whole.GetExtent(), n))
        check(whole.GetSpacing() == (k, k, k), "stride %d: spacing %s" % (k, whole.GetSpacing()))
        for pieces in (1, 2, slabs):
            for p in range(pieces):
                algo.UpdatePiece(p, pieces, 0)
                image = algo.GetOutputDataObject(0)
                e = image.GetExtent()
                if e[0] > e[1] or e[4] > e[5]:
                    continue  # more pieces than strided planes
                fine = expected_index_values(dims, [k * v for v in e], 0)
                fx, fy = k * (e[1] - e[0]) + 1, k * (e[3] - e[2]) + 1
                want = [fine[(z * fy + y) * fx + x] for z in range(0, k * (e[5] - e[4]) + 1, k)
                        for y in range(0, fy, k) for x in range(0, fx, k)]
                got = values(image)
                check(got == want, "stride %d, piece %d of %d (extent %s): %d values, %d differ" % (
                    k, p, pieces, e, len(got), sum(1 for g, w in zip(got, want) if g != w) + abs(len(got) - len(want))))
                check(zero_copy_of(image) == 0, "stride %d, piece %d of %d claims zero copy" % (k, p, pieces))
        print("ok: stride %d: %dx%dx%d points, whole and in 1, 2 and %d pieces, point i the volume's point %d*i"
              % (k, n[0], n[1], n[2], slabs, k))
    reader.Stride = 1
    reader.UpdatePipeline()
    check(servermanager.Fetch(reader).GetExtent() == (0, nx - 1, 0, ny - 1, 0, nz - 1), "stride 1: not the volume")


def zero_copy_of(image):
    return image.GetFieldData().GetArray("ZeroCopy").GetValue(0)


def main(multi, multi_dims, depth, single, single_dims):
    nx, ny, nz = multi_dims
    # File > Open / OpenDataFile pick the reader from the extension.
    reader = OpenDataFile(multi)
    check(reader is not None and reader.GetXMLName() == "SlabcastReader",
          "OpenDataFile(%s) did not pick SlabcastReader" % multi)
    reader.UpdatePipeline()
    whole = servermanager.Fetch(reader)
    check(whole.GetExtent() == (0, nx - 1, 0, ny - 1, 0, nz - 1), "whole extent %s" % (whole.GetExtent(),))
    check_output(whole, multi_dims, "whole volume via Fetch")
    check(whole.GetFieldData().GetArray("Step").GetValue(0) == 0, "field data Step is not 0")
    check(whole.GetFieldData().GetArray("SlabLossPercent").GetNumberOfTuples() == (nz + depth - 1) // depth,
          "one loss value per slab expected in the field data")
    reader.UpdatePropertyInformation()
    # 64x48 values a plane are 3 pages: the slabs' planes are mapped back to
    # back, no copy (the ages' 3072-byte planes are not whole pages: copied).
    check(reader.GetPropertyValue("ZeroCopy") == 2, "a whole multi-slab extent was not stitched in place")
    ptr = reader.GetPropertyValue("ArrayAddress")
    region = mapping_of_address(ptr)
    check(region is not None and region[2] == slab_path(multi, 0),
          "stitched: the array at %#x is not the first slab's mapping (found %s)" % (ptr, region))
    print("ok: Fetch of the whole %dx%dx%d volume equals the source" % (nx, ny, nz))

    # Pieces as ParaView's z-split hands them to ranks: one piece per slab is
    # exactly each slab's stored planes and needs no copy; other counts map
    # their slabs' planes back to back.
    algo = reader.GetClientSideObject()
    slabs = (nz + depth - 1) // depth
    for pieces in (slabs, 3, 2, 5):
        for k in range(pieces):
            algo.UpdatePiece(k, pieces, 0)
            image = algo.GetOutputDataObject(0)
            ext = image.GetExtent()
            check_output(image, multi_dims, "piece %d of %d (extent %s)" % (k, pieces, ext))
            if pieces == slabs:
                stored = (max(0, k * depth - 1), min(nz, (k + 1) * depth) - 1)
                check(ext[4:] == stored, "piece %d of %d: planes %s, slab stores %s" % (k, pieces, ext[4:], stored))
                check(zero_copy_of(image) == 1, "piece %d of %d was copied" % (k, pieces))
                ptr = address_of(image.GetPointData().GetArray("density"))
                region = mapping_of_address(ptr)
                check(region is not None and region[2] == slab_path(multi, k),
                      "piece %d: array at %#x is not inside a mapping of %s (found %s)" % (
                          k, ptr, slab_path(multi, k), region))
            else:
                check(zero_copy_of(image) in (1, 2), "piece %d of %d was copied" % (k, pieces))
        print("ok: %d pieces read back exactly, each in place" % pieces)

    check_strides(reader, algo, multi_dims, slabs)

    # One-slab volume: the whole extent is one slab, so the plain reader output
    # is the mapping itself.
    one = OpenDataFile(single)
    one.UpdatePipeline()
    one.UpdatePropertyInformation()
    check(one.GetPropertyValue("ZeroCopy") == 1, "one-slab volume was copied")
    image = one.GetClientSideObject().GetOutputDataObject(0)
    check_output(image, single_dims, "one-slab volume")
    array = image.GetPointData().GetArray("density")
    ptr = address_of(array)
    begin, end = one.GetPropertyValue("MappingBegin"), one.GetPropertyValue("MappingEnd")
    check(ptr == one.GetPropertyValue("ArrayAddress"), "ArrayAddress does not match the array")
    check(begin <= ptr < end and ptr + 4 * array.GetNumberOfValues() <= end,
          "array [%#x, +%d) is not inside the mapping [%#x, %#x)" % (ptr, 4 * array.GetNumberOfValues(), begin, end))
    region = mapping_of_address(ptr)
    check(region is not None and region[2] == slab_path(single, 0) and ptr - region[0] == 4096,
          "array at %#x: /proc/self/maps says %s, expected %s at offset 4096" % (ptr, region, slab_path(single, 0)))
    print("ok: one-slab output array at %#x lies in the mapping of %s" % (ptr, region[2]))

    # Lifetime: the array keeps the mapping after the reader is gone, and the
    # mapping goes with the last array.
    del image
    Delete(one)
    del one
    check(mapping_of_address(ptr) is not None, "mapping vanished while an array still uses it")
    check(memoryview(array).tolist()[:3] == [1.0, 2.0, 3.0], "array values changed after the reader was deleted")
    del array
    check(mapping_of_address(ptr) is None, "mapping %#x still present after its last array was freed" % ptr)
    print("ok: the mapping outlives the reader and is unmapped with its last array")


def dims_arg(text):
    return tuple(int(v) for v in text.split(","))


main(sys.argv[1], dims_arg(sys.argv[2]), int(sys.argv[3]), sys.argv[4], dims_arg(sys.argv[5]))
print("PV_READ_VALUES_OK")
