"""Three hosts and a WAN made of network namespaces, for tests (needs root).

    sender 10.77.1.2 ──veth── 10.77.1.1 ┐
    receiver 10.77.2.2 ──veth── 10.77.2.1 ├ wan (routes between them; runs the impairment relay)
    controller 10.77.3.2 ──veth── 10.77.3.1 ┘

Every link has MTU 9000 (or `mtu`). The wan namespace forwards IP between the
three, so control traffic (syncs and replies) goes straight through; data
meant to be impaired is sent to the relay's address on the sender side
(10.77.1.1) and the relay forwards it to the receiver.

With `delay_ms`, every packet crossing the wan, TCP included, is held that
long by delay_line.cpp (a TUN device the wan routes through), and the hosts'
TCP buffers are raised as ESnet's fasterdata advises for data transfer nodes
(autotuning up to 64 MiB), so that a long round trip is what limits a tool,
not a stock buffer. `delayed_from` names the hosts whose packets are held
(all, by default: `delay_ms` each way). A benchmark puts the whole round trip
on the way back, `Testbed(delay_ms=32, delayed_from=("receiver",))`, as netem
on one interface would: TCP and every request-reply exchange see the same
32 ms, and the bulk data is not copied through user space twice on the cores
that run the tools under test, a cost a real WAN does not put on its hosts.
With `loss` (a fraction) the delay line also loses that share of the
packets going to the receiver, TCP's and UDP's alike, at random or, with
`burst` (a mean length in packets), in Gilbert-Elliott bursts: the WAN the
paper's UDP streams crossed lost about 5% (Balman et al., 2012, section 4).
Names carry the test's pid, so tests running side by side
do not collide, and everything goes with `close()`.

`render_hosts=N` adds N render hosts, render0 at 10.77.10.2, render1 at
10.77.11.2, ..., each routed through the wan like the others and, as a real
render node, with its own hostname and its own /dev/shm (a private tmpfs):
a holder process per host keeps its mount and UTS namespaces alive, and
`prefix("render0")` enters them with nsenter, so every process of that host
(a receiver, an MPI daemon and its ranks) sees that host's slabs only. Every
host resolves every other's name (/etc/netns/NS/hosts). The delay line
(`delay_ms`) holds none of their packets."""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

SENDER, RECEIVER, CONTROLLER = "10.77.1.2", "10.77.2.2", "10.77.3.2"
WAN_SENDER_SIDE = "10.77.1.1"
MTU = 9000
RENDER_SHM_BYTES = 512 << 20  # each render host's private /dev/shm
# How long a helper (a render host's holder, the delay line) may take to be
# ready: a moment here, far longer allowed for a loaded machine.
START_S = 60


def render_address(i):
    """Render host i's address (Testbed(render_hosts=N)): 10.77.(10 + i).2."""
    return "10.77.%d.2" % (10 + i)


def _ip(*args, ns=None):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + ["ip"] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr.strip()))


def available(delay=False):
    """Why namespaces (and, with `delay`, the TUN delay line) cannot be made
    here, or None when they can."""
    if os.geteuid() != 0:
        return "needs root (ip netns add)"
    if delay:
        try:
            os.close(os.open("/dev/net/tun", os.O_RDWR))
        except OSError as e:
            return "the delay line needs /dev/net/tun: %s" % e
    probe = "scprobe%d" % os.getpid()
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return "ip netns add failed: " + r.stderr.strip()
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _sysctl(ns, *settings):
    subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw"] + list(settings), check=True)


class Testbed:
    def __init__(self, delay_ms=None, mtu=MTU, delayed_from=("sender", "receiver", "controller"), render_hosts=0,
                 loss=0.0, burst=0, seed=1):
        tag = os.getpid() % 100000
        self.ns = {role: "sc%s%d" % (role[0], tag) for role in ("sender", "receiver", "controller", "wan")}
        self.mtu = mtu
        self._made = []
        self._holders = {}
        self._delay_line = None
        self._delay_stats = None
        try:
            self._build(tag)
            for i in range(render_hosts):
                self._add_render_host(tag, i)
            if delay_ms:
                self._add_delay(tag, delay_ms, delayed_from, loss, burst, seed)
        except Exception:
            self.close()
            raise

    def _build(self, tag):
        for role, ns in self.ns.items():
            _ip("netns", "add", ns)
            self._made.append(ns)
            _ip("link", "set", "lo", "up", ns=ns)
            # `ip netns exec` puts /etc/netns/NS/hosts over /etc/hosts: the
            # testbed's names resolve, both ways, with no DNS (tools such as
            # GridFTP look their own address up).
            os.makedirs("/etc/netns/" + ns, exist_ok=True)
            own = {"sender": SENDER, "receiver": RECEIVER, "controller": CONTROLLER, "wan": WAN_SENDER_SIDE}
            with open("/etc/netns/%s/hosts" % ns, "w") as f:
                f.write("127.0.0.1 localhost\n%s %s\n" % (own[role], socket.gethostname()))  # its own name
                f.write("".join("%s %s\n" % (a, r) for r, a in own.items()))
        wan = self.ns["wan"]
        subprocess.run(["ip", "netns", "exec", wan, "sysctl", "-qw", "net.ipv4.ip_forward=1"], check=True)
        for subnet, role in ((1, "sender"), (2, "receiver"), (3, "controller")):
            self._link(self.ns[role], subnet, "h%s%d" % (role[0], tag), "w%s%d" % (role[0], tag))

    def _link(self, ns, subnet, host, side):
        """A veth from host namespace `ns` (10.77.SUBNET.2, its default route)
        to the wan (10.77.SUBNET.1)."""
        wan = self.ns["wan"]
        _ip("link", "add", host, "mtu", str(self.mtu), "type", "veth", "peer", "name", side, "mtu", str(self.mtu))
        _ip("link", "set", host, "netns", ns)
        _ip("link", "set", side, "netns", wan)
        _ip("addr", "add", "10.77.%d.2/24" % subnet, "dev", host, ns=ns)
        _ip("addr", "add", "10.77.%d.1/24" % subnet, "dev", side, ns=wan)
        _ip("link", "set", host, "up", ns=ns)
        _ip("link", "set", side, "up", ns=wan)
        _ip("route", "add", "default", "via", "10.77.%d.1" % subnet, ns=ns)

    def _add_render_host(self, tag, i):
        role, address = "render%d" % i, render_address(i)
        ns = self.ns[role] = "scn%d_%d" % (i, tag)
        _ip("netns", "add", ns)
        self._made.append(ns)
        _ip("link", "set", "lo", "up", ns=ns)
        os.makedirs("/etc/netns/" + ns, exist_ok=True)
        with open("/etc/netns/%s/hosts" % ns, "w") as f:
            f.write("127.0.0.1 localhost\n" + "".join("%s %s\n" % pair for pair in (
                (SENDER, "sender"), (RECEIVER, "receiver"), (CONTROLLER, "controller"))))
        for other in self._made:  # its name, everywhere (itself included)
            with open("/etc/netns/%s/hosts" % other, "a") as f:
                f.write("%s %s\n" % (address, role))
        for j in range(i):  # the render hosts before it, on it
            with open("/etc/netns/%s/hosts" % ns, "a") as f:
                f.write("%s render%d\n" % (render_address(j), j))
        self._link(ns, 10 + i, "hn%d_%d" % (i, tag), "wn%d_%d" % (i, tag))
        # The holder: `ip netns exec` execs unshare, which execs sh, which
        # execs sleep, so its pid is the Popen's; its namespaces live as long as it.
        ready = tempfile.mktemp(prefix="slabcast-host-", suffix=".ready")
        holder = subprocess.Popen(
            ["ip", "netns", "exec", ns, "unshare", "--mount", "--uts", "--propagation", "private", "sh", "-c",
             'hostname "$1" && mount -t tmpfs -o size=$2,mode=1777 tmpfs /dev/shm && touch "$3" && exec sleep infinity',
             "holder", role, str(RENDER_SHM_BYTES), ready])
        self._holders[role] = holder
        deadline = time.monotonic() + START_S
        while not os.path.exists(ready):
            if holder.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("render host %s: its holder did not start within %d s (exit code %s)" % (
                    role, START_S, holder.poll()))
            time.sleep(0.02)
        os.unlink(ready)

    def holder_pid(self, role):
        """The pid whose namespaces are that render host's."""
        return self._holders[role].pid

    def host_path(self, role, path):
        """Where a path of a render host (in its own /dev/shm, say) is seen from here."""
        return "/proc/%d/root%s" % (self.holder_pid(role), path) if role in self._holders else path

    def _add_delay(self, tag, delay_ms, delayed_from, loss, burst, seed):
        wan, dev = self.ns["wan"], "dl%d" % tag
        self._delay_stats = tempfile.mktemp(prefix="slabcast-delay-", suffix=".json")
        ready = self._delay_stats + ".ready"
        build = os.environ.get("SLABCAST_BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
        self._delay_line = subprocess.Popen(
            ["ip", "netns", "exec", wan, os.path.join(build, "testing", "slabcast_delay_line"),
             "--dev", dev, "--delay-ms", str(delay_ms), "--stats", self._delay_stats, "--ready", ready]
            + (["--loss", str(loss), "--burst", str(burst), "--loss-to", RECEIVER, "--seed", str(seed)] if loss else []))
        deadline = time.monotonic() + START_S
        while not os.path.exists(ready):
            if self._delay_line.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the delay line did not start within %d s (exit code %s)" % (
                    START_S, self._delay_line.poll()))
            time.sleep(0.02)
        os.unlink(ready)
        # A WAN's round trip does not grow when the hosts are busy: at a
        # real-time priority the delay line (which sleeps in ppoll between
        # packets) runs the moment a packet is due, whatever else runs on these
        # cores. At the default priority it shared them with the tools under
        # test, and a tool that kept both cores busy lengthened its own round
        # trip (docs/performance.md, "Mover": the tree against the ceiling).
        os.sched_setscheduler(self._delay_line.pid, os.SCHED_FIFO, os.sched_param(10))
        _ip("link", "set", dev, "up", "mtu", "65535", "txqueuelen", "20000", ns=wan)
        _sysctl(wan, "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.%s.rp_filter=0" % dev)
        # What comes in from a host goes into the delay line; what the delay
        # line writes back (incoming interface: its device) is routed as usual.
        _ip("route", "add", "default", "dev", dev, "table", "100", ns=wan)
        for role in ("sender", "receiver", "controller"):
            if role in delayed_from:
                _ip("rule", "add", "iif", "w%s%d" % (role[0], tag), "lookup", "100", ns=wan)
            _sysctl(self.ns[role], "net.ipv4.tcp_rmem=4096 131072 67108864", "net.ipv4.tcp_wmem=4096 16384 67108864")

    def cut(self, role, down=True):
        """Cuts (or mends) the path from a host into the wan: its packets are
        dropped without a word in the middle of the path (blackhole rules, both ways),
        as when a path fails somewhere far away; the host's own link stays up."""
        side = "w%s%d" % (role[0], os.getpid() % 100000)
        address = {"sender": SENDER, "receiver": RECEIVER, "controller": CONTROLLER}[role]
        verb = "add" if down else "del"
        _ip("rule", verb, "iif", side, "blackhole", "priority", "10", ns=self.ns["wan"])  # from it
        _ip("rule", verb, "to", address, "blackhole", "priority", "11", ns=self.ns["wan"])  # and to it

    def limit(self, role, gbps):
        """Limits what the wan forwards to a host to `gbps` Gbit/s, as a WAN
        path of that capacity would (a token bucket, tc tbf, on the wan's link
        to it, with 20 ms of queue: what comes faster is dropped)."""
        side = "w%s%d" % (role[0], os.getpid() % 100000)
        rate = int(gbps * 1e9)
        burst = max(256 << 10, rate // 8 // 1000)  # a millisecond of traffic, at least 256 KiB
        subprocess.run(["ip", "netns", "exec", self.ns["wan"], "tc", "qdisc", "replace", "dev", side, "root", "tbf",
                        "rate", "%dbit" % rate, "burst", str(burst), "latency", "20ms"], check=True)

    def delay_counts(self):
        """The delay line's counts (after close())."""
        with open(self._delay_stats) as f:
            return json.load(f)

    def prefix(self, role):
        """Command prefix that runs a program on that host."""
        if role in self._holders:  # its network, mounts (/dev/shm) and hostname
            return ["nsenter", "-t", str(self.holder_pid(role)), "-m", "-n", "-u", "--"]
        return ["ip", "netns", "exec", self.ns[role]]

    def close(self):
        if self._delay_line:
            self._delay_line.terminate()
            self._delay_line.wait(timeout=START_S)
            self._delay_line = None
        for holder in self._holders.values():
            holder.kill()
            holder.wait()
        self._holders = {}
        for ns in self._made:  # what is left running there (an sshd's session, ...) goes first
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
        for ns in reversed(self._made):  # deleting a namespace deletes its veth ends too
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            shutil.rmtree("/etc/netns/" + ns, ignore_errors=True)
        self._made = []
