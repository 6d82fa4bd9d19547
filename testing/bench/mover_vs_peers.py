#!/usr/bin/env python3
"""Benchmark: `slabcast move` against per-file transfer tools, in the same run,
memory to memory (/dev/shm at both ends, so no disk is what is measured).

Datasets: a CMIP-like tree of 10,000 files (80% 4-64 KiB, 20% 64 KiB-4 MiB),
100 x 10 MiB, 10 x 100 MiB and 1 x 1 GiB.

Two places:
  loopback (default): every tool's server on 127.0.0.1. Peers: rsync to an
      rsync daemon (no ssh cipher in its way), once and as 4 in parallel over
      the top-level directories; GridFTP (globus-url-copy -cc 4 -p 4 -pp, its
      concurrency, parallel streams and pipelining) when installed.
  --wan: two hosts made of network namespaces with a 32 ms round trip between
      them (all of it on the way back, as netem on one interface: testbed's
      docstring in testing/netns), TCP buffers autotuned up to 64 MiB on
      both. Peers: rsync over ssh, once and 4 in parallel; scp -r; GridFTP.
      Needs root.

The mover runs three ways: `slabcast move` as it was measured first, to a
serve without a key (--insecure-no-auth between namespaces); "move, key":
every stream authenticated with a `slabcast keygen` key (serve and move
--key-file); "move, key, encrypted": the same with --encrypt. Compare like
with like: rsync over ssh (--wan) encrypts, so it stands against the
encrypted mover; the rsync daemon (loopback) does not, so it stands against
the mover without encryption.

Goals (issue 7): throughput on 10 MiB files >= 0.95 x on the 1 GiB file; on the
small-file tree >= 3 x the best per-file peer. Prints a table and the ratios.

    python3 testing/bench/mover_vs_peers.py [--wan [--both-ways]] [--sets small,f10m,f100m,f1g]
                                            [--tools iperf3,move,move-key,move-enc,rsync,...] [--repeat 3] [--keep]
"""

import argparse
import json
import os
import random
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
from slabcast_testlib import SLABCAST  # noqa: E402

BASE = "/dev/shm/slabcast-bench-mover"
MIB = 1 << 20
SETS = ("small", "f10m", "f100m", "f1g")
TOOLS = ("iperf3", "move", "move-key", "move-enc", "rsync", "4rsync", "scp", "gridftp")
MOVER = "slabcast move"
MOVERS = (MOVER, "move, key", "move, key, encrypted")  # the mover's ways, none of them a peer
SCP_MAX_FILES = 100  # scp pays round trips per file: past this it would run for many minutes


def write(path, size, rng):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 4 * MIB)
            f.write(rng.randbytes(n))
            left -= n


def make_datasets(names):
    rng = random.Random(11)
    sets = {}
    for name in names:
        path = os.path.join(BASE, "src", name)
        if not os.path.exists(path):
            if name == "small":
                for i in range(10_000):
                    size = rng.randrange(4096, 65536) if rng.random() < 0.8 else int(65536 * 64 ** rng.random())
                    write(os.path.join(path, "v%02d" % (i % 50), "tas_%05d.nc" % i), size, rng)
            else:
                size, count = {"f10m": (10 * MIB, 100), "f100m": (100 * MIB, 10), "f1g": (1024 * MIB, 1)}[name]
                for i in range(count):
                    write(os.path.join(path, "d%02d" % (i % 10), "file_%03d.bin" % i), size, rng)
        sets[name] = path
    return sets


def tree_bytes(path):
    total = files = 0
    for root, _, names in os.walk(path):
        for n in names:
            total += os.path.getsize(os.path.join(root, n))
            files += 1
    return total, files


def clear(path):
    """Empties the destination (servers keep its directory open)."""
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o777)  # GridFTP writes as nobody
    for name in os.listdir(path):
        shutil.rmtree(os.path.join(path, name), ignore_errors=True)


def warm_pages(size):
    """Writes and deletes `size` bytes in /dev/shm, so that the tool timed next
    writes into memory pages this machine has just used. It is a virtual machine
    whose first touch of a page it has not used lately is slow (writing 2 GiB
    into a new /dev/shm file: 3-4 s on such pages, 0.5 s on pages just freed):
    without this, whichever tool ran first in a set would pay that alone."""
    chunk = bytes(4 * MIB)
    path = os.path.join(BASE, "warm")
    with open(path, "wb") as f:
        for _ in range((size + len(chunk) - 1) // len(chunk)):
            f.write(chunk)
    os.unlink(path)


def busy_seconds():
    """CPU time the whole machine has spent on anything but idling: every
    process of a tool on both hosts, the kernel's network stack and the delay
    line alike."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def own_seconds(place):
    """CPU time of the tools' own processes so far: the clients this script
    waited for, and the servers it started (with their children). Unlike
    busy_seconds() it does not count what else runs on the machine."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = r.ru_utime + r.ru_stime
    for p in place.procs:
        try:
            with open("/proc/%d/stat" % p.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


CPU = {}  # (set, tool) -> (CPU-seconds of the machine, of the tool's own processes) in its median run
RUNS = {}  # (set, tool) -> seconds of every run
ONCE_PAST_S = 30  # a tool slower than this runs once: its figure is far from the mover's anyway


def run_once(cmd_lists, cwd, warm, place):
    """Runs the commands side by side: (seconds until the last ends, CPU time
    the machine spent meanwhile, CPU time of the tool's own processes)."""
    if warm:
        warm_pages(warm)
    cpu0, own0 = busy_seconds(), own_seconds(place)
    t0 = time.monotonic()
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd)
             for c in cmd_lists]
    for p, c in zip(procs, cmd_lists):
        _, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError("%s failed: %s" % (" ".join(c), err[-2000:]))
    return time.monotonic() - t0, busy_seconds() - cpu0, own_seconds(place) - own0


def timed(cmd_lists, label, dst, repeat, place, cwd=None, warm=0):
    """The median of `repeat` runs, each into an empty destination (runs on
    this shared virtual machine vary by 10-30%). Its CPU time goes into CPU."""
    runs = []
    for _ in range(repeat):
        clear(dst)
        runs.append(run_once(cmd_lists, cwd, warm, place))
        if runs[0][0] > ONCE_PAST_S:
            break
    clear(dst)
    RUNS[label] = [r[0] for r in runs]
    seconds, cpu, own = sorted(runs)[len(runs) // 2]
    CPU[label] = (cpu, own)
    return seconds


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Place:
    """Where the servers run and how a client reaches them."""

    def __init__(self, wan, work, both_ways=False):
        self.wan, self.work, self.procs = wan, work, []
        self.bed = None
        if wan:
            import netns_testbed
            why = netns_testbed.available(delay=True)
            if why:
                sys.exit("--wan " + why)
            # The 32 ms round trip, all on the way back (see netns_testbed), or
            # 16 ms each way with --both-ways.
            self.bed = (netns_testbed.Testbed(delay_ms=16) if both_ways else
                        netns_testbed.Testbed(delay_ms=32, delayed_from=("receiver",)))
            self.host = netns_testbed.RECEIVER
            self.client, self.server = self.bed.prefix("sender"), self.bed.prefix("receiver")
        else:
            self.host, self.client, self.server = "127.0.0.1", [], []

    def start(self, cmd):
        p = subprocess.Popen(self.server + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def close(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        if self.bed:
            self.bed.close()


def path_ceiling(place, streams):
    """iperf3 from memory to memory over the same path with as many streams as
    the mover: what the network and these cores carry with no files at all.
    Returns (Gbit/s, CPU-seconds per GiB moved)."""
    port = free_port()
    server = place.start(["iperf3", "-s", "-1", "-B", place.host, "-p", str(port)])
    time.sleep(0.5)
    cpu0 = busy_seconds()
    out = subprocess.run(place.client + ["iperf3", "-c", place.host, "-p", str(port), "-P", str(streams), "-t", "5",
                                         "-J"], capture_output=True, text=True, check=True).stdout
    cpu = busy_seconds() - cpu0
    server.wait(timeout=10)
    end = json.loads(out)["end"]["sum_received"]
    return end["bits_per_second"] * 1e-9, cpu / (end["bytes"] / (1 << 30))


def ssh_setup(place, work):
    """An sshd on the receiving host, a key for root, and the ssh command."""
    key, host_key = os.path.join(work, "id"), os.path.join(work, "host")
    for k in (key, host_key):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", k], check=True)
    os.makedirs("/run/sshd", exist_ok=True)
    conf = os.path.join(work, "sshd_config")
    with open(conf, "w") as f:
        f.write("ListenAddress %s\nPort 22\nHostKey %s\nAuthorizedKeysFile %s.pub\nPermitRootLogin prohibit-password\n"
                "UsePAM no\nStrictModes no\nPidFile none\nSubsystem sftp /usr/lib/openssh/sftp-server\n"
                % (place.host, host_key, key))
    sshd = place.start(["/usr/sbin/sshd", "-D", "-e", "-f", conf])
    time.sleep(0.5)
    if sshd.poll() is not None:
        sys.exit("sshd did not start (make bench installs it): " + sshd.stderr.read().strip())
    # The fastest cipher here (AES-NI), as a user moving data would choose it.
    return ("ssh -F none -i %s -c aes128-gcm@openssh.com -o BatchMode=yes -o StrictHostKeyChecking=no "
            "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" % key)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wan", action="store_true", help="between namespaces, 32 ms round trip")
    ap.add_argument("--both-ways", action="store_true",
                    help="--wan with 16 ms each way: the data passes the delay line too, on the same cores")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--streams", type=int, default=4, help="slabcast move --streams")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each tool on each set; the median counts (a run over %d s is not repeated)" % ONCE_PAST_S)
    ap.add_argument("--keep", action="store_true", help="keep the datasets in %s" % BASE)
    ap.add_argument("--tools", default=",".join(TOOLS),
                    help="which to run, of %s (to look at one tool alone)" % ",".join(TOOLS))
    a = ap.parse_args()
    tools = set(t for t in a.tools.split(",") if t)
    if tools - set(TOOLS):
        sys.exit("unknown --tools: %s" % ",".join(sorted(tools - set(TOOLS))))
    names = [n for n in a.sets.split(",") if n]
    sets = make_datasets(names)
    dst = os.path.join(BASE, "dst")
    clear(dst)
    work = tempfile.mkdtemp(prefix="slabcast-bench-")
    place = Place(a.wan, work, a.both_ways)
    gridftp = "gridftp" in tools and shutil.which("globus-url-copy") and os.path.exists("/usr/sbin/globus-gridftp-server")
    rows = {}
    ceiling = None
    try:
        port, kport, rport, gport = free_port(), free_port(), free_port(), free_port()
        # The mover as first measured: no key (beyond loopback serve needs to be told).
        place.start([SLABCAST, "serve", "--root", dst, "--listen", place.host, "--port", str(port), "--writers", "2"]
                    + (["--insecure-no-auth"] if a.wan else []))
        key = os.path.join(work, "bench.key")
        subprocess.run([SLABCAST, "keygen", key], check=True, capture_output=True)
        place.start([SLABCAST, "serve", "--root", dst, "--listen", place.host, "--port", str(kport), "--writers", "2",
                     "--key-file", key])
        if a.wan:
            ssh = ssh_setup(place, work)
            rsync_opts, rsync_target = ["-e", ssh], "root@%s:%s/" % (place.host, dst)
        else:
            conf = os.path.join(work, "rsyncd.conf")
            with open(conf, "w") as f:
                f.write("use chroot = no\nuid = root\ngid = root\n[dst]\npath = %s\nread only = no\n" % dst)
            place.start(["rsync", "--daemon", "--no-detach", "--config", conf, "--address", place.host,
                         "--port", str(rport)])
            rsync_opts, rsync_target = [], "rsync://%s:%d/dst/" % (place.host, rport)
        if gridftp:
            place.start(["/usr/sbin/globus-gridftp-server", "-aa", "-anonymous-user", "nobody", "-p", str(gport),
                         "-control-interface", place.host, "-data-interface", place.host, "-log-level", "error"])
        time.sleep(1)
        if "iperf3" in tools and shutil.which("iperf3"):
            ceiling = path_ceiling(place, a.streams)
        for name, src in sets.items():
            size, files = tree_bytes(src)
            times = {}

            def run(tool, cmd_lists, cwd=None):
                times[tool] = timed(cmd_lists, (name, tool), dst, a.repeat, place, cwd=cwd, warm=size)
            def move(to_port, *extra):
                return [place.client + [SLABCAST, "move", "--port", str(to_port), "--progress", "none", "--streams",
                                        str(a.streams), "--readers", "2"] + list(extra) + [src, place.host + ":"]]
            if "move" in tools:
                run(MOVER, move(port))
            if "move-key" in tools:
                run("move, key", move(kport, "--key-file", key))
            if "move-enc" in tools:
                run("move, key, encrypted", move(kport, "--key-file", key, "--encrypt"))
            opts, target = rsync_opts, rsync_target
            if "rsync" in tools:
                run("rsync -a", [place.client + ["rsync", "-a"] + opts + [src, target]])
            tops = sorted(os.listdir(src))
            groups = [tops[i::4] for i in range(4)]
            if "4rsync" in tools and len(tops) > 1:
                run("4 x rsync -a", [place.client + ["rsync", "-a", "--relative"] + opts +
                                     [os.path.join(os.path.basename(src), p) for p in g] + [target]
                                     for g in groups if g], cwd=os.path.dirname(src))
            if "scp" in tools and a.wan and files <= SCP_MAX_FILES:
                run("scp -r", [place.client + ["scp", "-r", "-q"] + ssh.split()[1:] + [
                    src, "root@%s:%s/" % (place.host, dst)]])
            if gridftp:
                run("globus-url-copy", [place.client + [
                    "globus-url-copy", "-r", "-cd", "-cc", "4", "-p", "4", "-pp", "-fast", "file://%s/" % src,
                    "ftp://%s:%d%s/%s/" % (place.host, gport, dst, name)]])
            rows[name] = (size, files, times)
    finally:
        place.close()
        shutil.rmtree(work, ignore_errors=True)
        if not a.keep:
            shutil.rmtree(BASE, ignore_errors=True)

    gbps = lambda size, t: size * 8e-9 / t  # noqa: E731
    where = ("between namespaces, 32 ms round trip" + (" (16 ms each way)" if a.both_ways else "")
             if a.wan else "loopback")
    print("slabcast move against per-file peers, %s, %s cores: the median of %d runs (seconds, Gbit/s, and the\n"
          "CPU time the whole machine spent meanwhile: both hosts, the network stack and any delay line; then\n"
          "the CPU time of the tool's own processes, clients and servers, whatever else runs)"
          % (where, os.cpu_count(), a.repeat))
    if ceiling:
        print("iperf3 -P %d, the path's ceiling: %.2f Gbit/s, %.2f CPU-s per GiB" % (a.streams, ceiling[0], ceiling[1]))
    for name, (size, files, times) in rows.items():
        peers = {k: t for k, t in times.items() if k not in MOVERS and t}
        cells = "  ".join("%s %.2f s %.2f (%.1f CPU-s, own %.1f)" % ((k, t, gbps(size, t)) + CPU[(name, k)])
                          for k, t in times.items() if t)
        versus = ""
        if peers and MOVER in times:
            best = min(peers, key=peers.get)
            versus = " | move vs best peer (%s): %.2fx" % (best, peers[best] / times[MOVER])
        if peers and times.get(MOVERS[2]):
            best = min(peers, key=peers.get)
            versus += ", encrypted move vs it: %.2fx" % (peers[best] / times[MOVERS[2]])
        print("%-6s %6.0f MiB %6d files | %s%s" % (name, size / MIB, files, cells, versus))
        print("       every run (s): %s" % "  ".join("%s %s" % (k, "/".join("%.2f" % t for t in RUNS[(name, k)]))
                                                   for k in times))
        if ceiling and MOVER in times:
            print("       slabcast move / iperf3: %.2f" % (gbps(size, times[MOVER]) / ceiling[0]))
        if MOVER in times:
            print("       time against the mover without a key: " + "  ".join(
                "%s %.2fx" % (k, times[k] / times[MOVER]) for k in MOVERS[1:] if times.get(k)))
    if "move" not in tools:
        return
    if "f10m" in rows and "f1g" in rows:
        r10 = gbps(rows["f10m"][0], rows["f10m"][2][MOVER]) / gbps(rows["f1g"][0], rows["f1g"][2][MOVER])
        print("10 MiB files vs 1 GiB file, slabcast move: %.2f (goal >= 0.95)" % r10)
    if "small" in rows and len(rows["small"][2]) > 1:
        times = rows["small"][2]
        peer_times = [t for k, t in times.items() if k not in MOVERS and t]
        if peer_times:
            print("small-file tree, slabcast move vs best per-file peer: %.2fx (goal >= 3)"
                  % (min(peer_times) / times[MOVER]))


if __name__ == "__main__":
    main()
