"""pvpython for test_dataset_reader.py: a dataset on disk read as a time series
equals, bit for bit, what the driver wrote.

    pvpython pv_dataset_series.py DATASET.JSON EXPECTED_DIR

EXPECTED_DIR holds expected.json (dims, field, origin, spacing, and per step
whether it has ages and its receiver's report) and each step's values (and
ages) as numpy files, the arrays before any step file was written or
compressed.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pv_checks import check  # noqa: E402

import numpy as np  # noqa: E402
from paraview.simple import OpenDataFile  # noqa: E402
from vtkmodules.util.numpy_support import vtk_to_numpy  # noqa: E402
from vtkmodules.vtkCommonDataModel import vtkDataObject  # noqa: E402
from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline  # noqa: E402

VTK_UNSIGNED_CHAR, VTK_FLOAT = 3, 10

path, expected_dir = sys.argv[1], sys.argv[2]
with open(os.path.join(expected_dir, "expected.json")) as f:
    truth = json.load(f)
nx, ny, nz = truth["dims"]
field = truth["field"]
steps = {s["step"]: s for s in truth["steps"]}
numbers = sorted(steps)
WHOLE = (0, nx - 1, 0, ny - 1, 0, nz - 1)


def wanted(kind, step, ext):
    """The written `kind` ("values", "ages") of `step` over a VTK extent, x fastest."""
    a = np.load(os.path.join(expected_dir, "%s%d.npy" % (kind, step)))  # (z, y, x)
    return a[ext[4]:ext[5] + 1, ext[2]:ext[3] + 1, ext[0]:ext[1] + 1].reshape(-1)


def same_bits(array, want, what):
    check(array is not None, "%s: no array" % what)
    got = vtk_to_numpy(array)
    check(got.dtype == want.dtype and got.shape == want.shape,
          "%s: %s x %s, expected %s x %s" % (what, got.dtype, got.shape, want.dtype, want.shape))
    # As unsigned integers: NaN equals NaN, -0 differs from 0.
    bits = np.dtype("u%d" % got.itemsize)
    differ = np.flatnonzero(got.view(bits) != want.view(bits))
    check(differ.size == 0, "%s: %d values differ, first at %d: %r, wrote %r" % (
        what, differ.size, differ[0] if differ.size else 0, got[differ[0]] if differ.size else 0,
        want[differ[0]] if differ.size else 0))


def field_value(fd, name):
    a = fd.GetArray(name)
    check(a is not None and a.GetNumberOfTuples() == 1, "field data %s: %s" % (name, a))
    return a.GetValue(0)


def check_step(image, step, ext, ages_on=True):
    what = "step %d, extent %s" % (step, ext)
    check(image.GetExtent() == tuple(ext), "%s: output extent %s" % (what, image.GetExtent()))
    check(list(image.GetOrigin()) == truth["origin"] and list(image.GetSpacing()) == truth["spacing"],
          "%s: origin %s spacing %s" % (what, image.GetOrigin(), image.GetSpacing()))
    pd = image.GetPointData()
    values = pd.GetArray(field)
    check(values is not None and values.GetDataType() == VTK_FLOAT, "%s: no float array %s" % (what, field))
    check(pd.GetScalars() is not None and pd.GetScalars().GetName() == field,
          "%s: %s is not the scalars" % (what, field))
    same_bits(values, wanted("values", step, ext), what + ", values")
    ages = pd.GetArray(field + "_age")
    if steps[step]["ages"] and ages_on:
        check(ages is not None and ages.GetDataType() == VTK_UNSIGNED_CHAR, "%s: no uint8 %s_age" % (what, field))
        same_bits(ages, wanted("ages", step, ext), what + ", ages")
    else:
        check(ages is None, "%s: an age array where none is wanted" % what)
    fd = image.GetFieldData()
    check(field_value(fd, "Step") == step, "%s: Step %s" % (what, field_value(fd, "Step")))
    recorded = steps[step]["recorded"]
    for key, name in (("records", "StepRecords"), ("expected", "StepExpected"), ("holes", "StepHoles"),
                      ("complete", "StepComplete"), ("published_ns", "StepPublishedNs")):
        if recorded is None:
            check(fd.GetArray(name) is None, "%s: %s without a recording's report" % (what, name))
        else:
            check(field_value(fd, name) == int(recorded[key]), "%s: %s is %s, recorded %s" % (
                what, name, field_value(fd, name), recorded[key]))
    time = image.GetInformation().Get(vtkDataObject.DATA_TIME_STEP())
    check(time == step, "%s: DATA_TIME_STEP %s" % (what, time))


# As File > Open does: the reader is picked by the file's name.
reader = OpenDataFile(path)
check(reader is not None and reader.GetXMLName() == "SlabcastDatasetReader",
      "OpenDataFile(%s) picked %s" % (path, reader and reader.GetXMLName()))
# Any other JSON file is not this reader's (its CanReadFile).
other = os.path.join(expected_dir, "expected.json")
try:
    picked = OpenDataFile(other)
except RuntimeError:
    picked = None
check(picked is None or picked.GetXMLName() != "SlabcastDatasetReader", "%s opened as a dataset" % other)
times = list(reader.TimestepValues)
check(times == [float(n) for n in numbers], "TimestepValues %s, steps %s" % (times, numbers))
print("ok: OpenDataFile picks SlabcastDatasetReader, TimestepValues %s (listed %s)" % (
    times, [s["step"] for s in truth["steps"]]), flush=True)

algo = reader.GetClientSideObject()
for n in numbers:
    reader.UpdatePipeline(float(n))
    check_step(algo.GetOutputDataObject(0), n, WHOLE)
print("ok: every step equals what was written, bit for bit, values and ages, and its field data", flush=True)

# A time between steps shows the step at or below it; before all, the first.
for time, step in [(2.5, 2), (4.999, 3), (6.0, 5), (10.5, 7), (1e9, 11), (1.0, 2), (-40.0, 2)]:
    reader.UpdatePipeline(time)
    check_step(algo.GetOutputDataObject(0), step, WHOLE)
print("ok: times between steps give the step at or below, before the first the first", flush=True)

# Pieces (z-slabs, whole planes) and an extent narrower in x and y (cropped).
for n in (5, 11, 2):
    for k in range(3):
        algo.UpdateTimeStep(float(n), k, 3, 0)
        image = algo.GetOutputDataObject(0)
        ext = image.GetExtent()
        check(ext[:4] == WHOLE[:4] and 0 <= ext[4] <= ext[5] < nz, "step %d piece %d of 3: extent %s" % (n, k, ext))
        check_step(image, n, ext)
# The last piece request stays in the output's information, and the pipeline
# would turn it into that piece's extent again.
info = algo.GetOutputInformation(0)
info.Remove(vtkStreamingDemandDrivenPipeline.UPDATE_PIECE_NUMBER())
info.Remove(vtkStreamingDemandDrivenPipeline.UPDATE_NUMBER_OF_PIECES())
crop = (3, 17, 2, 11, 4, 9)
for n in (5, 11, 2):
    algo.UpdateTimeStep(float(n), -1, 1, 0, crop)
    check_step(algo.GetOutputDataObject(0), n, crop)
print("ok: 3 pieces and a cropped extent of raw and LZ4 steps read back exactly", flush=True)

reader.AgeArray = 0
for n in (5, 11):
    reader.UpdatePipeline(float(n))
    check_step(algo.GetOutputDataObject(0), n, WHOLE, ages_on=False)
print("ok: AgeArray off: no age array, the values the same", flush=True)
print("PV_DATASET_SERIES_OK", flush=True)
