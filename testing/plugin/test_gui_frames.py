"""ctest plugin_gui_frames: the ParaView GUI as `slabcast demo` opens it
(slabcast_gui_open.py, through gui_open_demo.py) under Xvfb draws a live
stream as slabcast_render.py does in pvbatch, with nobody clicking:

- a newly published step is on screen first coarse (1/4 of the pixels along
  each axis), then refined frame by frame to full resolution: the GUI's
  frame log (SLABCAST_FRAME_LOG) shows levels 4, 2, 1 for it, and every
  frame names its step's timeline in order (published <= picked <= shown);
- its picture in full resolution is pvbatch's (slabcast_render.py) for the
  same step, size, camera and colours: mean difference at most 2/255
  (pv_image_stats.py), the GUI's view saved without its caption.

Saves gui_frames.png and pvbatch_frames.png for a person to look at."""
import json
import os
import re
import shutil
import subprocess
import time

import plugin_testlib as t
import quad_sender

DIMS, DEPTH = (64, 64, 64), 32
RANGE = "0.1,6.1"
COARSEST = 4
MAX_MEAN_DIFF = 2.0  # of 255, over the colour channels
FRAME = re.compile(r"^frame (\d+): step (-?\d+), .*?(?:, level (\d+))?, read .*?(?:\| latency: (.*?))?"
                   r"(?: \| caption: .*)?$")
LATENCY = re.compile(r"published->shown (-?[\d.]+) ms \(picked after (-?[\d.]+) ms\)")


def frames(log_path):
    """(frame, step, level, latency text) of each line the GUI logged so far."""
    if not os.path.exists(log_path):
        return []
    with open(log_path) as f:
        found = [FRAME.match(line.rstrip()) for line in f]
    return [(int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None, m.group(4))
            for m in found if m]


def wait_for(what, ok, deadline, gui, seen):
    while not ok():
        t.check(gui.poll() is None, "paraview exited (%s) waiting for %s" % (gui.poll(), what))
        t.check(time.monotonic() < deadline, "%s never came; the GUI's frames: %s" % (what, seen()[-12:]))
        time.sleep(0.2)


def body():
    with t.shm_dir("guiframes") as d, t.xvfb(fbdir=d) as display:
        with t.receiver(d, "frames", DIMS, DEPTH, [0, 1]) as (ports, descriptor):
            quad_sender.send(ports, DIMS, DEPTH, 0, value=quad_sender.blob_value)
            t.wait_published(d, 0, ports, name="frames")
            log_path, shot = os.path.join(d, "frames.log"), os.path.join(d, "gui")
            env = t.paraview_env(display)
            env.update(SLABCAST_DESCRIPTOR=descriptor,
                       SLABCAST_SCRIPT_DIR=os.path.dirname(t.env_path("SLABCAST_RENDER")),
                       SLABCAST_RANGE=RANGE, SLABCAST_COARSEST=str(COARSEST), SLABCAST_FRAME_LOG=log_path,
                       SLABCAST_GUI_SAVE=shot, SLABCAST_GUI_SAVE_STEP="1",
                       XDG_CONFIG_HOME=os.path.join(d, "config"), XDG_RUNTIME_DIR=d)
            cmd = [t.PARAVIEW, "--dr", "--script=" + os.path.join(t.HERE, "gui_open_demo.py")]
            t.log("$ " + " ".join(cmd))
            out = open(os.path.join(d, "paraview.log"), "w+")
            gui = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
            try:
                seen = lambda: frames(log_path)  # noqa: E731
                wait_for("step 0 in full resolution", lambda: any(s == 0 and lv == 1 for _, s, lv, _ in seen()),
                         time.monotonic() + 180, gui, seen)
                quad_sender.send(ports, DIMS, DEPTH, 1, value=quad_sender.blob_value)
                wait_for("step 1 in full resolution, saved", lambda: os.path.exists(shot + ".json"),
                         time.monotonic() + t.WAIT_S, gui, seen)
            except t.Failure:
                out.seek(0)
                t.log("--- paraview output\n" + out.read()[-4000:])
                raise
            finally:
                t.stop(gui)
                out.close()
            shown = frames(log_path)
            t.log("the GUI's frames (frame, step, level): %s" % [f[:3] for f in shown])

            # With nobody clicking: step 1 coarse at once, then refined level by level.
            step1 = [f for f in shown if f[1] == 1]
            levels = [level for _, _, level, _ in step1]
            t.check(levels[:3] == [COARSEST, COARSEST // 2, 1],
                    "step 1's frames in the GUI were at levels %s, not %d, %d, 1" % (levels, COARSEST, COARSEST // 2))
            t.check([s for _, s, _, _ in shown] == sorted(s for _, s, _, _ in shown),
                    "the GUI went back to an older step: %s" % [f[:2] for f in shown])
            for frame, step, _, latency in shown:
                m = LATENCY.search(latency or "")
                t.check(m is not None, "frame %d (step %d) has no timeline: %r" % (frame, step, latency))
                to_shown, to_picked = float(m.group(1)), float(m.group(2))
                t.check(0.0 <= to_picked <= to_shown, "frame %d (step %d): published->picked %.1f ms, "
                        "published->shown %.1f ms: out of order" % (frame, step, to_picked, to_shown))

            # The same step, size and camera in pvbatch.
            with open(shot + ".json") as f:
                saved = json.load(f)
            t.log("the GUI's view: %s" % saved)
            reference = os.path.join(d, "pvbatch.png")
            rendered, _ = t.run(t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"), [
                descriptor, "--frames", 1, "--size", "%dx%d" % tuple(saved["size"]), "--mapper", "slabcast",
                "--range", RANGE, "--no-overlay", "--save", reference]), env=t.paraview_env(display), timeout=180)
            t.check("frame 0: step 1," in rendered, "pvbatch did not show step 1:\n" + rendered)
        shutil.copy(shot + ".png", "gui_frames.png")
        shutil.copy(reference, "pvbatch_frames.png")
        stats = t.read_image_stats(t.pvpython("pv_image_stats.py", shot + ".png", reference)[0])
        t.log("the GUI's picture against pvbatch's: %s" % stats)
        t.check(stats["lit"] > 0.02, "the GUI's picture is nearly blank: %s" % stats)
        t.check(stats["meandiff"] <= MAX_MEAN_DIFF, "the GUI's picture differs from pvbatch's by %.2f/255 on "
                "average (at most %.1f): %s" % (stats["meandiff"], MAX_MEAN_DIFF, stats))
        print("GUI_FRAMES_OK: levels %s for a new step; mean difference from pvbatch %.3f/255" % (
            levels[:3], stats["meandiff"]), flush=True)


t.main(body)
