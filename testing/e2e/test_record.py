"""`slabcast record` beside a live receiver on loopback (stage + 4 shufflers +
controller + receiver, a generated 64^3 volume in 4 slabs): every recorded
step equals what was sent, bit for bit, with its ages and report; the
recording stages and streams again like any dataset; and a recorder killed
with SIGKILL, a receiver restarted or a disk that fills up leave every step
the recording lists whole.

The controller sends one step at a time and the test waits for the recorder
to report it before the next: what it checks never depends on how fast one
process runs against another."""

import json
import os
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from slabcast_testlib import Workspace, read_json_lines, read_slab_header, read_slab_values, wait_for, \
    unittest_main  # noqa: E402
from test_pipeline import DIMS, STREAMS, Deployment, dataset_steps  # noqa: E402
from test_shm_full import PrivateMountsTest, SmallTmpfs  # noqa: E402

STEP_BYTES = DIMS[0] * DIMS[1] * DIMS[2] * 4


def decoded(path):
    """A recorded step file's bytes: LZ4 frames through the `lz4` tool (which
    checks the frame's checksum), raw files as they are."""
    if path.endswith(".lz4"):
        r = subprocess.run(["lz4", "-d", "-c", path], capture_output=True, check=True)
        return r.stdout
    with open(path, "rb") as f:
        return f.read()


def recording(out):
    with open(os.path.join(out, "dataset.json")) as f:
        return json.load(f)


def recorded_events(path):
    return [e for e in read_json_lines(path) if e.get("kind") == "step" and e.get("result") == "recorded"]


class RecordTest(unittest.TestCase):
    def setUp(self):
        if subprocess.run(["sh", "-c", "command -v lz4"], capture_output=True).returncode != 0:
            self.skipTest("needs the lz4 tool (Debian package lz4) to check the frames")
        self.ws = Workspace("record")
        self.dataset = self.ws.generate("ds", DIMS, 4)
        self.files = dataset_steps(self.dataset)
        self.sources = {s: decoded(os.path.join(self.dataset, f)) for s, f in self.files.items()}

    def tearDown(self):
        self.ws.close()

    def start_recorder(self, d, out, *args, name="record"):
        self.rec_json = os.path.join(self.ws.dir, name + ".json")
        return self.ws.start(name, ["record", "--descriptor", d.descriptor, "--out", out,
                                    "--stats-json", self.rec_json] + list(args))

    def send_and_record(self, d, rec, step, recorded_before):
        """Sends one step and waits until the recorder reports it written."""
        d.control("--steps", str(step))
        wait_for(lambda: len(recorded_events(self.rec_json)) > recorded_before,
                 what="the recorder to write step %d" % step,
                 seen=lambda: (rec.text()[-1500:], [read_slab_header(d.slab_path(k))["last_step"]
                                                    for k in range(STREAMS)]))
        return recorded_events(self.rec_json)[-1]

    def assert_whole(self, out):
        """Every listed step's files decode (checksums checked) to a step that
        was sent, and nothing else lies in the directory."""
        rec = recording(out)
        listed = {"dataset.json"}
        for s in rec["steps"]:
            self.assertEqual(decoded(os.path.join(out, s["file"])), self.sources[s["step"]],
                             "recorded step %d is not what was sent" % s["step"])
            ages = decoded(os.path.join(out, s["ages"]))
            self.assertEqual(len(ages), STEP_BYTES // 4)
            listed.update([s["file"], s["ages"]])
        self.assertEqual(set(os.listdir(out)), listed)
        return rec

    def test_records_each_step_bit_for_bit_and_the_recording_streams_again(self):
        d = Deployment(self.ws, self.dataset)
        out = os.path.join(self.ws.dir, "rec")
        rec = self.start_recorder(d, out)
        rec.wait_for_text("record: following")
        try:
            for step in range(4):
                event = self.send_and_record(d, rec, step, step)
                self.assertEqual(event["step"], step)
            # What the recording holds is what the slabs hold now.
            last = decoded(os.path.join(out, recording(out)["steps"][-1]["file"]))
            for k in range(STREAMS):
                h = read_slab_header(d.slab_path(k))
                self.assertEqual(read_slab_values(d.slab_path(k))[(h["z_begin"] - h["stored_z_begin"]) * 64 * 64 * 4:],
                                 last[h["z_begin"] * 64 * 64 * 4:h["z_end"] * 64 * 64 * 4])
            self.assertEqual(rec.stop(), 0)
        except Exception:
            d.print_logs(rec)
            raise
        r = self.assert_whole(out)
        self.assertEqual([s["step"] for s in r["steps"]], [0, 1, 2, 3])
        for s in r["steps"]:
            self.assertEqual(s["codec"], "lz4")
            self.assertEqual(decoded(os.path.join(out, s["ages"])), bytes(STEP_BYTES // 4),
                             "step %d came whole: every age is 0" % s["step"])
            self.assertTrue(s["recorded"]["complete"])
            self.assertEqual(s["recorded"]["records"], s["recorded"]["expected"])
            self.assertEqual(s["recorded"]["holes"], 0)
            self.assertGreater(s["recorded"]["published_ns"], 0)
        self.assertEqual(r["recording"]["steps_recorded"], 4)
        self.assertEqual(r["recording"]["steps_skipped"], 0)
        d.stop_all()

        # The recording is a dataset: stage (decoding its LZ4 steps) and stream it.
        again = Deployment(self.ws, out, name="again")
        again.control("--steps", "2")
        wait_for(lambda: all(read_slab_header(again.slab_path(k))["last_step"] == 2 for k in range(STREAMS)),
                 what="step 2 of the recording at every slab")
        for k in range(STREAMS):
            h = read_slab_header(again.slab_path(k))
            want = self.sources[2][h["stored_z_begin"] * 64 * 64 * 4:h["z_end"] * 64 * 64 * 4]
            self.assertEqual(read_slab_values(again.slab_path(k)), want, "slab %d of the replayed step 2" % k)
        again.stop_all()

    def test_sigkill_and_a_restarted_receiver_leave_every_listed_step_whole(self):
        d = Deployment(self.ws, self.dataset)
        out = os.path.join(self.ws.dir, "rec")
        rec = self.start_recorder(d, out)
        rec.wait_for_text("record: following")
        try:
            for step in range(3):
                self.send_and_record(d, rec, step, step)
            # Killed while a step is on its way: nothing it left claims to be whole.
            d.control("--steps", "3")
            rec.proc.send_signal(signal.SIGKILL)
            rec.wait()
            r = self.assert_whole_after_kill(out)
            self.assertGreaterEqual(len(r["steps"]), 3)

            # The receiver restarts (its slabs re-attached); a new recorder goes on with the ring.
            self.assertEqual(d.receiver.stop(), 0)
            d.receiver = self.ws.start("receive2", d.receiver_args)
            d.receiver.wait_for_text("ready; descriptor")
            rec2 = self.start_recorder(d, out, name="record2")
            rec2.wait_for_text("goes on with")
            for n, step in enumerate([0, 1]):
                self.send_and_record(d, rec2, step, n)
            self.assertEqual(rec2.stop(), 0)
        except Exception:
            d.print_logs(rec)
            raise
        r = self.assert_whole(out)
        steps = [s["step"] for s in r["steps"]]
        self.assertEqual(sorted(steps), sorted(set(steps)), "a step is listed once")
        self.assertEqual(steps[-2:], [0, 1], "the newest recording of a step is listed last")
        d.stop_all()

    def assert_whole_after_kill(self, out):
        """As assert_whole, but a killed run may leave files it never listed
        (removed by the next run): those are only counted here."""
        rec = recording(out)
        for s in rec["steps"]:
            self.assertEqual(decoded(os.path.join(out, s["file"])), self.sources[s["step"]])
            self.assertEqual(len(decoded(os.path.join(out, s["ages"]))), STEP_BYTES // 4)
        return rec


class FullDiskTest(PrivateMountsTest):
    """The recording on a tmpfs of 4 MiB: about three raw 64^3 steps fit."""

    def setUp(self):
        if subprocess.run(["sh", "-c", "command -v lz4"], capture_output=True).returncode != 0:
            self.skipTest("needs the lz4 tool (Debian package lz4) to check the frames")
        self.ws = Workspace("recordfull")
        self.tmpfs = SmallTmpfs(4)
        self.dataset = self.ws.generate("ds", DIMS, 4)
        self.files = dataset_steps(self.dataset)

    def tearDown(self):
        self.ws.close()
        self.tmpfs.close()

    def record_steps(self, out, *args):
        d = Deployment(self.ws, self.dataset, name="full%d" % len(self.ws.roles))
        rec_json = os.path.join(self.ws.dir, "full%d.json" % len(self.ws.roles))
        rec = self.ws.start("record%d" % len(self.ws.roles), ["record", "--descriptor", d.descriptor, "--out", out,
                                                                "--codec", "none", "--stats-json", rec_json]
                            + list(args))
        rec.wait_for_text("record: following")
        try:
            for n, step in enumerate([0, 1, 2, 3, 0, 1]):
                d.control("--steps", str(step))
                wait_for(lambda: len([e for e in read_json_lines(rec_json) if e.get("kind") == "step"]) > n,
                         what="the recorder to record or skip step %d" % step, seen=lambda: rec.text()[-1500:])
            self.assertEqual(rec.stop(), 0)
        except Exception:
            d.print_logs(rec)
            raise
        d.stop_all()
        return [e for e in read_json_lines(rec_json) if e.get("kind") == "step"], rec.text()

    def assert_listed_steps_whole(self, out):
        with open(os.path.join(out, "dataset.json")) as f:
            rec = json.load(f)
        for s in rec["steps"]:
            with open(os.path.join(out, s["file"]), "rb") as f:
                with open(os.path.join(self.dataset, self.files[s["step"]]), "rb") as g:
                    self.assertEqual(f.read(), g.read(), "listed step %d is damaged" % s["step"])
        self.assertFalse([n for n in os.listdir(out) if n.endswith(".part")], "a half-written file was left")
        return rec

    def test_without_a_budget_a_full_disk_skips_steps_and_counts_them(self):
        out = os.path.join(self.tmpfs.dir, "rec")
        events, log = self.record_steps(out)
        skipped = [e for e in events if e["result"] == "skipped"]
        self.assertTrue(skipped, "4 MiB holds three steps, not six:\n" + log[-2000:])
        self.assertIn("the disk is full", log)
        rec = self.assert_listed_steps_whole(out)
        # Three steps of 1.25 MiB fill it; a step heard again needs room for
        # its new files before the old ones go.
        self.assertEqual([s["step"] for s in rec["steps"]], [0, 1, 2], log[-2000:])
        self.assertEqual(len(skipped), 3)
        self.assertEqual(rec["recording"]["steps_skipped"], 3)

    def test_with_a_budget_past_the_disk_the_ring_drops_its_oldest(self):
        out = os.path.join(self.tmpfs.dir, "rec")
        events, log = self.record_steps(out, "--budget", "1G")
        self.assertEqual([e["result"] for e in events], ["recorded"] * 6, log[-2000:])
        rec = self.assert_listed_steps_whole(out)
        self.assertEqual([s["step"] for s in rec["steps"]], [3, 0, 1], log[-2000:])
        self.assertEqual(rec["recording"]["steps_evicted"], 3)

    def test_steps_counts_steps_recorded_not_steps_taken(self):
        """--steps 3 with a ballast file that leaves room for two steps: the
        third is skipped (disk full), the ballast goes, and the recorder
        records a third step before it stops, instead of stopping with two."""
        out = os.path.join(self.tmpfs.dir, "rec")
        ballast = os.path.join(self.tmpfs.dir, "ballast")
        with open(ballast, "wb") as f:
            f.write(b"\1" * (STEP_BYTES * 5 // 4))  # 4 MiB less 1.25 MiB: room for two steps
        d = Deployment(self.ws, self.dataset, name="counted")
        rec_json = os.path.join(self.ws.dir, "counted.json")
        rec = self.ws.start("record", ["record", "--descriptor", d.descriptor, "--out", out, "--codec", "none",
                                       "--stats-json", rec_json, "--steps", "3"])
        rec.wait_for_text("record: following")
        try:
            for n, step in enumerate([0, 1, 2]):
                d.control("--steps", str(step))
                wait_for(lambda: len([e for e in read_json_lines(rec_json) if e.get("kind") == "step"]) > n,
                         what="the recorder to record or skip step %d" % step, seen=lambda: rec.text()[-1500:])
            results = [e["result"] for e in read_json_lines(rec_json) if e.get("kind") == "step"]
            self.assertEqual(results, ["recorded", "recorded", "skipped"], rec.text()[-2000:])
            self.assertTrue(rec.alive(), "record --steps 3 stopped with two steps recorded:\n" + rec.text()[-2000:])
            os.unlink(ballast)
            d.control("--steps", "3")
            self.assertEqual(rec.wait(), 0, rec.text()[-2000:])
        except Exception:
            d.print_logs(rec)
            raise
        d.stop_all()
        self.assertEqual([s["step"] for s in self.assert_listed_steps_whole(out)["steps"]], [0, 1, 3])


if __name__ == "__main__":
    unittest_main()
