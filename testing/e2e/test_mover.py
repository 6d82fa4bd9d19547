"""`slabcast serve` and `slabcast move` on loopback: trees arrive bit for bit
(empty, sparse, unicode, deep, 10,000 small files), a killed transfer resumes
with only what is missing, the pools change size mid-transfer, and every bad
input is named without harm to what is already there."""

import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from slabcast_testlib import SLABCAST, Workspace, free_tcp_port, wait_for, unittest_main  # noqa: E402
from mover_wire import ERROR, challenge, frame, read_frame, read_key, say_hello  # noqa: E402

MIB = 1 << 20
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # the first bytes of a zstd frame
# How long a test waits for something that takes well under a second here:
# a loaded machine, 2-5 times slower with its other core busy, gets there
# long before (a passing run never waits it out).
WAIT_S = 120


def wait_until(predicate, timeout, what, seen=None):
    """wait_for(), failing with what `seen()` shows at the end, when given."""
    try:
        wait_for(predicate, timeout=timeout, what=what)
    except AssertionError as e:
        raise AssertionError("%s; saw: %s" % (e, seen() if seen else "")) from None


def wait_listening(role, address, port):
    """Waits for serve's first line, logged once it listens ("serve: ROOT on
    ADDRESS:PORT, ..."); False if serve exited first (its log says why)."""
    listening = " on %s:%d," % (address, port)
    wait_until(lambda: listening in role.text() or not role.alive(), WAIT_S, "serve to listen on %s:%d" % (
        address, port), role.text)
    return listening in role.text()


def tree_listing(root):
    """{relative path: (kind, size, mode, mtime_ns, sha256)} of a tree."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if name in dirs:
                out[rel] = ("dir", 0, st.st_mode & 0o7777, 0, "")
            else:
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                out[rel] = ("file", st.st_size, st.st_mode & 0o7777, st.st_mtime_ns, digest)
    return out


def assert_trees_equal(test, src, dst):
    """Same names, kinds, sizes, modes, times and contents."""
    a, b = tree_listing(src), tree_listing(dst)
    test.assertEqual(sorted(a), sorted(b), "the trees list different names")
    for rel in a:
        test.assertEqual(a[rel], b[rel], rel)


class Relay:
    """A TCP relay on loopback in front of the server: it keeps the bytes each
    connection's client sends (`sent`, one bytearray per connection) and, with
    `flip_at`, changes one bit of the byte at that offset of each.

    With `budget`, it is a valve: of what the clients send it passes each
    connection's first HANDSHAKE bytes (Hello, manifest) and then `budget`
    bytes more, all connections together, and holds the rest until allow().
    A move through it cannot end before the test has seen what it waits for,
    however much faster than the test it runs."""

    HANDSHAKE = 64 << 10

    def __init__(self, server_port, flip_at=None, budget=None):
        self.server_port, self.flip_at = server_port, flip_at
        self.budget, self.passed, self.valve = budget, 0, threading.Condition()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.sent, self.sockets, self.running = [], [], True
        self.acceptor = threading.Thread(target=self.accept, daemon=True)
        self.acceptor.start()

    def accept(self):
        while self.running:
            try:
                client, _ = self.listener.accept()
            except (socket.timeout, OSError):
                continue
            server = socket.create_connection(("127.0.0.1", self.server_port))
            self.sockets += [client, server]
            self.sent.append(bytearray())
            for args in ((client, server, self.sent[-1]), (server, client, None)):
                threading.Thread(target=self.pump, args=args, daemon=True).start()

    def allow(self, more=None):
        """Lets `more` bytes more through (None: everything, from now on)."""
        with self.valve:
            self.budget = None if more is None or self.budget is None else self.budget + more
            self.valve.notify_all()

    def held(self):
        """Whether the budget is spent: the clients' bytes are being held."""
        with self.valve:
            return self.budget is not None and self.passed >= self.budget

    def take(self, at, want):
        """How many of `want` bytes, at offset `at` of a connection, may pass
        now; waits while none may (OSError once the relay closes)."""
        if at < self.HANDSHAKE:
            return min(want, self.HANDSHAKE - at)
        with self.valve:
            while self.budget is not None and self.passed >= self.budget:
                if not self.running:
                    raise OSError("the relay is closing")
                self.valve.wait(0.2)
            n = want if self.budget is None else min(want, self.budget - self.passed)
            self.passed += n
            return n

    def pump(self, source, sink, kept):
        at = 0
        try:
            while True:
                data = source.recv(1 << 16)
                if not data:
                    break
                if kept is None:
                    sink.sendall(data)
                    continue
                if self.flip_at is not None and at <= self.flip_at < at + len(data):
                    data = bytearray(data)
                    data[self.flip_at - at] ^= 1
                kept += data
                view = memoryview(data)
                while view:
                    n = self.take(at, len(view))
                    sink.sendall(view[:n])
                    view, at = view[n:], at + n
            sink.shutdown(socket.SHUT_WR)  # an orderly end, passed on
        except OSError:  # the sink is gone: what the source still sends is dropped, not left to block it
            try:
                while source.recv(1 << 16):
                    pass
            except OSError:
                pass

    def close(self):
        """Closes every connection (shut down first, which wakes the pumps):
        the server sees its clients go."""
        self.running = False
        with self.valve:  # what is held stays held
            self.valve.notify_all()
        self.acceptor.join()
        self.listener.close()
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def journal_lines(path):
    """The lines of a transfer's journal at `path` (one per block written), []
    before it exists."""
    try:
        with open(path) as f:
            return f.read().split("\n")[:-1]
    except FileNotFoundError:
        return []


def write_file(path, data, mode=0o644, mtime_ns=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))


class MoverTest(unittest.TestCase):
    def setUp(self):
        self.ws = Workspace("mover")
        self.port = free_tcp_port()
        self.root = os.path.join(self.ws.shm + "-root")  # memory destination
        self.serve_log = None

    def tearDown(self):
        self.ws.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def start_serve(self, root=None, *extra):
        for _ in range(5):
            self.server = self.ws.start("serve", ["serve", "--root", root or self.root, "--listen", "127.0.0.1",
                                                  "--port", str(self.port)] + list(extra))
            if wait_listening(self.server, "127.0.0.1", self.port):
                return self.server
            # The free port found a moment ago can be taken by another program meanwhile.
            self.assertIn("Address already in use", self.server.text())
            self.port = free_tcp_port()
        self.fail("no free port for serve:\n" + self.server.text())

    def move(self, *args, timeout=300, user=None):
        cmd = [SLABCAST, "move", "--port", str(self.port), "--progress", "json"] + [str(a) for a in args]
        if user:
            cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        lines = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
        return r, lines

    def assert_same_tree(self, src, dst):
        assert_trees_equal(self, src, dst)

    def test_a_tree_arrives_bit_for_bit(self):
        src = os.path.join(self.ws.dir, "cmip")
        rng = random.Random(7)
        write_file(os.path.join(src, "empty.nc"), b"")
        write_file(os.path.join(src, "données", "été-température.nc"), rng.randbytes(3 * MIB + 17), 0o600)
        write_file(os.path.join(src, "日本", "データ.bin"), rng.randbytes(4 * MIB), 0o640)  # exactly one block
        deep = os.path.join(src, *["d%02d" % i for i in range(30)])
        write_file(os.path.join(deep, "bottom.txt"), b"deep\n", 0o400, mtime_ns=1_234_567_890_123_456_789)
        sparse = os.path.join(src, "sparse.raw")
        with open(sparse, "wb") as f:  # 64 MiB with 8 KiB of data in the middle
            f.truncate(64 * MIB)
            f.seek(32 * MIB)
            f.write(rng.randbytes(8192))
        for i in range(10_000):  # a CMIP-like tree of small files
            write_file(os.path.join(src, "small", "v%02d" % (i % 50), "tas_%05d.nc" % i),
                       rng.randbytes(rng.randrange(0, 16384)))
        dest_root = os.path.join(self.ws.dir, "disk-root")  # a disk destination
        self.start_serve(dest_root)
        r, lines = self.move(src, "127.0.0.1:archive/run1", "--streams", "4", "--readers", "4")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(lines[-1]["kind"], "final")
        self.assertEqual(lines[-1]["files_total"], 10_005)
        self.assert_same_tree(src, os.path.join(dest_root, "archive", "run1", "cmip"))
        copy = os.path.join(dest_root, "archive", "run1", "cmip", "sparse.raw")
        self.assertLessEqual(os.stat(copy).st_blocks * 512, 4 * MIB, "the holes of the sparse file were filled")
        leftovers = [n for _, _, files in os.walk(dest_root) for n in files if "slabcast" in n]
        self.assertEqual(leftovers, [], "part files or the journal were left behind")
        # Again: everything is in place already, nothing is written; what is
        # read (and sent) before the server's answer is in stays within the
        # budget, 8 MiB and a block (4 MiB) more for each of the 4 readers.
        r, lines = self.move(src, "127.0.0.1:archive/run1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("0 written, 10005 already there", r.stderr)
        self.assertLessEqual(lines[-1]["bytes"], 24 * MIB)

    def start_and_kill(self, src, dest, at_least, sig=signal.SIGKILL):
        """Starts a move, kills it (`sig`) once `at_least` blocks are journaled;
        returns the journal's lines (and keeps the move's exit code and
        messages in self.killed). The move goes through a relay that lets a
        few blocks more than `at_least` through (one cut short on each of the
        2 streams, and spares) and holds the rest: it cannot end before it is
        killed, however slow this test is beside it."""
        journal = os.path.join(self.root, dest, ".slabcast-move.journal")
        stops = self.server.text().count("stopped")
        relay = Relay(self.port, budget=(at_least + 4) * 4 * MIB)
        mover = subprocess.Popen([SLABCAST, "move", "--port", str(relay.port), "--progress", "none", "--streams", "2",
                                  src, "127.0.0.1:" + dest], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True)
        try:
            wait_until(lambda: len(journal_lines(journal)) >= at_least or mover.poll() is not None, WAIT_S,
                       "%d blocks journaled" % at_least, lambda: "%d journaled, move exit code %s" % (
                           len(journal_lines(journal)), mover.poll()))
            mover.send_signal(sig)
            _, stderr = mover.communicate(timeout=WAIT_S)
        finally:
            relay.close()  # the server sees the connections end
        self.killed = (mover.returncode, stderr)
        wait_until(lambda: self.server.text().count("stopped") > stops, WAIT_S, "the server to notice",
                   lambda: self.server.text()[-2000:])
        return journal_lines(journal)

    def test_a_killed_transfer_resumes_with_what_is_missing(self):
        src = os.path.join(self.ws.dir, "big")
        write_file(os.path.join(src, "a.bin"), os.urandom(768 * MIB))
        self.start_serve()
        journal = os.path.join(self.root, "dst", ".slabcast-move.journal")
        written = len(self.start_and_kill(src, "dst", 20))
        self.assertLess(written, 192, "the transfer finished before it was killed: the test proves nothing")
        self.assertTrue(self.server.alive(), "the server died with its client")
        self.assertFalse(os.path.exists(os.path.join(self.root, "dst", "big", "a.bin")), "half a file is in place")
        r, lines = self.move(src, "127.0.0.1:dst")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_same_tree(src, os.path.join(self.root, "dst", "big"))
        report = [l for l in self.server.text().splitlines() if "done:" in l]
        self.assertTrue(report, self.server.text())
        written_again = int(self.server_bytes_written())
        print("resume: %d of 192 blocks were there; the second run wrote %.0f MiB of 768" % (
            written, written_again / MIB), flush=True)
        self.assertLessEqual(written_again, (192 - written + 4) * 4 * MIB)
        self.assertFalse(os.path.exists(journal), "the journal outlived a complete transfer")

    def test_ctrl_c_stops_a_move_at_once_and_a_rerun_resumes(self):
        src = os.path.join(self.ws.dir, "big")
        write_file(os.path.join(src, "a.bin"), os.urandom(768 * MIB))
        self.start_serve()
        t0 = time.monotonic()
        written = len(self.start_and_kill(src, "dst", 16, sig=signal.SIGINT))
        code, stderr = self.killed
        self.assertLess(written, 192, "the transfer finished before it was stopped: the test proves nothing")
        self.assertEqual(code, 130, stderr)
        self.assertIn("run the same command again", stderr)
        self.assertTrue(self.server.alive(), "the server died with its client")
        r, _ = self.move(src, "127.0.0.1:dst")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_same_tree(src, os.path.join(self.root, "dst", "big"))
        print("Ctrl-C: move ended with 130 after %d of 192 blocks (%.1f s in all); the rerun completed it" % (
            written, time.monotonic() - t0), flush=True)

    def test_a_damaged_resume_is_caught_and_sent_again(self):
        """What an earlier run left is checked: a journaled block checksum
        that is not the source's fails the file checksum, and with
        --read-back, so do bytes changed on the storage."""
        src = os.path.join(self.ws.dir, "big")
        write_file(os.path.join(src, "a.bin"), os.urandom(384 * MIB))
        self.start_serve(None, "--read-back")
        part = os.path.join(self.root, "dst", "big", ".a.bin.slabcast-part")
        journal = os.path.join(self.root, "dst", ".slabcast-move.journal")
        for damage in ("journal", "storage"):
            lines = self.start_and_kill(src, "dst", 16)
            self.assertLess(len(lines), 96, "the transfer finished before it was killed")
            # The journaled block furthest in (at 60 MiB or more, of 16): the
            # rerun sends again what it reads before the server's answer is in
            # (at most 24 MiB here), which would mend damage that early.
            blocks = [l.split(" ") for l in lines if l.startswith("B ")]  # B SIZE MTIME BLOCK OFFSET CHECKSUM PATH
            fields = max(blocks, key=lambda f: int(f[4]))
            if damage == "journal":  # a journaled checksum that is not the block's
                fields[5] = "%016x" % (int(fields[5], 16) ^ 1)
                with open(journal, "a") as f:
                    f.write(" ".join(fields) + "\n")
            else:  # one byte of a written block changed behind the server's back
                with open(part, "r+b") as f:
                    f.seek(int(fields[4]) + 1000)
                    byte = f.read(1)
                    f.seek(int(fields[4]) + 1000)
                    f.write(bytes([byte[0] ^ 0xFF]))
            r, _ = self.move(src, "127.0.0.1:dst")
            self.assertEqual(r.returncode, 1, r.stderr)
            why = ("checksum of the whole file differs" if damage == "journal"
                   else "read back, it differs from what was received")
            self.assertIn(why, r.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.root, "dst", "big", "a.bin")),
                             "a damaged file went into place")
            self.assertFalse(os.path.exists(part), "the damaged part file was kept for the next resume")
            r, _ = self.move(src, "127.0.0.1:dst")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assert_same_tree(src, os.path.join(self.root, "dst", "big"))
            os.unlink(os.path.join(self.root, "dst", "big", "a.bin"))
            print("damaged %s: caught, the file failed, the next run sent it whole" % damage, flush=True)

    def server_bytes_written(self):
        for line in reversed(self.server.text().splitlines()):
            if "bytes written" in line:
                return line.rsplit("bytes written", 1)[0].split()[-1]
        raise AssertionError("no 'bytes written' in the server log:\n" + self.server.text())

    def test_the_pools_change_size_mid_transfer(self):
        src = os.path.join(self.ws.dir, "many")
        body = os.urandom(24 * MIB)
        for i in range(24):
            write_file(os.path.join(src, "f%02d.bin" % i), b"%08d" % i + body)
        tune = os.path.join(self.ws.dir, "tune")
        with open(tune, "w") as f:
            f.write("streams=1\nreaders=1\n")
        self.start_serve(None, "--tune-file", os.path.join(self.ws.dir, "serve-tune"))
        # The test sets the pace, not the machine: a relay passes the move's
        # bytes only as far as the test lets it, so both changes land while
        # both pools work, however fast the move runs beside the test.
        relay = Relay(self.port, budget=32 * MIB)
        self.addCleanup(relay.close)
        # A small ring keeps the readers just ahead of the streams.
        err = open(os.path.join(self.ws.dir, "move.err"), "w+")
        self.addCleanup(err.close)
        mover = subprocess.Popen([SLABCAST, "move", "--port", str(relay.port), "--progress", "json", "--streams", "1",
                                  "--readers", "1", "--ring-mb", "32", "--tune-file", tune, src, "127.0.0.1:dst"],
                                 stdout=subprocess.PIPE, stderr=err, text=True)
        self.addCleanup(mover.kill)
        progress = []  # (streams, readers) of each progress line, in order

        def read_progress():
            for line in mover.stdout:
                if line.startswith("{"):
                    p = json.loads(line)
                    progress.append((p["streams"], p["readers"]))
        reader = threading.Thread(target=read_progress, daemon=True)
        reader.start()

        def seen():
            err.seek(0)
            return "pools seen %s, relay passed %d MiB, move: %s" % (sorted(set(progress)), relay.passed // MIB,
                                                                       err.read()[-1000:])

        def running_and(predicate):
            self.assertIsNone(mover.poll(), "the move ended before the pools changed: " + seen())
            return predicate()
        wait_until(lambda: running_and(lambda: progress), WAIT_S, "a progress line", seen)
        with open(tune, "w") as f:
            f.write("streams=6\nreaders=3\n")
        with open(os.path.join(self.ws.dir, "serve-tune"), "w") as f:
            f.write("writers=2\n")
        wait_until(lambda: running_and(lambda: (6, 3) in progress), WAIT_S, "6 streams and 3 readers", seen)
        relay.allow(64 * MIB)  # carried by the larger pools
        wait_until(lambda: running_and(relay.held), WAIT_S, "64 MiB more through 6 streams", seen)
        with open(tune, "w") as f:
            f.write("streams=2\nreaders=1\n")

        # A stream or reader leaves once its block is out: a little more at a
        # time lets them go, never enough to end the move (its 576 MiB).
        def shrunk():
            if relay.held():
                relay.allow(4 * MIB)
            return (2, 1) in progress
        wait_until(lambda: running_and(shrunk), WAIT_S, "2 streams and 1 reader", seen)
        relay.allow()
        self.assertEqual(mover.wait(timeout=WAIT_S), 0, seen())
        reader.join(WAIT_S)
        mover.stdout.close()
        print("pool sizes seen (streams, readers):", sorted(set(progress)), flush=True)
        self.assertIn((6, 3), progress)
        self.assertIn((2, 1), progress)
        self.assertGreaterEqual(len(relay.sent), 6, "six streams did not connect")
        self.assert_same_tree(src, os.path.join(self.root, "dst", "many"))
        wait_until(lambda: "2 writer threads" in self.server.text(), WAIT_S, "serve to take writers=2",
                   lambda: self.server.text()[-2000:])

    def test_bad_input_is_named_and_harms_nothing(self):
        self.start_serve()
        base = os.path.join(self.ws.dir, "bad")
        write_file(os.path.join(base, "a", "x"), b"1")
        write_file(os.path.join(base, "b", "x"), b"2")
        r, _ = self.move(os.path.join(base, "a", "x"), os.path.join(base, "b", "x"), "127.0.0.1:d")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("name collision", r.stderr)
        r, _ = self.move(os.path.join(base, "nothing"), "127.0.0.1:d")
        self.assertIn("nothing: No such file or directory", r.stderr)
        r, _ = self.move(os.path.join(base, "a"), "no-colon-here")
        self.assertIn("expected HOST:DEST", r.stderr)

        # Unreadable, for a user who cannot read it.
        locked = os.path.join(self.ws.dir, "locked")
        write_file(os.path.join(locked, "secret"), b"s", 0o000)
        os.chmod(self.ws.dir, 0o755)
        os.chmod(locked, 0o755)
        r, _ = self.move(locked, "127.0.0.1:d", user=65534)
        self.assertIn("secret: cannot read: Permission denied", r.stderr)

        # A file that vanishes after it was listed: the others still arrive.
        # The move goes through a relay that holds its blocks until the file
        # is gone: its one reader, held in big.bin by a full ring (32 MiB)
        # and one stream's socket buffers, cannot have opened small.txt yet,
        # however fast it runs.
        vanish = os.path.join(self.ws.dir, "vanish")
        write_file(os.path.join(vanish, "big.bin"), os.urandom(128 * MIB))
        write_file(os.path.join(vanish, "small.txt"), b"soon gone")
        relay = Relay(self.port, budget=0)
        self.addCleanup(relay.close)
        mover = subprocess.Popen([SLABCAST, "move", "--port", str(relay.port), "--progress", "none", "--readers", "1",
                                  "--streams", "1", "--ring-mb", "32", os.path.join(vanish, "big.bin"),
                                  os.path.join(vanish, "small.txt"), "127.0.0.1:v"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(mover.kill)
        wait_until(lambda: "128.0 MiB" in self.server.text(), WAIT_S, "the transfer's manifest",
                   lambda: self.server.text()[-2000:])
        os.remove(os.path.join(vanish, "small.txt"))
        relay.allow()
        _, err = mover.communicate(timeout=WAIT_S)
        self.assertEqual(mover.returncode, 1, err)
        self.assertIn("small.txt: cannot open: No such file or directory", err)
        self.assertTrue(os.path.exists(os.path.join(self.root, "v", "big.bin")))
        self.assertFalse(os.path.exists(os.path.join(self.root, "v", "small.txt")))

        # A directory where a file goes, and a symbolic link planted in the destination.
        os.makedirs(os.path.join(self.root, "c", "x"))
        r, _ = self.move(os.path.join(base, "a", "x"), "127.0.0.1:c")
        self.assertIn("a directory of that name is in the way", r.stderr)
        outside = os.path.join(self.ws.dir, "outside")
        os.makedirs(outside)
        os.makedirs(os.path.join(self.root, "l"))
        os.symlink(outside, os.path.join(self.root, "l", "a"))
        r, _ = self.move(os.path.join(base, "a"), "127.0.0.1:l")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("the server refused the transfer", r.stderr)
        self.assertEqual(os.listdir(outside), [], "a write went through the symbolic link")
        self.assertTrue(self.server.alive())

    def test_a_hostile_manifest_is_refused(self):
        """Names that would leave the destination, numbers that fit no field and
        a Hello that is not one, sent by a hand-made client."""
        self.start_serve()

        def entry(path="a", size=1, mode=420):
            return {"path": path, "size": size, "mode": mode, "mtime_ns": 0}
        # Names that would leave the destination, and numbers that fit no field
        # (once cast, undefined: fuzz_manifest).
        for transfer, (bad, why) in enumerate(((entry("../evil"), "a '..' component"), (entry("/etc/evil"), "absolute"),
                         (entry("a//b"), "an empty component"), (entry("x\ny"), "a control character"),
                         (entry(mode=4.2e113), "'mode' must be a whole number"),
                         (entry(size=-1), "'size' is out of range")), start=100):
            manifest = json.dumps({"block": 4 << 20, "dirs": [], "files": [bad]}).encode()
            # A transfer id of its own each time: serve forgets a refused
            # transfer a moment after the refusal, and under load the next
            # case could arrive first ("a transfer with this id is running").
            with socket.create_connection(("127.0.0.1", self.port), timeout=WAIT_S) as s:
                say_hello(s, transfer, {"stream": 0, "dest": "h"})
                s.sendall(frame(2, transfer, manifest, extra=len(manifest)))
                kind, payload = read_frame(s)
            self.assertEqual(kind, 10, payload)  # Error
            self.assertIn(why, payload.decode())
        # A Hello that is not one.
        with socket.create_connection(("127.0.0.1", self.port), timeout=WAIT_S) as s:
            say_hello(s, 97, {"stream": 1e300})
            kind, payload = read_frame(s)
        self.assertEqual(kind, 10, payload)
        self.assertIn("'stream' must be a whole number", payload.decode())
        self.assertFalse(os.path.exists(os.path.join(self.ws.dir, "evil")))
        self.assertTrue(self.server.alive())

    def test_only_clients_with_the_key_may_write(self):
        """serve --key-file: a move with the key arrives over 4 streams, each
        authenticated both ways; one without the key or with another is refused
        in words that say so, and the server logs the client, writes nothing
        for it and goes on; a Hello recorded on one connection is refused on the
        next; a client with a key sends nothing to a server that has none."""
        key, other = (os.path.join(self.ws.dir, name) for name in ("site.key", "other.key"))
        for k in (key, other):
            self.assertEqual(self.ws.run(["keygen", k]).returncode, 0)
        src = os.path.join(self.ws.dir, "auth")
        write_file(os.path.join(src, "big.bin"), os.urandom(24 * MIB + 3))
        for i in range(40):
            write_file(os.path.join(src, "small", "f%02d" % i), os.urandom(i * 1000))
        self.start_serve(None, "--key-file", key)
        self.assertIn("clients must hold the key", self.server.text())
        r, _ = self.move(src, "127.0.0.1:ok", "--key-file", key, "--streams", "4", "--block-kb", "1024")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_same_tree(src, os.path.join(self.root, "ok", "auth"))

        for args, why in (([], "the server requires authentication: give this client the server's key file "
                                "with --key-file"),
                          (["--key-file", other], "authentication failed: the server and this client hold "
                                                  "different keys")):
            r, _ = self.move(src, "127.0.0.1:refused", *args)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn(why, r.stderr)
            wait_until(lambda: why.split(":")[0] in self.server.text(), WAIT_S, "the server to log the refusal",
                       lambda: self.server.text()[-2000:])
        # Each refused client is logged once for each stream it opened: its
        # streams connect while stream 0 says Hello (4 at most for each of the two).
        refusals = self.server.text().count("refused a client from 127.0.0.1")
        self.assertTrue(2 <= refusals <= 8, self.server.text())
        self.assertFalse(os.path.exists(os.path.join(self.root, "refused")), "a refused client wrote something")

        # A hand-made client with the key checks the server's proof itself
        # (say_hello); its Hello, sent again on a new connection, is refused.
        with socket.create_connection(("127.0.0.1", self.port), timeout=WAIT_S) as s:
            hello = say_hello(s, 0x5EED, {"stream": 0, "dest": "replayed"}, key=read_key(key))
        with socket.create_connection(("127.0.0.1", self.port), timeout=WAIT_S) as s:
            self.assertEqual(read_frame(s)[0], 12)  # a Challenge, with a fresh nonce
            s.sendall(hello)
            kind, payload = read_frame(s)
        self.assertEqual(kind, ERROR, payload)
        self.assertIn(b"hold different keys", payload)
        self.assertFalse(os.path.exists(os.path.join(self.root, "replayed")))

        self.assertTrue(self.server.alive())
        r, _ = self.move(src, "127.0.0.1:after", "--key-file", key)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_same_tree(src, os.path.join(self.root, "after", "auth"))

        # A server without a key: a client given one will not send to it.
        plain_port = free_tcp_port()
        plain = self.ws.start("serve-plain", ["serve", "--root", os.path.join(self.ws.dir, "plain"), "--listen",
                                              "127.0.0.1", "--port", str(plain_port)])
        self.assertTrue(wait_listening(plain, "127.0.0.1", plain_port), plain.text())
        r = subprocess.run([SLABCAST, "move", "--port", str(plain_port), "--progress", "none", "--key-file", key, src,
                            "127.0.0.1:x"], capture_output=True, text=True, timeout=WAIT_S)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("authentication failed: the server holds no key", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.ws.dir, "plain", "x")))

    def test_encrypted_streams_show_no_data_and_a_changed_byte_is_caught(self):
        """move --encrypt through a relay that keeps what passes: the tree
        arrives, and neither its bytes nor its names were on the wire (which
        they are, through the same relay, without --encrypt); a relay that
        changes one byte on the way fails the transfer, and the file it was
        in does not go into place."""
        key = os.path.join(self.ws.dir, "site.key")
        self.assertEqual(self.ws.run(["keygen", key]).returncode, 0)
        src = os.path.join(self.ws.dir, "sealed")
        data = os.urandom(24 * MIB + 3)
        write_file(os.path.join(src, "secret-name.bin"), data)
        for i in range(20):
            write_file(os.path.join(src, "small", "f%02d" % i), os.urandom(i * 999))
        self.start_serve(None, "--key-file", key)

        def move_through(relay, dest, *extra):
            return subprocess.run([SLABCAST, "move", "--port", str(relay.port), "--progress", "none", "--key-file",
                                   key, "--streams", "4", src, "127.0.0.1:" + dest] + list(extra),
                                  capture_output=True, text=True, timeout=WAIT_S)

        def on_the_wire(relay, what):
            """The pieces of `what` that crossed readable: as bytes, or inside a
            zstd frame (the manifest travels compressed) that expands."""
            wire = b"".join(bytes(r) for r in relay.sent)
            seen, at = [wire], wire.find(ZSTD_MAGIC)
            while at >= 0:
                seen.append(subprocess.run(["zstd", "-d", "-c", "-q"], input=wire[at:at + 4 * MIB],
                                           capture_output=True).stdout)
                at = wire.find(ZSTD_MAGIC, at + 1)
            return [piece for piece in what if any(piece in x for x in seen)]

        samples = [data[at:at + 64] for at in range(0, len(data) - 64, 4 * MIB)] + [b"secret-name.bin"]
        plain = Relay(self.port)
        r = move_through(plain, "plain")
        plain.close()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(on_the_wire(plain, samples)), len(samples), "the relay does not see what passes")

        sealed = Relay(self.port)
        r = move_through(sealed, "sealed", "--encrypt")
        sealed.close()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"encrypted \((AES-256-GCM|XChaCha20-Poly1305)\)")
        self.assert_same_tree(src, os.path.join(self.root, "sealed", "sealed"))
        self.assertGreater(sum(len(x) for x in sealed.sent), len(data))
        self.assertEqual(on_the_wire(sealed, samples), [], "file bytes or names crossed in the clear")

        changed = Relay(self.port, flip_at=2 * MIB)  # one bit, 2 MiB into every stream long enough
        r = move_through(changed, "changed", "--encrypt")
        changed.close()
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr, "failed its check|out of step")
        print("a bit changed on the way: %s" % r.stderr.strip().splitlines()[-1], flush=True)
        self.assertFalse(os.path.exists(os.path.join(self.root, "changed", "sealed", "secret-name.bin")))
        self.assertTrue(self.server.alive())

    def test_serve_beyond_loopback_needs_a_key_or_says_it_has_none(self):
        """Without --key-file, serve listens on loopback only, unless told
        --insecure-no-auth; the refusal names each way out."""
        root = os.path.join(self.ws.dir, "open")
        port = free_tcp_port()
        r = self.ws.run(["serve", "--root", root, "--port", str(port)])  # --listen 0.0.0.0 by default
        self.assertNotEqual(r.returncode, 0)
        for way_out in ("without --key-file would let anyone who reaches port %d write into" % port,
                        "slabcast keygen", "--listen 127.0.0.1", "--insecure-no-auth"):
            self.assertIn(way_out, r.stderr)
        server = self.ws.start("serve-open", ["serve", "--root", root, "--port", str(port), "--insecure-no-auth"])
        self.assertTrue(wait_listening(server, "0.0.0.0", port), server.text())
        self.assertIn("no key: clients are not authenticated", server.text())
        src = os.path.join(self.ws.dir, "one")
        write_file(os.path.join(src, "a"), b"anyone")
        r = subprocess.run([SLABCAST, "move", "--port", str(port), "--progress", "none", src, "127.0.0.1:d"],
                           capture_output=True, text=True, timeout=WAIT_S)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_same_tree(src, os.path.join(root, "d", "one"))

    def test_a_malformed_answer_from_the_server_is_refused(self):
        """A hand-made server answers the manifest with a Have whose file
        indices are no file's, or whose offsets are no block's of the file:
        the client names the answer, and trusts none of it."""
        src = os.path.join(self.ws.dir, "one")
        write_file(os.path.join(src, "a.bin"), b"x" * 4096)
        cases = [({"complete": [], "blocks": {key: [0]}}, "'%s' is not a file's index" % key)
                 for key in ("4294967296", "-1", "0x", "")]
        cases += [({"complete": [], "blocks": {"7": [0]}}, "file 7 is not in the manifest (it lists 1)"),
                  ({"complete": [5], "blocks": {}}, "file 5 is not in the manifest (it lists 1)"),
                  ({"complete": [], "blocks": {"0": [1]}}, "offset 1 is not a block of 'one/a.bin'"),
                  ({"complete": [], "blocks": {"0": [4096]}}, "offset 4096 is not a block of 'one/a.bin'")]
        for have, why in cases:
            with socket.create_server(("127.0.0.1", 0)) as listener:
                listener.settimeout(WAIT_S)  # a move that never connects fails here, not at ctest's limit
                mover = subprocess.Popen([SLABCAST, "move", "--port", str(listener.getsockname()[1]), "--progress",
                                          "none", src, "127.0.0.1:d"], stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, text=True)
                self.addCleanup(mover.kill)  # should it hang on the answer
                conn, _ = listener.accept()
                with conn:
                    conn.settimeout(WAIT_S)
                    conn.sendall(challenge())
                    self.assertEqual(read_frame(conn)[0], 1)  # Hello
                    self.assertEqual(read_frame(conn)[0], 2)  # the manifest, one frame for one file
                    conn.sendall(frame(3, 0, json.dumps(have).encode()))
                    _, err = mover.communicate(timeout=WAIT_S)
            self.assertNotEqual(mover.returncode, 0, err)
            self.assertIn("the server's answer is malformed: " + why, err)


if __name__ == "__main__":
    unittest_main()
