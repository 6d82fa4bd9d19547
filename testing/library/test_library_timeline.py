"""ctest library_timeline: every frame names how long its step took from the
sender to the screen. libslabcast's Python module sends a 48^3 volume as 2
streams into the real receiver on loopback, a step once the renderer showed
the one before; slabcast_render.py draws it on 2 ranks (pvbatch under mpirun).
Every frame of a step prints `latency: sent->published X ms,
published->shown Y ms`, read from the reader's field data (the senders' step
stamps, the receivers' publications), and on one host, one clock, the
timeline is in order: sent <= published <= picked <= shown. The receiver's step report
carries the same stamps: sent <= begun <= published for every slab of every
step. No figure is held to a time: only to the order of events.

And a renderer mid-refinement moves on: drawing step 0 coarse (--coarsest
4) with its next, finer frame a long way off (--refine-interval), it takes
step 1 once it is published, coarse, without refining step 0 first (issue
57: a frame never keeps refining a step once a newer one is published)."""
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import library_testlib as lt  # noqa: E402
import plugin_testlib as t  # noqa: E402

numpy, slabcast = lt.import_slabcast()
lt.require_plugin()

DIMS, DEPTH, SLABS, LAST = (48, 48, 48), 24, 2, 5
RATE = "200M"
FRAME = re.compile(r"^frame (\d+): step (-?\d+), .*?(?:, level (\d+))?, read .*?(?:\| latency: (.*?))?"
                   r"(?: \| caption: .*)?$")
LATENCY = re.compile(r"^(?:sent->published (-?[\d.]+) ms, )?published->shown (-?[\d.]+) ms"
                     r"(?: \(picked after (-?[\d.]+) ms\))?$")


def volume(step):
    nx, ny, nz = DIMS
    z = numpy.arange(nz, dtype=numpy.float32).reshape(nz, 1, 1)
    return numpy.broadcast_to(1.0 + step + z / nz, (nz, ny, nx)).astype(numpy.float32)


class Timeline(unittest.TestCase):
    def setUp(self):
        self.receiver = lt.Receiver("library-timeline", "timeline", DIMS, DEPTH, range(SLABS))

    def tearDown(self):
        self.receiver.close()

    def send(self, step):
        if not hasattr(self, "senders"):
            self.senders = [slabcast.Sender(DIMS, (k * DEPTH, (k + 1) * DEPTH), self.receiver.destination(k),
                                            rate=RATE, slab_depth=DEPTH) for k in range(SLABS)]
        full = volume(step)
        for k, sender in enumerate(self.senders):
            sender.send_step(step, full[k * DEPTH:(k + 1) * DEPTH])
            sender.flush()

    def render(self, last, options, next_step):
        """Sends step 0, then runs slabcast_render.py on 2 ranks until step
        `last` is on screen; after each frame, next_step(frames so far)
        names a step to send (or None). Returns the frames, (frame, step,
        level or None, latency text or None) each."""
        self.send(0)
        self.receiver.wait_published(range(SLABS), 0)
        xvfb = t.xvfb()
        display = xvfb.__enter__()
        self.addCleanup(xvfb.__exit__, None, None, None)
        cmd = t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"), [
            self.receiver.descriptor, "--until-step", last, "--timeout", 5 * lt.WAIT_S, "--size", "200x200",
            "--range", "0.5,8"] + options, ranks=2)
        print("$ " + " ".join(map(str, cmd)), flush=True)
        proc = subprocess.Popen(cmd, env=t.paraview_env(display), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        frames, lines = [], []
        try:
            for line in proc.stdout:  # ends by itself (--until-step / --timeout)
                lines.append(line.rstrip())
                m = FRAME.match(line.rstrip())
                if not m:
                    continue
                frames.append((int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None,
                               m.group(4)))
                step = next_step(frames)
                if step is not None:
                    self.send(step)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        print("\n".join(lines), flush=True)
        self.assertEqual(proc.returncode, 0, "slabcast_render.py failed")
        return frames

    def test_every_frame_names_its_steps_timeline_in_order(self):
        r = self.receiver
        sent = [0]

        def next_step(frames):  # the next step once this one is on screen
            if frames[-1][1] == sent[0] and sent[0] < LAST:
                sent[0] += 1
                return sent[0]
            return None

        frames = self.render(LAST, ["--interval", 0.1], next_step)
        self.assertEqual(sorted({s for _, s, _, _ in frames}), list(range(LAST + 1)), "steps shown: %s" % frames)
        for frame, step, _, latency in frames:
            self.assertIsNotNone(latency, "frame %d (step %d) has no latency" % (frame, step))
            m = LATENCY.match(latency)
            self.assertIsNotNone(m, "frame %d: %r" % (frame, latency))
            self.assertIsNotNone(m.group(1), "frame %d (step %d): the step's send time is unknown: %r" % (
                frame, step, latency))
            self.assertIsNotNone(m.group(3), "frame %d (step %d): no time the reader picked it: %r" % (
                frame, step, latency))
            to_published, to_shown, to_picked = float(m.group(1)), float(m.group(2)), float(m.group(3))
            self.assertGreaterEqual(to_published, 0.0, "frame %d: published before it was sent" % frame)
            self.assertGreaterEqual(to_picked, 0.0, "frame %d: picked before it was published" % frame)
            self.assertGreaterEqual(to_shown, to_picked, "frame %d: shown before it was picked" % frame)

        # The receiver's own timeline of the same steps, every slab: sent <= begun <= published.
        timed = re.findall(r"stream (\d+) step (\d+): .*, sent->begun (-?[\d.]+) ms, sent->published (-?[\d.]+) ms",
                           r.log())
        self.assertEqual(len({(k, s) for k, s, _, _ in timed}), SLABS * (LAST + 1),
                         "steps the receiver timed from their stamps: %s\n%s" % (timed, r.log()[-3000:]))
        for k, s, to_begun, to_published in timed:
            self.assertGreaterEqual(float(to_begun), 0.0, "stream %s step %s: begun before it was sent" % (k, s))
            self.assertGreaterEqual(float(to_published), float(to_begun), "stream %s step %s" % (k, s))
        print("LIBRARY_TIMELINE_OK: %d frames, each with its step's timeline in order; e.g. %s" % (
            len(frames), frames[-1][3]), flush=True)

    def test_a_renderer_mid_refinement_takes_a_newly_published_step(self):
        coarsest = 4
        # Step 0's finer frame would come only after --refine-interval: step 1,
        # sent once step 0's coarse frame is on screen, must end that wait.
        frames = self.render(1, ["--mapper", "slabcast", "--coarsest", coarsest, "--refine-interval", 2 * lt.WAIT_S],
                             lambda frames: 1 if len(frames) == 1 else None)
        shown = [(step, level) for _, step, level, _ in frames]
        self.assertEqual(shown, [(0, coarsest), (1, coarsest)],
                         "frames (step, level) not step 0 coarse then step 1 coarse: %s" % shown)
        print("LIBRARY_REFINE_SWITCH_OK: %s" % shown, flush=True)


if __name__ == "__main__":
    lt.unittest_main()
