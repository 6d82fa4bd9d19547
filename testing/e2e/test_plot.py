"""`slabcast plot` on a recorded run: every role on loopback with --stats-json
(test_pipeline's deployment, 64^3 in 4 streams), six steps over a four-step
dataset (so two steps come round again), then the figures. The PNGs must
exist and show something, and the series the plot wrote must equal the series
recomputed here from the JSON lines. Bad input must be named, never a traceback.
Standard library and matplotlib (python3-matplotlib) only."""

import json
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from slabcast_testlib import SKIPPED, SLABCAST, Workspace, read_json_lines, unittest_main, wait_for  # noqa: E402


def python_with_matplotlib():
    """Debian's python3-matplotlib is for /usr/bin/python3; a python3 ahead of
    it in PATH (pyenv, a venv) may lack it: run this test under one that has it."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    debian = "/usr/bin/python3"
    if (os.path.realpath(debian) != os.path.realpath(sys.executable) and os.access(debian, os.X_OK)
            and subprocess.run([debian, "-c", "import matplotlib"], capture_output=True).returncode == 0):
        os.execv(debian, [debian] + sys.argv)
    print("SKIPPED: matplotlib is missing: apt-get install python3-matplotlib (testing/install-deps.sh)", flush=True)
    sys.exit(SKIPPED)


python_with_matplotlib()
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.image  # noqa: E402

from test_pipeline import STREAMS, Deployment  # noqa: E402

STEPS = 6  # of a 4-step dataset: steps 0 and 1 come round again


def plot(files, out, env=None, program=SLABCAST):
    return subprocess.run([program, "plot"] + files + ["--out", out], capture_output=True, text=True, timeout=120,
                          env=env)


def lines_of(files):
    return [j for f in files for j in read_json_lines(f)]


def by_time(lines, role, *kinds):
    return sorted((j for j in lines if j["role"] == role and j.get("kind") in kinds), key=lambda j: j["time"])


def expected_series(files):
    """The series, from the JSON lines, computed apart from slabcast_plot.py."""
    lines = lines_of(files)
    t0 = min(j["time"] for j in lines)
    status = by_time(lines, "receive", "status")
    aggregate = [(j["time"] - t0, j["gbps"]) for j in status]
    per_stream = {}
    if any("gbps" in s for j in status for s in j["streams"]):  # the receiver's own rate of each stream
        source = "receive"
        for j in status:
            for s in j["streams"]:
                per_stream.setdefault(str(s["stream"]), []).append((j["time"] - t0, s["gbps"]))
    else:  # what each shuffler sent
        source = "shuffle"
        for j in by_time(lines, "shuffle", "status"):
            per_stream.setdefault(str(j["stream"]), []).append((j["time"] - t0, j["gbps"]))
    # Loss: each stream's step reports in order; the n-th report of a step is its pass n.
    loss, totals, order = {}, {}, []
    for k in range(STREAMS):
        reports = [j for j in by_time(lines, "receive", "step") if j["stream"] == k]
        seen = {}
        for j in reports:
            n = seen[j["step"]] = seen.get(j["step"], -1) + 1
            loss.setdefault(str(k), []).append((j["step"], n, j["loss_percent"]))
            r, e = totals.get((j["step"], n), (0, 0))
            totals[(j["step"], n)] = (r + j["records"], e + j["expected"])
            order.append((j["time"], j["step"], n))
    first = {}
    for t, s, n in sorted(order):
        first.setdefault((s, n), t)
    overall = [(s, n, 100.0 * (e - r) / e) for (s, n), (r, e) in sorted(totals.items(), key=lambda kv: first[kv[0]])]
    # Latency: the n-th sync of a step against the n-th report of it from every stream.
    latency, passes = [], {}
    for sync in by_time(lines, "control", "sync"):
        n = passes[sync["step"]] = passes.get(sync["step"], -1) + 1
        done = []
        for k in range(STREAMS):
            reports = [j for j in by_time(lines, "receive", "step") if j["stream"] == k and j["step"] == sync["step"]]
            done.append(reports[n]["time"])
        latency.append((sync["step"], n, max(done) - sync["time"]))
    # Transfer: the n-th report of a step from every stream, the earliest stamp to the latest publication.
    transfer = []
    for s, n, _ in overall:
        reports = []
        for k in range(STREAMS):
            reports.append([j for j in by_time(lines, "receive", "step") if j["stream"] == k and j["step"] == s][n])
        transfer.append((s, n, (max(j["published_ns"] for j in reports) - min(j["sent_ns"] for j in reports)) / 1e6))
    return {"t0": t0, "aggregate": aggregate, "per_stream": per_stream, "source": source, "loss": loss,
            "overall": overall, "latency": latency, "transfer": transfer}


class PlotTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        """One recorded run for every test: 10 Mbit/s a stream, so a step
        takes ~0.9 s and the once-a-second status lines see it move."""
        cls.ws = Workspace("plot")
        try:
            dataset = cls.ws.generate("ds", (64, 64, 64), 4)
            d = Deployment(cls.ws, dataset, rate="10M", name="plot")
            cls.control_json = os.path.join(cls.ws.dir, "plot-control.json")
            d.control("--loop", "--count", str(STEPS), "--stats-json", cls.control_json)
            wait_for(lambda: len(by_time(read_json_lines(d.recv_json), "receive", "step")) >= STEPS * STREAMS,
                     what="every stream's report of every step",
                     seen=lambda: [(j["stream"], j["step"]) for j in by_time(read_json_lines(d.recv_json), "receive",
                                                                            "step")])
            codes = d.stop_all()
            assert set(codes.values()) == {0}, codes
            cls.receive_json, cls.files = d.recv_json, [d.recv_json, d.stage_json] + d.shuffle_json + [cls.control_json]
        except BaseException:
            cls.ws.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.ws.close()

    def out(self, name):
        return os.path.join(self.ws.dir, name)

    def assert_not_blank(self, path):
        self.assertTrue(os.path.exists(path), path + " was not written")
        rgb = matplotlib.image.imread(path)[..., :3]  # floats 0..1
        self.assertTrue((rgb != rgb[0, 0]).any(), path + " is one colour")
        # Coloured pixels: the streams' lines and their legend (axes and text are black on white).
        coloured = int((rgb.max(axis=-1) - rgb.min(axis=-1) > 0.25).sum())
        self.assertGreater(coloured, 100, path + " has nothing coloured drawn")

    def test_the_figures_show_the_series_of_the_json_lines(self):
        r = plot(self.files, self.out("report.png"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for figure in ("throughput", "loss", "latency", "transfer"):
            self.assert_not_blank(self.out("report-%s.png" % figure))
        with open(self.out("report-series.json")) as f:
            got = json.load(f)
        want = expected_series(self.files)
        self.assertAlmostEqual(got["t0"], want["t0"], places=6)

        tp = got["throughput"]
        self.assertGreaterEqual(len(want["aggregate"]), 3, "too short a run to plot")
        self.assertTrue(any(g > 0 for _, g in want["aggregate"]), "the receiver never saw a rate above 0")
        self.assert_points([(p["t"], p["gbps"]) for p in tp["aggregate"]], want["aggregate"], "aggregate Gbit/s")
        self.assertEqual(tp["per_stream_source"], want["source"])
        self.assertEqual(sorted(tp["per_stream"]), [str(k) for k in range(STREAMS)])
        for k, points in want["per_stream"].items():
            self.assert_points([(p["t"], p["gbps"]) for p in tp["per_stream"][k]], points, "stream %s Gbit/s" % k)

        loss = got["loss"]
        self.assertEqual(sorted(loss["per_stream"]), [str(k) for k in range(STREAMS)])
        for k, points in want["loss"].items():
            self.assertEqual(len(points), STEPS)
            self.assert_points([(p["step"], p["pass"], p["loss_percent"]) for p in loss["per_stream"][k]], points,
                               "stream %s loss" % k)
        self.assertEqual([(s, n) for s, n, _ in want["overall"]], [(0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1)])
        self.assert_points([(p["step"], p["pass"], p["loss_percent"]) for p in loss["overall"]], want["overall"],
                           "overall loss")
        # Steps come round again: drawn against the step of the run.
        self.assertEqual([p["x"] for p in loss["overall"]], list(range(1, STEPS + 1)))
        self.assertIn("step of the run", loss["x_label"])

        lat = got["latency"]
        self.assertEqual(lat["incomplete"], [])
        self.assert_points([(p["step"], p["pass"], p["seconds"]) for p in lat["steps"]], want["latency"], "latency")
        for step, n, seconds in want["latency"]:
            self.assertTrue(0 < seconds < 10, (step, n, seconds))

        # Every step came with its shufflers' stamps (one host, one clock): sent before published.
        tr = got["transfer"]
        self.assertEqual(tr["unstamped"], [])
        self.assert_points([(p["step"], p["pass"], p["ms"]) for p in tr["steps"]], want["transfer"], "transfer")
        ordered = sorted(ms for _, _, ms in want["transfer"])
        self.assertTrue(all(ms > 0 for ms in ordered), ordered)
        self.assertEqual(tr["p50"], ordered[2])  # nearest rank of 6: the 3rd
        self.assertEqual(tr["p95"], ordered[5])

    def assert_points(self, got, want, what):
        self.assertEqual(len(got), len(want), "%s: %d points, the JSON lines give %d" % (what, len(got), len(want)))
        for g, w in zip(got, want):
            self.assertEqual(g[:-1], w[:-1], what)
            self.assertAlmostEqual(g[-1], w[-1], places=9, msg="%s: %s != %s" % (what, g, w))

    def test_forward_error_correction_is_drawn_only_when_a_stream_sent_it(self):
        # This run sent no FEC: no repair figure.
        r = plot([self.receive_json], self.out("nofec.png"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertFalse(os.path.exists(self.out("nofec-repair.png")))
        with open(self.out("nofec-series.json")) as f:
            self.assertIsNone(json.load(f)["repair"])
        # The same receiver's lines as if FEC had rebuilt 3 datagrams of each stream's step 1.
        fec_json = self.out("receive-fec.json")
        with open(self.receive_json) as f, open(fec_json, "w") as out:
            for line in f:
                j = json.loads(line)
                if j.get("kind") == "step":
                    j["repaired"] = 3 if j["step"] == 1 else 0
                out.write(json.dumps(j) + "\n")
        r = plot([fec_json], self.out("fec.png"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assert_not_blank(self.out("fec-repair.png"))
        with open(self.out("fec-series.json")) as f:
            steps = json.load(f)["repair"]["steps"]
        want, seen = {}, {}
        for j in by_time(lines_of([fec_json]), "receive", "step"):
            n = seen[(j["stream"], j["step"])] = seen.get((j["stream"], j["step"]), -1) + 1
            repaired, holes = want.get((j["step"], n), (0, 0))
            want[(j["step"], n)] = (repaired + j["repaired"], holes + j["holes"])
        self.assertEqual({(p["step"], p["pass"]): (p["repaired"], p["holes"]) for p in steps}, want)
        self.assertEqual(want[(1, 0)][0], 3 * STREAMS)

    def test_without_the_controller_there_is_no_latency_figure(self):
        r = plot([self.receive_json], self.out("nolatency.png"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("no latency figure: no control file", r.stdout)
        self.assertFalse(os.path.exists(self.out("nolatency-latency.png")))
        self.assert_not_blank(self.out("nolatency-loss.png"))
        with open(self.out("nolatency-series.json")) as f:
            self.assertIsNone(json.load(f)["latency"])

    def test_bad_input_is_named_by_file_and_line(self):
        bad = self.out("bad.json")
        with open(self.receive_json) as f:
            good = f.read().splitlines()[:2]
        with open(bad, "w") as f:
            f.write("\n".join(good + ["{\"role\": \"receive\", \"time\": 12", ""]))
        r = plot([self.receive_json, bad], self.out("bad.png"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(bad + ":3: not JSON", r.stderr)
        missing = self.out("no-such.json")
        r = plot([missing], self.out("bad.png"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(missing + ": cannot read", r.stderr)
        empty = self.out("empty.json")
        open(empty, "w").close()
        r = plot([empty], self.out("bad.png"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(empty + ": no stats lines", r.stderr)
        with open(bad, "w") as f:
            f.write('{"kind": "status"}\n')
        r = plot([bad], self.out("bad.png"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(bad + ":1: not a stats line", r.stderr)
        for text in (r.stdout, r.stderr):
            self.assertNotIn("Traceback", text)
        self.assertFalse(any(n.startswith("bad-") for n in os.listdir(self.ws.dir)), "bad input left figures")

    def test_what_is_missing_is_named_with_what_to_install(self):
        # A python3 without matplotlib (-S: no site-packages).
        fake = self.out("python-without-site")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\nexec %s -S \"$@\"\n" % sys.executable)
        os.chmod(fake, 0o755)
        r = plot([self.receive_json], self.out("nompl.png"), env=dict(os.environ, SLABCAST_PYTHON=fake))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("matplotlib is missing", r.stderr)
        self.assertIn("apt-get install python3-matplotlib", r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        # A slabcast without its plotting script beside it.
        alone = os.path.join(self.ws.dir, "bin", "slabcast")
        os.makedirs(os.path.dirname(alone))
        shutil.copy(SLABCAST, alone)
        r = plot([self.receive_json], self.out("noscript.png"), program=alone)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("the plotting script is missing", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest_main()
