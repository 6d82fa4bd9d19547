"""ctest plugin_dataset_reader / plugin_dataset_mpi: a dataset on disk
(dataset.json) read through the Slabcast Dataset Reader as a time series.

The driver writes, with numpy, 5 steps of a 24x20x16 volume listed out of
order, three step files raw and two LZ4 frames (the `lz4` tool's), two steps
with ages and the receiver's report; then

  (no argument) pvpython opens it as File > Open would and checks every step
      bit for bit, values and ages, its field data and time, times between
      steps, a cropped extent (pv_dataset_series.py); and damaged inputs each
      give an error naming the file and the problem, and pvpython goes on
      (pv_dataset_bad.py);
  mpi: pvbatch on 2 ranks, each rank's piece is its own planes of every step
      (pv_dataset_pieces.py);
  animation: File > Save Animation (pvpython under Xvfb, pv_dataset_animation.py):
      a frame a step, in time order, each a different picture, none blank.

Needs numpy (python3-numpy) and lz4 (the Debian package lz4).
"""
import json
import os
import re
import subprocess
import sys

import numpy as np

import plugin_testlib as t

DIMS = (24, 20, 16)  # nx, ny, nz: x fastest on disk
FIELD = "pressure"  # not the live reader's "density": the arrays are named after the dataset
LISTED = [7, 2, 11, 5, 3]  # arrival order, as a recording may list them
LZ4 = {2, 5}
RECORDED = {
    5: {"records": 7000, "expected": 7680, "holes": 680, "complete": False,
        "published_ns": 1764000000123456789, "stored_bytes": 12345},
    11: {"records": 7680, "expected": 7680, "holes": 0, "complete": True,
         "published_ns": 1764000001987654321, "stored_bytes": 40000},
}
ORIGIN, SPACING = [1.5, -2.0, 0.25], [0.5, 0.25, 2.0]


def step_values(step):
    """A step's values, distinct per step, with the float32 values a careless
    copy or conversion changes: NaN, infinities, -0, a denormal, the largest."""
    rng = np.random.default_rng(step)
    v = (rng.standard_normal(DIMS[::-1]) * 100 + step).astype("<f4")
    flat = v.reshape(-1)
    flat[[3, 50, 700, 1234, 4000, flat.size - 1]] = [np.nan, np.inf, -np.inf, -0.0, 1e-45, np.finfo("f4").max]
    return v


def step_ages(step):
    rng = np.random.default_rng(1000 + step)
    a = rng.integers(0, 256, DIMS[::-1], dtype=np.uint8)
    a.reshape(-1)[:2] = [0, 255]
    return a


def store(directory, name, array, lz4):
    """The array as a step file: raw, or an LZ4 frame made by the lz4 tool
    (with its content checksum), as `slabcast record --codec lz4` stores it."""
    raw = os.path.join(directory, name + ".raw")
    array.tofile(raw)
    if not lz4:
        return name + ".raw"
    t.run([t.env_path("LZ4"), "-q", "-f", raw, os.path.join(directory, name + ".lz4")])
    os.remove(raw)
    return name + ".lz4"


def write_dataset(directory, expected):
    """The dataset into `directory`, the values and ages it must read back
    into `expected` (.npy, and expected.json for the rest); returns dataset.json."""
    os.makedirs(directory)
    os.makedirs(expected, exist_ok=True)
    steps, truth = [], []
    for n in LISTED:
        values = step_values(n)
        entry = {"step": n, "file": store(directory, "step%03d" % n, values, n in LZ4)}
        if n in LZ4:
            entry["codec"] = "lz4"
        np.save(os.path.join(expected, "values%d.npy" % n), values)
        if n in RECORDED:
            ages = step_ages(n)
            entry["ages"] = store(directory, "step%03d.age" % n, ages, n in LZ4)
            entry["recorded"] = RECORDED[n]
            np.save(os.path.join(expected, "ages%d.npy" % n), ages)
        steps.append(entry)
        truth.append({"step": n, "ages": n in RECORDED, "recorded": RECORDED.get(n)})
    description = {"name": "series", "field": FIELD, "units": "Pa", "dtype": "float32", "endian": "little",
                   "dims": list(DIMS), "origin": ORIGIN, "spacing": SPACING,
                   "recording": {"source": "/dev/shm/series.slabcast", "started_ns": 1764000000000000000},
                   "steps": steps}
    path = os.path.join(directory, "dataset.json")
    with open(path, "w") as f:
        json.dump(description, f, indent=2)
    with open(os.path.join(expected, "expected.json"), "w") as f:
        json.dump({"dims": DIMS, "field": FIELD, "origin": ORIGIN, "spacing": SPACING, "steps": truth}, f)
    return path


def expect_error(path, time, must_name, problem, then=None):
    """pvpython reads `path` at `time`: an error from the dataset reader naming
    `must_name` with `problem`, and the process goes on (at `then`, a good
    step, it reads data again)."""
    args = [path, time] + ([then] if then is not None else [])
    out, err = t.pvpython("pv_dataset_bad.py", *args)
    t.check("SURVIVED" in out, "the pvpython process did not get past the error:\n" + out + err)
    t.check("reader: SlabcastDatasetReader" in out, "not the dataset reader:\n" + out)
    errors = [line for line in err.splitlines() if "vtkSlabcastDatasetReader" in line and "ERR" in line]
    t.check(errors, "no error from vtkSlabcastDatasetReader; stderr:\n" + err)
    named = [line for line in errors if must_name in line and problem in line]
    t.check(named, "no error naming %s with '%s'; got:\n%s" % (must_name, problem, "\n".join(errors)))
    if then is not None:
        t.check(re.search(r"then: step %d, points [1-9]" % then, out), "step %d after the error:\n%s" % (then, out))
    message = re.sub(r"\x1b\[[0-9;]*m", "", named[0][named[0].index(must_name):]).strip()
    t.log("ok: at time %s: %s%s" % (time, message, "; then step %d reads" % then if then is not None else ""))


def bad_inputs(d, expected):
    def fresh(name):
        return write_dataset(os.path.join(d, name), expected)

    missing = os.path.join(d, "nowhere", "dataset.json")
    expect_error(missing, 2, missing, "cannot open: No such file or directory")

    path = fresh("badjson")
    with open(path, "r+") as f:
        f.truncate(len(f.read()) // 2)
    expect_error(path, 2, path, "not valid JSON")

    # Step 2, the first, LZ4: cut in half, then one byte of its data changed.
    path = fresh("cut")
    step = os.path.join(d, "cut", "step002.lz4")
    with open(step, "r+b") as f:
        f.truncate(os.path.getsize(step) // 2)
    expect_error(path, 2, step, "cut short", then=3)
    expect_error(path, 2.5, step, "cut short")  # a time between steps: the step below

    path = fresh("flipped")
    step = os.path.join(d, "flipped", "step002.lz4")
    with open(step, "r+b") as f:
        f.seek(os.path.getsize(step) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x40]))
    expect_error(path, 2, step, "LZ4", then=7)

    path = fresh("short")
    step = os.path.join(d, "short", "step007.raw")
    with open(step, "r+b") as f:
        f.truncate(os.path.getsize(step) - 4)
    expect_error(path, 7, step, "shorter than the %d bytes of a step" % (4 * np.prod(DIMS)), then=11)

    path = fresh("gone")
    step = os.path.join(d, "gone", "step011.age.raw")
    os.remove(step)
    expect_error(path, 11, step, "cannot open: No such file or directory", then=5)


def serial(d):
    expected = os.path.join(d, "expected")
    path = write_dataset(os.path.join(d, "series"), expected)
    out, _ = t.pvpython("pv_dataset_series.py", path, expected)
    t.log(out)
    t.check("PV_DATASET_SERIES_OK" in out, "pv_dataset_series.py did not finish")
    bad_inputs(d, expected)


def mpi(d):
    expected = os.path.join(d, "expected")
    path = write_dataset(os.path.join(d, "series"), expected)
    ranks = 2
    cmd = t.pvbatch_cmd(os.path.join(t.HERE, "pv_dataset_pieces.py"), [path, expected],
                        ranks=ranks, symmetric=True, offscreen=False)
    out, _ = t.run(cmd, env=t.paraview_env(), timeout=180)
    t.log(out)
    t.check_rank_reports(out, ranks)
    planes = sorted((int(a), int(b)) for a, b in re.findall(r"RANK \d+/%d OK planes (\d+)\.\.(\d+)" % ranks, out))
    # Point extents of neighbouring pieces share one plane.
    t.check(planes[0][0] == 0 and planes[-1][1] == DIMS[2] - 1 and planes[0][1] >= planes[1][0] - 1
            and planes[0] != planes[1], "the ranks' planes %s do not split 0..%d" % (planes, DIMS[2] - 1))
    t.log("ok: %d ranks read planes %s of every step" % (ranks, planes))


def animation(d):
    """File > Save Animation over the dataset: a frame each time step, in
    time order, each a different picture (each step its own values)."""
    expected = os.path.join(d, "expected")
    path = write_dataset(os.path.join(d, "series"), expected)
    frames = os.path.join(d, "frames")
    os.makedirs(frames)
    with t.xvfb() as display:
        out, _ = t.pvpython("pv_dataset_animation.py", path, frames, display=display)
    t.log(out)
    t.check("FRAMES %d" % len(LISTED) in out, "one frame a step expected (%d):\n%s" % (len(LISTED), out))
    t.check("TIMES " + ",".join(str(s) for s in sorted(LISTED)) in out, "the time steps in order:\n" + out)
    pictures = [open(os.path.join(frames, n), "rb").read() for n in sorted(os.listdir(frames))]
    t.check(len(set(pictures)) == len(pictures), "two steps gave the same picture")
    for n in sorted(os.listdir(frames)):
        stats = t.read_image_stats(t.pvpython("pv_image_stats.py", os.path.join(frames, n))[0])
        t.check(stats["lit"] > 0.05, "%s is blank: %s" % (n, stats))
    t.log("ok: Save Animation wrote %d frames, one a step, each a different picture" % len(pictures))


def body():
    with t.shm_dir("dataset") as d:
        if sys.argv[1:] == ["mpi"]:
            mpi(d)
        elif sys.argv[1:] == ["animation"]:
            animation(d)
        else:
            serial(d)


t.main(body)
