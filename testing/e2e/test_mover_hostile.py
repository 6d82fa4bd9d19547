"""A hostile peer against a live `slabcast serve`, played by a client written
by hand (raw sockets and struct, testing/e2e/mover_wire.py; none of the
project's code): sizes that wrap, offsets, lengths and file ids outside the
manifest, frames out of order, a second stream before the manifest, huge
declarations, too many files, more bytes than the disk has, a flood of idle
connections, 250-byte names, and symbolic links swapped in mid-transfer. After
each, serve is alive, has refused with a message naming the problem, holds
bounded memory and threads (/proc/PID/status), has written nothing outside
--root, and a real `slabcast move` still arrives bit for bit."""

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from slabcast_testlib import SLABCAST, Workspace, free_tcp_port, unittest_main, wait_for  # noqa: E402
from mover_wire import (BYE, DATA, DONE, ERROR, FILE_END, FILE_FAILED, HAVE, HELLO, MANIFEST, REPORT,  # noqa: E402
                        ZEROS, challenge, checksum_of, frame, header, manifest_json, read_frame, read_key,
                        say_hello)
from test_mover import (WAIT_S, Relay, assert_trees_equal, journal_lines, wait_listening, wait_until,  # noqa: E402
                        write_file)

MIB = 1 << 20
BLOCK = 4096
# Words of a hostile peer: an escape that recolours a terminal, a line of its
# own for a log, a carriage return, a bell and a DEL.
HOSTILE_LINE = "FAKE LOG LINE"
HOSTILE = "ok\x1b[31m red\n" + HOSTILE_LINE + "\r\x07\x7f end"


def proc_status(pid):
    """(VmRSS in MiB, threads) of a live process."""
    fields = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.split()
    return int(fields["VmRSS"][0]) / 1024, int(fields["Threads"][0])


def unread_by_serve(port, sock):
    """Bytes `sock` sent that wait, unread by serve, at serve's end of the
    connection (/proc/net/tcp: loopback delivers at once, so 0 means serve
    has read everything sent so far); None if that end is gone."""
    mine = sock.getsockname()[1]
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            local, remote = (int(a.split(":")[1], 16) for a in fields[1:3])
            if local == port and remote == mine:
                return int(fields[4].split(":")[1], 16)
    return None


def accept_queue(port):
    """Connections waiting for serve's accept() on its listening socket."""
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if int(fields[1].split(":")[1], 16) == port and fields[3] == "0A":  # LISTEN
                return int(fields[4].split(":")[1], 16)
    return None


def read_by_serve(port, socks):
    """Bytes of `socks` that serve has read: what their peer's kernel
    acknowledged (TCP_INFO's tcpi_bytes_acked) less what it holds unread."""
    acked = sum(struct.unpack_from("<Q", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256), 120)[0]
                for s in socks)
    return acked - sum(unread_by_serve(port, s) or 0 for s in socks)


def entry(path, size, mode=0o644):
    return {"path": path, "size": size, "mode": mode, "mtime_ns": 1_000_000_000}


def manifest_frames(transfer, files, dirs=(), block=BLOCK):
    text = json.dumps({"block": block, "dirs": list(dirs), "files": list(files)}).encode()
    return frame(MANIFEST, transfer, text, extra=len(text))


def zeros(transfer, file, offset, length):
    """A Zeros frame (its checksum is not looked at before its numbers are)."""
    return header(ZEROS, transfer, 0, file=file, offset=offset, extra=length)


def file_checksum(block_sums):
    """The mover's file checksum: XXH3-64 of the blocks' checksums as little-endian words."""
    return checksum_of(b"".join(s.to_bytes(8, "little") for s in block_sums))


class HostileTest(unittest.TestCase):
    def setUp(self):
        self.ws = Workspace("mover-hostile")
        self.port = free_tcp_port()
        self.root = os.path.join(self.ws.dir, "root")
        # Beside --root: what no peer may touch.
        self.outside = os.path.join(self.ws.dir, "outside")
        write_file(os.path.join(self.outside, "secret"), b"outside the served tree\n", 0o600)
        os.chmod(self.outside, 0o755)
        self.sockets = []
        self.moves = 0

    def tearDown(self):
        for s in self.sockets:
            s.close()
        self.ws.close()

    def start_serve(self, *extra, root=None):
        for _ in range(5):
            self.server = self.ws.start("serve", ["serve", "--root", root or self.root, "--listen", "127.0.0.1",
                                                  "--port", str(self.port)] + [str(a) for a in extra])
            if wait_listening(self.server, "127.0.0.1", self.port):
                # Listening, serve has only its main thread; it starts one per stream.
                self.baseline = proc_status(self.server.proc.pid)
                return self.server
            # The free port found a moment ago can be taken by another program meanwhile.
            self.assertIn("Address already in use", self.server.text())
            self.port = free_tcp_port()
        self.fail("no free port for serve:\n" + self.server.text())

    def connect(self, source="127.0.0.1"):
        s = socket.socket()
        s.settimeout(WAIT_S)
        s.bind((source, 0))
        s.connect(("127.0.0.1", self.port))
        self.sockets.append(s)
        return s

    def hello(self, transfer, stream=0, dest="h", source="127.0.0.1", key=None):
        s = self.connect(source)
        say_hello(s, transfer, {"stream": stream, "dest": dest} if stream == 0 else {"stream": stream}, key)
        return s

    def open_transfer(self, transfer, files, dirs=(), dest="h"):
        """Stream 0 of a transfer whose manifest the server has answered. The
        manifest is made first (xxhsum, a process of its own): it follows
        the Hello at once, well within an --idle-timeout of 2 s."""
        manifest = manifest_frames(transfer, files, dirs)
        s = self.hello(transfer, dest=dest)
        s.sendall(manifest)
        kind, payload = read_frame(s)
        self.assertEqual(kind, HAVE, payload)
        return s

    def expect_error(self, s, why):
        kind, payload = read_frame(s)
        while kind in (HAVE,):
            kind, payload = read_frame(s)
        self.assertEqual(kind, ERROR, "expected a refusal naming %r, got %r %r" % (why, kind, payload))
        self.assertIn(why, payload.decode())
        self.assertTrue(self.server.alive(), "serve died")
        return payload.decode()

    def assert_bounded(self, what, rss_mb=64, threads=4):
        """serve is alive, and holds no more than `rss_mb` MiB and `threads`
        threads beyond what it held when it started listening."""
        self.assertTrue(self.server.alive(), "serve died: " + self.server.text()[-2000:])
        # A transfer just refused may still be winding its threads down.
        deadline = time.monotonic() + WAIT_S
        while proc_status(self.server.proc.pid)[1] - self.baseline[1] > threads and time.monotonic() < deadline:
            time.sleep(0.05)
        rss, n = proc_status(self.server.proc.pid)
        print("%s: serve holds %.1f MiB (%.1f at start), %d threads (%d at start)" % (
            what, rss, self.baseline[0], n, self.baseline[1]), flush=True)
        self.assertLess(rss - self.baseline[0], rss_mb, what)
        self.assertLessEqual(n - self.baseline[1], threads, what)

    def assert_real_move_works(self, *extra):
        """A real `slabcast move` of a small tree arrives bit for bit, and
        nothing outside --root was touched."""
        self.moves += 1
        src = os.path.join(self.ws.dir, "real-%d" % self.moves, "tree")
        write_file(os.path.join(src, "big.bin"), os.urandom(6 * MIB + 5))
        for i in range(20):
            write_file(os.path.join(src, "small", "f%02d" % i), os.urandom(i * 300))
        r = subprocess.run([SLABCAST, "move", "--port", str(self.port), "--progress", "none", "--streams", "4"] +
                           list(extra) + [src, "127.0.0.1:real-%d" % self.moves],
                           capture_output=True, text=True, timeout=WAIT_S)
        self.assertEqual(r.returncode, 0, r.stderr + self.server.text()[-3000:])
        assert_trees_equal(self, src, os.path.join(self.root, "real-%d" % self.moves, "tree"))
        self.assert_nothing_outside()

    def assert_nothing_outside(self):
        self.assertEqual(os.listdir(self.outside), ["secret"])
        self.assertEqual(os.stat(self.outside).st_mode & 0o7777, 0o755)
        with open(os.path.join(self.outside, "secret"), "rb") as f:
            self.assertEqual(f.read(), b"outside the served tree\n")
        self.assertEqual(os.stat(os.path.join(self.outside, "secret")).st_mode & 0o7777, 0o600)
        unexpected = [n for n in os.listdir(self.ws.dir)
                      if n not in ("root", "outside", "serve.log") and not n.startswith(("real-", "src", "tmpfs"))]
        self.assertEqual(unexpected, [], "something appeared beside --root")

    def test_sizes_offsets_lengths_and_file_ids_are_checked(self):
        self.start_serve("--ring-mb", "16")
        # The exploit of the landed code: a size of 2^64-1 wrapped the block
        # count, and a Zeros frame then wrote at an address of the client's choosing.
        s = self.hello(0x1001)
        s.sendall(manifest_frames(0x1001, [entry("a", 2**64 - 1)]) + zeros(0x1001, 0, 2**40, BLOCK))
        self.expect_error(s, "field 'size' is 18446744073709551615, above 2^63-1")
        s = self.hello(0x1002)
        s.sendall(manifest_frames(0x1002, [entry("a", 2**63)]))
        self.expect_error(s, "field 'size' is 9223372036854775808")
        s = self.hello(0x1003)
        s.sendall(manifest_frames(0x1003, [entry("a", 2**63 - 1), entry("b", 2**63 - 1), entry("c", 2)]))
        self.expect_error(s, "the files' sizes add up to more than 2^64 bytes")

        files = [entry("a", 10000), entry("empty", 0)]
        for n, (bad, why) in enumerate((
                (lambda t: zeros(t, 2, 0, BLOCK), "file 2 (field 'file'), but the manifest lists 2 files"),
                (lambda t: zeros(t, 2**32 - 1, 0, BLOCK), "file 4294967295 (field 'file')"),
                (lambda t: zeros(t, 0, 2**63, BLOCK), "offset 9223372036854775808 (field 'offset') of 'a'"),
                (lambda t: zeros(t, 0, 12288, BLOCK), "offset 12288 (field 'offset') of 'a', which has 10000 bytes"),
                (lambda t: zeros(t, 0, 100, BLOCK), "offset 100 (field 'offset')"),
                (lambda t: zeros(t, 0, 8192, 2**64 - 1), "18446744073709551615 bytes (field 'extra') at offset 8192"),
                (lambda t: zeros(t, 1, 0, 0), "offset 0 (field 'offset') of 'empty', which has 0 bytes"),
                (lambda t: frame(DATA, t, b"x" * 100, file=0), "100 bytes (field 'length') at offset 0 of 'a'"),
                (lambda t: frame(DATA, t, b"x" * 5000, file=0), "5000 bytes (field 'length'), more than the block"),
                (lambda t: frame(DONE, t, extra=9), "Done counts 9 files (field 'extra'), the manifest lists 2"))):
            t = 0x2000 + n
            s = self.open_transfer(t, files)
            s.sendall(bad(t))
            self.expect_error(s, why)
        self.assertFalse(os.path.exists(os.path.join(self.root, "h", "a")), "a file went into place")
        self.assert_bounded("after wrapping sizes and out-of-range frames")
        self.assert_real_move_works()

    def test_frames_out_of_order_and_a_second_stream_before_the_manifest(self):
        self.start_serve()
        s = self.hello(0x3001)
        s.sendall(zeros(0x3001, 0, 0, BLOCK))
        self.expect_error(s, "expected the manifest, not a Zeros frame")
        s = self.hello(0x3002)
        s.sendall(frame(DATA, 0x3002, b"x" * 10))
        self.expect_error(s, "expected the manifest, not a Data frame")
        s = self.hello(0x3003, stream=1)  # refused once serve has waited a moment for its stream 0
        self.expect_error(s, "a stream of an unknown transfer")

        # Stream 1 says Hello, and sends a block, before stream 0 has sent its
        # manifest, as the sender opens its streams meanwhile: the landed code
        # gave it to the block loop, which used the ring before it existed.
        # Its bytes are read and held, and its block is judged and carried
        # once the manifest is taken.
        block_sum = checksum_of(bytes(BLOCK))
        first = self.hello(0x3004)
        # Stream 0's Hello read first (serve also waits 5 s for a stream 0 that comes second).
        wait_until(lambda: unread_by_serve(self.port, first) == 0, WAIT_S, "serve to read stream 0's Hello")
        second = self.hello(0x3004, stream=1)
        second.sendall(header(ZEROS, 0x3004, 0, file=0, offset=0, checksum=block_sum, extra=BLOCK))
        wait_until(lambda: unread_by_serve(self.port, second) == 0, WAIT_S, "serve to read stream 1's early block",
                   lambda: "%s bytes unread" % unread_by_serve(self.port, second))
        self.assertTrue(self.server.alive(), "serve died")
        first.sendall(manifest_frames(0x3004, [entry("z", BLOCK)]))
        self.assertEqual(read_frame(first)[0], HAVE)
        first.sendall(header(FILE_END, 0x3004, 0, file=0, checksum=file_checksum([block_sum]), extra=BLOCK) +
                      frame(DONE, 0x3004, extra=1))
        kind, report = read_frame(first)
        self.assertEqual(kind, REPORT, report)
        self.assertEqual(json.loads(report)["failed"], [])
        with open(os.path.join(self.root, "h", "z"), "rb") as f:
            self.assertEqual(f.read(), bytes(BLOCK))  # the early stream's block, carried
        second.sendall(frame(BYE, 0x3004))
        first.close()
        second.close()

        # Streams that pour bytes in while their stream 0 never sends its
        # manifest: serve reads 16 MiB of them for the transfer in all, and
        # leaves the rest on the sockets.
        silent = self.hello(0x3008)
        pourers = [self.hello(0x3008, stream=k) for k in range(1, 5)]

        def pour(sock):
            try:
                sock.sendall(os.urandom(MIB) * 24)
            except OSError:  # closed below, or timed out against a full window
                pass
        threads = [threading.Thread(target=pour, args=(p,)) for p in pourers]
        for t in threads:
            t.start()
        # Memory is looked at once serve has read its 16 MiB of them (their Hellos too).
        wait_until(lambda: read_by_serve(self.port, pourers) >= 16 * MIB, WAIT_S, "serve to read 16 MiB",
                   lambda: "%.2f MiB read" % (read_by_serve(self.port, pourers) / MIB))
        self.assert_bounded("four streams pouring 96 MiB before their manifest", rss_mb=24, threads=5)
        for p in pourers + [silent]:
            p.shutdown(socket.SHUT_RDWR)
            p.close()
        for t in threads:
            t.join()

        s = self.open_transfer(0x3005, [entry("a", 10)])
        s.sendall(manifest_frames(0x3005, [entry("b", 10)]))
        self.expect_error(s, "a Manifest frame in the middle of the transfer")
        s = self.open_transfer(0x3006, [entry("a", 10)])
        s.sendall(frame(1, 0x3006, b"{}"))
        self.expect_error(s, "a Hello frame in the middle of the transfer")
        s = self.hello(0x3007)  # a manifest whose frames do not follow on
        text = json.dumps({"block": BLOCK, "dirs": [], "files": []}).encode()
        s.sendall(frame(MANIFEST, 0x3007, text[:10], extra=len(text)) +
                  frame(MANIFEST, 0x3007, text[10:], offset=3, extra=len(text)))
        self.expect_error(s, "a manifest frame at offset 3 (field 'offset'), where 10 was next")
        self.assert_bounded("after frames out of order")
        self.assert_real_move_works()

    def test_huge_declarations_are_refused_before_memory_is_spent(self):
        self.start_serve("--max-files", "100")
        s = self.hello(0x4001)
        s.sendall(header(MANIFEST, 0x4001, 100, extra=2**40))
        self.expect_error(s, "the manifest declares 1099511627776 bytes (field 'extra'), above the limit of "
                             "67108864 bytes (serve --max-manifest-mb)")
        # 120 bytes that took the landed code from 5 MiB to 2 GiB: 2^50 bytes in
        # 4 MiB blocks, per-block bookkeeping allocated up front.
        s = self.hello(0x4002)
        s.sendall(manifest_frames(0x4002, [entry("big", 2**50)], block=4 * MIB))
        self.expect_error(s, "the manifest declares 268435456 blocks of 4194304 bytes, above the limit of "
                             "16777216 (serve --max-blocks)")
        s = self.hello(0x4003)
        s.sendall(manifest_frames(0x4003, [entry("f%03d" % i, 1) for i in range(101)]))
        self.expect_error(s, "the manifest lists 101 files and directories, above the limit of 100 (serve --max-files)")
        self.assert_bounded("after huge declarations", rss_mb=32)
        self.server.stop()

        self.start_serve("--max-blocks", str(2**32))
        s = self.hello(0x4004)
        s.sendall(manifest_frames(0x4004, [entry("big", 2**50)], block=4 * MIB))
        why = self.expect_error(s, "the transfer needs 1125899906842624 bytes (1048576.0 GiB) more, and ")
        self.assertRegex(why, r"has \d+ bytes \([\d.]+ GiB\) free")
        self.assert_bounded("after a declaration above the free space", rss_mb=32)
        self.assertEqual(os.listdir(self.root), [], "a refused transfer created something")
        self.assert_real_move_works()

    def test_more_bytes_than_the_disk_has(self):
        small = os.path.join(self.ws.dir, "tmpfs")
        os.makedirs(small)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", small]).returncode != 0:
            self.skipTest("cannot mount a small tmpfs here (needs root)")
        try:
            self.start_serve(root=small)
            src = os.path.join(self.ws.dir, "src")
            write_file(os.path.join(src, "a-first.bin"), os.urandom(2 * MIB))
            write_file(os.path.join(src, "b-big.bin"), os.urandom(40 * MIB))
            r = subprocess.run([SLABCAST, "move", "--port", str(self.port), "--progress", "none", src, "127.0.0.1:"],
                               capture_output=True, text=True, timeout=WAIT_S)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertRegex(r.stderr, r"the transfer needs 44040192 bytes \(42.0 MiB\) more, and %s has \d+ bytes "
                                       r"\([\d.]+ MiB\) free" % small)
            self.assertEqual(os.listdir(small), [], "a refused transfer wrote something")

            # A disk that fills after the check: the hand-made client's blocks
            # come after something else took the space.
            data = os.urandom(2 * MIB)
            s = self.open_transfer(0x5001, [entry("late.bin", len(data))], dest="")
            with open(os.path.join(small, "filler"), "wb") as f:
                try:
                    while True:
                        f.write(b"\xff" * MIB)
                        f.flush()
                except OSError:
                    pass
            s.sendall(b"".join(frame(DATA, 0x5001, data[at:at + BLOCK], offset=at)
                               for at in range(0, 64 * BLOCK, BLOCK)))
            self.expect_error(s, "No space left on device")
            os.unlink(os.path.join(small, "filler"))
            self.assert_bounded("after a full disk")
            r = subprocess.run([SLABCAST, "move", "--port", str(self.port), "--progress", "none",
                                os.path.join(src, "a-first.bin"), "127.0.0.1:"], capture_output=True, text=True,
                               timeout=WAIT_S)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(small, "a-first.bin"), "rb") as f, open(os.path.join(src, "a-first.bin"), "rb") as g:
                self.assertEqual(f.read(), g.read())
        finally:
            self.server.stop()
            subprocess.run(["umount", small])

    def test_a_flood_of_idle_connections_does_not_stop_a_real_move(self):
        self.start_serve("--hello-timeout", "6", "--max-waiting", "64")
        # 300 connections from another address that never say Hello, and 20 that
        # send half a header and stop (each used to hold a thread for 10 s).
        flood = [self.connect("127.0.0.2") for _ in range(300)]
        slow = []
        for _ in range(20):
            s = self.connect("127.0.0.3")
            s.sendall(header(1, 0x6001, 100)[:20])
            slow.append(s)
        # Counted once serve has taken every connection and read the half headers.
        wait_until(lambda: accept_queue(self.port) == 0 and all(unread_by_serve(self.port, s) in (0, None)
                                                                 for s in slow),
                   WAIT_S, "serve to take the 320 connections", lambda: "%s waiting for accept()" % (
                       accept_queue(self.port),))
        self.assert_bounded("holding 320 idle connections", threads=1)
        t0 = time.monotonic()
        self.assert_real_move_works()
        print("a real move of 6 MiB and 20 files during the flood took %.2f s" % (time.monotonic() - t0), flush=True)
        self.assert_bounded("after the move, the flood still held", threads=1)
        # Within the Hello timeout each idle connection is closed by serve:
        # the oldest first once 64 wait, the rest when their 6 s are up
        # (looked for far longer: a loaded machine may take a while to get round).
        deadline = time.monotonic() + WAIT_S

        def closed_by_serve(s):
            """Reads (its Challenge, say) until serve closes it, or the deadline."""
            while time.monotonic() < deadline:
                s.settimeout(max(0.1, deadline - time.monotonic()))
                try:
                    if not s.recv(65536):
                        return True
                except ConnectionResetError:
                    return True
                except socket.timeout:
                    return False
            return False
        still_open = [s for s in flood + slow if not closed_by_serve(s)]
        self.assertEqual(len(still_open), 0, "idle connections left open")
        text = self.server.text()
        self.assertIn("(--max-waiting): the oldest from 127.0.0.2", text)
        self.assertIn("no Hello within 6 s (--hello-timeout)", text)
        self.assert_bounded("after the flood", threads=1)

    def test_connection_and_transfer_caps_and_the_idle_timeout(self):
        self.start_serve("--max-connections", "6", "--max-transfers", "2")
        a = self.open_transfer(0x7001, [entry("a", 10)])
        self.open_transfer(0x7002, [entry("b", 10)])
        c = self.hello(0x7003)
        c.sendall(manifest_frames(0x7003, [entry("c", 10)]))  # counted once its manifest is in
        self.expect_error(c, "2 transfers are running, the limit (serve --max-transfers)")
        # Without --read-back serve holds one thread per stream and no writer
        # pool, so the thread count says exactly which streams are admitted.
        # Both waits are exact: were c's thread still there, three of the four
        # streams below would make six, and the seventh could be admitted in
        # place of the fourth (it was, 1 run in 3 under load).
        c.close()  # its thread ends as soon as serve sees the close: the two streams stay
        wait_for(lambda: proc_status(self.server.proc.pid)[1] - self.baseline[1] == 2, timeout=WAIT_S,
                 what="the refused stream's thread to end")
        more = [self.hello(0x7001, stream=k) for k in range(1, 5)]  # 6 connections
        wait_for(lambda: proc_status(self.server.proc.pid)[1] - self.baseline[1] == 6, timeout=WAIT_S,
                 what="a thread for each of the six streams")
        extra = self.hello(0x7001, stream=5)
        self.expect_error(extra, "6 connections are open, the limit (serve --max-connections)")
        self.assert_bounded("at the connection limit", threads=6)  # a thread per stream
        a.close()
        for s in more:
            s.close()
        self.server.stop()

        # Streams that say nothing after their Hello are dropped after --idle-timeout.
        self.start_serve("--idle-timeout", "2")
        a = self.open_transfer(0x7004, [entry("a", 10)])
        quiet = self.hello(0x7004, stream=1)
        t0 = time.monotonic()
        self.expect_error(a, "sent nothing for the idle timeout")
        print("an idle transfer was dropped after %.1f s (--idle-timeout 2)" % (time.monotonic() - t0), flush=True)
        self.assertIn(read_frame(quiet)[0], (ERROR, None))
        wait_for(lambda: proc_status(self.server.proc.pid)[1] <= self.baseline[1], timeout=WAIT_S,
                 what="serve's threads to end")
        self.assert_real_move_works()

    def test_silent_hellos_hold_no_transfer_slot(self):
        """A client with the key that says Hello on stream 0 and then nothing
        (stalled, crashed, or hostile): 100 of them from one address leave
        every --max-transfers slot to real transfers, each is let go after
        --peer-timeout with its address in the log, and one address holds no
        more than --max-transfers-per-address."""
        key_file = os.path.join(self.ws.dir, "src-key")  # beside --root, where assert_nothing_outside allows it
        self.assertEqual(self.ws.run(["keygen", key_file]).returncode, 0)
        key = read_key(key_file)

        # Counted only once their manifest is in: 100 silent stream 0s, and a
        # real move arrives at once, long before any of them is let go.
        self.start_serve("--key-file", key_file, "--peer-timeout", "60", "--max-transfers-per-address", "1000")
        silent = [self.hello(0x9000 + i, source="127.0.0.2", key=key) for i in range(100)]
        wait_for(lambda: proc_status(self.server.proc.pid)[1] - self.baseline[1] >= 100, timeout=WAIT_S,
                 what="a thread for each of the 100 silent streams")
        t0 = time.monotonic()
        self.assert_real_move_works("--key-file", key_file)
        print("a real move beside 100 silent Hellos took %.2f s" % (time.monotonic() - t0), flush=True)
        self.assertNotIn("no manifest", self.server.text(), "a silent stream was let go before the move arrived")
        for s in silent:
            s.setblocking(False)
            with self.assertRaises(BlockingIOError, msg="serve answered or closed a silent stream"):
                s.recv(1)
            s.setblocking(True)
        self.server.stop()

        # The default per-address cap (8): of 100 Hellos from one address, 92
        # are refused at once and 8 held. Which 8 is serve's threads' order,
        # not the order they were sent in; and held for a timeout no
        # machine's refusals outlast (on a loaded one, 92 of them once took
        # longer than 6 s, the eight were let go, and the rest came in).
        self.start_serve("--key-file", key_file, "--peer-timeout", "600")
        hellos = [self.hello(0x9100 + i, source="127.0.0.2", key=key) for i in range(100)]
        refused = {}

        def read_refusals():
            waiting = [s for s in hellos if s not in refused]
            for s in select.select(waiting, [], [], 0.2)[0]:
                refused[s] = read_frame(s)
            return len(refused) >= 92

        wait_for(read_refusals, timeout=WAIT_S, what="92 of 100 Hellos from one address refused",
                 seen=lambda: "%d refused" % len(refused))
        for kind, why in refused.values():
            self.assertEqual(kind, ERROR, why)
            self.assertIn("8 transfers from 127.0.0.2 are open, the limit (serve --max-transfers-per-address)",
                          why.decode())
        self.assert_real_move_works("--key-file", key_file)
        held = [s for s in hellos if s not in refused]
        self.assertEqual(len(held), 8)
        for s in held:
            s.setblocking(False)
            with self.assertRaises(BlockingIOError, msg="serve answered or closed a held stream"):
                s.recv(1)
        for s in hellos:
            s.close()
        self.server.stop()

        # The eight held are let go after --peer-timeout, each with its address in the log.
        self.start_serve("--key-file", key_file, "--peer-timeout", "6")
        held = [self.hello(0x9300 + i, source="127.0.0.2", key=key) for i in range(8)]
        t0 = time.monotonic()
        for s in held:
            kind, why = read_frame(s)
            self.assertEqual(kind, ERROR, why)
            self.assertIn("no manifest: the client did not send it whole within 6 s of its Hello "
                          "(serve --peer-timeout)", why.decode())
        print("the 8 held silent streams were let go %.1f s after their Hellos" % (time.monotonic() - t0),
              flush=True)
        text = self.server.text()
        self.assertEqual(text.count(" from 127.0.0.2 stopped: no manifest: the client did not send it whole within 6 s"), 8,
                         text[-3000:])
        wait_for(lambda: proc_status(self.server.proc.pid)[1] <= self.baseline[1], timeout=WAIT_S,
                 what="serve's threads to end")
        self.assert_real_move_works("--key-file", key_file)

    def test_a_manifest_trickled_a_byte_at_a_time_is_closed_at_the_peer_timeout(self):
        # --peer-timeout bounds the whole manifest from the Hello: a byte
        # every 0.2 s answers every recv long before any timeout on it, and
        # would hold stream 0, a thread and its address's slot for ever.
        self.start_serve("--peer-timeout", "3")
        manifest = manifest_frames(0x9500, [entry("f", BLOCK)])
        s = self.hello(0x9500)
        sent = 0
        answer = []

        def trickle():
            nonlocal sent
            if select.select([s], [], [], 0.2)[0]:
                answer.append(read_frame(s))
                return True
            if sent < len(manifest):
                s.sendall(manifest[sent:sent + 1])
                sent += 1
            return False

        wait_for(trickle, timeout=WAIT_S, what="serve to close a trickled manifest",
                 seen=lambda: "%d of the manifest's %d bytes sent" % (sent, len(manifest)))
        kind, why = answer[0]
        self.assertEqual(kind, ERROR, why)
        self.assertIn("no manifest: the client did not send it whole within 3 s of its Hello (serve --peer-timeout)",
                      why.decode())
        self.assertLess(sent, len(manifest), "the manifest was sent whole before serve answered")
        print("a manifest trickled a byte every 0.2 s was closed after %d of its %d bytes" % (sent, len(manifest)),
              flush=True)
        wait_for(lambda: proc_status(self.server.proc.pid)[1] <= self.baseline[1], timeout=WAIT_S,
                 what="serve's threads to end")
        self.assert_real_move_works()

    def test_250_byte_names_arrive_and_a_stopped_transfer_of_one_resumes(self):
        self.start_serve()
        src = os.path.join(self.ws.dir, "src", "names")
        long_names = ["n" * 250, "é" * 125, "x" * 255]
        for i, name in enumerate(long_names):
            write_file(os.path.join(src, name), os.urandom(BLOCK * 3 + i))
        r = subprocess.run([SLABCAST, "move", "--port", str(self.port), "--progress", "none", src, "127.0.0.1:long"],
                           capture_output=True, text=True, timeout=WAIT_S)
        self.assertEqual(r.returncode, 0, r.stderr)
        assert_trees_equal(self, src, os.path.join(self.root, "long", "names"))

        big_src = os.path.join(self.ws.dir, "src", "big")
        name = "b" * 100 + "ü" * 75  # 250 bytes
        write_file(os.path.join(big_src, name), os.urandom(384 * MIB))
        journal = os.path.join(self.root, "resume", ".slabcast-move.journal")
        # Through a relay that passes 8 blocks and a few more, and holds the
        # rest: the move cannot end before it is killed, however fast it runs.
        relay = Relay(self.port, budget=12 * 4 * MIB)
        self.addCleanup(relay.close)
        mover = subprocess.Popen([SLABCAST, "move", "--port", str(relay.port), "--progress", "none", "--streams", "1",
                                  big_src, "127.0.0.1:resume"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(mover.kill)
        wait_until(lambda: len(journal_lines(journal)) >= 8 or mover.poll() is not None, WAIT_S, "8 blocks journaled",
                   lambda: "%d journaled, move exit code %s" % (len(journal_lines(journal)), mover.poll()))
        mover.send_signal(signal.SIGKILL)
        mover.communicate(timeout=WAIT_S)
        relay.close()  # serve sees the connection end
        wait_until(lambda: "stopped" in self.server.text(), WAIT_S, "serve to notice",
                   lambda: self.server.text()[-2000:])
        written = len(journal_lines(journal))  # once serve has stopped: nothing is journaled after
        self.assertLess(written, 96, "the transfer finished before it was stopped: the test proves nothing")
        parts = [n for n in os.listdir(os.path.join(self.root, "resume", "big")) if n.endswith(".slabcast-part")]
        self.assertEqual(len(parts), 1, parts)
        self.assertLessEqual(len(parts[0].encode()), 255)
        r = subprocess.run([SLABCAST, "move", "--port", str(self.port), "--progress", "none", big_src,
                            "127.0.0.1:resume"], capture_output=True, text=True, timeout=WAIT_S)
        self.assertEqual(r.returncode, 0, r.stderr)
        assert_trees_equal(self, big_src, os.path.join(self.root, "resume", "big"))
        again = int(self.server.text().rsplit("bytes written", 1)[0].split()[-1])
        print("250-byte name: %d of 96 blocks were there after the kill; the rerun wrote %.0f MiB of 384" % (
            written, again / MIB), flush=True)
        self.assertLessEqual(again, (96 - written + 4) * 4 * MIB)
        self.assert_nothing_outside()

    def test_symbolic_links_swapped_in_are_not_followed(self):
        self.start_serve("--allow-pull")
        # A directory's mode is set at the end: by then it is a link out of the tree.
        s = self.open_transfer(0x8001, [], dirs=[{"path": "d", "mode": 0o700}], dest="")
        os.rename(os.path.join(self.root, "d"), os.path.join(self.root, "d-moved"))
        os.symlink(self.outside, os.path.join(self.root, "d"))
        s.sendall(frame(DONE, 0x8001, extra=0))
        kind, report = read_frame(s)
        self.assertEqual(kind, REPORT, report)
        self.assertIn("its mode is not set", self.server.text())
        self.assert_nothing_outside()

        # A pull: serve lists a directory, then (before the client's answer)
        # a directory in it becomes a link out of the tree. Nothing outside
        # may be read through it.
        ds = os.path.join(self.root, "ds")
        write_file(os.path.join(ds, "sub", "secret"), b"inside\n")
        write_file(os.path.join(ds, "top.bin"), b"top\n")
        s = self.connect()
        say_hello(s, 0x8002, {"stream": 0, "get": ["ds"]})
        text = b""
        while True:
            kind, payload, fields = read_frame(s, with_header=True)
            self.assertEqual(kind, MANIFEST, payload)
            text += payload
            if len(text) >= fields[8]:
                break
        listed = json.loads(manifest_json(text, fields[4]))
        self.assertIn("ds/sub/secret", [f["path"] for f in listed["files"]])
        os.rename(os.path.join(ds, "sub"), os.path.join(self.root, "sub-moved"))
        os.symlink(self.outside, os.path.join(ds, "sub"))
        s.sendall(frame(HAVE, 0x8002, json.dumps({"complete": [], "blocks": {}}).encode()))
        seen, failed = b"", []
        while True:
            kind, payload, fields = read_frame(s, with_header=True)
            if kind in (None, DONE, ERROR):
                break
            if kind == DATA:
                seen += payload
            if kind == FILE_FAILED:
                failed.append((listed["files"][fields[4]]["path"], payload.decode()))
        s.sendall(frame(REPORT, 0x8002, b"{}"))
        self.assertNotIn(b"outside the served tree", seen, "a pull read through a link swapped in")
        self.assertIn(b"top\n", seen)
        self.assertEqual([p for p, _ in failed], ["ds/sub/secret"], failed)
        self.assert_nothing_outside()
        self.assert_real_move_works()

    def move_against(self, play):
        """`slabcast move --streams 1` of one small file against a server
        played by hand: play(conn) answers its connection. Returns (exit
        code, stderr); the move must end by itself (within WAIT_S)."""
        src = os.path.join(self.ws.dir, "src-words", "one")
        write_file(os.path.join(src, "a.bin"), b"x" * 5000)
        with socket.create_server(("127.0.0.1", 0)) as listener:
            listener.settimeout(WAIT_S)
            mover = subprocess.Popen([SLABCAST, "move", "--port", str(listener.getsockname()[1]), "--progress",
                                      "none", "--streams", "1", src, "127.0.0.1:d"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, encoding="utf-8", errors="replace")
            self.addCleanup(mover.kill)  # should it hang
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(WAIT_S)
                play(conn)
                _, err = mover.communicate(timeout=WAIT_S)
        return mover.returncode, err

    def up_to_the_manifest(self, conn):
        """As a server: the Challenge, then the client's Hello and manifest."""
        conn.sendall(challenge())
        self.assertEqual(read_frame(conn)[0], HELLO)
        self.assertEqual(read_frame(conn)[0], MANIFEST)  # one frame for one small file

    def test_a_have_above_32_mib_is_refused_before_it_is_read(self):
        """A server answers the manifest with a Have whose header declares one
        byte more than the 32 MiB a Have may hold, and sends nothing after it:
        `move` refuses it by its header (a client that read it first would
        wait for ever), names it, and ends without a Done (the blocks it sent
        while the answer was on its way are all it sends)."""
        frames = []

        def huge_have(conn):
            self.up_to_the_manifest(conn)
            conn.sendall(header(HAVE, 0, 32 * MIB + 1))
            while True:  # until the client closes
                kind, _ = read_frame(conn)
                if kind is None:
                    break
                frames.append(kind)

        code, err = self.move_against(huge_have)
        self.assertEqual(code, 1, err)
        self.assertIn("the server's answer to the manifest (Have) is 33554433 bytes, above the 33554432 bytes "
                      "(32 MiB) an answer may hold: refused", err)
        self.assertNotIn(DONE, frames)
        self.assertLessEqual(len(frames), 2, frames)  # at most the one file's block and its end

    def assert_printable(self, text, what):
        """No terminal escape, bell, DEL or forged line from a peer in `text`."""
        for c in ("\x1b", "\x07", "\x7f", "\r"):
            self.assertNotIn(c, text, "%s shows a control character of the peer's" % what)
        self.assertNotIn("\n" + HOSTILE_LINE, text, "%s has a line the peer wrote" % what)

    def test_a_client_writes_no_control_characters_into_the_log(self):
        """A client's Hello, manifest and reasons carry terminal escapes and
        a line of their own: serve refuses and logs them as printable text."""
        self.start_serve()
        s = self.connect()
        say_hello(s, 0x9001, {"stream": 0, "dest": "d" + HOSTILE})
        self.assertNotIn("\x1b", self.expect_error(s, "path 'dok?[31m red?" + HOSTILE_LINE))
        s = self.connect()
        say_hello(s, 0x9002, b'{"stream": 0, "dest": "\x1b]0;owned\x07')
        self.expect_error(s, "the Hello is malformed: not JSON (")
        s = self.connect()
        say_hello(s, 0x9003, {"stream": 0, "get": [{"a": HOSTILE}]})
        self.expect_error(s, "a pull asks for a JSON object, not a path")
        s = self.hello(0x9004)
        s.sendall(manifest_frames(0x9004, [entry("p" + HOSTILE, 1)]))
        self.expect_error(s, "a control character")
        s = self.open_transfer(0x9005, [entry("f", 10)])
        s.sendall(frame(FILE_FAILED, 0x9005, HOSTILE.encode(), file=0) + header(DONE, 0x9005, 0, extra=1))
        kind, report = read_frame(s)
        self.assertEqual(kind, REPORT, report)
        why = json.loads(report)["failed"][0]["why"]
        self.assertIn("the sender could not read it: ok?[31m red?", why)
        self.assert_printable(why, "the report")
        text = self.server.text()
        self.assertIn("ok?[31m red?" + HOSTILE_LINE, text)
        self.assert_printable(text, "serve's log")
        self.assert_bounded("after the hostile words")

    def test_a_server_is_shown_in_slabcast_words_and_printable_text(self):
        """A server played by hand refuses with terminal escapes, and sends
        malformed answers and reports: `move` fails, names each in its own
        words, and prints none of the server's control characters."""
        hostile = HOSTILE.encode()
        up_to_the_manifest = self.up_to_the_manifest

        def up_to_done(conn):
            up_to_the_manifest(conn)
            conn.sendall(frame(HAVE, 0, json.dumps({"complete": [], "blocks": {}}).encode()))
            while read_frame(conn)[0] not in (DONE, None):
                pass

        def report(payload):
            return lambda conn: (up_to_done(conn), conn.sendall(frame(REPORT, 0, payload)))

        cases = [
            (lambda conn: conn.sendall(frame(ERROR, 0, hostile)),
             "the server refused the connection: ok?[31m red?" + HOSTILE_LINE),
            (lambda conn: (up_to_the_manifest(conn), conn.sendall(frame(ERROR, 0, hostile))),
             "the server refused the transfer: ok?[31m red?" + HOSTILE_LINE),
            (lambda conn: (up_to_the_manifest(conn), conn.sendall(frame(HAVE, 0, b'{"complete": [\x1b[2J'))),
             "the server's answer is malformed: not JSON (18 bytes, malformed at byte 15)"),
            (lambda conn: (up_to_the_manifest(conn), conn.sendall(frame(HAVE, 0, b'{"blocks": {}}'))),
             "the server's answer is malformed: field 'complete' is missing"),
            (lambda conn: (up_to_done(conn), conn.sendall(frame(ERROR, 0, hostile))),
             "the server stopped the transfer: ok?[31m red?" + HOSTILE_LINE),
            (report(b'{"files": 1, \x1b[2J'), "the server's report is malformed: not JSON (17 bytes, malformed at byte 14)"),
            (report(b'{"files": "1", "in_place": 0, "failed": [], "bytes_written": 5000}'),
             "the server's report is malformed: field 'files' must be a whole number"),
            (report(b'{"files": 1, "in_place": 0, "failed": {}, "bytes_written": 5000}'),
             "the server's report is malformed: field 'failed' must be a list"),
            (report(json.dumps({"files": 0, "in_place": 0, "bytes_written": 0,
                                "failed": [{"path": "a" + HOSTILE, "why": HOSTILE}]}).encode()),
             "move: a" + "ok?[31m red?" + HOSTILE_LINE),
        ]
        for play, why in cases:
            code, err = self.move_against(play)
            print("a hostile server: %s" % err.strip().splitlines()[-1], flush=True)
            self.assertEqual(code, 1, err)
            self.assertIn(why, err)
            self.assertNotIn("json.exception", err)
            self.assert_printable(err, "move's messages")


if __name__ == "__main__":
    unittest_main()
