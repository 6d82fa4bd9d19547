"""ctest plugin_mpi_render: slabcast_render.py volume-renders the same volume
with 1, 2 and 4 pvbatch ranks (IceT sort-last compositing); the image is not
blank, and the 2- and 4-rank images match the 1-rank one (max pixel
difference <= 8/255, mean <= 0.2/255)."""
import os
import re

import plugin_testlib as t

DIMS, DEPTH = (96, 96, 96), 24  # 4 slabs: 4 ranks map without a copy, 2 ranks copy
MAX_DIFF, MEAN_DIFF = 8, 0.2


def render(descriptor, display, ranks, out_dir):
    pattern = os.path.join(out_dir, "ranks%d_%%d.png" % ranks)
    cmd = t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"),
                        [descriptor, "--frames", 2, "--size", "400x400", "--save", pattern, "--no-overlay"],
                        ranks=ranks)
    out, _ = t.run(cmd, env=t.paraview_env(display), timeout=240)
    frames = re.findall(r"frame (\d+): step (-?\d+), ([\d.]+) ms", out)
    t.check(len(frames) == 2, "expected 2 frame lines:\n" + out)
    t.check(all(step == "0" for _, step, _ in frames), "frames do not show step 0:\n" + out)
    t.log("%d rank(s): frame times %s ms" % (ranks, ", ".join(ms for _, _, ms in frames)))
    return pattern % 1


def body():
    with t.shm_dir("render") as d, t.xvfb() as display:
        descriptor = t.write_volume(d, "blobs", DIMS, DEPTH, pattern="blobs")
        images = {ranks: render(descriptor, display, ranks, d) for ranks in (1, 2, 4)}
        stats = t.read_image_stats(t.pvpython("pv_image_stats.py", images[1])[0])
        t.log("1 rank: %.1f%% of pixels lit, %.2f%% bright" % (100 * stats["lit"], 100 * stats["bright"]))
        t.check(stats["lit"] > 0.02 and stats["bright"] > 0.002, "the volume is not visible: %s" % stats)
        for ranks in (2, 4):
            s = t.read_image_stats(t.pvpython("pv_image_stats.py", images[ranks], images[1])[0])
            t.log("%d ranks vs 1: max diff %d/255, mean %.3f/255" % (ranks, s["maxdiff"], s["meandiff"]))
            t.check(s["maxdiff"] <= MAX_DIFF and s["meandiff"] <= MEAN_DIFF,
                    "%d-rank image differs from the 1-rank one: %s" % (ranks, s))


t.main(body)
