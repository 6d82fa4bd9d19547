"""ctest plugin_pvserver: `mpirun -np 2 pvserver` loads the plugin from
PV_PLUGIN_PATH and a pvpython client (slabcast_render.py --connect) renders a
slabcast volume through it; the image shows the volume."""
import os
import re

import plugin_testlib as t


def body():
    with t.shm_dir("pvserver") as d, t.xvfb() as display:
        descriptor = t.write_volume(d, "blobs", (64, 64, 64), 32, pattern="blobs")
        with t.pvserver(d, t.paraview_env(display)) as port:
            image = os.path.join(d, "client_%d.png")
            out, _ = t.run([t.PVPYTHON, t.env_path("SLABCAST_RENDER"), "--connect", "localhost:%d" % port,
                            descriptor, "--frames", 2, "--size", "400x400", "--save", image],
                           env=t.paraview_env(display))
            t.log(out)
            t.check(len(re.findall(r"frame \d+: step 0,", out)) == 2, "the client did not render 2 frames")
            stats = t.read_image_stats(t.pvpython("pv_image_stats.py", image % 1)[0])
            t.check(stats["lit"] > 0.02, "the client's image is blank: %s" % stats)
            t.log("ok: 2-rank pvserver rendered for the client: %.1f%% of pixels lit" % (100 * stats["lit"]))


t.main(body)
