"""`slabcast demo` end to end, headless: every role, pvbatch under the demo's
own Xvfb, frames saved. The frames must show the volume and change from step
to step. Needs the plugin build and pvpython (for reading the PNGs)."""

import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from slabcast_testlib import SLABCAST, run_demo_until, unittest_main  # noqa: E402

IMAGE_STATS = os.path.join(os.path.dirname(__file__), "..", "plugin", "pv_image_stats.py")


def image_stats(path, reference=None):
    out = subprocess.run(["pvpython", IMAGE_STATS, path] + ([reference] if reference else []),
                         capture_output=True, text=True, timeout=120)
    line = [l for l in out.stdout.splitlines() if l.startswith("STATS ")]
    assert line, out.stdout + out.stderr
    return {k: float(v) for k, v in (kv.split("=") for kv in line[0].split()[1:])}


class DemoTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="slabcast-demo-test-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_demo(self, *extra, rate="50M", dims="64,64,64", step_interval="0.4", steps_shown=2, steps_logged=0):
        """Streams (--forever) until the renderer has logged frames of
        `steps_shown` different steps and each receiver `steps_logged` step
        outcomes, then stops the demo with Ctrl-C as a user does: however fast
        the stream and however slowly pvbatch starts here. A generous limit
        fails with what was seen. The demo must then end cleanly (exit 0: it
        checks the renderer's exit status on the way out)."""
        out = os.path.join(self.dir, "out")
        self.port = random.randrange(20000, 60000, 1000)
        seen = {"shown": [], "logged": {}}  # the frames' steps, and each side's step outcomes

        def enough():
            render_log = os.path.join(out, "logs", "render.log")
            if os.path.exists(render_log):
                with open(render_log) as f:
                    seen["shown"] = re.findall(r"frame \d+: step (\d+)", f.read())
            for path in glob.glob(os.path.join(out, "logs", "*-receive.json")):
                with open(path) as f:
                    seen["logged"][os.path.basename(path)[:-len("-receive.json")]] = f.read().count('"kind":"step"')
            return len(set(seen["shown"])) >= steps_shown and (
                not steps_logged or min(seen["logged"].values() or [0]) >= steps_logged)

        ended_by_itself, rc, text = run_demo_until(
            [SLABCAST, "demo", "--headless", "--dims", dims, "--dataset-steps", "6", "--forever", "--rate", rate,
             "--step-interval", step_interval, "--size", "480x360", "--out", out, "--cache",
             os.path.join(self.dir, "cache"), "--base-port", str(self.port)] + list(extra),
            os.path.join(self.dir, "demo.log"), enough, limit_s=200)
        shown, logged = seen["shown"], seen["logged"]
        self.assertIsNone(ended_by_itself, "the demo ended by itself (exit code %s):\n%s" % (ended_by_itself,
                                                                                            text[-3000:]))
        self.assertGreaterEqual(len(set(shown)), steps_shown, "after 200 s the renderer had shown steps %s only "
                                "(%d frames); the demo said:\n%s" % (sorted(set(shown)), len(shown), text[-3000:]))
        self.assertGreaterEqual(min(logged.values() or [0]) if steps_logged else 0, steps_logged,
                                "step outcomes logged by each receiver: %s" % logged)
        self.assertEqual(rc, 0, text[-3000:])
        self.assertIn("demo: done", text)
        return out, text

    def test_short_demo_renders_changing_frames_of_the_volume(self):
        out, text = self.run_demo()
        self.assertRegex(text, r"full: step \d+ [0-9.]+ Gbit/s loss [0-9.]+%")
        self.assertRegex(text, r"frame \d+: step \d+")
        frames = sorted(glob.glob(os.path.join(out, "frames", "*.png")))
        self.assertGreaterEqual(len(frames), 2, text)
        for f in frames:
            stats = image_stats(f)
            self.assertEqual((stats["width"], stats["height"]), (480, 360))
            self.assertGreater(stats["lit"], 0.02, "no volume visible in " + f)
        # The 6-step dataset loops, so two frames may show the same step: some frame
        # must differ from the first, not necessarily the last.
        diffs = []
        for f in reversed(frames[1:]):
            diffs.append(image_stats(f, frames[0])["meandiff"])
            if diffs[-1] > 0.05:
                break
        self.assertGreater(max(diffs), 0.05, "the frames do not change from step to step: %s" % diffs)
        with open(os.path.join(out, "logs", "render.log")) as f:
            shown = re.findall(r"frame \d+: step (\d+)", f.read())
        self.assertGreater(len(set(shown)), 1, "the renderer showed one step only")
        self.assertEqual(glob.glob("/dev/shm/slabcast-demo-%d*" % self.port), [], "the demo left shared memory behind")
        self.assert_renderer_started_on_a_whole_step(out, text, "full")
        self.assert_plots(out, "full")
        if shutil.which("ffmpeg"):
            video = os.path.join(out, "demo.mp4")
            self.assertTrue(os.path.exists(video) and os.path.getsize(video) > 1000, "no video although ffmpeg is here")

    def assert_renderer_started_on_a_whole_step(self, out, text, side):
        """The renderer starts once every slab has its first step's outcome,
        not beside the receiver while it still writes that step."""
        started = re.search(r"^(\d\d):(\d\d):(\d\d\.\d+) .*demo: rendering with pvbatch", text, re.M)
        self.assertIsNotNone(started, text)
        h, m, s = started.groups()
        started = int(h) * 3600 + int(m) * 60 + float(s)  # the demo's log: local time of day
        first = {}
        with open(os.path.join(out, "logs", side + "-receive.json")) as f:
            for line in f:
                event = json.loads(line)
                if event.get("kind") in ("step", "step_dropped"):
                    first.setdefault(event["stream"], event["time"])
        self.assertGreaterEqual(len(first), 2, "no step outcomes logged by the receiver")
        for stream, t in first.items():
            lt = time.localtime(t)
            of_day = lt.tm_hour * 3600 + lt.tm_min * 60 + lt.tm_sec + t % 1
            # Across midnight the difference wraps: "after" is less than half a day ahead.
            self.assertLess((started - of_day) % 86400, 43200,
                            "stream %s finished its first step after the renderer started" % stream)

    def assert_plots(self, out, side):
        """The run's figures (`slabcast plot`, tested in e2e_plot) from its roles' --stats-json."""
        for figure in ("throughput", "loss", "latency"):
            path = os.path.join(out, "plots", "%s-%s.png" % (side, figure))
            self.assertTrue(os.path.getsize(path) > 1000 if os.path.exists(path) else False, path + " not written")

    def test_head_to_head_shows_both_volumes_in_one_frame(self):
        out, text = self.run_demo("--head-to-head", "--streams", "8")
        self.assert_plots(out, "full")
        self.assert_plots(out, "eighth")
        self.assertRegex(text, r"full: step \d+ .* \| eighth: step \d+")
        frames = sorted(glob.glob(os.path.join(out, "frames", "*.png")))
        self.assertGreaterEqual(len(frames), 2, text)
        stats = image_stats(frames[-1])
        self.assertEqual((stats["width"], stats["height"]), (480, 360))
        self.assertGreater(stats["lit"], 0.02)
        with open(os.path.join(out, "logs", "render.log")) as f:
            shown = re.findall(r"frame \d+: step (\d+) \| step (\d+)", f.read())
        self.assertTrue(shown, "no head-to-head frame lines")

    def test_formats_compared_at_one_rate_show_what_each_delivers(self):
        """Quad packets (in scan and in the progressive order), raw runs and
        quant:8 runs of the same volume, 10 Mbit/s a stream, a step every 0.4 s,
        the progressive one filling what a step lost from the step itself: quad
        packets carry about half of each step in that time, run packets all of
        it; the progressive quad stream's cut steps are filled from their own
        coarser samples; one frame shows the four."""
        out, text = self.run_demo("--compare-formats", "quad,quad@progressive,run,run/quant:8", rate="10M",
                                  steps_logged=16)
        self.assertRegex(text, r"quad: step \d+ .* \| quad-progressive: step \d+ .* \| run: step \d+ .* \| "
                               r"run-quant-8: step \d+")
        with open(os.path.join(out, "logs", "render.log")) as f:
            shown = re.findall(r"frame \d+: step (\d+) \| step (\d+) \| step (\d+) \| step (\d+)", f.read())
        self.assertTrue(shown, "no frame lines with four volumes")
        stats = image_stats(sorted(glob.glob(os.path.join(out, "frames", "*.png")))[-1])
        self.assertEqual((stats["width"], stats["height"]), (480, 360))
        self.assertGreater(stats["lit"], 0.02)
        arrived, coarse = {}, {}
        for side in ("quad", "quad-progressive", "run", "run-quant-8"):
            with open(os.path.join(out, "logs", side + "-receive.json")) as f:
                steps = [json.loads(l) for l in f if '"kind":"step"' in l]
            # Each stream's last step may be the one Ctrl-C cut short: not what the format delivers.
            # (The records are in the order the steps ended; the dataset's steps come round again.)
            last = {r["stream"]: i for i, r in enumerate(steps)}
            cut = [round(steps[i]["records"] / steps[i]["expected"], 3) for i in last.values()]
            steps = [r for i, r in enumerate(steps) if i != last[r["stream"]]]
            self.assertGreaterEqual(len(steps), 8, side)
            arrived[side] = sum(r["records"] for r in steps) / sum(r["expected"] for r in steps)
            coarse[side] = sum(r["coarse_filled"] for r in steps)
            print("%s: %.3f of %d steps arrived; each stream's last: %s" % (side, arrived[side], len(steps), cut))
        self.assertLess(arrived["quad"], 0.8, arrived)
        self.assertLess(arrived["quad-progressive"], 0.8, arrived)
        self.assertGreater(coarse["quad-progressive"], 0, coarse)  # its receiver fills nearest
        self.assertEqual(coarse["quad"], 0, coarse)  # scan order's, from the step before
        self.assertGreater(arrived["run"], 0.99, arrived)
        self.assertGreater(arrived["run-quant-8"], 0.99, arrived)

    def test_paraview_renders_while_the_receiver_writes_unpaced(self):
        """Unpaced senders, the next step as soon as the last is sent: the
        receiver rewrites the slabs the whole time pvbatch reads and renders
        them. The stream goes on until the renderer has shown 3 different
        steps, however fast either side is here. Nothing may crash; the
        renderer ends cleanly and the stream was really unpaced."""
        out, text = self.run_demo(rate="0", dims="128,128,128", step_interval="0", steps_shown=3)
        with open(os.path.join(out, "logs", "render.log")) as f:
            render = f.read()
        for bad in ("Traceback", "Segmentation", "ERR", "Abort"):
            self.assertNotIn(bad, render)
        frames = re.findall(r"frame \d+: step (\d+)", render)
        rates = [float(g) for g in re.findall(r"full: step \d+ ([0-9.]+) Gbit/s", text)]
        print("unpaced: %d frames of steps %s rendered while the stream reached %.2f Gbit/s" % (
            len(frames), sorted(set(frames)), max(rates or [0])), flush=True)
        self.assertGreater(max(rates or [0]), 1.0, "the stream was not unpaced: %s" % rates)

    def test_missing_dataset_is_named(self):
        r = subprocess.run([SLABCAST, "demo", "--headless", "--dataset", "/nonexistent/ds", "--out",
                            os.path.join(self.dir, "out")], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/nonexistent/ds", r.stdout + r.stderr)

    def test_a_volume_too_large_for_this_machine_is_refused_before_anything_starts(self):
        """64^3 x 2048: 2 buffers a slab alone pass any machine this runs on
        (2048^4 x 10 bytes = 160 TiB); the demo says so with the figures and
        generates, stages and starts nothing."""
        cache, out = os.path.join(self.dir, "cache"), os.path.join(self.dir, "out")
        r = subprocess.run([SLABCAST, "demo", "--headless", "--dims", "2048,2048,2048", "--streams", "32",
                            "--out", out, "--cache", cache], capture_output=True, text=True, timeout=60)
        text = r.stdout + r.stderr
        self.assertNotEqual(r.returncode, 0, text)
        # Headless, the CPU ray marcher draws in place: no level of detail to fall back on.
        self.assertIn("2048x2048x2048 does not fit this machine even with 2 buffers a slab, one step staged:", text)
        self.assertRegex(text, r"/dev/shm\S* has [0-9.]+ [KMGT]iB free")
        self.assertRegex(text, r"memory available")
        self.assertFalse(os.path.exists(cache), "nothing may be generated")
        self.assertFalse(os.path.exists(os.path.join(out, "logs")), "no role may start")


if __name__ == "__main__":
    unittest_main()
