"""ctest plugin_gui_live: the ParaView GUI, under Xvfb, loads the plugin from
PV_PLUGIN_PATH, opens a live stream from the real receiver, and its view changes
when a new step arrives, with nobody pressing Apply: screenshots (Xvfb's own
framebuffer file) before and after. Saves gui_before.png / gui_after.png in
the working directory for a person to look at."""
import os
import subprocess
import time

import plugin_testlib as t
import quad_sender
import xvfb_screen

DIMS, DEPTH = (48, 48, 48), 24


def view_band(shot):
    """The left 60% of the screen: the render view's middle, not the stream
    monitor docked on the right, which updates by itself twice a second."""
    return (0, shot[0] * 6 // 10)


def wait_until_settled(fbdir, ready, gui, deadline):
    """Waits for the GUI to be up, its script to have shown the volume (it
    writes the file `ready`: the window can be up long before on a busy
    machine), and its render view unchanged for 2 s after that."""
    first = xvfb_screen.snapshot(fbdir)
    while xvfb_screen.changed_fraction(first, xvfb_screen.snapshot(fbdir)) < 0.3 or not os.path.exists(ready):
        t.check(gui.poll() is None, "paraview exited (%s)" % gui.poll())
        t.check(time.monotonic() < deadline, "the ParaView window never appeared, or its script never finished "
                "(%s written: %s)" % (ready, os.path.exists(ready)))
        time.sleep(0.5)
    last, same_since = xvfb_screen.snapshot(fbdir), time.monotonic()
    while time.monotonic() - same_since < 2.0:
        t.check(time.monotonic() < deadline, "the ParaView window never settled")
        time.sleep(0.25)
        now = xvfb_screen.snapshot(fbdir)
        if xvfb_screen.changed_fraction(last, now, view_band(now)) > 0:
            last, same_since = now, time.monotonic()
    return last


def body():
    with t.shm_dir("gui") as d, t.xvfb(fbdir=d) as display:
        with t.receiver(d, "gui", DIMS, DEPTH, [0, 1]) as (ports, descriptor):
            quad_sender.send(ports, DIMS, DEPTH, 0, value=quad_sender.blob_value)
            t.wait_published(d, 0, ports, name="gui")  # the GUI's script opens it and shows its values
            env = t.paraview_env(display)
            env["SLABCAST_GUI_DESCRIPTOR"] = descriptor
            env["SLABCAST_GUI_READY"] = ready = os.path.join(d, "gui-ready")
            env["XDG_CONFIG_HOME"] = os.path.join(d, "config")  # leave the user's settings alone
            env["XDG_RUNTIME_DIR"] = d
            cmd = [t.PARAVIEW, "--dr", "--script=" + os.path.join(t.HERE, "gui_open_live.py")]
            t.log("$ " + " ".join(cmd))
            log = open(os.path.join(d, "paraview.log"), "w+")
            gui = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                before = wait_until_settled(d, ready, gui, time.monotonic() + 180)
                xvfb_screen.write_png("gui_before.png", before)
                # Several LiveSource polls (every 500 ms) with nothing new: no change.
                time.sleep(1.5)
                band = view_band(before)
                idle = xvfb_screen.changed_fraction(before, xvfb_screen.snapshot(d), band)
                t.check(idle < 0.001, "the view changed with no new step (%.3f%% of the screen)" % (100 * idle))
                quad_sender.send(ports, DIMS, DEPTH, 3, value=quad_sender.blob_value)
                deadline, changed = time.monotonic() + t.WAIT_S, 0.0
                while changed < 0.01:
                    t.check(gui.poll() is None, "paraview exited")
                    t.check(time.monotonic() < deadline, "the view did not change after a new step "
                            "(%.3f%% of the screen)" % (100 * changed))
                    time.sleep(0.25)
                    after = xvfb_screen.snapshot(d)
                    changed = xvfb_screen.changed_fraction(before, after, band)
                xvfb_screen.write_png("gui_after.png", after)
                t.log("ok: the view changed by itself after a new step: %.1f%% of its band" % (100 * changed))
            except t.Failure:
                log.seek(0)
                t.log("--- paraview output\n" + log.read())
                with open(os.path.join(d, "gui.receive.log")) as received:
                    t.log("--- receiver output\n" + received.read())
                xvfb_screen.write_png("gui_failed.png", xvfb_screen.snapshot(d))
                raise
            finally:
                t.stop(gui)
                log.close()


t.main(body)
