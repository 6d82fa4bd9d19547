"""ctest plugin_cpu_volume: the Slabcast Volume representation (the plugin's
CPU ray marcher, --mapper slabcast) draws what VTK's CPU ray caster draws
(--mapper raycast: the same transfer function, camera and sample distance,
one voxel) on 1, 2 and 3 ranks, sort-last through IceT: a mean difference of
at most 1/255 and at most 1% of pixels more than 8/255 apart. It draws a
volume longer than llvmpipe's 3D textures (4200 points along x, over their
2048: the GPU ray caster refuses the texture, logged beside), and, live, a step's frames refine in order,
coarse first, to full resolution, each caption naming its level, and a step drawn is not marched again when the
reader runs again for another step's first slabs. Speed:
testing/bench/render_paths.py."""
import os
import re

import plugin_testlib as t

DIMS, DEPTH = (64, 64, 64), 16  # 4 slabs: 1, 2 and 3 ranks cut it differently
ROD_DIMS, ROD_DEPTH = (4200, 48, 48), 24  # over 2048 along x; about 3 pixels thick
SIZE = "240x240"
MEAN_MOST, OVER8_MOST = 1.0, 0.01  # in 0..255, and the share of pixels


def render(descriptor, display, d, mapper, ranks=1, frames=1, extra=(), expect_rc=0):
    png = os.path.join(d, "%s-%d.png" % (mapper, ranks))
    cmd = t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"), [descriptor, "--frames", frames, "--size", SIZE, "--save", png,
                                                        "--mapper", mapper] + list(extra), ranks=ranks)
    out, err = t.run(cmd, env=t.paraview_env(display), timeout=240, expect_rc=expect_rc)
    return png, out + err


def stats(png, reference=None):
    return t.read_image_stats(t.pvpython("pv_image_stats.py", png, *([reference] if reference else []))[0])


def body():
    with t.shm_dir("cpu-volume") as d, t.xvfb() as display:
        descriptor = t.write_volume(d, "blobs", DIMS, DEPTH, pattern="blobs")
        reference, _ = render(descriptor, display, d, "raycast", extra=["--no-overlay"])
        lit = stats(reference)["lit"]
        t.check(lit > 0.05, "the reference (raycast) is nearly blank: %.1f%% lit" % (100 * lit))
        for ranks in (1, 2, 3):
            png, _ = render(descriptor, display, d, "slabcast", ranks, extra=["--no-overlay"])
            s = stats(png, reference)
            t.log("slabcast on %d rank(s) against raycast: mean %.3f/255, max %d, %.2f%% of pixels over 8/255" % (
                ranks, s["meandiff"], s["maxdiff"], 100 * s["over8"]))
            t.check(s["meandiff"] <= MEAN_MOST and s["over8"] <= OVER8_MOST,
                    "slabcast on %d rank(s) is not raycast's picture: %s" % (ranks, s))

        rod = t.write_volume(d, "rod", ROD_DIMS, ROD_DEPTH, pattern="blobs")
        png, _ = render(rod, display, d, "slabcast", extra=["--no-overlay"])
        rod_lit = stats(png)["lit"]
        gpu, said = render(rod, display, d, "smart", extra=["--no-overlay"], expect_rc=None)
        texture = [line for line in said.splitlines() if "texture" in line.lower()]
        t.log("4200 points along x: slabcast %.2f%% lit; smart %s" % (
            100 * rod_lit, "%.2f%% lit" % (100 * stats(gpu)["lit"]) if os.path.exists(gpu) else "saved no image"
            + (": " + texture[0].strip() if texture else "")))
        t.check(rod_lit > 0.002, "a volume of 4200 points along x renders blank with slabcast")

        # One step, four frames: 1/4, 1/2, then full resolution, the caption saying so.
        _, out = render(descriptor, display, d, "slabcast", frames=4, extra=["--coarsest", "4"])
        frames = re.findall(r"^frame \d+: step \d+, [\d.]+ ms.*?, level (\d+),.*? \| caption: (.*)$", out, re.M)
        t.log("levels and captions: %s" % frames)
        t.check([int(level) for level, _ in frames] == [4, 2, 1, 1], "levels not 4, 2, 1, 1:\n" + out)
        t.check(["1/4 resolution, refining" in frames[0][1], "1/2 resolution, refining" in frames[1][1],
                 "full resolution" in frames[2][1], "full resolution" in frames[3][1]] == [True] * 4,
                "captions do not name the levels drawn:\n" + out)

        # The reader running again for another step's first slabs does not make
        # the mapper march the step it drew again (a 1024^3 frame is seconds).
        same = t.write_volume(d, "same", DIMS, DEPTH, pattern="blobs")
        out, _ = t.pvpython("pv_same_step_again.py", same, t.env_path("SLABCAST_TEST_WRITER"), d, "same",
                            ",".join(map(str, DIMS)), DEPTH, display=display)
        t.check("SAME_STEP_OK" in out, "pv_same_step_again.py did not finish:\n" + out)
        t.log(out.strip())


t.main(body)
