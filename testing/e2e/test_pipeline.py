"""End to end on loopback: stage + 4 shufflers + controller + receiver as
separate processes, a generated 64^3 volume of several steps in 4 slabs."""

import array
import json
import os
import shutil
import socket
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from slabcast_testlib import (Workspace, free_tcp_port, free_udp_ports, read_json_lines, read_slab_ages, read_slab_header,
                              read_slab_values, source_planes, udp_queued_bytes, wait_for, unittest_main, zfp_bounds,
                              quant_bound)

DIMS = (64, 64, 64)
DEPTH = 16
STREAMS = 4
# The controller's --interval when it cuts steps 0 and 1 short (cut_steps_0_and_1).
CUT_INTERVAL_S = 0.5


class Deployment:
    """Every role of one sender host and one receiver host, on loopback."""

    def __init__(self, ws, dataset, rate="500M", name="e2e", wait_staged_ms=10000, order="scan", key_file=None,
                 stage_from=None, wire="quad", codec="none", receive_args=(), shuffle_args=None):
        """stage_from: (HOST:PORT, dataset path beneath that server's root): the
        stager pulls the steps from a `slabcast serve --allow-pull` there.
        wire, codec: the shufflers' packet format and run packets' codec, one
        for all or a list, one a stream.
        wait_staged_ms: long by default, so that a stager slow to stage a step
        (a loaded machine; steps 0.. again after a lap) does not make a step
        "missing"; tests that want a missing step give their own."""
        wires = wire if isinstance(wire, list) else [wire] * STREAMS
        codecs = codec if isinstance(codec, list) else [codec] * STREAMS
        shuffle_args = shuffle_args or [[]] * STREAMS
        self.ws, self.dataset, self.name = ws, dataset, name
        self.auth = ["--key-file", key_file] if key_file else []
        sync_from = self.auth + (["--controller", "127.0.0.1"] if key_file else [])
        ports = free_udp_ports(2 * STREAMS + 1)
        self.data_ports, self.sync_ports, self.stager_port = ports[:STREAMS], ports[STREAMS:2 * STREAMS], ports[-1]
        self.recv_json = os.path.join(ws.dir, name + "-receive.json")
        self.receiver_args = [
            "receive", "--name", name, "--dims", ",".join(map(str, DIMS)), "--slab-depth", str(DEPTH),
            "--listen", "127.0.0.1", "--shm-dir", ws.shm, "--stats-json", self.recv_json,
        ] + list(receive_args) + sum((["--stream", "%d:%d" % (k, p)] for k, p in enumerate(self.data_ports)), [])
        self.receiver = ws.start("receive", self.receiver_args)
        self.descriptor = os.path.join(ws.shm, name + ".slabcast")
        wait_for(lambda: os.path.exists(self.descriptor), what="the receiver's descriptor")
        self.stage_json = os.path.join(ws.dir, name + "-stage.json")
        source = ["--from", stage_from[0], "--dataset", stage_from[1]] if stage_from else ["--dataset", dataset]
        self.stager = ws.start("stage", [
            "stage"] + source + ["--staging", ws.staging, "--streams", "0-%d" % (STREAMS - 1),
            "--budget", "3M", "--sync", "127.0.0.1:%d" % self.stager_port, "--stats-json", self.stage_json] + sync_from)
        self.shuffle_json = []
        self.shufflers = []
        for k in range(STREAMS):
            path = os.path.join(ws.dir, "%s-shuffle%d.json" % (name, k))
            self.shuffle_json.append(path)
            self.shufflers.append(ws.start("shuffle%d" % k, [
                "shuffle", "--stream", str(k), "--to", "127.0.0.1:%d" % self.data_ports[k], "--staging", ws.staging,
                "--dataset", dataset, "--slab-depth", str(DEPTH), "--sync", "127.0.0.1:%d" % self.sync_ports[k],
                "--rate", rate, "--wait-staged-ms", str(wait_staged_ms), "--order", order, "--wire", wires[k],
                "--codec", codecs[k],
                "--stats-json", path]
                + shuffle_args[k] + sync_from))
        # Every role past its startup checks and listening for syncs: the
        # stager's first window is being staged, and no sync is sent to a
        # socket not yet bound.
        for role in [self.stager] + self.shufflers:
            role.wait_for_text("sync on")

    def control(self, *args):
        """Runs the controller to its end. Without --interval it waits for every
        shuffler's finish, up to --done-timeout (20 s) a step: the run's limit
        leaves it time to say which shuffler it did not hear from, even for
        test_plot's 6 steps."""
        shufflers = sum((["--shuffler", "127.0.0.1:%d" % p] for p in self.sync_ports), [])
        r = self.ws.run(["control", "--dataset", self.dataset, "--stager", "127.0.0.1:%d" % self.stager_port,
                         "--done-timeout", "20"] + self.auth + shufflers + list(args), timeout=180)
        assert r.returncode == 0, r.stderr
        assert "no finish after" not in r.stdout + r.stderr, \
            "the controller did not hear every shuffler finish a step:\n" + r.stdout + r.stderr
        return r

    def slab_path(self, k):
        return os.path.join(self.ws.shm, "%s.slab%d" % (self.name, k))

    def stop_all(self):
        return {r.name: r.stop() for r in [self.receiver, self.stager] + self.shufflers}

    def print_logs(self, *others, tail=3000):
        """The end of every role's log (and of `others`), for a failure to explain itself."""
        for r in [self.receiver, self.stager] + self.shufflers + list(others):
            print("--- %s\n%s" % (r.name, r.text()[-tail:]), file=sys.stderr)


def dataset_steps(dataset):
    with open(os.path.join(dataset, "dataset.json")) as f:
        return {s["step"]: s["file"] for s in json.load(f)["steps"]}


class PipelineTest(unittest.TestCase):
    def setUp(self):
        self.ws = Workspace("pipeline")
        self.dataset = self.ws.generate("ds", DIMS, 4)
        self.files = dataset_steps(self.dataset)

    def tearDown(self):
        self.ws.close()

    def assert_slabs_equal_step(self, d, step):
        for k in range(STREAMS):
            h = read_slab_header(d.slab_path(k))
            expected = source_planes(self.dataset, self.files[step], DIMS, h["stored_z_begin"], h["z_end"])
            self.assertEqual(read_slab_values(d.slab_path(k)), expected,
                             "slab %d differs from step %d (planes %d..%d)" % (k, step, h["stored_z_begin"], h["z_end"] - 1))

    def cut_steps_0_and_1(self, d):
        """Steps 0-2, the controller moving on every CUT_INTERVAL_S (0.5 s),
        faster than a slab goes out (the callers' rates make it ~1.5 s): 0 and
        1 are cut part way, 2 arrives whole. Each shuffler must take a sync
        within the interval (or it passes that step over for the next, and
        nothing is cut), and the controller be no more than ~1 s late (or the
        step is over before the next sync): margins wide enough for a loaded
        machine, where 0.15 s against 0.45 s was not. Steps 0-2 are
        staged first (the stager reads 3 steps ahead from the start): a stager
        slower than two intervals on a loaded machine would otherwise see the
        controller at step 2 before staging 0 and 1, and rightly skip them, so
        the shufflers would report them missing, not abandoned."""
        wait_for(lambda: all(os.path.exists(os.path.join(self.ws.staging, self.files[s])) for s in (0, 1, 2)),
                 what="steps 0-2 staged")
        d.control("--steps", "0-2", "--interval", str(CUT_INTERVAL_S))
        wait_for(lambda: all(read_slab_header(d.slab_path(k))["last_step"] == 2 for k in range(STREAMS)),
                 what="step 2 at every slab")
        self.assert_slabs_equal_step(d, 2)

    def test_with_a_key_only_authenticated_syncs_move_the_shufflers(self):
        key = os.path.join(self.ws.dir, "sync.key")
        r = self.ws.run(["keygen", key])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.stat(key).st_mode & 0o777, 0o600)
        d = Deployment(self.ws, self.dataset, key_file=key)
        # A forged, unauthenticated sync (wire format v1, flags 0) naming step 1.
        location = self.files[1].encode()
        forged = b"SCSY" + struct.pack("<HHQIiHH", 1, 0, 77, 1, 1, len(location), 0) + location
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for p in d.sync_ports:
                s.sendto(forged, ("127.0.0.1", p))
        wait_for(lambda: all("not authenticated" in sh.text() for sh in d.shufflers), what="the shufflers to drop it")
        self.assertTrue(all(read_slab_header(d.slab_path(k))["packets"] == 0 for k in range(STREAMS)))
        d.control("--steps", "2")  # the controller, with the key
        wait_for(lambda: all(read_slab_header(d.slab_path(k))["last_step"] == 2 for k in range(STREAMS)),
                 what="step 2 at every slab")
        self.assert_slabs_equal_step(d, 2)
        self.assertEqual(set(d.stop_all().values()), {0})

    def test_a_backlog_of_syncs_starts_only_the_newest_step(self):
        """Syncs that piled up while the shuffler was busy (a controller faster
        than a loaded host) are passed over for the newest: it is not held up
        waiting --wait-staged-ms for each older step's file, which the stager
        has freed or never staged. The first sync names a file never staged, so
        the shuffler waits 2 s for it while five more such syncs and then
        step 1's pile up."""
        d = Deployment(self.ws, self.dataset, wait_staged_ms=2000)
        wait_for(lambda: os.path.exists(os.path.join(self.ws.staging, self.files[1])), what="step 1 staged")

        def sync(seq, step, location):
            return b"SCSY" + struct.pack("<HHQIiHH", 1, 0, 78, seq, step, len(location), 0) + location

        backlog = [sync(seq, 100 + seq, b"not-staged-%d.raw" % seq) for seq in range(1, 7)]
        backlog.append(sync(7, 1, self.files[1].encode()))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for i, packet in enumerate(backlog):
                for p in d.sync_ports:
                    s.sendto(packet, ("127.0.0.1", p))
                if i == 0:
                    # Every shuffler has read the first sync (its socket's queue
                    # is empty) and waits for that one's file: the rest pile up.
                    wait_for(lambda: all(udp_queued_bytes(p) == 0 for p in d.sync_ports),
                             what="every shuffler to take the first sync",
                             seen=lambda: {p: udp_queued_bytes(p) for p in d.sync_ports})
        wait_for(lambda: all(read_slab_header(d.slab_path(k))["last_step"] == 1 for k in range(STREAMS)),
                 what="step 1 at every slab")
        self.assert_slabs_equal_step(d, 1)
        self.assertEqual(set(d.stop_all().values()), {0})
        for k in range(STREAMS):
            events = [e for e in read_json_lines(d.shuffle_json[k]) if e.get("kind") == "step"]
            self.assertEqual([(e["step"], e["result"]) for e in events], [(101, "missing"), (1, "finished")], events)

    def test_sigterm_stops_every_role_cleanly(self):
        """Each role exits 0 on SIGTERM, the controller in the middle of a loop,
        and the receiver takes its shared memory with it."""
        d = Deployment(self.ws, self.dataset)
        shufflers = sum((["--shuffler", "127.0.0.1:%d" % p] for p in d.sync_ports), [])
        control = self.ws.start("control", ["control", "--dataset", self.dataset, "--loop", "--interval", "0.2"]
                                + shufflers)
        wait_for(lambda: read_slab_header(d.slab_path(0))["last_step"] >= 0, what="a step")
        self.assertEqual(control.stop(), 0)
        self.assertEqual(set(d.stop_all().values()), {0})
        self.assertFalse(os.path.exists(d.descriptor), "the receiver left its descriptor")

    def test_every_step_arrives_bit_for_bit(self):
        d = Deployment(self.ws, self.dataset)
        with open(d.descriptor) as f:
            desc = json.load(f)
        self.assertEqual(desc["dims"], list(DIMS))
        self.assertEqual(sorted(s["index"] for s in desc["slabs"]), list(range(STREAMS)))
        for step in range(4):
            d.control("--steps", str(step))
            wait_for(lambda: all(read_slab_header(d.slab_path(k))["last_step"] == step for k in range(STREAMS)),
                     what="step %d at every slab" % step)
            self.assert_slabs_equal_step(d, step)
        # The stager logs a step staged just after it put the file in place,
        # where a shuffler may already be sending it.
        wait_for(lambda: len([e for e in read_json_lines(d.stage_json) if e.get("result") == "staged"]) >= 4,
                 what="4 steps staged", seen=lambda: read_json_lines(d.stage_json))
        codes = d.stop_all()
        self.assertEqual(set(codes.values()), {0}, codes)
        reports = [e for e in read_json_lines(d.recv_json) if e.get("kind") == "step"]
        self.assertEqual(len(reports), 4 * STREAMS)
        for r in reports:
            self.assertTrue(r["complete"], r)
            self.assertEqual(r["loss_percent"], 0.0)
            self.assertEqual(r["rejected"], 0)
        for r in reports:  # the ghost plane below each slab but the first travelled with its stream
            self.assertEqual(r["expected"], DIMS[0] * DIMS[1] * DEPTH)
            self.assertEqual(r["ghost_records"], 0 if r["stream"] == 0 else DIMS[0] * DIMS[1])
        staged = [e for e in read_json_lines(d.stage_json) if e.get("result") == "staged"]
        self.assertGreaterEqual(len(staged), 4)
        self.assertEqual(os.listdir(self.ws.staging), [], "the stager left staged steps behind")
        self.assertIn("Gbit/s", d.receiver.text())

    def test_the_stager_pulls_the_steps_from_a_data_host(self):
        """stage --from: every step comes from a `serve --allow-pull` on the data
        host through the data mover, and arrives bit for bit at the receiver.
        One key serves the deployment: it signs the syncs, and the stager and
        the data host prove to each other that they hold it on every stream;
        the data host requires encryption, and the stager follows."""
        key = os.path.join(self.ws.dir, "site.key")
        self.assertEqual(self.ws.run(["keygen", key]).returncode, 0)
        port = free_tcp_port()
        data_host = self.ws.start("serve", ["serve", "--root", os.path.dirname(self.dataset), "--listen", "127.0.0.1",
                                            "--port", str(port), "--allow-pull", "--allow", "127.0.0.1/32",
                                            "--key-file", key, "--require-encryption"])
        wait_for(lambda: "serve:" in data_host.text(), what="the data host's server")
        d = Deployment(self.ws, self.dataset, stage_from=("127.0.0.1:%d" % port, os.path.basename(self.dataset)),
                       key_file=key)
        staged = lambda: [e for e in read_json_lines(d.stage_json) if e.get("result") == "staged"]  # noqa: E731
        try:
            for step in range(4):
                d.control("--steps", str(step))
                wait_for(lambda: all(read_slab_header(d.slab_path(k))["last_step"] == step for k in range(STREAMS)),
                         what="step %d at every slab" % step)
                self.assert_slabs_equal_step(d, step)
            wait_for(lambda: len(staged()) >= 4, what="4 steps staged")  # the file is in place just before the event
        except AssertionError:
            d.print_logs(data_host)
            raise
        pulls = lambda: [l for l in data_host.text().splitlines() if "serve: pull" in l and "done" in l]  # noqa: E731
        wait_for(lambda: len(pulls()) >= 5, what="the descriptor and each step pulled")  # logged after the reply
        pulls = pulls()
        self.assertTrue(all('"failed":[]' in l for l in pulls), pulls)
        self.assertTrue(all("encrypted (" in l for l in pulls), pulls)  # the stager followed the data host
        # A stream the stager opened as a pull ended is told goodbye, not left
        # waiting for a transfer of that id (which held the pull 5 s).
        self.assertNotIn("unknown transfer", data_host.text())
        self.assertEqual(set(d.stop_all().values()), {0})
        self.assertEqual(os.listdir(self.ws.staging), [], "the stager left something behind")

    def test_a_data_host_that_does_not_give_files_out_is_named(self):
        port = free_tcp_port()
        data_host = self.ws.start("serve", ["serve", "--root", os.path.dirname(self.dataset), "--listen", "127.0.0.1",
                                            "--port", str(port)])
        wait_for(lambda: "serve:" in data_host.text(), what="the data host's server")
        r = self.ws.run(["stage", "--from", "127.0.0.1:%d" % port, "--dataset", os.path.basename(self.dataset),
                         "--staging", self.ws.staging, "--streams", "0"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("start it with --allow-pull", r.stderr)
        r = self.ws.run(["stage", "--from", "127.0.0.1:%d" % port, "--dataset", "../etc",
                         "--staging", self.ws.staging, "--streams", "0"])
        self.assertNotEqual(r.returncode, 0)
        # A data host with a key gives nothing to a stager without it.
        key = os.path.join(self.ws.dir, "site.key")
        self.assertEqual(self.ws.run(["keygen", key]).returncode, 0)
        keyed_port = free_tcp_port()
        keyed = self.ws.start("serve-keyed", ["serve", "--root", os.path.dirname(self.dataset), "--listen",
                                              "127.0.0.1", "--port", str(keyed_port), "--allow-pull",
                                              "--key-file", key])
        wait_for(lambda: "serve:" in keyed.text(), what="the data host's server with a key")
        r = self.ws.run(["stage", "--from", "127.0.0.1:%d" % keyed_port, "--dataset",
                         os.path.basename(self.dataset), "--staging", self.ws.staging, "--streams", "0"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("the server requires authentication", r.stderr)
        # The client gives up as soon as it has sent its Hello; the server logs
        # the refusal when it has read it, which may be after the client exits.
        wait_for(lambda: "refused a client from 127.0.0.1" in keyed.text(), what="the server to log the refusal",
                 seen=lambda: keyed.text()[-1000:])

    def test_morton_order_arrives_bit_for_bit(self):
        d = Deployment(self.ws, self.dataset, order="morton")
        d.control("--steps", "1-2")
        wait_for(lambda: all(read_slab_header(d.slab_path(k))["last_step"] == 2 for k in range(STREAMS)),
                 what="step 2 at every slab")
        self.assert_slabs_equal_step(d, 2)
        self.assertEqual(set(d.stop_all().values()), {0})
        reports = [e for e in read_json_lines(d.recv_json) if e.get("kind") == "step"]
        self.assertTrue(all(r["complete"] and r["duplicates"] == 0 for r in reports), reports)

    def test_run_packets_arrive_bit_for_bit_beside_quad_packets(self):
        # Half the streams in run packets, half in quad packets, into one receiver.
        wires = ["run", "quad"] * (STREAMS // 2) + ["run"] * (STREAMS % 2)
        d = Deployment(self.ws, self.dataset, wire=wires)
        d.control("--steps", "1-2")
        wait_for(lambda: all(read_slab_header(d.slab_path(k))["last_step"] == 2 for k in range(STREAMS)),
                 what="step 2 at every slab")
        self.assert_slabs_equal_step(d, 2)
        self.assertEqual(set(d.stop_all().values()), {0})
        reports = [e for e in read_json_lines(d.recv_json) if e.get("kind") == "step"]
        self.assertEqual(len(reports), 2 * STREAMS)
        for r in reports:
            self.assertTrue(r["complete"] and r["duplicates"] == 0 and r["rejected"] == 0, r)
            self.assertEqual(r["ghost_records"], 0 if r["stream"] == 0 else DIMS[0] * DIMS[1])
        # A run packet carries 2233 values, a quad packet 560: about 4x fewer packets a step.
        per_step = {r["stream"]: r["packets"] for r in reports if r["step"] == 2}
        values = DIMS[0] * DIMS[1] * (DEPTH + 1)
        for k in range(1, STREAMS):
            self.assertEqual(per_step[k], -(-values // (2233 if wires[k] == "run" else 560)), (k, per_step))

    def test_every_codec_arrives_exact_or_within_its_error_into_one_receiver(self):
        # One receiver takes lz4, zfp:12, quad packets and quant:10 at once;
        # lz4 and quant:10 packed on several threads each, a part of the slab a thread.
        wires, codecs = ["run", "run", "quad", "run"], ["lz4", "zfp:12", "none", "quant:10"]
        threads = [2, 1, 1, 3]
        d = Deployment(self.ws, self.dataset, wire=wires, codec=codecs,
                       shuffle_args=[["--encode-threads", str(n)] for n in threads])
        for k, n in enumerate(threads):
            if n > 1:
                d.shufflers[k].wait_for_text("packed on %d threads" % n)
        d.control("--steps", "0-2")
        wait_for(lambda: all(read_slab_header(d.slab_path(k))["last_step"] == 2 for k in range(STREAMS)),
                 what="step 2 at every slab")
        for k in range(STREAMS):
            h = read_slab_header(d.slab_path(k))
            want = source_planes(self.dataset, self.files[2], DIMS, h["stored_z_begin"], h["z_end"])
            got = read_slab_values(d.slab_path(k))
            if codecs[k] == "quant:10":
                got, want = array.array("f", got), array.array("f", want)
                bound = quant_bound(want, 10)
                for i in range(len(want)):
                    self.assertLessEqual(abs(got[i] - want[i]), bound(want[i]), "slab %d value %d" % (k, i))
                self.assertNotEqual(got, want, "quant:10 came through exact: was it encoded at all?")
                continue
            if codecs[k] != "zfp:12":
                self.assertEqual(got, want, "slab %d (%s %s) is not bit for bit step 2" % (k, wires[k], codecs[k]))
                continue
            # zfp: blocks of 4 from the slab's first stored value, each within
            # zfp's bound (slabcast_testlib.zfp_bounds).
            got, want = array.array("f", got), array.array("f", want)
            self.assertEqual(len(got), len(want))
            self.assertNotEqual(got, want, "zfp:12 came through exact: was it encoded at all?")
            for i, bound in enumerate(zfp_bounds(want, 12)):
                self.assertLessEqual(abs(got[i] - want[i]), bound, "slab %d value %d" % (k, i))
        self.assertEqual(set(d.stop_all().values()), {0})
        reports = [e for e in read_json_lines(d.recv_json) if e.get("kind") == "step"]
        self.assertEqual(len(reports), 3 * STREAMS)
        for r in reports:
            self.assertTrue(r["complete"] and r["duplicates"] == 0 and r["rejected"] == 0, r)
        # Values a packet: zfp:12 carries 5952 (12 bits each), lz4 and quant at least a raw run's 2233.
        per_step = {r["stream"]: r["packets"] for r in reports if r["step"] == 2}
        values = DIMS[0] * DIMS[1] * (DEPTH + 1)
        self.assertEqual(per_step[1], -(-values // 5952), per_step)
        self.assertLessEqual(per_step[0], -(-values // 2233), per_step)
        self.assertLessEqual(per_step[3], -(-values // 2233), per_step)

    def test_a_progressive_step_cut_by_the_controller_shows_the_whole_slab_coarsely(self):
        # 1.5 Mbit/s: a slab's run packets take ~1.5 s, the controller moves on
        # every 0.5 s, so steps 0 and 1 are cut after about a third.
        d = Deployment(self.ws, self.dataset, rate="1.5M", order="progressive", wire="run",
                       receive_args=["--fill", "nearest"])
        self.cut_steps_0_and_1(d)
        row = DIMS[0]
        for k in range(STREAMS):
            h = read_slab_header(d.slab_path(k))
            cut = [p for p in h["publications_of"] if p["published"] and p["step"] == 1]
            self.assertEqual(len(cut), 1, h["publications_of"])
            self.assertFalse(cut[0]["complete"])
            values = array.array("f", read_slab_values(d.slab_path(k), cut[0]["buffer"]))
            ages = read_slab_ages(d.slab_path(k), cut[0]["buffer"])
            want = array.array("f", source_planes(self.dataset, self.files[1], DIMS, h["stored_z_begin"], h["z_end"]))
            # What came is step 1 exactly; everything else is filled from a
            # coarser sample of step 1 (age 254): nothing is older, nothing empty.
            self.assertEqual(set(ages), {0, 254}, "slab %d" % k)
            arrived = [i for i, a in enumerate(ages) if a == 0]
            self.assertLess(len(arrived), 0.9 * len(ages), "slab %d: the step was not cut" % k)
            self.assertTrue(all(values[i] == want[i] for i in arrived), "slab %d" % k)
            # A cut of scan order ends in the slab's first planes; the
            # progressive order's rows came from its first owned plane to its last.
            ghost = h["z_begin"] - h["stored_z_begin"]
            planes = {i // (row * DIMS[1]) - ghost for i in arrived} - {-1}  # owned planes (the ghost plane comes first)
            self.assertEqual(min(planes), 0, "slab %d" % k)
            self.assertGreaterEqual(max(planes), DEPTH - 2, "slab %d: rows came from planes %s only" % (k, sorted(planes)))
        self.assertEqual(set(d.stop_all().values()), {0})
        reports = [e for e in read_json_lines(d.recv_json) if e.get("kind") == "step" and e["step"] == 1]
        self.assertTrue(all(r["coarse_filled"] > 0 for r in reports), reports)

    def test_a_codec_needs_run_packets_and_a_valid_name(self):
        for codec, wire, words in [("zfp:8", "quad", "needs run packets"), ("zfp:2", "run", "4 to 32"),
                                   ("quant:17", "run", "4 to 16"),
                                   ("brotli", "run", "expected none, lz4, zfp:RATE")]:
            r = self.ws.run(["shuffle", "--stream", "0", "--to", "127.0.0.1:9", "--staging", self.ws.staging,
                             "--dataset", self.dataset, "--slab-depth", str(DEPTH), "--sync", "127.0.0.1:0",
                             "--wire", wire, "--codec", codec])
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(words, r.stderr + r.stdout, (codec, wire))

    def test_controller_step_change_abandons_the_old_step(self):
        # 6 Mbit/s: a slab takes ~1.5 s, the controller moves on every 0.5 s.
        d = Deployment(self.ws, self.dataset, rate="6M")
        self.cut_steps_0_and_1(d)
        codes = d.stop_all()
        self.assertEqual(set(codes.values()), {0}, codes)
        for k in range(STREAMS):
            events = {e["step"]: e for e in read_json_lines(d.shuffle_json[k]) if e.get("kind") == "step"}
            for step in (0, 1):
                self.assertEqual(events[step]["result"], "abandoned", events)
                self.assertLess(events[step]["packets_sent"], events[step]["packets_total"])
            self.assertEqual(events[2]["result"], "finished")
            self.assertEqual(events[2]["packets_sent"], events[2]["packets_total"])
        reports = [e for e in read_json_lines(d.recv_json) if e.get("kind") == "step"]
        for r in reports:
            self.assertEqual(r["complete"], r["step"] == 2, r)

    def test_a_killed_shuffler_is_reported_and_the_others_go_on(self):
        d = Deployment(self.ws, self.dataset, rate="200M")
        shufflers = sum((["--shuffler", "127.0.0.1:%d" % p] for p in d.sync_ports), [])
        # A step takes ~0.05 s at 200 Mbit/s: 0.6 s leaves a loaded machine
        # room to finish each (every one must be complete) before the next.
        control = self.ws.start("control", ["control", "--dataset", self.dataset, "--loop", "--interval", "0.6",
                                            "--stager", "127.0.0.1:%d" % d.stager_port] + shufflers)
        slabs = [d.slab_path(k) for k in range(STREAMS)]
        wait_for(lambda: all(read_slab_header(p)["last_step"] >= 1 for p in slabs), what="two steps everywhere")
        d.shufflers[2].proc.kill()
        d.shufflers[2].wait()
        at_kill = read_slab_header(slabs[0])["generation"]
        d.receiver.wait_for_text("stream 2 missing")
        control.wait_for_text("127.0.0.1:%d MISSING" % d.sync_ports[2])
        # The others go on: four more steps each (a step is two generations), every one complete.
        wait_for(lambda: all(read_slab_header(slabs[k])["generation"] >= at_kill + 8 for k in (0, 1, 3)),
                 what="the other streams to go on",
                 seen=lambda: (at_kill, [read_slab_header(slabs[k])["generation"] for k in (0, 1, 3)]))
        self.assertEqual(control.stop(), 0)
        self.assertIn("MISSING streams 2", d.receiver.text())
        reports = [e for e in read_json_lines(d.recv_json) if e.get("kind") == "step" and e["stream"] != 2]
        self.assertTrue(all(r["complete"] for r in reports[-6:]), reports[-6:])
        events = read_json_lines(d.recv_json)
        self.assertEqual([e["stream"] for e in events if e.get("kind") == "stream_missing"], [2])
        wait_for(lambda: all(read_slab_header(slabs[k])["last_step"] == read_slab_header(slabs[k])["step"]
                             for k in (0, 1, 3)), what="the last step to finish")
        for k in (0, 1, 3):  # each slab holds the whole of the last step it finished
            h = read_slab_header(slabs[k])
            expected = source_planes(self.dataset, self.files[h["last_step"]], DIMS, h["stored_z_begin"], h["z_end"])
            self.assertEqual(read_slab_values(slabs[k]), expected, "slab %d" % k)
        self.assertTrue(d.stager.alive() and all(d.shufflers[k].alive() for k in (0, 1, 3)))
        codes = d.stop_all()
        del codes["shuffle2"]
        self.assertEqual(set(codes.values()), {0}, codes)

    def test_a_killed_controller_leaves_the_shufflers_to_finish_and_wait(self):
        # 6 Mbit/s: a slab takes ~1.5 s, time for a loaded machine to see step 0
        # begin and kill the controller before it ends. The interval is never
        # reached: the controller is dead long before its next step.
        d = Deployment(self.ws, self.dataset, rate="6M")
        shufflers = sum((["--shuffler", "127.0.0.1:%d" % p] for p in d.sync_ports), [])
        control = self.ws.start("control", ["control", "--dataset", self.dataset, "--loop", "--interval", "600"]
                                + shufflers)
        slabs = [d.slab_path(k) for k in range(STREAMS)]
        wait_for(lambda: all(read_slab_header(p)["packets"] > 0 for p in slabs), what="step 0 under way")
        control.proc.kill()
        control.wait()
        self.assertLess(read_slab_header(slabs[0])["step_records"], read_slab_header(slabs[0])["step_expected"],
                        "step 0 was over before the controller was killed: the test proves nothing")
        wait_for(lambda: all(read_slab_header(p)["last_step"] == 0 for p in slabs), what="step 0 to finish")
        self.assert_slabs_equal_step(d, 0)
        packets = [read_slab_header(p)["packets"] for p in slabs]
        time.sleep(1.5)  # a negative check: in this window they wait, and nothing more is sent
        self.assertEqual([read_slab_header(p)["packets"] for p in slabs], packets)
        self.assertTrue(all(s.alive() for s in d.shufflers))
        for k in range(STREAMS):
            events = [e for e in read_json_lines(d.shuffle_json[k]) if e.get("kind") == "step"]
            self.assertEqual([(e["step"], e["result"]) for e in events], [(0, "finished")])
        d.control("--steps", "1")  # a new controller takes over
        wait_for(lambda: all(read_slab_header(p)["last_step"] == 1 for p in slabs), what="step 1")
        self.assert_slabs_equal_step(d, 1)
        self.assertEqual(set(d.stop_all().values()), {0})

    def test_a_missing_step_file_is_skipped(self):
        os.remove(os.path.join(self.dataset, self.files[1]))
        d = Deployment(self.ws, self.dataset, wait_staged_ms=300)
        # Only step 1 may go missing: steps 0 and 2 are staged (the stager's
        # first window) before the shufflers are asked for them, however slow
        # the stager is to start here.
        wait_for(lambda: all(os.path.exists(os.path.join(self.ws.staging, self.files[s])) for s in (0, 2)),
                 what="steps 0 and 2 staged", seen=lambda: os.listdir(self.ws.staging))
        d.control("--steps", "0-2")
        wait_for(lambda: all(read_slab_header(d.slab_path(k))["last_step"] == 2 for k in range(STREAMS)),
                 what="step 2 at every slab")
        self.assert_slabs_equal_step(d, 2)
        for role in [d.receiver, d.stager] + d.shufflers:
            self.assertTrue(role.alive(), role.name + " died")
        skipped = [e for e in read_json_lines(d.stage_json) if e.get("result") == "skipped"]
        self.assertEqual([e["step"] for e in skipped], [1])
        self.assertIn(self.files[1], skipped[0]["problem"])
        for k in range(STREAMS):
            missing = [e for e in read_json_lines(d.shuffle_json[k]) if e.get("result") == "missing"]
            self.assertEqual([e["step"] for e in missing], [1])
        self.assertEqual(set(d.stop_all().values()), {0})

    def test_a_wrong_size_step_a_second_stager_and_a_killed_one_are_told_or_cleaned_up(self):
        """A step file of another size than the volume's is skipped naming both
        sizes; a second stager on the same staging directory is refused (it
        would rewrite the first one's slots under its names); a stager killed
        outright leaves its slots and names behind, and the next one removes
        them before it stages anew, so their memory is not held for ever."""
        with open(os.path.join(self.dataset, self.files[1]), "ab") as f:
            f.write(b"\0" * 4)  # one value too many
        stage = ["stage", "--dataset", self.dataset, "--staging", self.ws.staging, "--streams", "0", "--budget", "3M"]
        first = self.ws.start("stage", stage)
        staged = lambda: all(os.path.exists(os.path.join(self.ws.staging, self.files[s])) for s in (0, 2))  # noqa: E731
        wait_for(lambda: staged() and "step 1 skipped" in first.text(), what="steps 0 and 2 staged, 1 skipped",
                 seen=lambda: first.text()[-1000:])
        self.assertIn("is %d bytes, expected %d (NX*NY*NZ float32)" % (4 * 64 ** 3 + 4, 4 * 64 ** 3), first.text())
        second = self.ws.run(stage)
        self.assertNotEqual(second.returncode, 0)
        self.assertIn(self.ws.staging + ": another `slabcast stage` is using this staging directory", second.stderr)
        left = {os.stat(os.path.join(self.ws.staging, n)).st_ino for n in os.listdir(self.ws.staging)}
        self.assertTrue(any(n.startswith(".slot-") for n in os.listdir(self.ws.staging)), os.listdir(self.ws.staging))
        first.proc.kill()
        first.proc.wait()
        again = self.ws.start("stage-again", stage)
        wait_for(lambda: staged() and "step 1 skipped" in again.text(), what="steps 0 and 2 staged again",
                 seen=lambda: again.text()[-1000:])
        now = {n: os.stat(os.path.join(self.ws.staging, n)).st_ino for n in os.listdir(self.ws.staging)}
        self.assertEqual({n for n, ino in now.items() if ino in left}, set(), "the killed stager's files are still there")
        self.assertEqual(again.stop(), 0)
        self.assertEqual(os.listdir(self.ws.staging), [], "the stager left something behind")


if __name__ == "__main__":
    unittest_main()
