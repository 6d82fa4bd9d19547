"""What the benchmarks share (benchlib.py) under a hostile environment: the
staging directory prestage() makes must be one the stager accepts (not
writable by anyone else) whatever the umask, since the stager refuses a
world-writable one and the benchmark then fails. And the receiver's figures
the benchmarks print, from stats json lines written here: a second with
nothing received between steps counts, and a step lost whole counts as lost.
Needs no build."""

import json
import os
import stat
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402
from benchlib import lib  # noqa: E402


class PrestageTest(unittest.TestCase):
    def test_the_staging_directory_is_private_under_any_umask(self):
        for umask in (0o000, 0o022, 0o077):
            old = os.umask(umask)
            ws = lib.Workspace("benchlib")
            try:
                data = tempfile.mkdtemp(dir=ws.dir)
                with open(os.path.join(data, "dataset.json"), "w") as f:
                    f.write("{}")
                with open(os.path.join(data, "step_0000.raw"), "wb") as f:
                    f.write(b"\1" * 4096)
                self.assertFalse(benchlib.prestage(ws, data, huge_pages=False))
                mode = stat.S_IMODE(os.stat(ws.staging).st_mode)
                self.assertEqual(mode, 0o700, "umask %03o gave staging mode %03o" % (umask, mode))
                with open(os.path.join(ws.staging, "step_0000.raw"), "rb") as f:
                    self.assertEqual(f.read(), b"\1" * 4096)
                self.assertFalse(os.path.exists(os.path.join(ws.staging, "dataset.json")))
                # Already there with a mode anyone may write to (a run under umask 0 before the fix): set anew.
                os.chmod(ws.staging, 0o777)
                benchlib.prestage(ws, data, huge_pages=False)
                self.assertEqual(stat.S_IMODE(os.stat(ws.staging).st_mode), 0o700)
            finally:
                os.umask(old)
                ws.close()


class ReceivedTest(unittest.TestCase):
    def write_json_lines(self, events):
        fd, path = tempfile.mkstemp(suffix=".json")
        self.addCleanup(os.unlink, path)
        with os.fdopen(fd, "w") as f:
            f.writelines(json.dumps(e) + "\n" for e in events)
        return path

    def test_whole_seconds_keep_an_idle_second_between_the_first_and_last_busy_ones(self):
        status = [{"kind": "status", "gbps": g} for g in (0.0, 3.0, 10.0, 0.0, 10.0, 4.0, 0.0)]
        self.assertEqual(benchlib.whole_seconds(status + [{"kind": "step"}]), [10.0, 0.0, 10.0])
        self.assertEqual(benchlib.whole_seconds([{"kind": "status", "gbps": 0.0}]), [])

    def test_a_step_lost_whole_counts_when_the_values_sent_are_given(self):
        stream = {"bytes": 4000, "packets": 4, "landed": 3}
        path = self.write_json_lines([
            {"kind": "step", "step": 0, "records": 100, "expected": 100},
            {"kind": "step", "step": 1, "records": 50, "expected": 100, "ghost_records": 10},
            {"kind": "status", "gbps": 1.0, "packets": 4, "rejected": 0, "stale": 1, "duplicates": 0,
             "streams": [stream]}])
        r = benchlib.received(path, window_seconds=2.0)
        self.assertAlmostEqual(r["loss"], 25.0)
        self.assertAlmostEqual(r["voxels_per_s"], 80.0)
        self.assertAlmostEqual(r["placed_gbps"], 4000 * 8e-9 / 2.0)
        self.assertAlmostEqual(r["landed"], 0.75)
        self.assertEqual(r["not_placed"], 1)
        self.assertAlmostEqual(benchlib.received(path, values_sent=300)["loss"], 50.0)
        self.assertIsNone(benchlib.received(path)["voxels_per_s"])


if __name__ == "__main__":
    lib.unittest_main()
