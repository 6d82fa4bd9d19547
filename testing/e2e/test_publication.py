"""Multi-buffered slabs (issue 17) against the real receiver: a step is
published whole into a buffer no reader pins; what a step lost is filled from
the step before and marked in the age array; a reader's pins keep its buffer
unchanged, pins that leave every buffer busy make the receiver drop steps
(counted, never blocking), and a reader killed with kill -9 holds nothing."""

import os
import signal
import socket
import struct
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from slabcast_testlib import (AGE_NEVER_ARRIVED, QUAD_MAX, Workspace, free_udp_ports, pin_buffer, quad_packet,
                              read_json_lines, read_slab_ages, read_slab_header, read_slab_values, unittest_main,
                              wait_for)

DIMS = (32, 16, 24)
DEPTH = 8  # slab 1 owns planes 8..15 and stores plane 7 as its ghost
PLANE = DIMS[0] * DIMS[1]
# A step with holes is published when none of its packets came for this long.
# A step's 8 packets go out at once, so only this process held up between two
# of them for this long could cut one short: 1 s, not the 0.3 s a loaded
# machine can take; each lossy step costs it once.
STEP_TIMEOUT_MS = 1000


def value(step, x, y, z):
    return float(step * 100000 + (z * DIMS[1] + y) * DIMS[0] + x)


def owned_packets(step):
    """Slab 1's owned planes at `step`, as the packets a sender that sends no
    ghost plane sends; [(packet, [stored offsets])]."""
    records = [(x, y, z, value(step, x, y, z)) for z in range(8, 16) for y in range(DIMS[1]) for x in range(DIMS[0])]
    out = []
    for i in range(0, len(records), QUAD_MAX):
        chunk = records[i:i + QUAD_MAX]
        out.append((quad_packet(step, chunk), [(z - 7) * PLANE + y * DIMS[0] + x for x, y, z, _ in chunk]))
    return out


class PublicationTest(unittest.TestCase):
    def setUp(self):
        self.ws = Workspace("publication")
        self.port = free_udp_ports(1)[0]
        self.json = os.path.join(self.ws.dir, "receive.json")
        self.receiver = self.ws.start("receive", [
            "receive", "--name", "pub", "--dims", ",".join(map(str, DIMS)), "--slab-depth", str(DEPTH),
            "--listen", "127.0.0.1", "--stream", "1:%d" % self.port, "--shm-dir", self.ws.shm, "--buffers", "3",
            "--step-timeout", str(STEP_TIMEOUT_MS), "--stats-json", self.json])
        self.slab = os.path.join(self.ws.shm, "pub.slab1")
        wait_for(lambda: os.path.exists(os.path.join(self.ws.shm, "pub.slabcast")), what="the receiver")
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def tearDown(self):
        self.sock.close()
        self.ws.close()

    def send_step(self, step, skip=()):
        for i, (p, _) in enumerate(owned_packets(step)):
            if i not in skip:
                self.sock.sendto(p, ("127.0.0.1", self.port))
            if i % 32 == 31:
                time.sleep(0.002)

    def published(self, step):
        wait_for(lambda: read_slab_header(self.slab)["last_step"] == step, what="step %d published" % step)
        h = read_slab_header(self.slab)
        return h, h["publications_of"][h["newest"]]

    def test_holes_hold_the_previous_step_and_their_age(self):
        self.send_step(1)
        h, p1 = self.published(1)
        self.assertEqual((p1["records"], p1["holes"], p1["complete"]), (p1["expected"], 0, 1))
        ages = read_slab_ages(self.slab)
        self.assertEqual(set(ages[:PLANE]), {AGE_NEVER_ARRIVED}, "no one sent the ghost plane")
        self.assertEqual(set(ages[PLANE:]), {0})

        lost = {3, 7}
        packets = owned_packets(2)
        lost_offsets = {o for i in lost for o in packets[i][1]}
        self.send_step(2, skip=lost)  # published by the step timeout: nothing follows it
        h, p2 = self.published(2)
        self.assertNotEqual(p2["buffer"], p1["buffer"], "step 2 was written over step 1")
        self.assertEqual(p2["holes"], len(lost_offsets))
        self.assertEqual(p2["records"], p2["expected"] - len(lost_offsets))
        self.assertEqual(p2["complete"], 0)
        values, ages = read_slab_values(self.slab), read_slab_ages(self.slab)
        for offset in range(PLANE, len(ages)):
            z, rest = 7 + offset // PLANE, offset % PLANE
            y, x = rest // DIMS[0], rest % DIMS[0]
            got = struct.unpack_from("<f", values, 4 * offset)[0]
            if offset in lost_offsets:
                self.assertEqual((ages[offset], got), (1, value(1, x, y, z)), "lost value %d" % offset)
            else:
                self.assertEqual((ages[offset], got), (0, value(2, x, y, z)), "value %d" % offset)

        self.send_step(3, skip={3})  # packet 3 lost twice in a row: two steps old
        h, p3 = self.published(3)
        ages = read_slab_ages(self.slab)
        self.assertEqual({ages[o] for o in packets[3][1]}, {2})
        self.assertEqual({ages[o] for o in packets[7][1]}, {0})
        self.send_step(4)
        h, p4 = self.published(4)
        self.assertEqual(set(read_slab_ages(self.slab)[PLANE:]), {0}, "a whole step after holes")
        reports = [e for e in read_json_lines(self.json) if e.get("kind") == "step"]
        self.assertEqual([r["step"] for r in reports][:4], [1, 2, 3, 4])

    def test_pinned_buffers_are_left_alone_and_busy_buffers_drop_steps(self):
        fd = os.open(self.slab, os.O_RDONLY)
        try:
            pinned = []
            for step in (1, 2, 3):
                self.send_step(step)
                h, p = self.published(step)
                pin_buffer(fd, p["buffer"])  # as a reader would, holding each step on screen
                pinned.append((p["buffer"], read_slab_values(self.slab)))
            self.assertEqual(len({b for b, _ in pinned}), 3)
            # Step 4: 1, 2 and the newest publication (3) are pinned: no buffer left.
            self.send_step(4)
            # Counted as they arrive: wait for all of step 4's packets, then exactly those.
            wait_for(lambda: read_slab_header(self.slab)["dropped_packets"] >= len(owned_packets(4)),
                     what="step 4's packets dropped")
            h = read_slab_header(self.slab)
            self.assertEqual(h["dropped_steps"], 1)
            self.assertEqual(h["last_step"], 3)
            self.assertEqual(h["dropped_packets"], len(owned_packets(4)))
            for b, values in pinned:
                self.assertEqual(read_slab_values(self.slab, b), values, "pinned buffer %d changed" % b)
            self.assertTrue(self.receiver.alive())
            # Let go of step 1: step 5 goes into its buffer.
            pin_buffer(fd, pinned[0][0], lock=False)
            self.send_step(5)
            h, p5 = self.published(5)
            self.assertEqual(p5["buffer"], pinned[0][0])
            self.assertEqual(read_slab_values(self.slab, pinned[1][0]), pinned[1][1], "pinned step 2 changed")
        finally:
            os.close(fd)
        self.assertEqual(self.receiver.stop(), 0)
        with open(self.receiver.log_path) as f:
            self.assertRegex(f.read(), r"step 4: dropped.*pinned by readers")

    def test_a_reader_killed_while_pinning_holds_nothing(self):
        self.send_step(1)
        self.published(1)
        # A reader process that pins every buffer, then is killed with kill -9.
        holder = subprocess.Popen([sys.executable, "-c", """
import os, sys, time
sys.path.insert(0, %r)
from slabcast_testlib import pin_buffer
fd = os.open(%r, os.O_RDONLY)
for b in range(3):
    pin_buffer(fd, b)
print("pinned", flush=True)
time.sleep(600)
""" % (os.path.dirname(os.path.abspath(__file__)), self.slab)], stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(holder.stdout.readline().strip(), "pinned")
            self.send_step(2)
            wait_for(lambda: read_slab_header(self.slab)["dropped_steps"] == 1, what="step 2 dropped")
            holder.send_signal(signal.SIGKILL)
            holder.wait(10)
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()
            holder.stdout.close()
        for step in (3, 4, 5):
            self.send_step(step)
            self.published(step)
        self.assertEqual(read_slab_header(self.slab)["dropped_steps"], 1)


if __name__ == "__main__":
    unittest_main()
