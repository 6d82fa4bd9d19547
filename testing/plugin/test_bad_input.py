"""ctest plugin_bad_input: every kind of damaged descriptor or slab gives a
ParaView error naming the file and the problem, and no crash."""
import json
import os
import shutil
import struct

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
        ("version", text.replace('"version": 2', '"version": 3'), "descriptor version 3, this build reads version 2"),
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
        ("version", "slab format version 3, this build reads version 2"),
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


# ---- Hostile files, written here byte by byte (not by the project's code) ----

def hostile_descriptor(d, name, dims, depth, slabs):
    """A version-2 descriptor as an attacker would write it; slabs: [(index, file)]."""
    path = os.path.join(d, name + ".slabcast")
    with open(path, "w") as f:
        json.dump({"format": "slabcast", "version": 2, "name": name, "field": "density", "dims": list(dims),
                   "slab_depth": depth, "ghost_planes": 1,
                   "slabs": [{"index": k, "file": file} for k, file in slabs]}, f)
    return path


def hostile_slab(path, nx, ny, nz, index, depth, z_begin, z_end, stored, data_bytes, file_bytes):
    """A slab header with these numbers, in a file of file_bytes (docs/shared-memory.md)."""
    def page(n):
        return (n + 4095) // 4096 * 4096
    stride, age_stride = page(data_bytes), page(data_bytes // 4)  # version 2: 3 buffers of values, 3 of ages
    header = b"SLABCAST" + struct.pack("<IIQ8iI64sIQQQ", 2, 4096, data_bytes, nx, ny, nz, index, depth, z_begin, z_end,
                                       stored, 1, b"density", 3, stride, 4096 + 3 * stride, age_stride)
    with open(path, "wb") as f:
        f.write(header)
        f.truncate(file_bytes)


def hostile_size_cases(d):
    # nx = ny = 2^30, 16 planes: nx*ny*planes*4 = 2^66 wrapped to 0, so the header
    # "matched" a 4 KiB file; with the descriptor agreeing, the reader crashed on
    # the copy path and made a 2^64-point image on the zero-copy path.
    slab = os.path.join(d, "wrap.slab0")
    hostile_slab(slab, 1 << 30, 1 << 30, 16, 0, 16, 0, 16, 0, 0, 4096)
    desc = hostile_descriptor(d, "wrap", (1 << 30, 1 << 30, 16), 16, [(0, "wrap.slab0")])
    expect_error(desc, desc, "each size must be 1..1048576")
    # The same slab where a sound descriptor expects a slab of 64x48x40.
    good = t.write_volume(d, "wrapped", DIMS, DEPTH)
    hostile_slab(os.path.join(d, "wrapped.slab1"), 1 << 30, 1 << 30, 16, 0, 16, 0, 16, 0, 0, 4096)
    expect_error(good, os.path.join(d, "wrapped.slab1"), "corrupt header: dims 1073741824x1073741824x16")
    # Sizes of 2^32 and 2^40 wrapped to a silently empty output.
    for name, dims in [("dims32", (1 << 32, 8, 8)), ("dims40", (8, 1 << 40, 8))]:
        desc = hostile_descriptor(d, name, dims, 8, [])
        expect_error(desc, desc, "each size must be 1..1048576")
    # nz = 2^31 with a huge slab depth: the plane-selection loop grew until memory ran out.
    desc = hostile_descriptor(d, "deep", (8, 8, 1 << 31), (1 << 31) - 1, [(0, "deep.slab0")])
    expect_error(desc, desc, "each size must be 1..1048576")
    desc = hostile_descriptor(d, "deeper", (8, 8, 64), (1 << 31) - 1, [(0, "deeper.slab0")])
    expect_error(desc, desc, "slab depth 2147483647 must be 1..1048576")


def escaping_path_cases(d):
    outside = os.path.join(d, "outside")
    planted = t.write_volume(outside, "planted", DIMS, DEPTH)  # sound slabs, outside the directory
    inside = os.path.join(d, "inside")
    os.makedirs(inside)
    for name, file in [("passwd", "../../etc/passwd"), ("absolute", "/etc/passwd"),
                       ("planted", "../outside/planted.slab0"), ("abs_planted", os.path.join(outside, "planted.slab0"))]:
        desc = hostile_descriptor(inside, name, DIMS, DEPTH, [(0, file)])
        expect_error(desc, desc, "must be a plain file name in the descriptor's directory")
    # A plain name that is a symbolic link to the planted slab: refused, not read as data.
    os.symlink(os.path.join(outside, "planted.slab0"), os.path.join(inside, "link.slab0"))
    desc = hostile_descriptor(inside, "link", DIMS, DEPTH, [(0, "link.slab0")])
    expect_error(desc, os.path.join(inside, "link.slab0"), "is a symbolic link; refused", piece=("0", "4"))
    t.check(os.path.exists(planted), "the planted volume is gone")


def changed_under_mapping_cases(d):
    # Cut below its header while mapped, during live polling: the poll used to
    # read the old mapping's header and die of SIGBUS.
    for how, piece in [("truncate", ("2", "4")), ("truncate", ("0", "1"))]:
        desc = t.write_volume(d, "cut", DIMS, DEPTH)
        out, err = t.pvpython("pv_slab_changes.py", how, desc, os.path.join(d, "cut.slab2"), *piece)
        t.log(out.strip())
        t.check("SURVIVED" in out, "pvpython did not survive a slab cut short while mapped:\n" + out + err)
        t.check("NeedsUpdate after the cut: 1" in out, "the live poll did not notice the cut:\n" + out)
        errors = [line for line in err.splitlines() if "vtkSlabcastReader" in line and "ERR" in line]
        t.check(any(os.path.join(d, "cut.slab2") in line and "truncated" in line for line in errors),
                "no error naming the cut slab; got:\n" + err)
    # Rewritten in place (the same inode and size, its header gone): each
    # update names the slab, where it used to come back empty in silence.
    desc = t.write_volume(d, "rewritten", DIMS, DEPTH)
    slab = os.path.join(d, "rewritten.slab2")
    out, err = t.pvpython("pv_slab_changes.py", "rewrite", desc, slab)
    t.log(out.strip())
    t.check("SURVIVED" in out, "pvpython did not survive a slab rewritten in place:\n" + out + err)
    named = [line for line in err.splitlines() if slab in line and "not a slabcast slab (bad magic)" in line]
    t.check(len(named) >= 2 and "rewritten in place while the reader had it mapped" in named[0],
            "an update after the rewrite did not name the slab; got:\n" + err)
    # Every buffer of one slab left mid-write: nothing is shown, and a warning says which slab and since when.
    desc = t.write_volume(d, "stalled", DIMS, DEPTH)
    out, err = t.pvpython("pv_slab_changes.py", "stalled", desc, os.path.join(d, "stalled.slab2"))
    t.log(out.strip())
    t.check("STALLED_OK" in out and "mid-write: 0" in out and "2 s later: 0" in out,
            "a stalled slab under the reader:\n" + out + err)
    named = [line for line in err.splitlines() if "holds no published step" in line]
    t.check(len(named) == 1 and desc + ": nothing shown: slab 2 holds no published step: every buffer is being "
            "written; its last, step 0, was published" in named[0] and "(seen so for 2 s)" in named[0],
            "not one warning naming the stalled slab once it stayed so for 2 s; got:\n" + err)
    # A receiver reshaping the volume replaces each slab (new file, renamed
    # over): the reader's old array keeps its values, and the next update
    # re-opens the new files cleanly.
    desc = t.write_volume(d, "reshape", DIMS, DEPTH)
    out, err = t.pvpython("pv_slab_changes.py", "reshape", desc, "64,48,60", DEPTH, "1", "4")
    t.log(out.strip())
    t.check("RESHAPE_OK" in out and "ERR" not in err, "reshaping under the reader:\n" + out + err)


def body():
    with t.shm_dir("bad") as d:
        descriptor_cases(d)
        slab_cases(d)
        hostile_size_cases(d)
        escaping_path_cases(d)
        changed_under_mapping_cases(d)


t.main(body)
