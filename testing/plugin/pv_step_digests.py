"""pvpython: a digest (SHA-256 of its values and of its ages) of each step a
reader shows, written as JSON {step: [values, ages]}.

    pvpython pv_step_digests.py live DESCRIPTOR OUT STOP_FILE
        follows a live stream (the reader's live path: NeedsUpdate, then an
        update) until STOP_FILE exists; OUT is rewritten after each new step.
    pvpython pv_step_digests.py recording DATASET_JSON OUT
        every time step of a dataset or recording.
"""
import hashlib
import json
import os
import sys
import time

from paraview import servermanager  # noqa: E402
from paraview.simple import OpenDataFile, UpdatePipeline  # noqa: E402
from vtk.util.numpy_support import vtk_to_numpy  # noqa: E402


def digest(image):
    pd = image.GetPointData()
    values = pd.GetScalars()
    ages = pd.GetArray(values.GetName() + "_age")
    return [hashlib.sha256(vtk_to_numpy(values).tobytes()).hexdigest(),
            hashlib.sha256(vtk_to_numpy(ages).tobytes()).hexdigest() if ages is not None else ""]


def step_of(image):
    a = image.GetFieldData().GetArray("Step")
    return int(a.GetTuple1(0)) if a is not None and image.GetNumberOfPoints() else -1


def write(path, seen):
    with open(path + ".tmp", "w") as f:
        json.dump(seen, f)
    os.replace(path + ".tmp", path)


def follow(descriptor, out, stop_file):
    reader = OpenDataFile(descriptor)
    seen = {}
    # A deadline so that a broken build cannot hang the test; the test stops it.
    deadline = time.monotonic() + 600
    while not os.path.exists(stop_file) and time.monotonic() < deadline:
        reader.UpdatePropertyInformation()
        if reader.GetPropertyValue("NeedsUpdate"):
            reader.MarkModified(reader)
        reader.UpdatePipeline()
        image = servermanager.Fetch(reader)
        step = step_of(image)
        if step >= 0 and str(step) not in seen:
            seen[str(step)] = digest(image)
            write(out, seen)
        time.sleep(0.01)
    write(out, seen)


def every_time(dataset, out):
    reader = OpenDataFile(dataset)
    times = list(reader.TimestepValues)
    seen = {}
    for t in times:
        UpdatePipeline(time=t, proxy=reader)
        image = servermanager.Fetch(reader)
        seen[str(step_of(image))] = digest(image)
    write(out, {"times": times, "steps": seen})


if __name__ == "__main__":
    if sys.argv[1] == "live":
        follow(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        every_time(sys.argv[2], sys.argv[3])
