"""ctest plugin_render_live: slabcast_render.py under mpirun (2 ranks) follows a
live stream from the real receiver: each new step the driver sends shows up in
later frames without anything but the script's own NeedsUpdate polling, and the
picture changes with it. Every frame's corner caption names the step rendered,
the stream's Gbit/s, loss and the frame time, and the corner differs from the
same frame rendered with --no-overlay (issue 18)."""
import os
import re
import subprocess

import plugin_testlib as t
import quad_sender
import xvfb_screen

DIMS, DEPTH, LAST = (48, 48, 48), 24, 3


def body():
    with t.shm_dir("rlive") as d, t.xvfb() as display:
        with t.receiver(d, "rlive", DIMS, DEPTH, [0, 1]) as (ports, descriptor):
            quad_sender.send(ports, DIMS, DEPTH, 0, value=quad_sender.blob_value)
            t.wait_published(d, 0, ports, name="rlive")  # the renderer's first frame must find step 0
            pattern = os.path.join(d, "frame_%d.png")
            cmd = t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"), [
                descriptor, "--until-step", LAST, "--timeout", 150, "--interval", 0.2, "--size", "300x300",
                "--range", "0.1,6.1", "--save", pattern, "--save-new-only", "--show-holes"], ranks=2)
            t.log("$ " + " ".join(cmd))
            proc = subprocess.Popen(cmd, env=t.paraview_env(display), stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            shown, sent, lines = [], 0, []
            try:
                for line in proc.stdout:  # the script ends by itself (--until-step / --timeout)
                    lines.append(line.rstrip())
                    m = re.match(r"frame (\d+): step (-?\d+)", line)
                    if not m:
                        continue
                    frame, step = int(m.group(1)), int(m.group(2))
                    shown.append((frame, step))
                    # Next step once the previous one is on screen: paced by
                    # what the renderer shows, not by the clock.
                    if step == sent and sent < LAST:
                        sent += 1
                        # Step 2 loses 30% of slab 0's packets: its holes are drawn (--show-holes).
                        quad_sender.send(ports, DIMS, DEPTH, sent, value=quad_sender.blob_value,
                                         fraction={0: 0.7} if sent == 2 else None)
                proc.wait(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            t.log("\n".join(lines))
            t.check(proc.returncode == 0, "slabcast_render.py exit code %s" % proc.returncode)
            steps = [s for _, s in shown]
            t.check(steps and steps[0] == 0 and steps[-1] == LAST, "steps shown: %s" % steps)
            t.check(steps == sorted(steps), "steps went backwards: %s" % steps)
            t.check(set(range(LAST + 1)) <= set(steps), "not every step was shown: %s" % steps)
            first = pattern % shown[0][0]
            last = pattern % [f for f, s in shown if s == LAST][0]
            t.check(os.path.exists(first) and os.path.exists(last), "frames of the first/last step not saved")
            s = t.read_image_stats(t.pvpython("pv_image_stats.py", last, first)[0])
            t.log("step %d vs step 0 image: max diff %d/255, mean %.2f/255, %.1f%% lit" % (
                LAST, s["maxdiff"], s["meandiff"], 100 * s["lit"]))
            t.check(s["lit"] > 0.01, "the last frame is blank")
            t.check(s["maxdiff"] > 64 and s["meandiff"] > 1, "the picture did not change with the steps")
            check_captions(lines)
            check_overlay(d, descriptor, display, last)


CAPTION = re.compile(r"frame \d+: step (-?\d+), .*\| caption: step (\d+), [\d.]+% arrived, \d+ m?s old / "
                     r"([\d.]+) Gbit/s, loss ([\d.]+)%(, frame \d+ ms)?$")


def check_captions(lines):
    """Each frame's caption names the step that frame rendered."""
    captions = [CAPTION.match(line) for line in lines if line.startswith("frame ")]
    t.check(captions and all(captions), "a frame without the caption: %s" % [
        line for line in lines if line.startswith("frame ") and not CAPTION.match(line)][:3])
    for m in captions:
        t.check(m.group(1) == m.group(2), "frame of step %s captioned step %s" % (m.group(1), m.group(2)))
    t.check(all(m.group(5) for m in captions[1:]), "a frame after the first without its frame time")
    t.log("ok: %d frames captioned with their own step, e.g. %s" % (len(captions), captions[-1].group(0)))


def check_overlay(directory, descriptor, display, with_overlay):
    """The caption is drawn: the upper left corner of a frame differs from the
    same frame with --no-overlay, and the rest of the picture does not."""
    bare = os.path.join(directory, "bare.png")
    t.run(t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"), [
        descriptor, "--frames", 1, "--size", "300x300", "--range", "0.1,6.1", "--save", bare, "--show-holes",
        "--no-overlay"], ranks=2), env=t.paraview_env(display), timeout=150)
    a, b = xvfb_screen.read_png(with_overlay), xvfb_screen.read_png(bare)
    width, height = a[0], a[1]
    corner = xvfb_screen.changed_fraction((width, height // 8, a[2][:height // 8]),
                                          (width, height // 8, b[2][:height // 8]), (0, width * 3 // 4))
    rest = xvfb_screen.changed_fraction((width, height // 2, a[2][height // 2:]),
                                        (width, height // 2, b[2][height // 2:]))
    t.check(corner > 0.02, "the caption's corner looks the same without the overlay (%.2f%% differs)" % (100 * corner))
    t.check(rest < 0.01, "the picture below the caption differs without the overlay (%.2f%%)" % (100 * rest))
    t.log("ok: the corner differs from --no-overlay in %.1f%% of its pixels, the rest in %.2f%%" % (
        100 * corner, 100 * rest))


t.main(body)
