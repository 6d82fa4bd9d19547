"""ctest soak_booth (label soak, not in `make test`; `make soak`, `make soak
SOAK_MINUTES=60`): everything a booth runs, at once, for SLABCAST_SOAK_SECONDS
(600), across the namespace testbed's WAN (needs root; skips itself
otherwise).

- 4 streams of a 128^3 dataset whose step s holds the value s everywhere, in
  the progressive order with `--codec quant:10` (a constant block is exact),
  through impair_relay.py at exactly 1% loss and 16 ms one way, into a
  receiver on the receiver host; the controller loops over the steps back to
  back;
- pvbatch rendering the live slabs on 2 MPI ranks (slabcast_render.py, once a
  second), pvpython re-reading them every 20 ms (pv_torn_frames.py), a
  pvpython reader with History 4 stepping back now and then
  (pv_history_soak.py), `slabcast record --budget` (a ring on disk), and the
  stream monitor's figures (each slab's header, as the monitor reads them)
  polled every second;
- the receiver told its readers (`--readers`): pvbatch's ranks read one slab
  each, so with pvpython two live views a slab, History 4, and the recorder.

Every 10 s it samples each process's private memory, descriptors and
threads, /dev/shm and the recording. Passes when, after the warm-up (a fifth
of the run, at most 5 minutes): no step was dropped for want of a buffer;
memory, descriptors, threads, /dev/shm and the recording stayed flat (their
slope per 10 minutes printed; memory may not lift its floor by more than 4
MiB or 5%, descriptors and threads not grow, /dev/shm not move by more than a
step, the recording stay within its budget); every step published was
recorded or counted as skipped or missed, none failed; no frame was torn and
History read every step it asked for exactly; and the receiver saw every
datagram the relay forwarded (the loss is the relay's 1%, and no more).

Prints the figures for docs/performance.md, and with SLABCAST_SOAK_OUT=DIR
writes there the samples (soak_booth.csv) and their plot (soak_booth.png)."""

import csv
import json
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "plugin"))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
import netns_testbed as tb  # noqa: E402
import plugin_testlib as t  # noqa: E402
from slabcast_testlib import Workspace, read_json_lines, read_slab_header, unittest_main, wait_for  # noqa: E402
from pin_sampler import PinSampler  # noqa: E402
from soak_samples import fd_count, grew, median, memory, slope_per_10_minutes, threads, tree_bytes, used_bytes  # noqa: E402

SECONDS = float(os.environ.get("SLABCAST_SOAK_SECONDS", "600"))
WARMUP = min(300.0, SECONDS / 5)
DIMS, DEPTH, STREAMS = (128, 128, 128), 32, 4
STEPS = 8
RATE = "100M"  # per stream, through a relay in Python
# A step every 0.25 s: a booth's pace, not the codec's (a constant step is a
# few kilobytes in quant:10, and back to back they came 88 a second).
STEP_INTERVAL_S = 0.25
LOSS = 0.01
DELAY_MS = 16
HISTORY = 4
READERS = "view,view,history:%d,record" % HISTORY
RECORD_BUDGET = "64M"
RECORD_BUDGET_BYTES = 64 << 20
DATA_PORT, SYNC_PORT, STAGER_PORT = 9000, 9100, 9200
SAMPLE_EVERY = 10.0
GROWTH_BYTES = 4 << 20
WAIT_S = 120


class BoothSoakTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = tb.available()
        if why:
            raise unittest.SkipTest(why)
        if not t.PLUGIN:
            raise unittest.SkipTest("needs the ParaView plugin (SLABCAST_PLUGIN): run it through ctest")

    def setUp(self):
        self.ws = Workspace("booth")
        self.bed = tb.Testbed()
        self.xvfb = t.xvfb()
        self.display = self.xvfb.__enter__()
        self.others = []  # readers started with Popen: (name, process, log path)

    def tearDown(self):
        for _, p, _ in self.others:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.xvfb.__exit__(None, None, None)
        self.ws.close()
        self.bed.close()

    def start_reader(self, name, cmd, env):
        path = os.path.join(self.ws.dir, name + ".log")
        with open(path, "w") as log:
            p = subprocess.Popen([str(c) for c in cmd], env=env, stdout=log, stderr=subprocess.STDOUT)
        self.others.append((name, p, path))
        return p

    def log_of(self, name):
        with open(os.path.join(self.ws.dir, name + ".log")) as f:
            return f.read()

    def start_stream(self, dataset, key):
        ws, bed = self.ws, self.bed
        auth = ["--key-file", key, "--controller", tb.CONTROLLER]
        stage = ws.start("stage", ["stage", "--dataset", dataset, "--staging", ws.staging, "--streams",
                           "0-%d" % (STREAMS - 1), "--budget", "48M", "--loop",
                           "--sync", "%s:%d" % (tb.SENDER, STAGER_PORT)] + auth, prefix=bed.prefix("sender"))
        self.shuffle_json = [os.path.join(ws.dir, "shuffle%d.json" % k) for k in range(STREAMS)]
        shufflers = [ws.start("shuffle%d" % k, [
            "shuffle", "--stream", str(k), "--bind", tb.SENDER, "--to", "%s:%d" % (tb.WAN_SENDER_SIDE, DATA_PORT + k),
            "--staging", ws.staging, "--dataset", dataset, "--slab-depth", str(DEPTH),
            "--sync", "%s:%d" % (tb.SENDER, SYNC_PORT + k), "--rate", RATE, "--order", "progressive",
            "--codec", "quant:10", "--wait-staged-ms", str(WAIT_S * 1000), "--stats-json", self.shuffle_json[k]]
            + auth, prefix=bed.prefix("sender")) for k in range(STREAMS)]
        for s in shufflers:  # one that exits fails at once, with its log
            s.wait_for_text("sync on", WAIT_S)
        routes = sum((["--route", "%s:%d=%s:%d" % (tb.WAN_SENDER_SIDE, DATA_PORT + k, tb.RECEIVER, DATA_PORT + k)]
                      for k in range(STREAMS)), [])
        self.relay_json = os.path.join(ws.dir, "relay.json")
        self.relay = ws.start("relay", [os.path.join(HERE, "..", "netns", "impair_relay.py")] + routes + [
            "--spoof", "--delay-ms", str(DELAY_MS), "--loss", str(LOSS), "--seed", "7", "--stats", self.relay_json],
            prefix=bed.prefix("wan"), program=sys.executable)
        self.relay.wait_for_text("relay:", timeout=WAIT_S)
        self.control_json = os.path.join(ws.dir, "control.json")
        return [stage] + shufflers + [ws.start("control", [
            "control", "--dataset", dataset, "--loop", "--bind", tb.CONTROLLER + ":0",
            "--shuffler", "%s:%d-%d" % (tb.SENDER, SYNC_PORT, SYNC_PORT + STREAMS - 1),
            "--stager", "%s:%d" % (tb.SENDER, STAGER_PORT), "--interval", str(STEP_INTERVAL_S),
            "--stats-json", self.control_json, "--key-file", key],
            prefix=bed.prefix("controller"))]

    def test_an_hour_with_everything_on(self):
        ws, bed = self.ws, self.bed
        dataset = t.constant_dataset(os.path.join(ws.dir, "ds"), DIMS, range(1, STEPS + 1))
        key = os.path.join(ws.dir, "sync.key")
        self.assertEqual(ws.run(["keygen", key]).returncode, 0)
        os.makedirs(ws.shm, exist_ok=True)
        recv_json = os.path.join(ws.dir, "receive.json")
        receiver = ws.start("receive", [
            "receive", "--name", "booth", "--dims", ",".join(map(str, DIMS)), "--slab-depth", str(DEPTH),
            "--listen", tb.RECEIVER, "--allow", tb.SENDER + "/32", "--shm-dir", ws.shm, "--readers", READERS,
            "--stats-json", recv_json] + sum((["--stream", "%d:%d" % (k, DATA_PORT + k)] for k in range(STREAMS)), []),
            prefix=bed.prefix("receiver"))
        receiver.wait_for_text("ready; descriptor", timeout=WAIT_S)
        descriptor = os.path.join(ws.shm, "booth.slabcast")
        slabs = [os.path.join(ws.shm, "booth.slab%d" % k) for k in range(STREAMS)]
        buffers = read_slab_header(slabs[0])["buffers"]
        roles = [receiver] + self.start_stream(dataset, key)

        # The readers: the recorder, pvbatch on 2 ranks, pvpython re-reading, History.
        rec_out, rec_json = os.path.join(ws.dir, "recording"), os.path.join(ws.dir, "record.json")
        recorder = ws.start("record", ["record", "--descriptor", descriptor, "--out", rec_out, "--budget",
                                       RECORD_BUDGET, "--stats-json", rec_json])
        recorder.wait_for_text("record: following", timeout=WAIT_S)
        roles.append(recorder)
        env = t.paraview_env(self.display)
        env["MALLOC_MMAP_THRESHOLD_"] = "1048576"  # as `slabcast demo` runs pvbatch
        render = self.start_reader("pvbatch", t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"), [
            descriptor, "--timeout", SECONDS + 30, "--interval", 1.0, "--size", "320x240"], ranks=2), env)
        torn = self.start_reader("pvpython", [t.PVPYTHON, os.path.join(HERE, "..", "plugin", "pv_torn_frames.py"),
                                              descriptor, 10**9, "whole", SECONDS], t.paraview_env())
        history = self.start_reader("history", [t.PVPYTHON, os.path.join(HERE, "pv_history_soak.py"), descriptor,
                                                HISTORY, SECONDS], t.paraview_env())

        # The processes to watch: the roles, and the readers' own (mpirun's pvbatch ranks).
        procs = {r.name: r.proc.pid for r in roles}
        procs["pvpython"], procs["history"] = torn.pid, history.pid
        wait_for(lambda: len(self.pvbatch_ranks(render.pid)) == 2, timeout=WAIT_S, what="pvbatch's 2 ranks")
        for i, pid in enumerate(self.pvbatch_ranks(render.pid)):
            procs["pvbatch%d" % i] = pid

        readers = {n: procs[n] for n in procs if n.startswith("pvbatch") or n in ("pvpython", "history", "record")}
        pins = PinSampler(readers, slabs, period=0.05).start()
        samples = []  # (t, {name: (anon, fds, threads)}, /dev/shm bytes, recording bytes)
        monitor = []  # (t, pinned max over slabs, pinned_peak max, dropped steps)
        start = time.monotonic()
        next_sample = start + SAMPLE_EVERY
        while time.monotonic() - start < SECONDS:
            time.sleep(1.0)
            now = time.monotonic() - start
            heads = [read_slab_header(s) for s in slabs]  # what the stream monitor reads, once a second
            monitor.append((now, max(h["pinned"] for h in heads), max(h["pinned_peak"] for h in heads),
                            sum(h["dropped_steps"] for h in heads)))
            if time.monotonic() < next_sample:
                continue
            next_sample += SAMPLE_EVERY
            for r in roles:
                self.assertTrue(r.alive(), "%s died:\n%s" % (r.name, r.text()[-2000:]))
            for name, p, _ in self.others:
                if p.poll() is not None and now < SECONDS - 30:
                    self.fail("%s exited (%s) after %.0f s:\n%s" % (name, p.returncode, now, self.log_of(name)[-2000:]))
            figures = {}
            for name, pid in procs.items():
                try:
                    figures[name] = (memory(pid)[1], fd_count(pid), threads(pid))
                except (FileNotFoundError, ProcessLookupError):
                    pass  # a reader done a moment before the end
            samples.append((now, figures, used_bytes("/dev/shm"), tree_bytes(rec_out)))

        # Stop: the senders (the controller first), the relay (it forwards
        # what it holds and writes its counts), the recorder, the readers at
        # their own ends, and the receiver once its counts settle.
        pins.stop()
        senders = [r for r in roles if r.name == "control"] + [r for r in roles if r.name not in (
            "control", "receive", "record")]
        for r in senders:
            self.assertEqual(r.stop(), 0, r.name)
        self.assertEqual(self.relay.stop(), 0)
        self.assertEqual(recorder.stop(), 0)
        wait_for(lambda: self.settled(recv_json), timeout=WAIT_S, what="the receiver's counts to settle")
        outs = {}
        for name, p, _ in self.others:
            try:
                p.wait(timeout=90)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            outs[name] = self.log_of(name)
        final = [e for e in read_json_lines(recv_json) if e.get("kind") == "status"][-1]
        self.assertEqual(receiver.stop(), 0)
        for line in pins.report():
            print("  " + line, flush=True)
        self.report(samples, monitor, buffers, final, rec_json, rec_out, outs)

    @staticmethod
    def settled(recv_json):
        """The receiver's last two status lines count the same datagrams."""
        status = [e for e in read_json_lines(recv_json) if e.get("kind") == "status"]
        return len(status) >= 2 and status[-1]["packets"] == status[-2]["packets"] and \
            status[-1]["stale"] == status[-2]["stale"]

    def pvbatch_ranks(self, mpirun_pid):
        """The pvbatch processes mpirun started (its children's children)."""
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/comm" % pid) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if comm == "pvbatch" and self.descends_from(int(pid), mpirun_pid):
                found.append(int(pid))
        return sorted(found)

    @staticmethod
    def descends_from(pid, ancestor):
        while pid > 1:
            if pid == ancestor:
                return True
            try:
                with open("/proc/%d/stat" % pid) as f:
                    pid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                return False
        return False

    def report(self, samples, monitor, buffers, final, rec_json, rec_out, outs):
        # Every figure printed first, then every problem found, together.
        problems = []

        def expect(ok, message):
            if not ok:
                problems.append(message)

        settled = [s for s in samples if s[0] >= WARMUP]
        self.assertGreater(len(settled), 2, "too short a run to judge")
        window = max(1, int(60 / SAMPLE_EVERY))
        first, last = settled[:window], settled[-window:]
        print("soak_booth: %.0f s, %d samples after a %.0f s warm-up, %d buffers a slab for readers %s" % (
            SECONDS, len(settled), WARMUP, buffers, READERS), flush=True)
        print("  %-9s %27s %23s %17s" % ("", "private MiB (slope/10 min)", "fds (slope/10 min)",
                                         "threads"), flush=True)
        names = sorted(set().union(*(s[1] for s in settled)))
        for name in names:
            if any(name not in s[1] for s in settled):
                continue  # a reader that ended early: not judged
            anon = [(s[0], s[1][name][0]) for s in settled]
            fds = [(s[0], s[1][name][1]) for s in settled]
            thr = [(s[0], s[1][name][2]) for s in settled]
            print("  %-9s %8.1f -> %8.1f (%+6.2f) %6d -> %4d (%+5.2f) %5d -> %4d" % (
                name, anon[0][1] / 2**20, anon[-1][1] / 2**20, slope_per_10_minutes(anon) / 2**20, fds[0][1],
                fds[-1][1], slope_per_10_minutes(fds), thr[0][1], thr[-1][1]), flush=True)
            expect(not grew([s[1][name][0] for s in first], [s[1][name][0] for s in last], GROWTH_BYTES),
                   "%s's private memory grew" % name)
            expect(median(s[1][name][1] for s in last) <= median(s[1][name][1] for s in first),
                   "%s opened descriptors and kept them" % name)
            expect(median(s[1][name][2] for s in last) <= median(s[1][name][2] for s in first),
                   "%s started threads and kept them" % name)
        shm = [(s[0], s[2]) for s in settled]
        recording = [(s[0], s[3]) for s in settled]
        step_bytes = DIMS[0] * DIMS[1] * DIMS[2] * 5
        print("  /dev/shm %.1f-%.1f MiB (slope %+.2f MiB/10 min); recording %.1f-%.1f MiB (budget %.0f, slope "
              "%+.2f)" % (min(v for _, v in shm) / 2**20, max(v for _, v in shm) / 2**20,
                          slope_per_10_minutes(shm) / 2**20, min(v for _, v in recording) / 2**20,
                          max(v for _, v in recording) / 2**20, RECORD_BUDGET_BYTES / 2**20,
                          slope_per_10_minutes(recording) / 2**20), flush=True)
        expect(max(v for _, v in shm) - min(v for _, v in shm) <= step_bytes,
               "/dev/shm moved by more than a step after the warm-up")
        expect(max(v for _, v in recording) <= RECORD_BUDGET_BYTES, "the recording outgrew its budget")

        # No step dropped for want of a buffer; what the monitor saw of the pins.
        pinned = {}
        for m in monitor:
            pinned[m[1]] = pinned.get(m[1], 0) + 1
        print("  monitor, once a second: buffers pinned as the last step began %s; the most %d of %d; "
              "dropped steps %d" % (", ".join("%d: %d s" % kv for kv in sorted(pinned.items())), monitor[-1][2],
                                    buffers, monitor[-1][3]), flush=True)
        expect(final["dropped_steps"] == 0, "%d steps dropped: readers held every buffer" % final["dropped_steps"])

        # Every step published recorded, or counted as skipped or missed.
        rec = [e for e in read_json_lines(rec_json) if e.get("kind") == "status"][-1]
        failed = [e for e in read_json_lines(rec_json) if e.get("result") == "failed"]
        counted = rec["recorded"] + rec["skipped_busy"] + rec["skipped_full"] + rec["missed"] + rec["pending"]
        with open(os.path.join(rec_out, "dataset.json")) as f:
            listed = len(json.load(f)["steps"])
        print("  record: %d published, %d recorded, %d skipped (disk busy), %d skipped (disk full), %d missed, "
              "%d failed; %d listed in the ring" % (rec["published"], rec["recorded"], rec["skipped_busy"],
                                                    rec["skipped_full"], rec["missed"], len(failed), listed),
              flush=True)
        expect(not failed, "steps failed to record: %s" % failed[:3])
        expect(counted == rec["published"], "steps neither recorded nor counted")
        expect(rec["recorded"] > 0, "nothing recorded")

        # Frames: none torn; History read what it asked for.
        lines = t.torn_frame_lines(outs["pvpython"])
        self.assertIn(0, lines, "pv_torn_frames.py said nothing:\n" + outs["pvpython"][-2000:])
        reads, torn, holed, steps = lines[0]
        history = [l for l in outs["history"].splitlines() if l.startswith("HISTORY")]
        frames = sum(1 for l in outs["pvbatch"].splitlines() if l.startswith("frame "))
        print("  pvpython %d reads, %d torn, %d with holes; %s; pvbatch %d frames on 2 ranks" % (
            reads, torn, holed, history[-1] if history else "History said nothing", frames), flush=True)
        expect(torn == 0, "%d torn frames" % torn)
        expect(history and " BAD 0 " in history[-1] and " EXACT 0 " not in history[-1],
               "History: " + outs["history"][-2000:])
        expect(frames > SECONDS / 4, "pvbatch drew %d frames" % frames)

        # The loss is the relay's, and no more.
        with open(self.relay_json) as f:
            routes = json.load(f)["routes"]
        relayed = {k: sum(r[k] for r in routes) for k in ("datagrams", "dropped", "forwarded", "kernel_dropped")}
        arrived = final["packets"] + final["stale"] + final["rejected"] + final["stamps"]
        print("  relay: %d datagrams, %d dropped (%.3f%%), %d forwarded; the receiver took %d (%d stale, %d "
              "rejected, %d step stamps), loss %.3f%% of records" % (
                  relayed["datagrams"], relayed["dropped"], 100.0 * relayed["dropped"] / max(1, relayed["datagrams"]),
                  relayed["forwarded"], arrived, final["stale"], final["rejected"], final["stamps"],
                  final["loss_percent"]), flush=True)
        expect(relayed["kernel_dropped"] == 0, "the relay's own socket dropped datagrams")
        expect(arrived == relayed["forwarded"], "the receiver lost datagrams the relay forwarded")
        self.write_out(samples, monitor)
        self.assertEqual(problems, [])

    def write_out(self, samples, monitor):
        out = os.environ.get("SLABCAST_SOAK_OUT")
        if not out:
            return
        os.makedirs(out, exist_ok=True)
        names = sorted(set().union(*(s[1] for s in samples)))
        with open(os.path.join(out, "soak_booth.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["seconds", "shm_bytes", "recording_bytes"] + ["%s_%s" % (n, k) for n in names
                                                                         for k in ("private", "fds", "threads")])
            for s in samples:
                w.writerow([round(s[0], 1), s[2], s[3]] + [s[1].get(n, ("", "", ""))[i] for n in names
                                                           for i in range(3)])
        with open(os.path.join(out, "soak_booth_pins.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["seconds", "pinned", "pinned_peak", "dropped_steps"])
            w.writerows([[round(m[0], 1)] + list(m[1:]) for m in monitor])
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(4, 1, figsize=(8, 9), sharex=True)
        minutes = [s[0] / 60 for s in samples]
        for n in names:
            axes[0].plot(minutes, [s[1].get(n, (None,))[0] / 2**20 if n in s[1] else None for s in samples], label=n)
            axes[1].plot(minutes, [s[1][n][1] if n in s[1] else None for s in samples], label=n)
        axes[0].set_ylabel("private MiB")
        axes[0].legend(fontsize=6, ncol=3)
        axes[1].set_ylabel("descriptors")
        axes[2].plot(minutes, [s[2] / 2**20 for s in samples], label="/dev/shm")
        axes[2].plot(minutes, [s[3] / 2**20 for s in samples], label="recording")
        axes[2].set_ylabel("MiB")
        axes[2].legend(fontsize=6)
        axes[3].plot([m[0] / 60 for m in monitor], [m[1] for m in monitor], label="pinned as a step began")
        axes[3].plot([m[0] / 60 for m in monitor], [m[3] for m in monitor], label="dropped steps")
        axes[3].set_ylabel("buffers / steps")
        axes[3].set_xlabel("minutes")
        axes[3].legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "soak_booth.png"), dpi=80)


if __name__ == "__main__":
    unittest_main()
