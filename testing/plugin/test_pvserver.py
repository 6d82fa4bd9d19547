"""ctest plugin_pvserver: `mpirun -np 2 pvserver` loads the plugin from
PV_PLUGIN_PATH and a pvpython client (slabcast_render.py --connect) renders a
slabcast volume through it; the image shows the volume."""
import os
import re
import socket
import subprocess
import time

import plugin_testlib as t


def free_tcp_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def body():
    with t.shm_dir("pvserver") as d, t.xvfb() as display:
        descriptor = t.write_volume(d, "blobs", (64, 64, 64), 32, pattern="blobs")
        port = free_tcp_port()
        env = t.paraview_env(display)
        server_cmd = [t.MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-np", "2", t.PVSERVER,
                      "--server-port=%d" % port, "--force-offscreen-rendering"]
        t.log("$ " + " ".join(server_cmd))
        log = open(os.path.join(d, "pvserver.log"), "w+")
        server = subprocess.Popen(server_cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while "Accepting connection" not in open(log.name).read():
                t.check(server.poll() is None and time.monotonic() < deadline, "pvserver did not start:\n" +
                        open(log.name).read())
                time.sleep(0.2)
            image = os.path.join(d, "client_%d.png")
            out, _ = t.run([t.PVPYTHON, t.env_path("SLABCAST_RENDER"), "--connect", "localhost:%d" % port,
                            descriptor, "--frames", 2, "--size", "400x400", "--save", image], env=env)
            t.log(out)
            t.check(len(re.findall(r"frame \d+: step 0,", out)) == 2, "the client did not render 2 frames")
            stats = t.read_image_stats(t.pvpython("pv_image_stats.py", image % 1)[0])
            t.check(stats["lit"] > 0.02, "the client's image is blank: %s" % stats)
            t.log("ok: 2-rank pvserver rendered for the client: %.1f%% of pixels lit" % (100 * stats["lit"]))
            server.wait(timeout=30)  # pvserver ends when its only client leaves
        finally:
            if server.poll() is None:
                server.terminate()
                try:
                    server.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
            log.close()


t.main(body)
