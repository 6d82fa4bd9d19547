"""The sending site of the namespace testbed (netns_testbed.py), as the tests
that stream across its lossy WAN set it up: the stager and one shuffler a
stream on the sender host, sending through impair_relay.py in the WAN
namespace to the receiver host, and the controller on its own host, every
sync authenticated with a key."""

import os
import subprocess
import sys

import netns_testbed as tb
from slabcast_testlib import SLABCAST, Workspace, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_PORT, SYNC_PORT, STAGER_PORT = 9000, 9100, 9200


def open_site(test, name, dims, steps):
    """A test's workspace (named `name`), a testbed, a generated dataset of
    `steps` steps of `dims` and a sync key; closed when the test ends, the
    workspace first (its roles stop: a namespace lives while a process is in
    it). Returns (workspace, testbed, dataset, key)."""
    ws = Workspace(name)
    bed = tb.Testbed()
    test.addCleanup(bed.close)
    test.addCleanup(ws.close)
    dataset = ws.generate("ds", dims, steps)
    key = os.path.join(ws.dir, "sync.key")
    test.assertEqual(ws.run(["keygen", key]).returncode, 0)
    return ws, bed, dataset, key


def start_senders(ws, bed, dataset, key, streams, depth, rate, wait_s, per_stream=lambda k: []):
    """The stager and a shuffler for each stream k, sending to the relay's
    side of the WAN (port DATA_PORT + k) from the sender host, each with
    per_stream(k)'s arguments; returns the shufflers once each listens."""
    auth = ["--key-file", key, "--controller", tb.CONTROLLER]
    ws.start("stage", ["stage", "--dataset", dataset, "--staging", ws.staging, "--streams", "0-%d" % (streams - 1),
                       "--budget", "16M", "--sync", "%s:%d" % (tb.SENDER, STAGER_PORT)] + auth,
             prefix=bed.prefix("sender"))
    shufflers = [ws.start("shuffle%d" % k, [
        "shuffle", "--stream", str(k), "--bind", tb.SENDER, "--to", "%s:%d" % (tb.WAN_SENDER_SIDE, DATA_PORT + k),
        "--staging", ws.staging, "--dataset", dataset, "--slab-depth", str(depth),
        "--sync", "%s:%d" % (tb.SENDER, SYNC_PORT + k), "--rate", rate, "--wait-staged-ms", str(wait_s * 1000)]
        + list(per_stream(k)) + auth, prefix=bed.prefix("sender")) for k in range(streams)]
    wait_for(lambda: all("sync on" in s.text() for s in shufflers), timeout=wait_s, what="the shufflers to start")
    return shufflers


def start_relay(ws, bed, streams, loss, seed, stats, wait_s):
    """impair_relay.py between the sender's side of the WAN and the receiver,
    one route a stream: 16 ms one way, `loss`, 1% duplicated and reordered."""
    routes = sum((["--route", "%s:%d=%s:%d" % (tb.WAN_SENDER_SIDE, DATA_PORT + k, tb.RECEIVER, DATA_PORT + k)]
                  for k in range(streams)), [])
    relay = ws.start("relay", [os.path.join(HERE, "impair_relay.py")] + routes + [
        "--spoof", "--delay-ms", "16", "--loss", str(loss), "--duplicate", "0.01", "--reorder", "0.01",
        "--seed", str(seed), "--stats", stats], prefix=bed.prefix("wan"), program=sys.executable)
    relay.wait_for_text("relay:", timeout=wait_s)
    return relay


def control(bed, dataset, key, streams, steps, interval, wait_s):
    """`slabcast control` from the controller host, steps 0..steps-1 every
    `interval` seconds, to its end; its completed process."""
    return subprocess.run(bed.prefix("controller") + [
        SLABCAST, "control", "--dataset", dataset, "--key-file", key, "--bind", tb.CONTROLLER + ":0",
        "--shuffler", "%s:%d-%d" % (tb.SENDER, SYNC_PORT, SYNC_PORT + streams - 1),
        "--stager", "%s:%d" % (tb.SENDER, STAGER_PORT), "--steps", "0-%d" % (steps - 1),
        "--interval", str(interval), "--done-timeout", "60"], capture_output=True, text=True, timeout=wait_s * 2)
