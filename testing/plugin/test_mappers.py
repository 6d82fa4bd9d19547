"""ctest plugin_mappers: every volume rendering path slabcast_render.py offers
(--mapper, plugin/python/slabcast_mappers.py) renders the volume: the default
(auto), slabcast, smart, gpu, raycast, stride:K, resample:N and resample:1/K
on one rank, slabcast, stride:K and resample:N on two (the reader's Stride
and ResampleToImage across ranks, IceT); each image is not blank. auto names
what it chose and why: on a software OpenGL (llvmpipe) slabcast, the
plugin's CPU ray marcher, whatever the volume's size; elsewhere smart.
--max-points caps any path but slabcast (which copies nothing) with a stride
(the demo's memory ceiling). ospray renders, or where VTK lacks OSPRay fails
naming that; a --mapper that is no path fails naming the choices. Speed and
image difference: testing/bench/render_paths.py; slabcast against raycast:
test_cpu_volume.py."""
import os
import re

import plugin_testlib as t

DIMS, DEPTH = (48, 48, 48), 24
LONG_DIMS, LONG_DEPTH = (256, 24, 24), 12  # 256 points along x
VERY_LONG_DIMS, VERY_LONG_DEPTH = (1024, 12, 12), 6
SIZE = "240x240"


def render(descriptor, display, d, mapper, ranks=1, expect_rc=0, max_points=0):
    png = os.path.join(d, "%s-%d-%d.png" % (mapper.replace(":", "").replace("/", "-"), ranks, max_points))
    cmd = t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"), [descriptor, "--frames", 1, "--size", SIZE, "--save", png,
                                                        "--no-overlay", "--mapper", mapper,
                                                        "--max-points", max_points], ranks=ranks)
    out, err = t.run(cmd, env=t.paraview_env(display), timeout=240, expect_rc=expect_rc)
    return png, out, err


def check_image(png, what, least_lit=0.02):
    stats = t.read_image_stats(t.pvpython("pv_image_stats.py", png)[0])
    t.log("%s: %.1f%% of pixels lit" % (what, 100 * stats["lit"]))
    t.check(stats["lit"] > least_lit, "%s: the volume is not visible: %s" % (what, stats))


def body():
    with t.shm_dir("mappers") as d, t.xvfb() as display:
        descriptor = t.write_volume(d, "blobs", DIMS, DEPTH, pattern="blobs")
        long_volume = t.write_volume(d, "long", LONG_DIMS, LONG_DEPTH, pattern="blobs")
        very_long = t.write_volume(d, "verylong", VERY_LONG_DIMS, VERY_LONG_DEPTH, pattern="blobs")
        # want: (the path on a software OpenGL, the path with a GPU).
        for source, mapper, ranks, want, cap in ((descriptor, "auto", 1, ("slabcast", "smart"), 0),
                                                 (long_volume, "auto", 1, ("slabcast", "smart"), 0),
                                                 (very_long, "auto", 1, ("slabcast", "smart"), 0),
                                                 (long_volume, "auto", 1, ("slabcast", "stride:4"), 64),
                                                 (descriptor, "raycast", 1, ("stride:3", "stride:3"), 16),
                                                 (descriptor, "slabcast", 1, ("slabcast", "slabcast"), 16),
                                                 (descriptor, "slabcast", 2, None, 0),
                                                 (descriptor, "stride:2", 1, None, 0),
                                                 (descriptor, "stride:3", 2, None, 0),
                                                 (descriptor, "smart", 1, None, 0), (descriptor, "gpu", 1, None, 0),
                                                 (descriptor, "raycast", 1, None, 0),
                                                 (descriptor, "resample:24", 1, None, 0),
                                                 (descriptor, "resample:1/4", 1, ("resample:12", "resample:12"), 0),
                                                 (descriptor, "resample:24", 2, None, 0)):
            png, out, _ = render(source, display, d, mapper, ranks, max_points=cap)
            chosen = re.search(r", mapper (\S+) \((.*)\)$", out, re.M)
            t.check(chosen is not None, "%s: no 'mapper NAME (why)' line:\n%s" % (mapper, out))
            t.log("%s%s: %s (%s)" % ((mapper, " --max-points %d" % cap if cap else "") + chosen.groups()))
            software = any(s in chosen.group(2) for s in ("llvmpipe", "softpipe", "swrast"))
            if want is None:
                want = (mapper, mapper)
            t.check(chosen.group(1) == want[0 if software or mapper != "auto" else 1],
                    "%s: rendered with %s (%s)" % ((mapper,) + chosen.groups()))
            # The 1024-point rod spans the frame's width, 3 pixels high: under 1% lit.
            check_image(png, "%s, %d rank(s)" % (mapper, ranks), 0.002 if source == very_long else 0.02)
        png, out, err = render(descriptor, display, d, "ospray", expect_rc=None)
        if "not linked to OSPRay" in err:
            t.log("ospray: refused: " + err.strip().splitlines()[-1])
            t.check(not os.path.exists(png), "ospray refused yet an image was saved")
        else:
            check_image(png, "ospray")
        for bad in ("resample:1", "stride:1", "cuda"):
            _, _, err = render(descriptor, display, d, bad, expect_rc=2)
            t.check("--mapper" in err and repr(bad) in err and "resample:N" in err,
                    "--mapper %s: no message naming it and the choices:\n%s" % (bad, err))


t.main(body)
