"""A full /dev/shm: the receiver and the stager check for room before they
write, and say "DIR has X free, ... need Y" and exit 1. Pre-faulting a slab into
a full tmpfs used to end the receiver in SIGBUS.

Each test mounts a tmpfs of a few MiB in a private mount namespace of this
process (root; skipped otherwise) and points --shm-dir / --staging into it, so
nothing else on the host sees it fill up."""

import ctypes
import mmap
import os
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from slabcast_testlib import Workspace, free_udp_ports, unittest_main  # noqa: E402

CLONE_NEWNS = 0x00020000
MIB = 1 << 20
SIGBUS_RC = -signal.SIGBUS


def private_mount_namespace():
    """This process (and every child it starts) gets mounts of its own."""
    if os.geteuid() != 0:
        return "needs root to mount a small tmpfs"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        return "unshare(CLONE_NEWNS): " + os.strerror(ctypes.get_errno())
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    return None


class SmallTmpfs:
    def __init__(self, size_mib):
        self.dir = tempfile.mkdtemp(prefix="slabcast-tmpfs-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % size_mib, "slabcast-test", self.dir], check=True)

    def free(self):
        st = os.statvfs(self.dir)
        return st.f_bavail * st.f_frsize

    def fill_until(self, free_bytes):
        """Takes space until only `free_bytes` are left."""
        with open(os.path.join(self.dir, "filler"), "ab") as f:
            os.posix_fallocate(f.fileno(), os.fstat(f.fileno()).st_size, self.free() - free_bytes)

    def close(self):
        subprocess.run(["umount", "-l", self.dir], check=False)
        os.rmdir(self.dir)


def slab_bytes(dims, planes, buffers=2):
    """A version-2 slab file: header, `buffers` value buffers and as many age
    buffers, each rounded up to a page (docs/shared-memory.md)."""
    def page(n):
        return (n + 4095) // 4096 * 4096
    values = dims[0] * dims[1] * planes
    return 4096 + buffers * (page(4 * values) + page(values))


class PrivateMountsTest(unittest.TestCase):
    """Tests that mount tmpfs file systems only their process sees."""

    @classmethod
    def setUpClass(cls):
        why = private_mount_namespace()
        if why:
            raise unittest.SkipTest(why)


class FullShmTest(PrivateMountsTest):

    def setUp(self):
        self.ws = Workspace("shmfull")
        self.tmpfs = SmallTmpfs(4)
        self.shm = os.path.join(self.tmpfs.dir, "slabcast")

    def tearDown(self):
        self.ws.close()
        self.tmpfs.close()

    def receive(self, name, dims, depth=32, streams=2, extra=()):
        ports = free_udp_ports(streams)
        args = ["receive", "--name", name, "--dims", ",".join(map(str, dims)), "--slab-depth", str(depth),
                "--listen", "127.0.0.1", "--shm-dir", self.shm, "--rcvbuf-mb", "1", "--buffers", "2"] + list(extra)
        for k in range(streams):
            args += ["--stream", "%d:%d" % (k, ports[k])]
        return args

    def start_receiver(self, name, dims, extra=()):
        """Starts a receiver and waits until it is ready: past the room check,
        its slabs pre-faulted, its descriptor written (it says so). Not the
        descriptor's existence: a killed receiver's is still there."""
        role = self.ws.start("receive-" + name, self.receive(name, dims, extra=extra))
        role.wait_for_text("ready; descriptor")
        self.assertTrue(role.alive(), role.text())
        return role

    def assert_refused(self, args, *wanted):
        r = self.ws.run(args, timeout=60)
        self.assertNotEqual(r.returncode, SIGBUS_RC, "SIGBUS: " + r.stderr)
        self.assertEqual(r.returncode, 1, r.stderr)
        for text in wanted:
            self.assertIn(text, r.stderr)
        return r.stderr

    def test_slabs_larger_than_the_free_space_are_refused_up_front(self):
        dims = (128, 128, 64)  # 2 slabs of depth 32, 2 buffers: 10.2 MiB into a 4 MiB tmpfs
        err = self.assert_refused(self.receive("big", dims),
                                  self.shm + " has 4.0 MiB free, the slabs (2 of 128x128x64, depth 32, 2 buffers) need "
                                  "10.2 MiB")
        self.assertEqual([n for n in os.listdir(self.shm) if n.startswith("big")], [], err)

    def test_a_restart_counts_the_pages_its_slabs_already_hold(self):
        dims = (64, 64, 64)
        need = slab_bytes(dims, 32) + slab_bytes(dims, 33)
        first = self.start_receiver("again", dims)
        first.proc.kill()
        first.wait()
        self.tmpfs.fill_until(need // 2)  # less than the slabs, but they are already there
        again = self.start_receiver("again", dims)  # fails if it exits (refused, SIGBUS) before it is ready
        self.assertTrue(again.alive(), again.text())
        self.assertEqual(again.stop(), 0, again.text())

    def test_a_slab_a_renderer_still_maps_keeps_its_pages_so_another_shape_needs_room(self):
        dims = (64, 64, 64)
        old = self.start_receiver("shape", dims, extra=["--keep"])
        self.assertEqual(old.stop(), 0)
        # A renderer maps the old slabs; they keep their pages after the receiver replaces them.
        files = [open(os.path.join(self.shm, "shape.slab%d" % k), "rb") for k in (0, 1)]
        mappings = [mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) for f in files]
        try:
            self.tmpfs.fill_until(768 << 10)  # less than the 2.5 MiB of new slabs
            # Same file sizes, another field: each slab is replaced by a new file.
            # Counted as already there, they passed the check and the pre-fault found no pages.
            self.assert_refused(self.receive("shape", dims, extra=["--field", "pressure"]),
                                self.shm + " has 768.0 KiB free, the slabs (2 of 64x64x64, depth 32, 2 buffers) need")
            self.assertEqual([m[:8] for m in mappings], [b"SLABCAST"] * 2)
        finally:
            for m, f in zip(mappings, files):
                m.close()
                f.close()

    def test_a_staging_window_larger_than_the_free_space_is_refused(self):
        dataset = self.ws.generate("ds", (64, 64, 64), 6)  # 1 MiB a step
        staging = os.path.join(self.tmpfs.dir, "staging")
        self.assert_refused(["stage", "--dataset", dataset, "--staging", staging, "--streams", "0", "--budget", "100M"],
                            staging + " has 4.0 MiB free, the staging window (6 step(s) of 1.0 MiB, --budget 100M) "
                            "need 6.0 MiB")


if __name__ == "__main__":
    unittest_main()
