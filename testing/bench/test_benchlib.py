"""What the benchmarks share (benchlib.py) under a hostile environment: the
staging directory prestage() makes must be one the stager accepts (not
writable by anyone else) whatever the umask, since the stager refuses a
world-writable one and the benchmark then fails. And the figures the
benchmarks print, from stats json lines written here: a second with nothing
received between steps counts, a step lost whole (no report from the
receiver) counts as lost, and what arrived is the receiver's count, not one
derived from the sender's. Needs no build."""

import json
import math
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

    def receiver_json(self):
        """Two step reports of 100 values (all of step 0, half of step 1) and a status line."""
        stream = {"bytes": 4000, "packets": 4, "landed": 3}
        return self.write_json_lines([
            {"kind": "step", "step": 0, "records": 100, "expected": 100},
            {"kind": "step", "step": 1, "records": 50, "expected": 100, "ghost_records": 10},
            {"kind": "status", "gbps": 1.0, "packets": 4, "rejected": 0, "stale": 1, "duplicates": 0,
             "streams": [stream]}])

    def test_a_step_lost_whole_counts_as_lost(self):
        path = self.receiver_json()
        r = benchlib.received(path, 2, window_seconds=2.0)
        self.assertAlmostEqual(r["loss"], 25.0)
        self.assertEqual((r["steps"], r["steps_lost_whole"]), (2, 0))
        self.assertAlmostEqual(r["voxels_per_s"], 80.0)
        self.assertAlmostEqual(r["placed_gbps"], 4000 * 8e-9 / 2.0)
        self.assertAlmostEqual(r["landed"], 0.75)
        self.assertEqual(r["not_placed"], 1)
        three = benchlib.received(path, 3)
        self.assertAlmostEqual(three["loss"], 50.0)
        self.assertEqual(three["steps_lost_whole"], 1)
        self.assertIsNone(three["voxels_per_s"])

    def test_no_report_at_all_is_every_value_lost(self):
        path = self.write_json_lines([
            {"kind": "status", "gbps": 0.0, "packets": 0, "rejected": 0, "stale": 0, "duplicates": 0,
             "streams": [{"bytes": 0, "packets": 0}]}])
        r = benchlib.received(path, 4)
        self.assertAlmostEqual(r["loss"], 100.0)
        self.assertEqual(r["steps_lost_whole"], 4)

    def test_summarize_counts_loss_over_the_steps_the_shuffler_began_and_arrivals_at_the_receiver(self):
        # Three steps sent at 2 Gbit/s for 1 s each, one of them abandoned; the
        # receiver reports two (step 2 lost whole) and took in 4000 bytes.
        shuffle = self.write_json_lines(
            [{"kind": "step", "step": k, "result": "finished", "packets_sent": 10, "seconds": 1.0, "gbps": 2.0}
             for k in (0, 1)]
            + [{"kind": "step", "step": 2, "result": "abandoned", "packets_sent": 5, "seconds": 0.5, "gbps": 2.0},
               {"kind": "step", "step": 3, "result": "missing"},
               {"kind": "status", "gbps": 2.0}])
        r = benchlib.summarize(shuffle, self.receiver_json(), window_seconds=2.0)
        self.assertAlmostEqual(r["loss"], 50.0)  # 150 of 300 values
        self.assertEqual(r["steps_lost_whole"], 1)
        self.assertAlmostEqual(r["sent_gbps"], 2.0)  # over the finished steps
        self.assertAlmostEqual(r["sent_bytes"], 2 * 2.0 / 8e-9)
        self.assertEqual(r["packets"], 20)
        # What arrived is the receiver's count: no figure derived from the sender's rate.
        self.assertAlmostEqual(r["placed_gbps"], 4000 * 8e-9 / 2.0)
        self.assertNotIn("recv_gbps", r)


class NearestRankTest(unittest.TestCase):
    def test_the_smallest_value_with_q_percent_at_or_below_it(self):
        values = [6, 1, 5, 2, 4, 3]  # in any order
        self.assertEqual(benchlib.nearest_rank(values, 50), 3)   # 3 of 6 at or below
        self.assertEqual(benchlib.nearest_rank(values, 95), 6)
        self.assertEqual(benchlib.nearest_rank(values, 1), 1)
        self.assertTrue(math.isnan(benchlib.nearest_rank([], 50)))


if __name__ == "__main__":
    lib.unittest_main()
