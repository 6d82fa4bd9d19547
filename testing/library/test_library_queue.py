"""ctest library_queue: a simulation that produces steps faster than its link
carries them. One Sender (queue_steps 2) sends a 64^3 volume's first slab of
depth 16 (256 KiB a step, about 42 ms at 50 Mbit/s) to the real receiver, 20
steps back to back:

- drop_oldest: every call returns at once; steps are dropped, and sent +
  dropped is 20; the receiver publishes the last step, with the values the
  caller passed (its array is overwritten right after each call: the queue
  holds copies); 200 steps more leave the process's memory where it was.
- block: the calls wait for room, together about 18 steps' send time; none
  is dropped and the receiver publishes all 20.

Time bounds are loose (a loaded 2-core machine): they tell a call that waits
for the link from one that does not, they do not measure speed. An upper
bound is on the median or the sum of the calls, or allows a call or two held
back by a busy core; the lower bounds only grow on a slower machine."""
import os
import statistics
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import library_testlib as lt  # noqa: E402
from slabcast_testlib import read_slab_values  # noqa: E402

numpy, slabcast = lt.import_slabcast()

DIMS, DEPTH, QUEUE, STEPS = (64, 64, 64), 16, 2, 20
RATE, RATE_BITS = "50M", 50e6
STEP_BYTES = DEPTH * DIMS[0] * DIMS[1] * 4
MIB = 1 << 20


def slab_values(step):
    """Slab 0 of step `step`: step * 1e6 + the voxel's index, exact in float32."""
    return (step * 1e6 + numpy.arange(DEPTH * DIMS[1] * DIMS[0], dtype=numpy.float64)).astype(
        numpy.float32).reshape(DEPTH, DIMS[1], DIMS[0])


class QueuePolicies(unittest.TestCase):
    def setUp(self):
        self.receiver = lt.Receiver("library-queue", "queue", DIMS, DEPTH, [0])
        self.values = numpy.empty((DEPTH, DIMS[1], DIMS[0]), numpy.float32)
        self.steps = [slab_values(s) for s in range(STEPS)]  # made before any RSS is measured

    def tearDown(self):
        self.receiver.close()

    def open(self, policy):
        return slabcast.Sender(DIMS, (0, DEPTH), self.receiver.destination(0), rate=RATE, slab_depth=DEPTH,
                               queue_steps=QUEUE, queue_policy=policy)

    def send(self, sender, steps):
        """Sends `steps` back to back from one array, overwritten with -1 as
        soon as each call returns; the seconds each call took."""
        calls = []
        for step in steps:
            self.values[...] = self.steps[step] if step < STEPS else step
            started = time.perf_counter()
            sender.send_step(step, self.values)
            calls.append(time.perf_counter() - started)
            self.values[...] = -1.0
        return calls

    def step_seconds(self, stats):
        """What one step takes on the wire at RATE, from the bytes sent."""
        self.assertGreater(stats["steps_sent"], 0, stats)
        step_bytes = stats["bytes"] / stats["steps_sent"]
        self.assertGreaterEqual(step_bytes, STEP_BYTES, stats)
        return step_bytes * 8 / RATE_BITS

    def check_last_step_arrived(self, step, sent):
        r = self.receiver
        r.wait_published([0], step)
        self.assertEqual(read_slab_values(r.slab_file(0)), self.steps[step].tobytes(),
                         "step %d arrived with other values than the caller passed" % step)
        lt.wait_for(lambda: r.header(0)["publications"] == sent, lt.WAIT_S,
                    "%d publications (%d when the wait began)" % (sent, r.header(0)["publications"]))

    def report(self, policy, calls, stats, step_s):
        print("%s: %d calls, each %.3f-%.3f ms (median %.3f ms), together %.1f ms; a step on the wire %.1f ms; "
              "sent %d, dropped %d, %d packets a step, %.1f ms sending a step" % (
                  policy, len(calls), min(calls) * 1e3, max(calls) * 1e3, statistics.median(calls) * 1e3,
                  sum(calls) * 1e3, step_s * 1e3, stats["steps_sent"], stats["steps_dropped"],
                  stats["packets_a_step"], stats["send_seconds"] / max(1, stats["steps_sent"]) * 1e3), flush=True)

    def test_drop_oldest_returns_at_once_and_bounds_memory(self):
        rss_before = lt.rss_bytes()
        with self.open("drop_oldest") as sender:
            calls = self.send(sender, range(STEPS))
            sender.flush()
            stats = sender.stats()
            step_s = self.step_seconds(stats)
            self.report("drop_oldest", calls, stats, step_s)
            self.assertEqual(stats["steps_sent"] + stats["steps_dropped"], STEPS, stats)
            self.assertGreater(stats["steps_dropped"], 0, "20 steps at once into a queue of 2 dropped none")
            # A copy of 256 KiB is tens of microseconds; a step on the wire 42 ms.
            # A call that waited for the link would wait about that long from
            # the third call on; a busy machine may hold the caller back as
            # long once or twice, not on most calls.
            waited = [round(c * 1e3, 1) for c in calls if c >= step_s]
            self.assertLessEqual(len(waited), 2, "%d of %d drop_oldest calls took a step's send time or more (ms: %s)"
                                 % (len(waited), len(calls), waited))
            self.assertLess(statistics.median(calls), 0.2 * step_s)
            self.assertLess(sum(calls), 0.25 * (STEPS - QUEUE) * step_s, "the calls together waited for the link")
            # The newest step is never the one dropped.
            self.check_last_step_arrived(STEPS - 1, stats["steps_sent"])

            # 200 more steps: a queue that kept every step would grow by 50 MiB.
            more = 200
            self.send(sender, range(STEPS, STEPS + more))
            sender.flush()
            stats = sender.stats()
            self.assertEqual(stats["steps_sent"] + stats["steps_dropped"], STEPS + more, stats)
            growth = lt.rss_bytes() - rss_before
            print("drop_oldest: after %d steps, RSS grew %.2f MiB (queue %.2f MiB); sent %d, dropped %d" % (
                STEPS + more, growth / MIB, QUEUE * STEP_BYTES / MIB, stats["steps_sent"], stats["steps_dropped"]),
                flush=True)
            self.assertLess(growth, QUEUE * STEP_BYTES + 10 * MIB, "memory grew with the steps dropped")

    def test_block_waits_for_room_and_loses_nothing(self):
        with self.open("block") as sender:
            calls = self.send(sender, range(STEPS))
            sender.flush()
            stats = sender.stats()
            step_s = self.step_seconds(stats)
            self.report("block", calls, stats, step_s)
            self.assertEqual((stats["steps_sent"], stats["steps_dropped"]), (STEPS, 0), stats)
            # Once QUEUE steps wait, each call waits for one to leave: about a
            # step's send time, (STEPS - QUEUE) of them in all.
            self.assertGreaterEqual(sum(calls), 0.5 * (STEPS - QUEUE) * step_s,
                                    "20 blocking calls into a queue of 2 did not wait for the link")
            self.assertGreaterEqual(statistics.median(calls[QUEUE + 1:]), 0.3 * step_s)
            # The rate holds: the sending thread spent about a step's wire time on each.
            self.assertGreaterEqual(stats["send_seconds"], 0.5 * STEPS * step_s, stats)
            self.check_last_step_arrived(STEPS - 1, STEPS)


if __name__ == "__main__":
    lt.unittest_main()
