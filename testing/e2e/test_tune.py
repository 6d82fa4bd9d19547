"""`slabcast tune`: reports this host's real settings, names a missing
interface, and --apply inside a network namespace of the test's own (where
these sysctls are read-only) says so instead of failing or touching the host."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from slabcast_testlib import SLABCAST  # noqa: E402


def tune(*args, prefix=()):
    return subprocess.run(list(prefix) + [SLABCAST, "tune"] + list(args), capture_output=True, text=True, timeout=30)


class TuneTest(unittest.TestCase):
    def test_reports_the_hosts_values(self):
        r = tune("--interface", "lo")
        self.assertEqual(r.returncode, 0, r.stderr)
        rmem = open("/proc/sys/net/core/rmem_max").read().strip()
        self.assertIn("net.core.rmem_max: %s (" % rmem, r.stdout)
        mtu = open("/sys/class/net/lo/mtu").read().strip()
        self.assertIn("MTU of lo: %s" % mtu, r.stdout)
        self.assertEqual(int(rmem) < 64 << 20, "sysctl -w net.core.rmem_max=67108864" in r.stdout)

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


if __name__ == "__main__":
    unittest.main()
