"""Every step whole across a lossy WAN, with no round trip: forward error
correction (needs root; skips itself otherwise).

Twenty steps cross the namespace testbed's WAN at exactly 5% loss, the paper's
(Balman et al., 2012, section 4), 16 ms one way, 1% duplicated and 1%
reordered, sent by four shufflers with `--fec`, each a different packing path:
run packets (raw, packed on two threads), run packets in lz4 in the
progressive order, quad packets in scan order and quad packets in Morton
order. `slabcast record` keeps every published step. Then:
- every step of every stream was published whole (no hole), and the
  receivers rebuilt datagrams (the loss was real) and left none unrepaired;
- every recorded step holds exactly the values the dataset holds;
- the shufflers' parity is the share their code sets, within the bytes of a
  step's short last groups.

Each code is 16+8: twice as strong as 5% loss needs, so that whether a test
passes does not hang on chance (a group of 24 loses more than 8 datagrams
with odds of about 1 in 10^7). What a code costs against what it rebuilds is
measured by testing/bench/fec_wan.py.

Then parity that follows the loss: one stream with `--fec 32+1-16/1` across
the testbed's lossy delay line (5% at random, 16 ms one way), 40 steps: the
receiver reports the groups' loss after each step, and the shuffler, which
starts at 16 parity datagrams a group, comes down to what 5% needs (6 to 13;
10 by the binomial tail the sender holds a group's failure to), and the
steps stay whole."""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import netns_testbed as tb  # noqa: E402
import wan_site  # noqa: E402
from slabcast_testlib import SLABCAST, Workspace, read_json_lines, source_planes, wait_for, unittest_main  # noqa: E402
from wan_site import DATA_PORT, SYNC_PORT, STAGER_PORT  # noqa: E402

DIMS, DEPTH, STREAMS = (96, 96, 64), 16, 4
STEPS = 20
RATE = "50M"
LOSS = 0.05
FEC = "16+8/2"
INTERVAL_S = 1.0  # a quad packet stream's step with its parity takes 0.6 s at RATE
STEP_TIMEOUT_MS = 1500
WAIT_S = 120
# Each stream a different packing path.
PACKING = [["--wire", "run", "--encode-threads", "2"],
           ["--wire", "run", "--codec", "lz4", "--order", "progressive"],
           ["--wire", "quad", "--order", "scan"],
           ["--wire", "quad", "--order", "morton"]]


def decoded(path):
    return subprocess.run(["lz4", "-d", "-c", path], capture_output=True, check=True).stdout


class FecTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = tb.available()
        if why:
            raise unittest.SkipTest(why)
        if subprocess.run(["sh", "-c", "command -v lz4"], capture_output=True).returncode != 0:
            raise unittest.SkipTest("needs the lz4 tool (Debian package lz4) to read the recording")

    def setUp(self):
        self.ws, self.bed, self.dataset, self.key = wan_site.open_site(self, "fec", DIMS, STEPS)

    def test_every_step_whole_at_5_percent_loss(self):
        ws, bed = self.ws, self.bed
        os.makedirs(ws.shm, exist_ok=True)
        events = os.path.join(ws.dir, "receive.json")
        receiver = ws.start("receive", [
            "receive", "--name", "fec", "--dims", ",".join(map(str, DIMS)), "--slab-depth", str(DEPTH),
            "--listen", tb.RECEIVER, "--shm-dir", ws.shm, "--step-timeout", str(STEP_TIMEOUT_MS),
            "--buffers", "5", "--allow", tb.SENDER + "/32", "--stats-json", events]
            + sum((["--stream", "%d:%d" % (k, DATA_PORT + k)] for k in range(STREAMS)), []),
            prefix=bed.prefix("receiver"))
        receiver.wait_for_text("ready; descriptor", timeout=WAIT_S)
        out = os.path.join(ws.dir, "recording")
        record_events = os.path.join(ws.dir, "record.json")
        recorder = ws.start("record", ["record", "--descriptor", os.path.join(ws.shm, "fec.slabcast"), "--out", out,
                                       "--copies", "8", "--stats-json", record_events])
        recorder.wait_for_text("record: following")

        shuffle_json = [os.path.join(ws.dir, "shuffle%d.json" % k) for k in range(STREAMS)]
        shufflers = wan_site.start_senders(
            ws, bed, self.dataset, self.key, STREAMS, DEPTH, RATE, WAIT_S,
            per_stream=lambda k: ["--fec", FEC, "--stats-json", shuffle_json[k]] + PACKING[k])
        relay_json = os.path.join(ws.dir, "relay.json")
        relay = wan_site.start_relay(ws, bed, STREAMS, LOSS, 11, relay_json, WAIT_S)
        r = wan_site.control(bed, self.dataset, self.key, STREAMS, STEPS, INTERVAL_S, WAIT_S)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        wait_for(lambda: len([e for e in read_json_lines(record_events) if e.get("result") == "recorded"]) >= STEPS,
                 timeout=WAIT_S, what="the recorder to record %d steps" % STEPS, seen=lambda: recorder.text()[-1500:])
        self.assertEqual(recorder.stop(), 0)
        for s in shufflers:
            self.assertEqual(s.stop(), 0, s.text()[-1500:])
        self.assertEqual(relay.stop(), 0)
        self.assertEqual(receiver.stop(), 0, receiver.text()[-1500:])

        # The WAN lost what it was told to, parity included.
        with open(relay_json) as f:
            routes = json.load(f)["routes"]
        for route in routes:
            self.assertEqual(route["kernel_dropped"], 0, "the relay's sockets overflowed: %s" % route)
            self.assertEqual(route["other"], 0, "the relay could not read some datagrams: %s" % route)
            self.assertGreater(route["parity"], 0, "no parity crossed: %s" % route)
            self.assertAlmostEqual(route["dropped"] / route["datagrams"], LOSS, delta=0.01, msg=str(route))

        # Every step of every stream published whole, with datagrams rebuilt and none left unrepaired.
        steps = [e for e in read_json_lines(events) if e.get("kind") == "step"]
        by_stream = {k: sorted(e["step"] for e in steps if e["stream"] == k) for k in range(STREAMS)}
        for k in range(STREAMS):
            self.assertEqual(by_stream[k], list(range(STEPS)), "stream %d's published steps" % k)
        broken = ["stream %d step %d: %d holes" % (e["stream"], e["step"], e["holes"]) for e in steps
                  if not e["complete"]]
        self.assertEqual(broken, [], "steps with holes at 5% loss with FEC " + FEC)
        status = [e for e in read_json_lines(events) if "streams" in e][-1]
        for s in status["streams"]:
            fec = s["fec"]
            print("stream %d: FEC data %d, parity %d, repaired %d, unrepaired %d, malformed %d" % (
                s["stream"], fec["data"], fec["parity"], fec["repaired"], fec["unrepaired"], fec["malformed"]),
                file=sys.stderr)
            self.assertGreater(fec["repaired"], 0, "stream %d repaired nothing: was the WAN lossy?" % s["stream"])
            self.assertEqual(fec["unrepaired"], 0, "stream %d" % s["stream"])
            self.assertEqual(fec["malformed"], 0, "stream %d" % s["stream"])
        self.assertGreater(sum(e["repaired"] for e in steps), 0)

        # Every recorded step holds the dataset's values, bit for bit.
        with open(os.path.join(self.dataset, "dataset.json")) as f:
            files = {s["step"]: s["file"] for s in json.load(f)["steps"]}
        with open(os.path.join(out, "dataset.json")) as f:
            recorded = json.load(f)["steps"]
        self.assertEqual([s["step"] for s in recorded], list(range(STEPS)))
        for s in recorded:
            self.assertEqual(s["recorded"]["holes"], 0, "step %d" % s["step"])
            want = source_planes(self.dataset, files[s["step"]], DIMS, 0, DIMS[2])
            self.assertEqual(decoded(os.path.join(out, s["file"])), want, "step %d: values differ" % s["step"])

        # Parity in the share the code sets: 8 for every 16, more where a step's last groups are short.
        for k, path in enumerate(shuffle_json):
            last = [e for e in read_json_lines(path) if "parity_bytes" in e][-1]
            share = last["parity_bytes"] / last["bytes"]
            print("stream %d: parity %.1f%% of %d bytes" % (k, 100 * share, last["bytes"]), file=sys.stderr)
            self.assertGreaterEqual(share, 8 / 24 * 0.95, "stream %d" % k)
            self.assertLessEqual(share, 0.5, "stream %d" % k)


class AdaptiveFecTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = tb.available(delay=True)
        if why:
            raise unittest.SkipTest(why)

    def test_parity_follows_the_loss_the_receiver_reports(self):
        dims, steps = (96, 96, 64), 40
        ws = Workspace("fec-auto")
        bed = tb.Testbed(delay_ms=16, loss=LOSS, seed=5)
        try:
            dataset = ws.generate("ds", dims, 8)
            os.makedirs(ws.shm, exist_ok=True)
            events = os.path.join(ws.dir, "receive.json")
            receiver = ws.start("receive", [
                "receive", "--name", "auto", "--dims", ",".join(map(str, dims)), "--slab-depth", str(dims[2]),
                "--listen", tb.RECEIVER, "--shm-dir", ws.shm, "--step-timeout", str(STEP_TIMEOUT_MS),
                "--stats-json", events, "--stream", "0:%d" % DATA_PORT], prefix=bed.prefix("receiver"))
            receiver.wait_for_text("ready; descriptor", timeout=WAIT_S)
            ws.start("stage", ["stage", "--dataset", dataset, "--staging", ws.staging, "--streams", "0",
                               "--budget", "16M", "--sync", "127.0.0.1:%d" % STAGER_PORT], prefix=bed.prefix("sender"))
            shuffle_json = os.path.join(ws.dir, "shuffle.json")
            shuffler = ws.start("shuffle", [
                "shuffle", "--stream", "0", "--to", "%s:%d" % (tb.RECEIVER, DATA_PORT), "--staging", ws.staging,
                "--dataset", dataset, "--slab-depth", str(dims[2]), "--sync", "127.0.0.1:%d" % SYNC_PORT,
                "--rate", "100M", "--fec", "32+1-16/1", "--wait-staged-ms", str(WAIT_S * 1000),
                "--stats-json", shuffle_json], prefix=bed.prefix("sender"))
            shuffler.wait_for_text("sync on")
            r = subprocess.run(bed.prefix("sender") + [
                SLABCAST, "control", "--dataset", dataset, "--loop", "--count", str(steps), "--interval", "0.4",
                "--shuffler", "127.0.0.1:%d" % SYNC_PORT, "--stager", "127.0.0.1:%d" % STAGER_PORT,
                "--done-timeout", "60"], capture_output=True, text=True, timeout=WAIT_S * 2)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            wait_for(lambda: len([e for e in read_json_lines(events) if e.get("kind") == "step"]) >= steps,
                     timeout=WAIT_S, what="%d steps published" % steps, seen=lambda: receiver.text()[-1500:])
            self.assertEqual(shuffler.stop(), 0, shuffler.text()[-1500:])
            self.assertEqual(receiver.stop(), 0, receiver.text()[-1500:])

            status = [e for e in read_json_lines(shuffle_json) if "fec_parity" in e][-1]
            changes = [line for line in shuffler.text().splitlines() if "FEC parity" in line]
            print("shuffler: %d loss reports taken; %s" % (status["loss_reports"], "; ".join(changes)),
                  file=sys.stderr)
            self.assertGreater(status["loss_reports"], steps // 2, "few of the receiver's reports reached the sender")
            self.assertTrue(changes, "the parity never moved from 16")
            self.assertTrue(6 <= status["fec_parity"] <= 13, "parity %d a group of 32 at 5%% loss" % status["fec_parity"])
            reports = [e for e in read_json_lines(events) if e.get("kind") == "step"]
            whole = sum(1 for e in reports if e["complete"])
            self.assertGreaterEqual(whole, 0.95 * len(reports), "%d of %d steps whole" % (whole, len(reports)))
            final = [e for e in read_json_lines(events) if "streams" in e][-1]["streams"][0]["fec"]
            self.assertGreater(final["reports"], steps // 2)
            self.assertGreater(final["repaired"], 0)
        finally:
            ws.close()
            bed.close()
        counts = bed.delay_counts()
        print("delay line: %d of %d packets to the receiver lost" % (counts["lost"], counts["lossy_packets"]),
              file=sys.stderr)
        self.assertAlmostEqual(counts["lost"] / counts["lossy_packets"], LOSS, delta=0.015)


if __name__ == "__main__":
    unittest_main()
