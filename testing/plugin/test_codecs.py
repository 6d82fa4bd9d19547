"""ctest plugin_codecs: the real roles stream each slab in another data packet
format into one receiver (quad packets; run packets raw, lz4, zfp:12 and
quant:10; docs/wire-format.md), in scan order, then in Morton order, then in
the progressive order (coarse first, runs across rows of that order), and the
ParaView reader shows the step: bit for bit where the format is lossless,
within the codec's error where it is not."""
import array
import math
import os
import sys

import plugin_testlib as t

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from slabcast_testlib import quant_bound, zfp_bounds  # noqa: E402

DIMS, DEPTH = (48, 40, 40), 8
FORMATS = [["--wire", "quad"], ["--wire", "run"], ["--wire", "run", "--codec", "lz4"],
           ["--wire", "run", "--codec", "zfp:12"], ["--wire", "run", "--codec", "quant:10"]]
ZFP_SLAB, ZFP_RATE = 3, 12
QUANT_SLAB, QUANT_BITS = 4, 10
LAST = 2


def value(x, y, z, s):
    """A smooth field that changes with the step, over a few decades."""
    return (1.0 + s) * math.exp(2.0 * math.sin(0.3 * x + s) * math.cos(0.2 * y) + 0.05 * z)


def write_dataset(directory, steps):
    import json
    os.makedirs(directory, exist_ok=True)
    listed = []
    for s in steps:
        name = "step%05d.raw" % s
        values = array.array("f", (value(x, y, z, s) for z in range(DIMS[2]) for y in range(DIMS[1])
                                   for x in range(DIMS[0])))
        with open(os.path.join(directory, name), "wb") as f:
            values.tofile(f)
        listed.append({"step": s, "file": name})
    with open(os.path.join(directory, "dataset.json"), "w") as f:
        json.dump({"name": "codecs", "field": "density", "dtype": "float32", "dims": list(DIMS), "steps": listed}, f)
    return directory


def body():
    for order in ("scan", "morton", "progressive"):
        stream_and_check(order)


def stream_and_check(order):
    with t.shm_dir("codecs-" + order) as d:
        data = write_dataset(os.path.join(d, "dataset"), range(LAST + 1))
        with open(os.path.join(data, "step%05d.raw" % LAST), "rb") as f:
            want = array.array("f", f.read())
        # Each step is sent once: a shuffler must not skip one because the
        # stager, on a busy machine, had not staged it within the usual 2 s.
        with t.streaming_pipeline(d, data, "codecs", DIMS, DEPTH, rate="500M", shuffle_args=lambda k: FORMATS[k] + ["--order", order],
                                  control_args=["--steps", "0-%d" % LAST],
                                  wait_staged_ms=t.WAIT_S * 1000) as descriptor:
            out = os.path.join(d, "shown.raw")
            # Read once the receiver says every slab holds the last step (the
            # controller steps on its own), however slowly the roles run here.
            t.wait_published(d, LAST, range(len(FORMATS)))
            stdout, _ = t.pvpython("pv_dump_volume.py", descriptor, out)
            t.log(stdout.strip())
            t.check("DUMP step=%d " % LAST in stdout, "every slab published step %d, yet the reader showed: %s" % (
                LAST, stdout.strip()))
        with open(out, "rb") as f:
            got = array.array("f", f.read())
        with open(out + ".age", "rb") as f:
            ages = f.read()
        t.check(len(got) == len(want), "%d values shown, expected %d" % (len(got), len(want)))
        t.check(not any(ages), "values came from an older step (loss on loopback at 500 Mbit/s a stream?)")
        plane = DIMS[0] * DIMS[1]
        zfp_from = (ZFP_SLAB * DEPTH - 1) * plane  # the zfp slab's first stored value (its ghost plane)
        worst = 0.0
        for k, fmt in enumerate(FORMATS):
            lo, hi = k * DEPTH * plane, (k + 1) * DEPTH * plane
            if k == QUANT_SLAB:
                # Within half a level of the slab's range (its ghost plane included).
                bound = quant_bound(want[(QUANT_SLAB * DEPTH - 1) * plane:hi], QUANT_BITS)
                bad = [i for i in range(lo, hi) if not abs(got[i] - want[i]) <= bound(want[i])]
                t.check(not bad, "slab %d (quant:%d): %d values past the bound, first at %d: %r against %r" % (
                    k, QUANT_BITS, len(bad), bad[0] if bad else 0, got[bad[0]] if bad else 0,
                    want[bad[0]] if bad else 0))
                t.check(any(got[i] != want[i] for i in range(lo, hi)), "the quant slab came through exact")
                continue
            if k != ZFP_SLAB:
                bad = [i for i in range(lo, hi) if got[i] != want[i]]
                t.check(not bad, "slab %d (%s): %d values differ, first at %d: %r != %r" % (
                    k, " ".join(fmt), len(bad), bad[0] if bad else 0, got[bad[0]] if bad else 0,
                    want[bad[0]] if bad else 0))
                continue
            # zfp: blocks of 4 from each run's first value, each within zfp's
            # bound (slabcast_testlib.zfp_bounds). Here every run starts a
            # multiple of 4 values from the slab's first stored value (its
            # ghost plane): in scan order all runs but the last are whole
            # blocks, in Morton order each run is a whole plane, in the
            # progressive order each run is whole blocks of rows of 48.
            bounds = zfp_bounds(want[zfp_from:hi], ZFP_RATE)
            differs = 0
            for i in range(lo, hi):
                bound = bounds[i - zfp_from]
                err = abs(got[i] - want[i])
                t.check(err <= bound, "slab %d (zfp:%d) value %d: %r against %r, bound %g" % (
                    k, ZFP_RATE, i, got[i], want[i], bound))
                worst = max(worst, err / max(abs(want[i]), 1e-30))
                differs += got[i] != want[i]
            t.check(differs > 0, "the zfp slab came through exact: was it encoded at all?")
        t.log("PLUGIN_CODECS_OK (%s order): quad, run, run/lz4 exact; run/zfp:%d worst relative error %.3g; "
              "run/quant:%d within half a level" % (order, ZFP_RATE, worst, QUANT_BITS))


t.main(body)
