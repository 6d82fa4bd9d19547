"""Three hosts and a WAN made of network namespaces, for tests (needs root).

    sender 10.77.1.2 ──veth── 10.77.1.1 ┐
    receiver 10.77.2.2 ──veth── 10.77.2.1 ├ wan (routes between them; runs the impairment relay)
    controller 10.77.3.2 ──veth── 10.77.3.1 ┘

Every link has MTU 9000. The wan namespace forwards IP between the three, so
control traffic (syncs and replies) goes straight through; data meant to be
impaired is sent to the relay's address on the sender side (10.77.1.1) and
the relay forwards it to the receiver. Names carry the test's pid, so tests
running side by side do not collide, and everything goes with `close()`."""

import os
import subprocess

SENDER, RECEIVER, CONTROLLER = "10.77.1.2", "10.77.2.2", "10.77.3.2"
WAN_SENDER_SIDE = "10.77.1.1"
MTU = 9000


def _ip(*args, ns=None):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + ["ip"] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr.strip()))


def available():
    """Why namespaces cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "needs root (ip netns add)"
    probe = "scprobe%d" % os.getpid()
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return "ip netns add failed: " + r.stderr.strip()
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


class Testbed:
    def __init__(self):
        tag = os.getpid() % 100000
        self.ns = {role: "sc%s%d" % (role[0], tag) for role in ("sender", "receiver", "controller", "wan")}
        self._made = []
        try:
            self._build(tag)
        except Exception:
            self.close()
            raise

    def _build(self, tag):
        for ns in self.ns.values():
            _ip("netns", "add", ns)
            self._made.append(ns)
            _ip("link", "set", "lo", "up", ns=ns)
        wan = self.ns["wan"]
        subprocess.run(["ip", "netns", "exec", wan, "sysctl", "-qw", "net.ipv4.ip_forward=1"], check=True)
        for subnet, role in ((1, "sender"), (2, "receiver"), (3, "controller")):
            host, side = "h%s%d" % (role[0], tag), "w%s%d" % (role[0], tag)
            _ip("link", "add", host, "mtu", str(MTU), "type", "veth", "peer", "name", side, "mtu", str(MTU))
            _ip("link", "set", host, "netns", self.ns[role])
            _ip("link", "set", side, "netns", wan)
            _ip("addr", "add", "10.77.%d.2/24" % subnet, "dev", host, ns=self.ns[role])
            _ip("addr", "add", "10.77.%d.1/24" % subnet, "dev", side, ns=wan)
            _ip("link", "set", host, "up", ns=self.ns[role])
            _ip("link", "set", side, "up", ns=wan)
            _ip("route", "add", "default", "via", "10.77.%d.1" % subnet, ns=self.ns[role])

    def prefix(self, role):
        """Command prefix that runs a program on that host."""
        return ["ip", "netns", "exec", self.ns[role]]

    def close(self):
        for ns in reversed(self._made):  # deleting a namespace deletes its veth ends too
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self._made = []
