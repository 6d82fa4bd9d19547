"""ctest library_timeline: every frame names how long its step took from the
sender to the screen. libslabcast's Python module sends a 48^3 volume as 2
streams into the real receiver on loopback, a step once the renderer showed
the one before; slabcast_render.py draws it on 2 ranks (pvbatch under mpirun).
Every frame of a step prints `latency: sent->published X ms,
published->shown Y ms`, read from the reader's field data (the senders' step
stamps, the receivers' publications), and on one host, one clock, the
timeline is in order: sent <= published <= picked <= shown. The receiver's step report
carries the same stamps: sent <= begun <= published for every slab of every
step. No figure is held to a time: only to the order of events."""
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
FRAME = re.compile(r"^frame (\d+): step (-?\d+), .*?(?:\| latency: (.*?))?(?: \| caption: .*)?$")
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

    def test_every_frame_names_its_steps_timeline_in_order(self):
        r = self.receiver
        senders = [slabcast.Sender(DIMS, (k * DEPTH, (k + 1) * DEPTH), r.destination(k), rate=RATE,
                                   slab_depth=DEPTH) for k in range(SLABS)]

        def send(step):
            full = volume(step)
            for k, sender in enumerate(senders):
                sender.send_step(step, full[k * DEPTH:(k + 1) * DEPTH])
                sender.flush()

        send(0)
        r.wait_published(range(SLABS), 0)
        display = self.enterContext(t.xvfb()) if hasattr(self, "enterContext") else None
        if display is None:
            xvfb = t.xvfb()
            display = xvfb.__enter__()
            self.addCleanup(xvfb.__exit__, None, None, None)
        cmd = t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"), [
            r.descriptor, "--until-step", LAST, "--timeout", 5 * lt.WAIT_S, "--interval", 0.1, "--size", "200x200",
            "--range", "0.5,8"], ranks=2)
        print("$ " + " ".join(cmd), flush=True)
        proc = subprocess.Popen(cmd, env=t.paraview_env(display), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        frames, lines, sent = [], [], 0
        try:
            for line in proc.stdout:  # ends by itself (--until-step / --timeout)
                lines.append(line.rstrip())
                m = FRAME.match(line.rstrip())
                if not m:
                    continue
                step = int(m.group(2))
                frames.append((int(m.group(1)), step, m.group(3)))
                if step == sent and sent < LAST:  # the next step once this one is on screen
                    sent += 1
                    send(sent)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        print("\n".join(lines), flush=True)
        self.assertEqual(proc.returncode, 0, "slabcast_render.py failed")
        self.assertEqual(sorted({s for _, s, _ in frames}), list(range(LAST + 1)), "steps shown: %s" % frames)
        for frame, step, latency in frames:
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
            len(frames), frames[-1][2]), flush=True)


if __name__ == "__main__":
    lt.unittest_main()
