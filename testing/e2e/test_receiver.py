"""The receiver daemon against a test sender written from the wire format
alone: loss accounting against the truth, every bad-packet class, stale and
duplicate packets, and bad command lines."""

import json
import os
import socket
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from slabcast_testlib import (QUAD_MAX, Workspace, free_udp_ports, quad_packet, read_json_lines, read_slab_ages,
                              read_slab_header, read_slab_values, slab_file_bytes, wait_for, unittest_main)

DIMS = (32, 16, 24)
DEPTH = 8  # 3 slabs; slab 1 owns planes 8..15 and stores plane 7 as its ghost
# The tests close a step by sending the next, and read the buffer of the step
# being written: the receiver's own clock must not end a step first. Its
# defaults (a step published after 500 ms without a packet of it; a packet of a
# step replaced 250 ms ago taken as stale) would, whenever this process is held
# up that long between two sends or between a send and a read.
NO_CLOCK = ["--step-timeout", "300000", "--stale-window-ms", "60000"]


def value(step, x, y, z):
    return float(step * 100000 + (z * DIMS[1] + y) * DIMS[0] + x)


def owned_records(step, slab):
    return [(x, y, z, value(step, x, y, z))
            for z in range(slab * DEPTH, (slab + 1) * DEPTH) for y in range(DIMS[1]) for x in range(DIMS[0])]


def packets_of(step, records):
    return [quad_packet(step, records[i:i + QUAD_MAX]) for i in range(0, len(records), QUAD_MAX)]


class ReceiverTest(unittest.TestCase):
    def setUp(self):
        self.ws = Workspace("receiver")
        self.ports = free_udp_ports(2)
        self.json = os.path.join(self.ws.dir, "receive.json")
        self.receiver = self.ws.start("receive", [
            "receive", "--name", "acct", "--dims", ",".join(map(str, DIMS)), "--slab-depth", str(DEPTH),
            "--listen", "127.0.0.1", "--stream", "0:%d" % self.ports[0], "--stream", "1:%d" % self.ports[1],
            "--shm-dir", self.ws.shm, "--stats-json", self.json] + NO_CLOCK)
        wait_for(lambda: os.path.exists(os.path.join(self.ws.shm, "acct.slabcast")), what="the receiver")
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def tearDown(self):
        self.sock.close()
        self.ws.close()

    def slab(self, k):
        return os.path.join(self.ws.shm, "acct.slab%d" % k)

    def send(self, slab, packets):
        for i, p in enumerate(packets):
            self.sock.sendto(p, ("127.0.0.1", self.ports[slab]))
            if i % 32 == 31:
                time.sleep(0.002)  # stay far below what the socket buffer holds

    def stop_and_reports(self):
        self.assertEqual(self.receiver.stop(), 0)
        return [e for e in read_json_lines(self.json) if e.get("kind") == "step"]

    def test_reported_loss_equals_the_packets_skipped(self):
        records = owned_records(3, 1)
        packets = packets_of(3, records)
        skipped = {i for i in range(len(packets)) if i % 5 == 2} | {0}
        self.send(1, [p for i, p in enumerate(packets) if i not in skipped])
        lost = sum(min(QUAD_MAX, len(records) - i * QUAD_MAX) for i in skipped)
        expected = len(records)
        wait_for(lambda: read_slab_header(self.slab(1))["step_records"] == expected - lost, what="the packets sent")

        # Exactly the values that arrived are in place (in the buffer being
        # written); the skipped ones were never written.
        values = read_slab_values(self.slab(1), "writing")
        plane = DIMS[0] * DIMS[1]
        for i, (x, y, z, v) in enumerate(records):
            got = struct.unpack_from("<f", values, 4 * ((z - 7) * plane + y * DIMS[0] + x))[0]
            self.assertEqual(got, 0.0 if i // QUAD_MAX in skipped else v)

        self.send(1, packets_of(4, owned_records(4, 1)))  # the next step closes step 3
        # Slab 0's step 4 hands slab 1 its ghost plane: step 4 is whole, and
        # published now rather than by a step timeout (NO_CLOCK).
        self.send(0, packets_of(4, owned_records(4, 0)))
        wait_for(lambda: read_slab_header(self.slab(1))["last_step"] == 4, what="step 4",
                 seen=lambda: {k: read_slab_header(self.slab(k))["last_step"] for k in (0, 1)})
        loss_ppm = read_slab_header(self.slab(1))["last_step_loss_ppm"]
        reports = {r["step"]: r for r in self.stop_and_reports() if r["stream"] == 1}
        self.assertEqual(reports[3]["expected"], expected)
        self.assertEqual(reports[3]["records"], expected - lost)
        self.assertAlmostEqual(reports[3]["loss_percent"], 100.0 * lost / expected, places=9)
        self.assertFalse(reports[3]["complete"])
        self.assertTrue(reports[4]["complete"])
        self.assertEqual(reports[4]["loss_percent"], 0.0)
        self.assertEqual(loss_ppm, 0)

    def test_bad_packets_are_counted_and_never_written(self):
        good = (8, 3, 9, 1.0)  # a record inside slab 1
        bad = [
            b"\x01\x00\x00",                                               # shorter than the header
            quad_packet(1, [good, good])[:-5],                             # length is not 8 + 16n
            quad_packet(1, [good]) + b"\x00" * 16,                         # n says 1, 2 records follow
            struct.pack("<ii", 1, 0),                                      # n = 0
            quad_packet(1, [good] * 561),                                  # n > 560 (and > 8968 bytes)
            quad_packet(1, [good, (8, 3, 16, 2.0)]),                       # z in slab 2
            quad_packet(1, [good, (8, 3, 6, 2.0)]),                        # z below the ghost plane
            quad_packet(1, [good, (32, 3, 9, 2.0)]),                       # x past the volume
            quad_packet(1, [good, (8, -1, 9, 2.0)]),                       # negative y
            quad_packet(-1, [good]),                                       # negative step
            b"\x00" * 9400,                                                # longer than any packet
        ]
        self.send(1, bad)
        wait_for(lambda: read_slab_header(self.slab(1))["rejected"] == len(bad), what="all rejections counted")
        h = read_slab_header(self.slab(1))
        self.assertEqual(h["packets"], 0)
        self.assertEqual(h["step"], -1)
        for k in (0, 1):
            h = read_slab_header(self.slab(k))
            self.assertEqual(os.path.getsize(self.slab(k)), slab_file_bytes(h))
            self.assertEqual(h["newest"], -1, "slab %d published a step" % k)
            for b in range(h["buffers"]):
                values = read_slab_values(self.slab(k), b)
                self.assertEqual(values.count(0), len(values), "slab %d buffer %d was written" % (k, b))

        # Stale: a packet of step 4 right after step 5 replaced it.
        self.send(1, [quad_packet(4, [(9, 3, 9, 4.0)]), quad_packet(5, [good]), quad_packet(4, [(10, 3, 9, 4.0)])])
        wait_for(lambda: read_slab_header(self.slab(1))["stale"] == 1, what="the stale packet")
        # Duplicates: the same record again.
        self.send(1, [quad_packet(5, [good, good])])
        wait_for(lambda: read_slab_header(self.slab(1))["duplicates"] == 2, what="the duplicates")
        # Step 5 is being written into a buffer of its own; step 4, published
        # when step 5 began, holds its one value and not the stale one.
        values = read_slab_values(self.slab(1), "writing")
        step4 = read_slab_values(self.slab(1))
        self.assertEqual(read_slab_header(self.slab(1))["last_step"], 4)
        plane = DIMS[0] * DIMS[1]
        self.assertEqual(struct.unpack_from("<f", values, 4 * (2 * plane + 3 * DIMS[0] + 8))[0], 1.0)
        self.assertEqual(struct.unpack_from("<f", step4, 4 * (2 * plane + 3 * DIMS[0] + 9))[0], 4.0)
        self.assertEqual(struct.unpack_from("<f", step4, 4 * (2 * plane + 3 * DIMS[0] + 10))[0], 0.0)  # stale
        self.assertEqual(struct.unpack_from("<f", values, 4 * (2 * plane + 3 * DIMS[0] + 10))[0], 0.0)
        self.stop_and_reports()
        self.assertIn("rejected %d" % len(bad), self.receiver.text())  # the final status line

    def test_top_plane_fills_the_next_slabs_ghost_plane(self):
        # A sender that sends owned planes only: slab 1's ghost plane (7) comes
        # from slab 0, handed over when slab 0 publishes the step, and is in
        # slab 1's publication of that same step, as arrived (age 0).
        self.send(0, packets_of(2, owned_records(2, 0)))
        self.send(1, packets_of(2, owned_records(2, 1)))
        wait_for(lambda: all(read_slab_header(self.slab(k))["last_step"] == 2 for k in (0, 1)), what="step 2")
        plane = DIMS[0] * DIMS[1]
        ghost = read_slab_values(self.slab(1))[:plane * 4]
        expected = b"".join(struct.pack("<f", value(2, x, y, 7)) for y in range(DIMS[1]) for x in range(DIMS[0]))
        self.assertEqual(ghost, expected)
        self.assertEqual(set(read_slab_ages(self.slab(1))), {0}, "slab 1's step 2 is not whole")
        self.stop_and_reports()


    def test_shared_memory_is_never_world_accessible_for_writing(self):
        """Slabs 0640 (owner writes, the renderer's group reads), the directory
        0750, the descriptor not writable by others."""
        for k in (0, 1):
            self.assertEqual(os.stat(self.slab(k)).st_mode & 0o777, 0o640, self.slab(k))
        self.assertEqual(os.stat(self.ws.shm).st_mode & 0o777, 0o750)
        self.assertEqual(os.stat(os.path.join(self.ws.shm, "acct.slabcast")).st_mode & 0o022, 0)

    def test_slab_memory_is_bound_to_the_numa_node_of_its_thread(self):
        """The kernel's own account (/proc/PID/numa_maps): each slab mapping
        carries a bind policy to a node, and its pages are all there. On a
        one-node machine that is node 0, but an unbound mapping would say
        'default' and fail."""
        with open("/proc/%d/numa_maps" % self.receiver.proc.pid) as f:
            maps = [line for line in f if "acct.slab" in line]
        with open(self.receiver.log_path) as f:
            log = f.read()
        self.assertRegex(log, r"receive: NIC lo has no NUMA node|receive: NIC \S+ is on NUMA node \d+")
        for k in (0, 1):
            lines = [line.split() for line in maps if line.split()[2].endswith("acct.slab%d" % k)]
            bound = [f for f in lines if f[1].startswith("bind:")]
            self.assertEqual(len(bound), 1, "slab %d: values not bound to a node: %s" % (k, lines))
            node = int(bound[0][1].split(":")[1])
            pages = {f.split("=")[0]: int(f.split("=")[1]) for f in bound[0] if f.startswith("N") and "=" in f}
            self.assertEqual(set(pages), {"N%d" % node}, "slab %d pages off node %d: %s" % (k, node, bound))
            # Only the 4 KiB header page is left to the default policy.
            self.assertLessEqual(len(lines), 2, lines)
            self.assertRegex(log, r"stream %d: .* NUMA node %d" % (k, node))


class LifecycleTest(unittest.TestCase):
    """SIGTERM removes the receiver's shared memory unless --keep; kill -9 in the
    middle of a step leaves it, and a restarted receiver re-attaches: the
    completed step is intact and the next step arrives."""

    def start(self, ws, ports, *extra):
        r = ws.start("receive", [
            "receive", "--name", "life", "--dims", ",".join(map(str, DIMS)), "--slab-depth", str(DEPTH),
            "--listen", "127.0.0.1", "--stream", "1:%d" % ports[0], "--shm-dir", ws.shm] + NO_CLOCK + list(extra))
        wait_for(lambda: os.path.exists(os.path.join(ws.shm, "life.slabcast")), what="the receiver")
        return r

    def test_sigterm_removes_the_slabs_and_keep_keeps_them(self):
        ws = Workspace("life")
        try:
            r = self.start(ws, free_udp_ports(1))
            self.assertEqual(r.stop(), 0)
            self.assertFalse(os.path.exists(ws.shm), "shared memory left behind: %s" %
                             (os.listdir(ws.shm) if os.path.exists(ws.shm) else ""))
            r = self.start(ws, free_udp_ports(1), "--keep")
            self.assertEqual(r.stop(), 0)
            self.assertEqual(sorted(os.listdir(ws.shm)), ["life.slab1", "life.slabcast"])
        finally:
            ws.close()

    def test_kill_9_mid_step_then_restart_reattaches(self):
        ws = Workspace("life9")
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            ports = free_udp_ports(1)
            slab = os.path.join(ws.shm, "life.slab1")
            r = self.start(ws, ports)
            for p in packets_of(5, owned_records(5, 1)):
                sock.sendto(p, ("127.0.0.1", ports[0]))
            wait_for(lambda: read_slab_header(slab)["last_step"] == 5, what="step 5 complete")
            half = packets_of(6, owned_records(6, 1))
            for p in half[:len(half) // 2]:
                sock.sendto(p, ("127.0.0.1", ports[0]))
            wait_for(lambda: read_slab_header(slab)["step"] == 6, what="step 6 under way")
            # Half a step, killed before anything ends it (no step timeout: NO_CLOCK).
            r.proc.kill()
            r.wait(10)
            before = read_slab_values(slab)
            r2 = self.start(ws, ports)
            # The old descriptor is still there: wait for the new writer (its socket is bound by then).
            wait_for(lambda: read_slab_header(slab)["writer_pid"] == r2.proc.pid, what="the restarted receiver")
            self.assertEqual(read_slab_values(slab), before, "the restart changed the slab's values")
            h = read_slab_header(slab)
            self.assertEqual(h["last_step"], 5, "the completed step's record was lost")
            for p in packets_of(7, owned_records(7, 1)):
                sock.sendto(p, ("127.0.0.1", ports[0]))
            wait_for(lambda: read_slab_header(slab)["last_step"] == 7, what="step 7 after the restart")
            values = read_slab_values(slab)
            plane = DIMS[0] * DIMS[1]
            x, y, z, v = owned_records(7, 1)[-1]
            self.assertEqual(struct.unpack_from("<f", values, 4 * ((z - 7) * plane + y * DIMS[0] + x))[0], v)
            self.assertEqual(r2.stop(), 0)
        finally:
            sock.close()
            ws.close()


class AllowlistTest(unittest.TestCase):
    """--allow: stream 0 takes packets from 127.0.0.1 only; the same packets
    sent from 127.0.0.2 (another loopback address) are counted as foreign and
    write nothing. Stream 1 has no list and takes both."""

    def test_packets_from_senders_not_on_the_list_are_counted_and_dropped(self):
        ws = Workspace("allow")
        try:
            ports = free_udp_ports(2)
            receiver = ws.start("receive", [
                "receive", "--name", "allow", "--dims", ",".join(map(str, DIMS)), "--slab-depth", str(DEPTH),
                "--listen", "127.0.0.1", "--stream", "0:%d" % ports[0], "--stream", "1:%d" % ports[1],
                "--allow", "0=127.0.0.1/32", "--shm-dir", ws.shm])
            slab0, slab1 = (os.path.join(ws.shm, "allow.slab%d" % k) for k in (0, 1))
            wait_for(lambda: os.path.exists(os.path.join(ws.shm, "allow.slabcast")), what="the receiver")
            stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            stranger.bind(("127.0.0.2", 0))
            friend = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                spoofed = packets_of(1, owned_records(1, 0))
                for p in spoofed:
                    stranger.sendto(p, ("127.0.0.1", ports[0]))
                wait_for(lambda: read_slab_header(slab0)["foreign"] == len(spoofed), what="the foreign count")
                self.assertEqual(read_slab_header(slab0)["packets"], 0)
                self.assertEqual(read_slab_header(slab0)["writing_buffer"], -1, "a foreign packet began a step")
                self.assertEqual(set(read_slab_values(slab0, 0)), {0}, "a foreign packet was written")
                for p in packets_of(2, owned_records(2, 0)):
                    friend.sendto(p, ("127.0.0.1", ports[0]))
                wait_for(lambda: read_slab_header(slab0)["step_records"] == len(owned_records(2, 0)),
                         what="the allowed sender's step")
                for p in packets_of(2, owned_records(2, 1))[:3]:
                    stranger.sendto(p, ("127.0.0.1", ports[1]))
                wait_for(lambda: read_slab_header(slab1)["packets"] == 3, what="stream 1, which has no list")
                self.assertEqual(read_slab_header(slab1)["foreign"], 0)
            finally:
                stranger.close()
                friend.close()
            self.assertEqual(receiver.stop(), 0)
            with open(receiver.log_path) as f:
                log = f.read()
            self.assertIn("stream 0: accepting packets from 127.0.0.1/32", log)
            self.assertIn("stream 1: no --allow list", log)
        finally:
            ws.close()

    def test_bad_allow_items_are_named(self):
        ws = Workspace("allowbad")
        try:
            for bad, why in (("10.0.0.300", "not an IPv4 or IPv6 address"), ("5=127.0.0.1", "no --stream for slab 5"),
                             ("127.0.0.1/40", "prefix must be 0..32")):
                r = ws.run(["receive", "--name", "x", "--dims", "8,8,8", "--slab-depth", "8", "--listen", "127.0.0.1",
                            "--stream", "0:%d" % free_udp_ports(1)[0], "--shm-dir", ws.shm, "--allow", bad])
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn(why, r.stderr)
        finally:
            ws.close()


class CommandLineTest(unittest.TestCase):
    def setUp(self):
        self.ws = Workspace("cli")
        self.dataset = self.ws.generate("ds", (8, 8, 8), 2)

    def tearDown(self):
        self.ws.close()

    def assert_fails(self, args, message):
        # Failing fast is what is tested, but "cannot resolve" asks the resolver,
        # which on a machine without a network can take its timeouts (5 s a try).
        r = self.ws.run(args, timeout=120)
        self.assertNotEqual(r.returncode, 0, args)
        self.assertIn(message, r.stderr + r.stdout, args)

    def test_bad_options_name_the_problem(self):
        recv = ["receive", "--name", "x", "--listen", "127.0.0.1", "--shm-dir", self.ws.shm]
        self.assert_fails(recv + ["--dims", "0,8,8", "--slab-depth", "4", "--stream", "0:9"], "dims '0,8,8'")
        self.assert_fails(recv + ["--dims", "8,8,8", "--slab-depth", "4", "--stream", "0:abc"], "--stream '0:abc'")
        self.assert_fails(recv + ["--dims", "8,8,8", "--slab-depth", "4", "--stream", "5:9000"], "slab 5 is outside 0..1")
        self.assert_fails(recv + ["--dims", "8,8,8", "--slab-depth", "4"], "--stream is required")
        shuffle = ["shuffle", "--stream", "0", "--to", "127.0.0.1:9", "--staging", self.ws.staging,
                   "--slab-depth", "4", "--sync", "127.0.0.1:0"]
        self.assert_fails(shuffle + ["--dataset", "/nonexistent"], "/nonexistent")
        self.assert_fails(shuffle + ["--dataset", self.dataset, "--rate", "fast"], "rate 'fast'")
        self.assert_fails(shuffle + ["--dataset", self.dataset, "--order", "random"], "expected scan, morton or progressive")
        self.assert_fails(recv + ["--dims", "8,8,8", "--slab-depth", "4", "--stream", "0:9", "--fill", "zero"], "--fill")
        self.assert_fails(["stage", "--dataset", self.dataset, "--staging", self.ws.staging, "--streams", "0-1",
                           "--budget", "1K"], "smaller than one step")
        self.assert_fails(["control", "--dataset", self.dataset, "--shuffler", "127.0.0.1:9", "--steps", "7"],
                          "step 7 is not in the dataset")
        self.assert_fails(["control", "--dataset", self.dataset, "--shuffler", "nohost.invalid:9"], "cannot resolve")
        self.assert_fails(["clean", "--name", "a/b"], "plain name")

    def test_clean_removes_nothing_outside_the_shm_directory(self):
        # clean deletes what the descriptor lists: a descriptor naming a file
        # elsewhere once made it delete that file.
        os.makedirs(self.ws.shm, mode=0o750)
        victim = os.path.join(self.ws.dir, "victim")
        with open(victim, "w") as f:
            f.write("precious")
        for version, key, name in [(1, "path", victim), (2, "file", "../" + os.path.basename(self.ws.dir) + "/victim")]:
            with open(os.path.join(self.ws.shm, "v.slabcast"), "w") as f:
                json.dump({"format": "slabcast", "version": version, "name": "v", "field": "density",
                           "dims": [8, 8, 8], "slab_depth": 4, "ghost_planes": 1, "slabs": [{"index": 0, key: name}]}, f)
            r = self.ws.run(["clean", "--name", "v", "--shm-dir", self.ws.shm])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(os.path.exists(victim), "clean removed %s, listed in a version %d descriptor" % (victim, version))
            self.assertFalse(os.path.exists(os.path.join(self.ws.shm, "v.slabcast")))

    def test_a_shm_or_staging_directory_others_control_is_refused(self):
        # /dev/shm is writable by all: a directory someone else made there first
        # (or a link to one) would let them replace the descriptor a renderer trusts.
        open_dir = os.path.join(self.ws.dir, "open")
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        link = os.path.join(self.ws.dir, "link")
        os.symlink(open_dir, link)
        if os.geteuid() == 0:
            theirs = os.path.join(self.ws.dir, "theirs")
            os.mkdir(theirs, 0o750)
            os.chown(theirs, 65534, 65534)  # nobody's
        else:
            theirs = "/"  # root's
        recv = ["receive", "--name", "x", "--listen", "127.0.0.1", "--dims", "8,8,8", "--slab-depth", "4",
                "--stream", "0:9"]
        self.assert_fails(recv + ["--shm-dir", open_dir], open_dir + ": writable by anyone (mode 0777); refused")
        self.assert_fails(recv + ["--shm-dir", link], link + ": is not a directory (a symbolic link?); refused")
        self.assert_fails(recv + ["--shm-dir", theirs], theirs + ": owned by uid %d, not by this user" % os.stat(theirs).st_uid)
        stage = ["stage", "--dataset", self.dataset, "--streams", "0"]
        self.assert_fails(stage + ["--staging", open_dir], open_dir + ": writable by anyone (mode 0777); refused")
        self.assertEqual(os.listdir(open_dir), [])

    def test_numbers_out_of_range_are_refused_with_their_range(self):
        # --rcvbuf-mb 4096 was shifted into an int (4096 << 20 is 2^32): a negative buffer size.
        recv = ["receive", "--name", "x", "--listen", "127.0.0.1", "--shm-dir", self.ws.shm, "--dims", "8,8,8",
                "--stream", "0:9"]
        for args, message in [
            (["--slab-depth", "4", "--rcvbuf-mb", "4096"], "--rcvbuf-mb: Value 4096 not in range 1 to 1024"),
            (["--slab-depth", "4", "--rcvbuf-mb", "-1"], "--rcvbuf-mb: Value -1 not in range 1 to 1024"),
            (["--slab-depth", "2147483648"], "--slab-depth: Value 2147483648 not in range 1 to 1048576"),
            (["--slab-depth", "4", "--ghost-planes", "2"], "--ghost-planes: Value 2 not in range 0 to 1"),
            (["--slab-depth", "4", "--batch", "0"], "--batch: Value 0 not in range 1 to 1024"),
            (["--slab-depth", "4", "--stale-window-ms", "99999999999"], "--stale-window-ms: Value 99999999999 not in range"),
            (["--slab-depth", "4", "--cpus", "1x"], "--cpus '1x': bad item '1x' (numbers 0 to 1023"),
            (["--slab-depth", "4", "--cpus", "0-99999"], "bad item '0-99999' (numbers 0 to 1023"),
        ]:
            self.assert_fails(recv + args, message)
        shuffle = ["shuffle", "--to", "127.0.0.1:9", "--staging", self.ws.staging, "--dataset", self.dataset,
                   "--sync", "127.0.0.1:0"]
        for args, message in [
            (["--stream", "0", "--slab-depth", "4", "--sndbuf-mb", "2048"], "--sndbuf-mb: Value 2048 not in range 1 to 1024"),
            (["--stream", "-1", "--slab-depth", "4"], "--stream: Value -1 not in range 0 to 1048575"),
            (["--stream", "0", "--slab-depth", "4", "--batch", "257"], "--batch: Value 257 not in range 1 to 256"),
            (["--stream", "0", "--slab-depth", "4", "--wait-staged-ms", "-1"], "--wait-staged-ms: Value -1 not in range"),
            (["--stream", "0", "--slab-depth", "4", "--rate", "1e300T"], "rate '1e300T' must be 0 to 1000T bit/s"),
        ]:
            self.assert_fails(shuffle + args, message)
        stage = ["stage", "--dataset", self.dataset, "--staging", self.ws.staging, "--streams", "0"]
        for args, message in [
            (["--budget", "1e30G"], "size '1e30G' must be 1 byte to 2^62 bytes"),
            (["--budget", "nanM"], "size 'nanM' must be 1 byte to 2^62 bytes"),
            (["--pull-streams", "0"], "--pull-streams: Value 0 not in range 1 to 128"),
            (["--from", "127.0.0.1:99999"], "--from '127.0.0.1:99999': expected HOST[:PORT], PORT 1..65535"),
        ]:
            self.assert_fails(stage + args, message)
        control = ["control", "--dataset", self.dataset, "--shuffler", "127.0.0.1:9"]
        for args, message in [
            (["--interval", "nan"], "--interval: Value nan not in range 0 to 86400 (seconds)"),
            (["--interval", "-1"], "--interval: Value -1 not in range 0 to 86400 (seconds)"),
            (["--done-timeout", "1e999"], "--done-timeout: Value 1e999 not in range 0.1 to 86400 (seconds)"),
            (["--count", "-5"], "--count: Value -5 not in range 0 to 1000000000"),
        ]:
            self.assert_fails(control + args, message)
        for args, message in [
            (["--base-port", "65000"], "--base-port: Value 65000 not in range 1 to 64900"),
            (["--streams", "0"], "--streams: Value 0 not in range 1 to 64"),
            (["--ranks", "100000"], "--ranks: Value 100000 not in range 1 to 256"),
            (["--step-interval", "inf"], "--step-interval: Value inf not in range 0 to 3600 (seconds)"),
            (["--dataset-steps", "0"], "--dataset-steps: Value 0 not in range 1 to 100000"),
            (["--size", "99999x2"], "--size '99999x2': expected WxH, each 16 to 16384"),
        ]:
            self.assert_fails(["demo", "--out", os.path.join(self.ws.dir, "demo")] + args, message)


if __name__ == "__main__":
    unittest_main()
