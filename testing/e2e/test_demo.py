"""`slabcast demo` end to end, headless: every role, pvbatch under the demo's
own Xvfb, frames saved. The frames must show the volume and change from step
to step. Needs the plugin build and pvpython (for reading the PNGs)."""

import glob
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from slabcast_testlib import SLABCAST  # noqa: E402

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

    def run_demo(self, *extra):
        out = os.path.join(self.dir, "out")
        self.port = random.randrange(20000, 60000, 1000)
        r = subprocess.run([SLABCAST, "demo", "--headless", "--dims", "64,64,64", "--dataset-steps", "6",
                            "--count", "20", "--rate", "50M", "--step-interval", "0.4", "--size", "480x360", "--out", out,
                            "--cache", os.path.join(self.dir, "cache"),
                            "--base-port", str(self.port)] + list(extra),
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return out, r.stdout + r.stderr

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
        if shutil.which("ffmpeg"):
            video = os.path.join(out, "demo.mp4")
            self.assertTrue(os.path.exists(video) and os.path.getsize(video) > 1000, "no video although ffmpeg is here")

    def test_head_to_head_shows_both_volumes_in_one_frame(self):
        out, text = self.run_demo("--head-to-head", "--streams", "8")
        self.assertRegex(text, r"full: step \d+ .* \| eighth: step \d+")
        frames = sorted(glob.glob(os.path.join(out, "frames", "*.png")))
        self.assertGreaterEqual(len(frames), 2, text)
        stats = image_stats(frames[-1])
        self.assertEqual((stats["width"], stats["height"]), (480, 360))
        self.assertGreater(stats["lit"], 0.02)
        with open(os.path.join(out, "logs", "render.log")) as f:
            shown = re.findall(r"frame \d+: step (\d+) \| step (\d+)", f.read())
        self.assertTrue(shown, "no head-to-head frame lines")

    def test_missing_dataset_is_named(self):
        r = subprocess.run([SLABCAST, "demo", "--headless", "--dataset", "/nonexistent/ds", "--out",
                            os.path.join(self.dir, "out")], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/nonexistent/ds", r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
