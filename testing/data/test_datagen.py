#!/usr/bin/env python3
"""slabcast-datagen: determinism, physical sanity of the cosmo kind, bad input.

Standard library only (struct/array), so the sizes stay small (<= 48^3).
Env: DATAGEN = path of the slabcast-datagen executable.
"""
import array
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from slabcast_testlib import unittest_main  # noqa: E402

DATAGEN = os.environ.get("DATAGEN", "")


def run(*args):
    return subprocess.run([DATAGEN, *map(str, args)], capture_output=True, text=True, timeout=60)


def generate(out, dims, steps, seed=1, *extra):
    r = run("--out", out, "--dims", ",".join(map(str, dims)), "--steps", steps, "--seed", seed, *extra)
    if r.returncode != 0:
        raise AssertionError("datagen failed: %s" % r.stderr)
    return out


def step_files(out):
    with open(os.path.join(out, "dataset.json")) as f:
        desc = json.load(f)
    return desc, [os.path.join(out, s["file"]) for s in desc["steps"]]


def read_values(path):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    if sys.byteorder != "little":
        a.byteswap()
    return a


def stats(v):
    n = len(v)
    mean = math.fsum(v) / n
    var = math.fsum((x - mean) ** 2 for x in v) / n
    return mean, var


def neighbour_correlation(v, dims, axis):
    """Correlation coefficient of each voxel with its periodic neighbour along axis."""
    nx, ny, nz = dims
    stride = (1, nx, nx * ny)[axis]
    size = dims[axis]
    mean, var = stats(v)
    acc = 0.0
    for i in range(len(v)):
        coord = (i // stride) % size
        j = i + stride if coord + 1 < size else i - (size - 1) * stride
        acc += (v[i] - mean) * (v[j] - mean)
    return acc / len(v) / var


class Workdir(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="datagen-test-")
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)


class DeterminismTest(Workdir):
    def assert_same_bytes(self, a, b):
        _, fa = step_files(a)
        _, fb = step_files(b)
        self.assertEqual([os.path.basename(f) for f in fa], [os.path.basename(f) for f in fb])
        for x, y in zip(fa, fb):
            with open(x, "rb") as f, open(y, "rb") as g:
                self.assertEqual(f.read(), g.read(), "%s differs from %s" % (x, y))

    def test_same_seed_same_bytes(self):
        for kind_args in ([], ["--particles", "1"], ["--kind", "blobs"]):
            a = generate(self.path("a"), (24, 20, 16), 3, 7, *kind_args)
            b = generate(self.path("b"), (24, 20, 16), 3, 7, *kind_args)
            self.assert_same_bytes(a, b)

    def test_threads_do_not_change_bytes(self):
        # 64 planes: the deposit runs in parallel chunks at every step (the
        # chunks are 2 x the particles' reach thick), so the split is exercised.
        for kind_args in ([], ["--particles", "1"]):
            one = generate(self.path("one"), (24, 20, 64), 3, 7, "--threads", 1, *kind_args)
            three = generate(self.path("three"), (24, 20, 64), 3, 7, "--threads", 3, *kind_args)
            self.assert_same_bytes(one, three)

    def test_different_seed_differs(self):
        a = generate(self.path("a"), (32, 32, 32), 2, 7)
        b = generate(self.path("b"), (32, 32, 32), 2, 8)
        _, fa = step_files(a)
        _, fb = step_files(b)
        for x, y in zip(fa, fb):
            with open(x, "rb") as f, open(y, "rb") as g:
                self.assertNotEqual(f.read(), g.read())

    def test_layout(self):
        out = generate(self.path("a"), (24, 20, 16), 3, 1)
        desc, files = step_files(out)
        self.assertEqual(desc["dims"], [24, 20, 16])
        self.assertEqual(desc["name"], "cosmo")  # cosmo is the default kind and names the dataset
        self.assertEqual(len(files), 3)
        for f in files:
            self.assertEqual(os.path.getsize(f), 24 * 20 * 16 * 4)


class CosmoPhysicsTest(Workdir):
    DIMS = (48, 40, 32)  # non-cubic on purpose
    STEPS = 6

    @classmethod
    def setUpClass(cls):
        cls._tmp_class = tempfile.TemporaryDirectory(prefix="datagen-physics-")
        cls.steps = {}
        for particles in (8, 1):
            out = generate(os.path.join(cls._tmp_class.name, "p%d" % particles), cls.DIMS, cls.STEPS, 3,
                           "--particles", particles)
            cls.steps[particles] = [read_values(f) for f in step_files(out)[1]]

    @classmethod
    def tearDownClass(cls):
        cls._tmp_class.cleanup()

    def test_mean_is_one_and_values_positive(self):
        for particles, steps in self.steps.items():
            for s, v in enumerate(steps):
                mean, _ = stats(v)
                self.assertAlmostEqual(mean, 1.0, delta=1e-3, msg="particles %d step %d" % (particles, s))
                self.assertGreater(min(v), 0.0, "particles %d step %d" % (particles, s))

    def test_structure_grows(self):
        for particles, steps in self.steps.items():
            variances = [stats(v)[1] for v in steps]
            for s in range(1, len(variances)):
                self.assertGreater(variances[s], variances[s - 1],
                                   "particles %d: variance fell at step %d: %s" % (particles, s, variances))
            self.assertLess(variances[0], 0.05, "the first step should be nearly uniform")
            self.assertGreater(variances[-1], 1.0, "the last step should be strongly clustered")

    def test_cosmic_web_statistics(self):
        first, last = sorted(self.steps[8][0]), sorted(self.steps[8][-1])
        median = lambda v: v[len(v) // 2]
        # Early: symmetric small fluctuations. Late: most of the volume is underdense
        # (voids) while a little is very dense (filaments, halos).
        self.assertAlmostEqual(median(first), 1.0, delta=0.05)
        self.assertLess(median(last), 0.7)
        self.assertGreater(last[-1], 10.0)

    def test_spatially_correlated(self):
        last = self.steps[8][-1]
        for axis in range(3):
            self.assertGreater(neighbour_correlation(last, self.DIMS, axis), 0.5, "axis %d" % axis)
        # The check can tell: shuffled values (white noise, same histogram) are uncorrelated.
        import random
        shuffled = array.array("f", last)
        random.Random(1).shuffle(shuffled)
        self.assertLess(abs(neighbour_correlation(shuffled, self.DIMS, 0)), 0.1)


class BadInputTest(Workdir):
    def assert_fails(self, args, words):
        r = run(*args)
        self.assertNotEqual(r.returncode, 0, "accepted %s" % (args,))
        for w in words:
            self.assertIn(w, r.stderr, "error for %s does not say %r: %s" % (args, w, r.stderr))

    def test_bad_input(self):
        out = self.path("out")
        blocker = self.path("a-file")
        open(blocker, "w").close()
        self.assert_fails(["--out", out, "--dims", "0,1,1"], ["dims", "0,1,1"])
        self.assert_fails(["--out", out, "--dims", "8,8"], ["dims"])
        self.assert_fails(["--out", out, "--steps", "0"], ["--steps"])
        self.assert_fails(["--out", blocker + "/sub", "--dims", "8,8,8"], ["--out", blocker])
        self.assert_fails(["--out", out, "--kind", "galaxies"], ["--kind"])
        self.assert_fails(["--out", out, "--particles", "2"], ["--particles"])
        self.assert_fails(["--out", out, "--z-start", "1", "--z-end", "2"], ["--z-start"])
        self.assert_fails(["--out", out, "--cell", "0"], ["--cell"])
        self.assertFalse(os.path.exists(os.path.join(out, "dataset.json")))


if __name__ == "__main__":
    if not os.access(DATAGEN, os.X_OK):
        sys.exit("DATAGEN=%r is not an executable" % DATAGEN)
    unittest_main()
