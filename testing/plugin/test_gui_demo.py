"""ctest plugin_gui_demo: `slabcast demo` with a display, as a user at a desk
runs it. Under a private Xvfb the demo opens the ParaView GUI with the stream
already showing; the screen must keep changing as new steps arrive, ParaView
must log no warning or error (the GUI pops those up in an Output Messages
window over the view), and Ctrl-C must stop everything with exit code 0 and no
shared memory left behind. Saves gui_demo.png for a person to look at."""
import glob
import os
import random
import signal
import subprocess
import time

import plugin_testlib as t
import xvfb_screen


def wait_for_window(fbdir, deadline):
    bare = xvfb_screen.snapshot(fbdir)
    while True:
        shot = xvfb_screen.snapshot(fbdir)
        if xvfb_screen.changed_fraction(bare, shot) > 0.3:
            return shot
        t.check(time.monotonic() < deadline, "the ParaView window never appeared")
        time.sleep(0.5)


def count_view_changes(fbdir, wanted, seconds):
    """How many times the render view changed by more than 0.5%, until it has
    changed `wanted` times or `seconds` passed (a busy machine renders and
    streams slower, never the other way), and how long that took: the left
    60% of the screen, without the stream monitor docked on the right, which
    updates by itself twice a second."""
    changes, last = 0, xvfb_screen.snapshot(fbdir)
    band = (0, last[0] * 6 // 10)
    start = time.monotonic()
    while changes < wanted and time.monotonic() < start + seconds:
        time.sleep(0.5)
        now = xvfb_screen.snapshot(fbdir)
        if now[2] != last[2] and xvfb_screen.changed_fraction(last, now, band) > 0.005:
            changes += 1
            last = now
    return changes, last, time.monotonic() - start


def body():
    with t.shm_dir("guidemo") as d, t.xvfb(fbdir=d) as display:
        env = t.paraview_env(display)
        env.pop("PV_PLUGIN_PATH", None)  # the demo must find its plugin by itself
        env["XDG_CONFIG_HOME"] = os.path.join(d, "config")  # leave the user's settings alone
        env["XDG_RUNTIME_DIR"] = d
        port = random.randrange(20000, 60000, 1000)
        out = os.path.join(d, "out")
        cmd = [t.SERVER, "demo", "--dims", "64,64,64", "--dataset-steps", "6", "--forever", "--rate", "50M",
               "--step-interval", "1", "--out", out, "--cache", os.path.join(d, "cache"), "--base-port", str(port)]
        t.log("$ " + " ".join(cmd))
        log = open(os.path.join(d, "demo.log"), "w+")
        demo = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_window(d, time.monotonic() + 180)
            # 5 changes, not 3: on a slow start the window's own first paints
            # (layout, first frame) may count as one or two.
            changes, shot, took = count_view_changes(d, 5, t.WAIT_S)
            xvfb_screen.write_png("gui_demo.png", shot)
            t.check(changes >= 5, "the view changed %d time(s) in %.0f s of streaming, one step a second" % (
                changes, took))
            t.log("ok: the GUI view changed %d times in %.0f s" % (changes, took))
            demo.send_signal(signal.SIGINT)
            rc = demo.wait(timeout=60)
            t.check(rc == 0, "demo exited with %d after Ctrl-C" % rc)
            paraview_log = open(os.path.join(out, "logs", "paraview.log"), errors="replace").read()
            noisy = [line for line in paraview_log.splitlines() if "WARN" in line or "ERR" in line]
            t.check(not noisy, "ParaView logged warnings or errors (an Output Messages popup):\n" + "\n".join(noisy[:5]))
            left = glob.glob("/dev/shm/slabcast-demo-%d*" % port)
            t.check(not left, "the demo left shared memory behind: %s" % left)
            t.log("ok: Ctrl-C stopped the demo cleanly, ParaView logged no warning")
        except t.Failure:
            log.seek(0)
            t.log("--- demo output\n" + log.read()[-4000:])
            raise
        finally:
            if demo.poll() is None:
                demo.kill()
                demo.wait()
            log.close()


t.main(body)
