"""ctest plugin_progressive: a step cut after a quarter of each slab's packets,
with nothing older to fall back on (issue 21). Sent in the progressive order
(coarse first) and filled from the nearest coarse sample (--fill nearest), the
picture ParaView renders is at least three times closer to the whole step's
(image RMSE) than the scan order's with the previous-step fill, whose holes
have nothing under them; the reader shows every value filled (age 254) or
arrived (0), none never arrived (255); and the values are closer too. The
reader's own Fill "Nearest" over the same cut published with --fill previous
shows exactly what --fill nearest published.

The cut is exact and without sockets: slabcast_progressive_cut hands the
receiver's core the first share of each slab's packets and it publishes into
/dev/shm (testing/bench/progressive_cut.cpp; testing/bench/progressive_cut.py
is the full benchmark on the 256^3 dataset)."""
import array
import json
import math
import os

import plugin_testlib as t

DIMS, DEPTH = (128, 128, 128), 32  # 4 slabs, as the benchmark's 256^3 in slabs of 64
STEP, SHARE = 2, 0.25              # the last of three generated steps; scenario 1: no --previous
SIZE = "400x400"
MAX_RATIO = 1.0 / 3.0              # progressive+nearest image RMSE / scan+previous image RMSE
FILLED, NEVER = 254, 255           # the reader's age of a value filled coarse, and of one never arrived


def cut(directory, name, data, order, fill, share):
    """The step cut after `share` of each slab's packets into a directory of
    its own; returns (descriptor, the tool's figures)."""
    shm = os.path.join(directory, name)
    os.makedirs(shm, mode=0o750)  # the receiver's core refuses a directory anyone may write
    out, _ = t.run([t.env_path("SLABCAST_PROGRESSIVE_CUT"), "--dataset", data, "--step", STEP,
                    "--slab-depth", DEPTH, "--order", order, "--fill", fill, "--share", share,
                    "--shm-dir", shm, "--name", name])
    figures = json.loads(out.strip().splitlines()[-1])
    t.log("%s: %d of %d packets, %d holes, %d filled coarse, value RMSE %.4f" % (
        name, figures["packets_sent"], figures["packets"], figures["holes"], figures["coarse_filled"],
        figures["value_rmse"]))
    return os.path.join(shm, name + ".slabcast"), figures


def render(descriptor, display, png, colour_range):
    """One frame, the same size, camera and colour range for every image."""
    out, _ = t.run(t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"), [
        descriptor, "--frames", 1, "--size", SIZE, "--no-overlay", "--range", "%r,%r" % colour_range,
        "--save", png]), env=t.paraview_env(display), timeout=120)
    t.check("frame 0: step %d" % STEP in out, "the renderer did not show step %d:\n%s" % (STEP, out))


def shown(descriptor, out, fill=None):
    """(values, ages) as the ParaView reader shows them (its Fill property `fill`)."""
    stdout, _ = t.pvpython("pv_dump_volume.py", descriptor, out, *([fill] if fill else []))
    t.check("DUMP step=%d " % STEP in stdout, "the reader did not show step %d: %s" % (STEP, stdout.strip()))
    with open(out, "rb") as f:
        values = array.array("f", f.read())
    with open(out + ".age", "rb") as f:
        ages = f.read()
    return values, ages


def body():
    with t.shm_dir("progressive") as d, t.xvfb() as display:
        data = os.path.join(d, "dataset")
        t.run([t.env_path("SLABCAST_DATAGEN"), "--out", data, "--dims", ",".join(map(str, DIMS)), "--steps", STEP + 1])
        with open(os.path.join(data, "dataset.json")) as f:
            step_file = [s["file"] for s in json.load(f)["steps"] if s["step"] == STEP][0]
        with open(os.path.join(data, step_file), "rb") as f:
            truth = array.array("f", f.read())
        lo, hi = min(truth), max(truth)
        colour_range = (lo if lo > 0 else hi * 1e-3, hi)  # the renderer's log scale needs lo > 0

        images, figures = {}, {}
        for name, order, fill, share in (("whole", "scan", "previous", 1.0), ("scan", "scan", "previous", SHARE),
                                         ("progressive", "progressive", "nearest", SHARE)):
            descriptor, figures[name] = cut(d, name, data, order, fill, share)
            images[name] = os.path.join(d, name + ".png")
            render(descriptor, display, images[name], colour_range)
            if name != "whole":
                figures[name]["shown"] = shown(descriptor, os.path.join(d, name + ".raw"))

        whole = t.read_image_stats(t.pvpython("pv_image_stats.py", images["whole"])[0])
        t.check(whole["lit"] > 0.05, "the whole step's image is nearly blank: %s" % whole)
        rmse = {name: math.sqrt(t.read_image_stats(t.pvpython("pv_image_stats.py", images[name], images["whole"])[0])
                                ["mse"]) for name in ("scan", "progressive")}
        ratio = rmse["progressive"] / rmse["scan"] if rmse["scan"] else math.inf
        t.log("image RMSE against the whole step: scan+previous %.3f, progressive+nearest %.3f, ratio %.3f (<= %.3f)"
              % (rmse["scan"], rmse["progressive"], ratio, MAX_RATIO))
        t.check(rmse["scan"] > 1.0, "the cut scan step renders like the whole one (image RMSE %.3f): no cut?"
                % rmse["scan"])
        t.check(ratio <= MAX_RATIO, "progressive+nearest's image RMSE %.3f is more than 1/3 of scan+previous's %.3f"
                % (rmse["progressive"], rmse["scan"]))

        # Ages as the reader shows them: the scan cut's holes never arrived and
        # have nothing older under them; the progressive cut's are all filled.
        _, scan_ages = figures["scan"]["shown"]
        values, ages = figures["progressive"]["shown"]
        t.check(NEVER in scan_ages, "the scan cut shows no value that never arrived (age %d)" % NEVER)
        t.check(NEVER not in ages, "progressive+nearest shows %d values that never arrived (age %d)"
                % (ages.count(NEVER), NEVER))
        t.check(FILLED in ages, "progressive+nearest shows no value filled coarse (age %d)" % FILLED)
        t.log("progressive+nearest: %d values filled coarse, %d arrived, of %d" % (
            ages.count(FILLED), ages.count(0), len(ages)))

        # The values: through the reader as the tool measured them in the slabs, and closer than the scan cut's.
        t.check(len(values) == len(truth), "the reader shows %d values, the step has %d" % (len(values), len(truth)))
        read_rmse = math.sqrt(sum((a - b) * (a - b) for a, b in zip(values, truth)) / len(truth))
        tool_rmse = figures["progressive"]["value_rmse"]
        t.check(abs(read_rmse - tool_rmse) <= 1e-3 * max(tool_rmse, 1e-9),
                "the reader's values have RMSE %.6g against the step, the tool measured %.6g" % (read_rmse, tool_rmse))
        t.check(tool_rmse < figures["scan"]["value_rmse"], "progressive+nearest's value RMSE %.4f is not below "
                "scan+previous's %.4f" % (tool_rmse, figures["scan"]["value_rmse"]))
        t.log("value RMSE: scan+previous %.4f, progressive+nearest %.4f (through the reader %.4f)" % (
            figures["scan"]["value_rmse"], tool_rmse, read_rmse))

        # The reader's Fill "Nearest" on a step the receiver filled from the
        # step before (here: nothing, age 255) is the receiver's nearest fill.
        descriptor, _ = cut(d, "previous", data, "progressive", "previous", SHARE)
        as_published = shown(descriptor, os.path.join(d, "previous.raw"))
        t.check(NEVER in as_published[1], "the progressive cut with --fill previous shows no hole")
        refilled = shown(descriptor, os.path.join(d, "refilled.raw"), "Nearest")
        t.check(refilled[0] == values and refilled[1] == ages,
                "the reader's Fill Nearest differs from --fill nearest: %d values, %d ages" % (
                    sum(a != b for a, b in zip(refilled[0], values)), sum(a != b for a, b in zip(refilled[1], ages))))
        t.log("the reader's Fill Nearest over --fill previous equals --fill nearest, bit for bit")


t.main(body)
