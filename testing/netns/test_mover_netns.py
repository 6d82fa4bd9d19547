"""ctest e2e_mover_netns: the data mover between two hosts made of network
namespaces, 16 ms each way (a 32 ms round trip, delay_line.cpp), the way it
is used between sites.

Shows: a tree (small files, a large one, a sparse one, an empty one, a
unicode name) arrives bit for bit; the server takes clients only from
--allow, and only with its key; a server killed mid-transfer is named by the
client at once, and then a path cut mid-transfer within seconds
(--peer-timeout), the server outlives the cut, and the same command afterwards
sends only what is missing. Needs root."""

import os
import random
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import netns_testbed as tb  # noqa: E402
from slabcast_testlib import SLABCAST, Workspace, unittest_main  # noqa: E402
from test_mover import WAIT_S, assert_trees_equal, journal_lines, wait_listening, wait_until, write_file  # noqa: E402

MIB = 1 << 20
PORT = 7100
# The client's --peer-timeout while its path is cut: it must give up within
# seconds, yet outlast a moment of the server not reading (a disk busy under
# load) before the cut. Every other move keeps the default (60 s).
CUT_PEER_TIMEOUT_S = 6


class MoverNetnsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = tb.available(delay=True)
        if why:
            raise unittest.SkipTest(why)

    def setUp(self):
        self.ws = Workspace("movernetns")
        self.bed = tb.Testbed(delay_ms=16)
        self.root = os.path.join(self.ws.dir, "site-b")
        # The server listens beyond loopback: it takes only clients with its key.
        self.key = os.path.join(self.ws.dir, "site.key")
        assert self.ws.run(["keygen", self.key]).returncode == 0

    def tearDown(self):
        self.ws.close()  # every process first: a namespace lives while a process is in it
        self.bed.close()

    def start_serve(self, name="serve"):
        server = self.ws.start(name, ["serve", "--root", self.root, "--listen", tb.RECEIVER, "--port", str(PORT),
                                      "--allow", tb.SENDER + "/32", "--peer-timeout", "3", "--key-file", self.key],
                               prefix=self.bed.prefix("receiver"))
        self.assertTrue(wait_listening(server, tb.RECEIVER, PORT), server.text())
        return server

    def move_cmd(self, src, host="sender", peer_timeout=None):
        peer = ["--peer-timeout", str(peer_timeout)] if peer_timeout else []
        return self.bed.prefix(host) + [SLABCAST, "move", "--port", str(PORT), "--progress", "none", "--streams", "4"
                                        ] + peer + ["--key-file", self.key, src, tb.RECEIVER + ":dst"]

    def assert_same_tree(self, src, dst):
        assert_trees_equal(self, src, dst)

    def test_a_tree_crosses_the_wan_bit_for_bit(self):
        src = os.path.join(self.ws.dir, "cmip")
        rng = random.Random(3)
        write_file(os.path.join(src, "empty.nc"), b"")
        write_file(os.path.join(src, "größe", "ψ.nc"), rng.randbytes(48 * MIB + 5), 0o640)
        with open(os.path.join(src, "sparse.raw"), "wb") as f:
            f.truncate(32 * MIB)
            f.seek(9 * MIB)
            f.write(rng.randbytes(4096))
        for i in range(500):
            write_file(os.path.join(src, "v%d" % (i % 7), "tas_%03d.nc" % i), rng.randbytes(rng.randrange(0, 65536)))
        server = self.start_serve()
        t0 = time.monotonic()
        r = subprocess.run(self.move_cmd(src), capture_output=True, text=True, timeout=WAIT_S)
        seconds = time.monotonic() - t0
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_same_tree(src, os.path.join(self.root, "dst", "cmip"))
        print("503 files, 80 MiB across a 32 ms round trip in %.2f s" % seconds, flush=True)
        # A client on another host is refused before it can send anything.
        r = subprocess.run(self.move_cmd(src, host="controller"), capture_output=True, text=True, timeout=WAIT_S)
        self.assertNotEqual(r.returncode, 0)
        wait_until(lambda: "refused a connection from %s" % tb.CONTROLLER in server.text(), WAIT_S,
                   "the server to log the refusal", lambda: server.text()[-2000:])
        # From the allowed host but without the key: refused all the same.
        without_key = [a for a in self.move_cmd(src) if a not in ("--key-file", self.key)]
        r = subprocess.run(without_key, capture_output=True, text=True, timeout=WAIT_S)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("the server requires authentication", r.stderr)
        wait_until(lambda: "refused a client from %s" % tb.SENDER in server.text(), WAIT_S, "the server to log it",
                   lambda: server.text()[-2000:])

    def test_the_stager_pulls_steps_across_the_wan(self):
        """stage --from on the sender host, serve --allow-pull on the data host
        (here the receiver's namespace): every step staged, bit for bit, each
        stream authenticated and encrypted (the data host requires it)."""
        dataset = self.ws.generate("ds", (64, 64, 64), 4)
        server = self.ws.start("serve", ["serve", "--root", os.path.dirname(dataset), "--listen", tb.RECEIVER,
                                         "--port", str(PORT), "--allow", tb.SENDER + "/32", "--allow-pull",
                                         "--key-file", self.key, "--require-encryption"],
                               prefix=self.bed.prefix("receiver"))
        self.assertTrue(wait_listening(server, tb.RECEIVER, PORT), server.text())
        stats = os.path.join(self.ws.dir, "stage.json")
        stager = self.ws.start("stage", ["stage", "--from", "%s:%d" % (tb.RECEIVER, PORT), "--dataset",
                                         os.path.basename(dataset), "--staging", self.ws.staging, "--streams", "0",
                                         "--budget", "8M", "--stats-json", stats, "--key-file", self.key],
                               prefix=self.bed.prefix("sender"))
        steps = sorted(f for f in os.listdir(dataset) if f.endswith(".raw"))

        def staged():
            return [f for f in steps if os.path.exists(os.path.join(self.ws.staging, f))]
        wait_until(lambda: len(staged()) == len(steps), WAIT_S, "every step staged from the data host",
                   lambda: "%s staged; stager: %s" % (staged(), stager.text()[-1000:]))
        for f in steps:
            with open(os.path.join(dataset, f), "rb") as a, open(os.path.join(self.ws.staging, f), "rb") as b:
                self.assertEqual(a.read(), b.read(), f)
        # serve logs a pull once it is over, which may be a moment after the step is in place
        wait_until(lambda: "encrypted (" in server.text(), WAIT_S, "serve to log an encrypted pull",
                   lambda: server.text()[-2000:])
        self.assertEqual(stager.stop(), 0)
        self.assertEqual(os.listdir(self.ws.staging), [], "the stager left something behind")
        print("%d steps pulled across a 32 ms round trip and staged bit for bit" % len(steps), flush=True)

    def test_a_lost_server_and_a_cut_path_are_named_and_resumed(self):
        src = os.path.join(self.ws.dir, "big")
        write_file(os.path.join(src, "run.bin"), os.urandom(512 * MIB))
        journal = os.path.join(self.root, "dst", ".slabcast-move.journal")


        def started_then(action, peer_timeout=None):
            """Runs the move until a few blocks have landed, then `action`;
            returns (exit code, stderr, seconds from the action to the exit)."""
            start = len(journal_lines(journal))
            mover = subprocess.Popen(self.move_cmd(src, peer_timeout=peer_timeout), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
            self.addCleanup(mover.kill)
            wait_until(lambda: len(journal_lines(journal)) >= start + 6 or mover.poll() is not None, WAIT_S,
                       "6 more blocks journaled", lambda: "%d journaled, move exit code %s" % (
                           len(journal_lines(journal)), mover.poll()))
            self.assertIsNone(mover.poll(), "the transfer ended before the fault: the test proves nothing")
            action()
            t0 = time.monotonic()
            _, err = mover.communicate(timeout=WAIT_S)
            return mover.returncode, err, time.monotonic() - t0

        # 1. The server is killed: the client says so at once (not after its
        # --peer-timeout, 60 s here).
        server = self.start_serve("serve")
        code, err, seconds = started_then(server.proc.kill)
        self.assertNotEqual(code, 0)
        self.assertRegex(err, "connection|closed|reset|lost", err)
        self.assertLess(seconds, 10)
        print("server killed: the client stopped %.1f s later: %s" % (seconds, err.strip().splitlines()[-1]),
              flush=True)

        # 2. The path is cut: the client gives up after --peer-timeout, so does the server, which stays up.
        server = self.start_serve("serve2")
        code, err, seconds = started_then(lambda: self.bed.cut("sender"), peer_timeout=CUT_PEER_TIMEOUT_S)
        self.assertNotEqual(code, 0)
        self.assertLess(seconds, 20, "the client waited on a dead path for too long")
        wait_until(lambda: "stopped" in server.text(), WAIT_S, "the server to give the transfer up",
                   lambda: server.text()[-2000:])
        self.assertTrue(server.alive())
        print("path cut: the client stopped %.1f s later: %s" % (seconds, err.strip().splitlines()[-1]), flush=True)

        # 3. Mended: the same command sends what is missing, and only that.
        self.bed.cut("sender", down=False)
        before = len(journal_lines(journal))
        r = subprocess.run(self.move_cmd(src), capture_output=True, text=True, timeout=WAIT_S)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_same_tree(src, os.path.join(self.root, "dst", "big"))
        written = [l for l in server.text().splitlines() if "bytes written" in l][-1]
        bytes_written = int(written.rsplit("bytes written", 1)[0].split()[-1])
        print("resumed: %d of 128 blocks were there; the last run wrote %.0f MiB of 512" % (
            before, bytes_written / MIB), flush=True)
        self.assertLessEqual(bytes_written, (128 - before + 4) * 4 * MIB)


if __name__ == "__main__":
    unittest_main(verbosity=2)
