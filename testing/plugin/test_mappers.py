"""ctest plugin_mappers: every volume rendering path slabcast_render.py offers
(--mapper, plugin/python/slabcast_mappers.py) renders the volume: the default
(auto), smart, gpu, raycast and resample:N on one rank, resample:N on two
(ResampleToImage across ranks, IceT); each image is not blank. auto names what
it chose and why, and on a software OpenGL (llvmpipe) chooses the measured
default. ospray renders, or where VTK lacks OSPRay fails naming that; a
--mapper that is no path fails naming the choices. Speed and image difference:
testing/bench/render_paths.py."""
import os
import re

import plugin_testlib as t

DIMS, DEPTH = (48, 48, 48), 24
SIZE = "240x240"


def render(descriptor, display, d, mapper, ranks=1, expect_rc=0):
    png = os.path.join(d, "%s-%d.png" % (mapper.replace(":", ""), ranks))
    cmd = t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"), [descriptor, "--frames", 1, "--size", SIZE, "--save", png,
                                                        "--no-overlay", "--mapper", mapper], ranks=ranks)
    out, err = t.run(cmd, env=t.paraview_env(display), timeout=240, expect_rc=expect_rc)
    return png, out, err


def check_image(png, what):
    stats = t.read_image_stats(t.pvpython("pv_image_stats.py", png)[0])
    t.log("%s: %.1f%% of pixels lit" % (what, 100 * stats["lit"]))
    t.check(stats["lit"] > 0.02, "%s: the volume is not visible: %s" % (what, stats))


def body():
    with t.shm_dir("mappers") as d, t.xvfb() as display:
        descriptor = t.write_volume(d, "blobs", DIMS, DEPTH, pattern="blobs")
        for mapper, ranks in (("auto", 1), ("smart", 1), ("gpu", 1), ("raycast", 1), ("resample:24", 1),
                              ("resample:24", 2)):
            png, out, _ = render(descriptor, display, d, mapper, ranks)
            chosen = re.search(r", mapper (\S+) \((.*)\)$", out, re.M)
            t.check(chosen is not None, "%s: no 'mapper NAME (why)' line:\n%s" % (mapper, out))
            if mapper == "auto":
                software = any(s in chosen.group(2) for s in ("llvmpipe", "softpipe", "swrast"))
                default = re.search(r'^DEFAULT_SOFTWARE = "([^"]+)"', open(os.path.join(
                    os.path.dirname(t.env_path("SLABCAST_RENDER")), "slabcast_mappers.py")).read(), re.M).group(1)
                t.log("auto: %s (%s)" % chosen.groups())
                t.check(chosen.group(1) == (default if software else "smart"),
                        "auto chose %s (%s)" % chosen.groups())
            else:
                t.check(chosen.group(1) == mapper, "asked for %s, rendered with %s" % (mapper, chosen.group(1)))
            check_image(png, "%s, %d rank(s)" % (mapper, ranks))
        png, out, err = render(descriptor, display, d, "ospray", expect_rc=None)
        if "not linked to OSPRay" in err:
            t.log("ospray: refused: " + err.strip().splitlines()[-1])
            t.check(not os.path.exists(png), "ospray refused yet an image was saved")
        else:
            check_image(png, "ospray")
        for bad in ("resample:1", "resample:x", "cuda"):
            _, _, err = render(descriptor, display, d, bad, expect_rc=2)
            t.check("--mapper" in err and repr(bad) in err and "resample:N" in err,
                    "--mapper %s: no message naming it and the choices:\n%s" % (bad, err))


t.main(body)
