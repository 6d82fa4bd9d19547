"""Record a lossy stream, replay it with its losses (needs root; skips itself
otherwise).

Twenty steps cross the namespace testbed's WAN at exactly 5% loss (16 ms one
way, 1% duplicated, 1% reordered) into a receiver, streams 1 and 3 with a
forward error correction too weak for it (16+1: most groups are rebuilt, some
lose more than one datagram and keep holes), while `slabcast record`
writes every published step and pvpython follows the stream with the live
reader. Then:
- the recording keeps, step by step, the datagrams FEC rebuilt;
- pvpython opens the recording: 20 time steps, each the same values and ages
  as the live reader showed for that step;
- `slabcast replay --losses --speed 1` plays the recording into a second,
  fresh receiver (on loopback), which a second recorder records: every step
  equals the first recording's bit for bit, values and ages, with the same
  holes; and the steps come at the recorded pace, within 5%.

Every step is sent 0.5 s after the last by the controller, and the recorders
hold up to 8 steps in memory for the disk: the comparisons never depend on
one process keeping up with another within a step."""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "plugin"))
import netns_testbed as tb  # noqa: E402
import wan_site  # noqa: E402
from slabcast_testlib import (free_udp_ports, read_json_lines, wait_for,  # noqa: E402
                              unittest_main)
import plugin_testlib  # noqa: E402

DIMS, DEPTH, STREAMS = (96, 96, 64), 16, 4
STEPS = 20
from wan_site import DATA_PORT  # noqa: E402
RATE = "50M"
LOSS = 0.05
INTERVAL_S = 0.5
# A lossy step is published when the next step's first packet comes, the
# last one when no packet of it came for this long (both receivers alike).
STEP_TIMEOUT_MS = 1500
WAIT_S = 120
PACE_TOLERANCE = 0.05


def decoded(path):
    r = subprocess.run(["lz4", "-d", "-c", path], capture_output=True, check=True)
    return r.stdout


class RecordReplayTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = tb.available()
        if why:
            raise unittest.SkipTest(why)
        if subprocess.run(["sh", "-c", "command -v lz4"], capture_output=True).returncode != 0:
            raise unittest.SkipTest("needs the lz4 tool (Debian package lz4) to check the frames")
        if not plugin_testlib.PLUGIN:
            raise unittest.SkipTest("needs the ParaView plugin (SLABCAST_PLUGIN): run it through ctest")
        # pvpython, started as a role below, finds the plugin from here.
        os.environ.update(plugin_testlib.paraview_env())

    def setUp(self):
        self.ws, self.bed, self.dataset, self.key = wan_site.open_site(self, "recreplay", DIMS, STEPS)

    def receiver(self, name, listen, ports, prefix=(), allow=None):
        os.makedirs(self.ws.shm, exist_ok=True)  # removed with the workspace
        shm = os.path.join(self.ws.shm, name)
        r = self.ws.start("receive-" + name, [
            "receive", "--name", name, "--dims", ",".join(map(str, DIMS)), "--slab-depth", str(DEPTH),
            "--listen", listen, "--shm-dir", shm, "--step-timeout", str(STEP_TIMEOUT_MS), "--buffers", "5"]
            + (["--allow", allow] if allow else [])
            + sum((["--stream", "%d:%d" % (k, p)] for k, p in enumerate(ports)), []), prefix=prefix)
        descriptor = os.path.join(shm, name + ".slabcast")
        r.wait_for_text("ready; descriptor", timeout=WAIT_S)
        return r, descriptor

    def recorder(self, name, descriptor):
        out = os.path.join(self.ws.dir, name)
        events = os.path.join(self.ws.dir, name + ".json")
        r = self.ws.start(name, ["record", "--descriptor", descriptor, "--out", out, "--copies", "8",
                                 "--stats-json", events])
        r.wait_for_text("record: following")
        return r, out, events

    def wait_recorded(self, role, events, count):
        wait_for(lambda: len([e for e in read_json_lines(events) if e.get("result") == "recorded"]) >= count,
                 timeout=WAIT_S, what="%s to record %d steps" % (role.name, count), seen=lambda: role.text()[-1500:])

    def send_lossy_stream(self):
        ws, bed = self.ws, self.bed
        wan_site.start_senders(ws, bed, self.dataset, self.key, STREAMS, DEPTH, RATE, WAIT_S,
                               per_stream=lambda k: ["--wire", "run"] + (["--fec", "16+1/1"] if k % 2 else []))
        wan_site.start_relay(ws, bed, STREAMS, LOSS, 7, os.path.join(ws.dir, "relay.json"), WAIT_S)
        r = wan_site.control(bed, self.dataset, self.key, STREAMS, STEPS, INTERVAL_S, WAIT_S)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_lossy_stream_recorded_seen_in_paraview_and_replayed_with_its_losses(self):
        # The first receiver, across the lossy WAN, recorded and watched live.
        receiver, descriptor = self.receiver("wan", tb.RECEIVER, [DATA_PORT + k for k in range(STREAMS)],
                                             prefix=self.bed.prefix("receiver"), allow=tb.SENDER + "/32")
        rec, out, events = self.recorder("record", descriptor)
        live_json = os.path.join(self.ws.dir, "live.json")
        stop_live = os.path.join(self.ws.dir, "stop-live")
        live = self.ws.start("live", [os.path.join(HERE, "..", "plugin", "pv_step_digests.py"), "live", descriptor,
                                      live_json, stop_live], program=plugin_testlib.PVPYTHON)
        self.send_lossy_stream()
        self.wait_recorded(rec, events, STEPS)
        open(stop_live, "w").close()
        self.assertEqual(live.wait(60), 0, live.text()[-2000:])
        self.assertEqual(rec.stop(), 0)
        with open(os.path.join(out, "dataset.json")) as f:
            first = json.load(f)
        self.assertEqual([s["step"] for s in first["steps"]], list(range(STEPS)), rec.text()[-2000:])
        lossy = [s["step"] for s in first["steps"] if s["recorded"]["holes"] > 0]
        self.assertGreater(sum(s["recorded"]["repaired"] for s in first["steps"]), 0,
                           "the recording kept no datagram FEC rebuilt")
        self.assertGreater(len(lossy), STEPS // 2, "5% loss left most steps whole: was the WAN lossy?")

        # ParaView opens the recording as a time series, each step as the live reader showed it.
        digests = os.path.join(self.ws.dir, "recording.json")
        plugin_testlib.pvpython("pv_step_digests.py", "recording", os.path.join(out, "dataset.json"), digests)
        with open(digests) as f:
            recorded = json.load(f)
        with open(live_json) as f:
            shown = json.load(f)
        self.assertEqual(recorded["times"], [float(s) for s in range(STEPS)])
        self.assertGreater(len(shown), STEPS // 2, "the live reader showed few steps: %s" % sorted(shown))
        for step, d in shown.items():
            self.assertEqual(recorded["steps"][step], d,
                             "step %s: the recording differs from what ParaView showed" % step)

        # Replayed with its losses into a fresh receiver, recorded again: the same steps, holes and ages.
        ports = free_udp_ports(STREAMS)
        receiver2, descriptor2 = self.receiver("replayed", "127.0.0.1", ports)
        rec2, out2, events2 = self.recorder("record2", descriptor2)
        replay_json = os.path.join(self.ws.dir, "replay.json")
        to = sum((["--to", "127.0.0.1:%d" % p] for p in ports), [])
        replay = self.ws.start("replay", ["replay", out] + to + ["--losses", "--speed", "1", "--rate", "200M",
                                                                 "--stats-json", replay_json])
        self.assertEqual(replay.wait(WAIT_S), 0, replay.text()[-2000:])
        self.wait_recorded(rec2, events2, STEPS)
        self.assertEqual(rec2.stop(), 0)
        with open(os.path.join(out2, "dataset.json")) as f:
            second = json.load(f)
        self.assertEqual([s["step"] for s in second["steps"]], list(range(STEPS)), rec2.text()[-2000:])
        for a, b in zip(first["steps"], second["steps"]):
            step = a["step"]
            self.assertEqual(decoded(os.path.join(out2, b["file"])), decoded(os.path.join(out, a["file"])),
                             "step %d: replayed values differ" % step)
            self.assertEqual(decoded(os.path.join(out2, b["ages"])), decoded(os.path.join(out, a["ages"])),
                             "step %d: replayed ages differ" % step)
            for key in ("records", "expected", "holes", "complete"):
                self.assertEqual(b["recorded"][key], a["recorded"][key], "step %d: %s" % (step, key))

        # At the recorded pace: each step published as far from the first as it was, within 5%.
        t1 = [s["recorded"]["published_ns"] for s in first["steps"]]
        t2 = [s["recorded"]["published_ns"] for s in second["steps"]]
        span1, span2 = t1[-1] - t1[0], t2[-1] - t2[0]
        off = [abs((b - t2[0]) - (a - t1[0])) / span1 for a, b in zip(t1, t2)]
        print("replay pace: recorded span %.3f s, replayed %.3f s, worst step %.2f%% of the span off" % (
            span1 * 1e-9, span2 * 1e-9, 100 * max(off)), file=sys.stderr)
        self.assertLess(abs(span2 - span1) / span1, PACE_TOLERANCE)
        self.assertLess(max(off), PACE_TOLERANCE, "steps' times off the recorded ones by %s" % off)


if __name__ == "__main__":
    unittest_main()
