"""`slabcast tune`: reports this host's real settings, names a missing
interface, and --apply inside a network namespace of the test's own (where
these sysctls are read-only) says so instead of failing or touching the host."""

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from slabcast_testlib import DATAGEN, SLABCAST, unittest_main  # noqa: E402


def tune(*args, prefix=()):
    # A limit for a hang only: tune reads a few files, but a loaded machine may be slow to start it.
    return subprocess.run(list(prefix) + [SLABCAST, "tune"] + list(args), capture_output=True, text=True, timeout=120)


@contextlib.contextmanager
def tmpfs(options):
    """A private tmpfs mounted for the test, unmounted after."""
    path = tempfile.mkdtemp(prefix="slabcast-tune-tmpfs-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", path], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", path], check=False)
        shutil.rmtree(path, ignore_errors=True)


class TuneTest(unittest.TestCase):
    def test_reports_the_hosts_values(self):
        r = tune("--interface", "lo")
        self.assertEqual(r.returncode, 0, r.stderr)
        rmem = open("/proc/sys/net/core/rmem_max").read().strip()
        self.assertIn("net.core.rmem_max: %s (" % rmem, r.stdout)
        mtu = open("/sys/class/net/lo/mtu").read().strip()
        self.assertIn("MTU of lo: %s" % mtu, r.stdout)
        self.assertEqual(int(rmem) < 64 << 20, "sysctl -w net.core.rmem_max=67108864" in r.stdout)

    def test_states_the_receivers_shared_memory(self):
        """With the volume: K value buffers and K age buffers per slab, against the free space."""
        r = tune("--interface", "lo", "--dims", "1024,1024,1024", "--slab-depth", "32", "--slabs", "4")
        self.assertEqual(r.returncode, 0, r.stderr)
        # 4 slabs of 1024x1024x32 (+1 ghost plane on 3): 3 x (132 + 33) MiB each, about 1.9 GiB.
        self.assertRegex(r.stdout, r"shared memory for 4 slab\(s\) of 1024x1024x1024, depth 32, 3 buffers: "
                                   r"1\.9 GiB needed, \S+ \S+ free in /dev/shm")
        r = tune("--interface", "lo", "--dims", "1024,1024,1024", "--slab-depth", "32", "--buffers", "2")
        self.assertIn("32 slab(s) of 1024x1024x1024, depth 32, 2 buffers", r.stdout)
        r = tune("--interface", "lo", "--dims", "1024,1024,1024", "--slab-depth", "32", "--shm-dir", "/dev/shm/tiny",
                 "--slabs", "32", "--buffers", "16")
        self.assertIn("grow the tmpfs", r.stdout)  # 16 buffers of 32 slabs: about 80 GiB

    def test_unknown_interface_is_named(self):
        r = tune("--interface", "nosuchnic0")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("interface 'nosuchnic0' does not exist", r.stderr)

    @unittest.skipUnless(os.geteuid() == 0, "needs root for ip netns")
    def test_apply_in_a_child_namespace_reports_read_only(self):
        ns = "slabcast-tune-%d" % os.getpid()
        before = open("/proc/sys/net/core/rmem_max").read()
        subprocess.run(["ip", "netns", "add", ns], check=True)
        try:
            r = tune("--interface", "lo", "--apply", prefix=("ip", "netns", "exec", ns))
        finally:
            subprocess.run(["ip", "netns", "del", ns], check=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        if int(before) < 64 << 20:
            self.assertIn("--apply could not set it", r.stdout)
        self.assertEqual(open("/proc/sys/net/core/rmem_max").read(), before, "the host's setting changed")


def stage_log(data, staging):
    """What the stager says at startup (it runs until stopped)."""
    log = os.path.join(staging, "..", os.path.basename(staging) + ".log")
    with open(log, "w+") as out:
        p = subprocess.Popen([SLABCAST, "stage", "--dataset", data, "--staging", staging, "--streams", "0"],
                             stdout=out, stderr=subprocess.STDOUT)
        try:
            # Until it says it started, or exits; the limit is for a hang only.
            deadline = time.monotonic() + 120
            while True:
                exited = p.poll() is not None  # before reading: what it logged before it exited is read
                out.seek(0)
                text = out.read()
                if "stage: 1 steps" in text:
                    return text
                if exited:
                    raise AssertionError("the stager exited (%s) before it started: %s" % (p.returncode, text))
                if time.monotonic() > deadline:
                    raise AssertionError("the stager did not start within 120 s: " + text)
                time.sleep(0.05)
        finally:
            p.terminate()
            p.wait(30)
            os.unlink(log)


class StagingPagesTest(unittest.TestCase):
    """A staging tmpfs with 4 KiB pages is reported by tune and warned about
    by the stager at startup; one with huge pages is not."""

    @unittest.skipUnless(os.geteuid() == 0, "needs root to mount a tmpfs")
    def test_small_pages_are_named_and_huge_pages_are_not(self):
        data = tempfile.mkdtemp(prefix="slabcast-tune-data-")
        try:
            subprocess.run([DATAGEN, "--out", data, "--dims", "8,8,8", "--steps", "1"], check=True, capture_output=True)
            for options, limited in (("size=64m", True), ("size=64m,huge=within_size", False)):
                with tmpfs(options) as staging:
                    r = tune("--interface", "lo", "--staging", staging)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    line = [l for l in r.stdout.splitlines() if "staging pages" in l][0]
                    self.assertEqual(line.strip().startswith("change"), limited, r.stdout)
                    self.assertEqual("staging pages" in stage_log(data, staging), limited)
        finally:
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    unittest_main()
