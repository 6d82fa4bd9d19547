"""ctest plugin_bad_input: every kind of damaged descriptor or slab gives a
ParaView error naming the file and the problem, and no crash."""
import json
import os
import shutil

import plugin_testlib as t

DIMS, DEPTH = (64, 48, 40), 10


def expect_error(descriptor, must_name, problem, piece=None):
    args = [descriptor] + (list(piece) if piece else [])
    out, err = t.pvpython("pv_open_bad.py", *args)
    t.check("SURVIVED" in out, "the pvpython process did not get past the error:\n" + out + err)
    errors = [line for line in err.splitlines() if "vtkSlabcastReader" in line and "ERR" in line]
    t.check(errors, "no error from vtkSlabcastReader; stderr:\n" + err)
    t.check(any(must_name in line and problem in line for line in errors),
            "no error naming %s with '%s'; got:\n%s" % (must_name, problem, "\n".join(errors)))
    t.log("ok: %s -> %s" % (os.path.basename(must_name), problem))


def expect_fine(descriptor, piece):
    out, err = t.pvpython("pv_open_bad.py", descriptor, *piece)
    t.check("SURVIVED" in out and "points: 0" not in out, "piece %s of %s gave no data:\n%s%s" % (
        piece, descriptor, out, err))
    t.check("ERR" not in err, "piece %s of %s reported an error:\n%s" % (piece, descriptor, err))
    t.log("ok: piece %s needs no missing slab and reads fine" % (piece,))


def descriptor_cases(d):
    good = t.write_volume(d, "good", DIMS, DEPTH)
    text = open(good).read()

    expect_error(os.path.join(d, "absent.slabcast"), os.path.join(d, "absent.slabcast"),
                 "cannot open: No such file or directory")
    for name, content, problem in [
        ("truncated", text[: len(text) // 2], "not valid JSON"),
        ("garbage", "\x00\x01 this is not json", "not valid JSON"),
        ("foreign", json.dumps({"format": "something-else", "version": 1}), "not a slabcast descriptor"),
        ("baddims", text.replace('"dims": [\n    64', '"dims": [\n    -64'), "'dims' must be three positive sizes"),
        ("version", text.replace('"version": 1', '"version": 2'), "descriptor version 2, this build reads version 1"),
    ]:
        path = os.path.join(d, name + ".slabcast")
        with open(path, "w") as f:
            f.write(content)
        expect_error(path, path, problem)


def slab_cases(d):
    for how, problem in [
        ("truncate", "truncated: "),
        ("tiny", "truncated: 100 bytes, smaller than the 4096-byte header"),
        ("magic", "not a slabcast slab (bad magic)"),
        ("version", "slab format version 2, this build reads version 1"),
        ("header", "corrupt header: plane range"),
    ]:
        desc = t.write_volume(d, how, DIMS, DEPTH)
        slab = os.path.join(d, how + ".slab2")
        t.corrupt(slab, how)
        expect_error(desc, slab, problem)

    # Listed in the descriptor, file gone.
    desc = t.write_volume(d, "gone", DIMS, DEPTH, slabs="0,1,3", listed="all")
    expect_error(desc, os.path.join(d, "gone.slab2"), "No such file or directory")

    # A slab of another volume where slab 2 should be (same size, other dims).
    desc = t.write_volume(d, "mixed", DIMS, DEPTH)
    other_dir = os.path.join(d, "other")
    t.write_volume(other_dir, "mixed", (64, 48, 30), DEPTH)
    shutil.copyfile(os.path.join(other_dir, "mixed.slab2"), os.path.join(d, "mixed.slab2"))
    expect_error(desc, os.path.join(d, "mixed.slab2"), "does not match descriptor " + desc)

    # Slabs 2 and 3 live on another host: the whole volume cannot be read here,
    # a rank whose piece lies in slabs 0..1 is fine.
    desc = t.write_volume(d, "half", DIMS, DEPTH, slabs="0,1")
    expect_error(desc, desc, "slab 2 (planes 20..29) is not in this host's shared memory")
    expect_error(desc, os.path.join(d, "half.slab2"), "expected file")
    expect_fine(desc, (1, 4))


def body():
    with t.shm_dir("bad") as d:
        descriptor_cases(d)
        slab_cases(d)


t.main(body)
