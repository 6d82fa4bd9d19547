#!/usr/bin/env python3
"""Benchmark: `slabcast move` against per-file transfer tools, in the same run,
memory to memory (/dev/shm at both ends, so no disk is what is measured), each
compared with a peer of its own kind.

Datasets: a CMIP-like tree of 10,000 files (80% 4-64 KiB, 20% 64 KiB-4 MiB),
100 x 10 MiB, 10 x 100 MiB and 1 x 1 GiB.

Two places:
  loopback (default): every server on 127.0.0.1.
  --wan: two hosts made of network namespaces with a 32 ms round trip between
      them (all of it on the way back, as netem on one interface: testbed's
      docstring in testing/netns), TCP buffers autotuned up to 64 MiB on
      both; every server in the receiving namespace. Needs root.

Like with like (issue 22):
  plaintext, no authentication: "move" (`slabcast move` to a serve without a
      key: --insecure-no-auth between namespaces) and "move, key" (streams
      authenticated, not encrypted) against an rsync daemon (once, and 4 in
      parallel over the top-level directories), GridFTP when installed
      (globus-url-copy -cc 4 -p 4 -pp), and iperf3 -P 4 sending the set's bytes
      from memory over the same path with no files at all: the path's ceiling;
      and "4 x iperf3 -F, into shm": four iperf3 servers each writing what
      it receives into one file in the destination, the path's ceiling with
      the bytes written into /dev/shm as every tool here writes them (in 4
      large files: no per-file work, no checksums; iperf3 ends its test when
      the sender has sent, so the last few MiB in flight are not written).
  encrypted and authenticated: "move, encrypted" (--key-file --encrypt)
      against rsync over ssh (once and 4 in parallel; aes128-gcm, ssh's fastest
      cipher here) and scp -r (sets of at most 100 files). Needs root (sshd).

Each repetition runs every tool once into an empty destination, in an order
that alternates between repetitions (forward, then backward), so that no tool
always runs first or after the same neighbour on this shared machine. Prints
per set: the median seconds, Gbit/s, and own CPU-seconds per GiB of each tool
(its clients and servers, from getrusage and /proc: what the tool itself
costs, whatever else runs), the whole machine's CPU-seconds per GiB, and how
long after its start the machine was first fully busy (cpu_ramp.py: on this
CPU-bound host, what the tool's start costs); then the ratios, peer time over
mover time, of each pair of the same kind, as the range over the repetitions.

Goals (issue 22): the plaintext mover >= 0.8 of iperf3 -P 4 on every set;
the tree >= 2 x 4 x rsync daemon (the script says what that asks against the
path's ceilings on the machine it runs on); the encrypted mover >= 3 x rsync
over ssh (its best, 4 in parallel).

    python3 testing/bench/mover_vs_peers.py [--wan] [--sets small,f10m,f100m,f1g]
                                            [--tools iperf3,move,...] [--repeat 3] [--keep]
"""

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "netns"))
from slabcast_testlib import SLABCAST, slabcast_in  # noqa: E402
import benchlib  # noqa: E402
import cpu_ramp  # noqa: E402
import mover_peers  # noqa: E402

BASE = "/dev/shm/slabcast-bench-mover"  # the datasets (kept with --keep)
RUN = "%s-%d" % (BASE, os.getpid())  # this run's destination and page warmer
MIB, GIB = 1 << 20, 1 << 30
SETS = ("small", "f10m", "f100m", "f1g")
SCP_MAX_FILES = 100  # scp pays round trips per file: past this it would run for many minutes
ONCE_PAST_S = 30  # a tool slower than this runs once: its figure is far from the mover's anyway

# Every tool: its --tools name, its label, and its kind. Each mover is compared
# with the peers of its kind only.
PLAIN, SEALED = "plaintext", "encrypted"
TOOLS = [
    ("iperf3", "iperf3 -P 4", PLAIN),
    ("iperf3-shm", "4 x iperf3 -F, into shm", PLAIN),
    ("move", "move", PLAIN),
    ("move-key", "move, key", PLAIN),
    ("move-enc", "move, encrypted", SEALED),
    ("rsyncd", "rsync daemon", PLAIN),
    ("4rsyncd", "4 x rsync daemon", PLAIN),
    ("gridftp", "globus-url-copy", PLAIN),
    ("rsync", "rsync over ssh", SEALED),
    ("4rsync", "4 x rsync over ssh", SEALED),
    ("scp", "scp -r", SEALED),
]
MOVERS = ("move", "move, key", "move, encrypted", "move, baseline")  # "baseline": --baseline's binary, no key
LABEL = {name: label for name, label, _ in TOOLS}
KIND = {label: kind for _, label, kind in TOOLS}
KIND["move, baseline"] = PLAIN


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
    path = RUN + "-warm"
    with open(path, "wb") as f:
        for _ in range((size + len(chunk) - 1) // len(chunk)):
            f.write(chunk)
    os.unlink(path)


def busy_seconds():
    """CPU time the whole machine has spent on anything but idling: every
    process of a tool on both hosts, the kernel's network stack and the delay
    line alike."""
    ticks, idle = cpu_ramp.machine_ticks()
    return (ticks - idle) / os.sysconf("SC_CLK_TCK")


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


class Place:
    """Where the servers run and how a client reaches them."""

    def __init__(self, wan):
        self.procs, self.bed = [], None
        if wan:
            import netns_testbed
            why = netns_testbed.available(delay=True)
            if why:
                sys.exit("--wan " + why)
            # The 32 ms round trip, all on the way back (see netns_testbed).
            self.bed = netns_testbed.Testbed(delay_ms=32, delayed_from=("receiver",))
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


def run_once(cmd_lists, cwd, warm, place):
    """Runs the commands side by side: (seconds until the last ends, CPU time
    of the tool's own processes, of the whole machine, seconds until the
    machine was first fully busy (cpu_ramp.py; None: never))."""
    if warm:
        warm_pages(warm)
    cpu0, own0 = busy_seconds(), own_seconds(place)
    sampler = cpu_ramp.CpuSampler()
    sampler.start()
    t0 = time.monotonic()
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd)
             for c in cmd_lists]
    for p, c in zip(procs, cmd_lists):
        _, err = p.communicate()
        if p.returncode != 0:
            raise RuntimeError("%s failed: %s" % (" ".join(c), err[-2000:]))
    seconds = time.monotonic() - t0
    sampler.stop()
    time.sleep(0.3)  # a server's child (rsync's, sshd's) is reaped into its parent's CPU time
    return seconds, own_seconds(place) - own0, busy_seconds() - cpu0, sampler.seconds_to_full()


def commands(a, place, work, dst, names):
    """{label: (a function of (set name, source) giving the command lists, cwd)}
    for the tools asked for that can run here; their servers started."""
    port, kport, rport, gport, iport, bport, *shm_ports = mover_peers.free_ports(10)
    tools = {}
    ring = ["--ring-mb", str(a.ring_mb)] if a.ring_mb else []

    def move(to_port, *extra, program=SLABCAST):
        return lambda name, src: ([place.client + [program, "move", "--port", str(to_port), "--progress", "none",
                                                   "--streams", "4", "--readers", "2"] + ring + list(extra)
                                   + [src, place.host + ":"]], None)

    def four(cmd, target):
        """4 in parallel over the top-level directories, run from the set's parent."""
        def lists(name, src):
            tops = sorted(os.listdir(src))
            return ([cmd + ["--relative"] + [os.path.join(name, p) for p in tops[i::4]] + [target]
                     for i in range(4) if tops[i::4]], os.path.dirname(src))
        return lists

    if names & {"move"}:
        place.start([SLABCAST, "serve", "--root", dst, "--listen", place.host, "--port", str(port), "--writers", "2"] + ring
                    + (["--insecure-no-auth"] if place.bed else []))
        tools[LABEL["move"]] = move(port)
    if a.baseline:  # the same mover built from another commit, beside this one (before/after figures)
        base = slabcast_in(a.baseline)
        place.start([base, "serve", "--root", dst, "--listen", place.host, "--port", str(bport), "--writers", "2"] + ring
                    + (["--insecure-no-auth"] if place.bed else []))
        tools["move, baseline"] = move(bport, program=base)
    if names & {"move-key", "move-enc"}:
        key = os.path.join(work, "bench.key")
        subprocess.run([SLABCAST, "keygen", key], check=True, capture_output=True)
        place.start([SLABCAST, "serve", "--root", dst, "--listen", place.host, "--port", str(kport), "--writers", "2",
                     "--key-file", key] + ring)
        if "move-key" in names:
            tools[LABEL["move-key"]] = move(kport, "--key-file", key)
        if "move-enc" in names:
            tools[LABEL["move-enc"]] = move(kport, "--key-file", key, "--encrypt")
    if "iperf3" in names and shutil.which("iperf3"):
        place.start(["iperf3", "-s", "-B", place.host, "-p", str(iport)])
        tools[LABEL["iperf3"]] = lambda name, src: ([place.client + [
            "iperf3", "-c", place.host, "-p", str(iport), "-P", "4", "-n", str(tree_bytes(src)[0])]], None)
    if "iperf3-shm" in names and shutil.which("iperf3"):
        for i, p in enumerate(shm_ports):
            place.start(["iperf3", "-s", "-B", place.host, "-p", str(p), "-F", os.path.join(dst, "iperf3-%d" % i)])
        tools[LABEL["iperf3-shm"]] = lambda name, src: ([place.client + [
            "iperf3", "-c", place.host, "-p", str(p), "-n", str(tree_bytes(src)[0] // 4)] for p in shm_ports], None)
    if names & {"rsyncd", "4rsyncd"}:
        daemon = mover_peers.rsync_daemon(place, work, dst, rport)
        if "rsyncd" in names:
            tools[LABEL["rsyncd"]] = lambda name, src: ([place.client + ["rsync", "-a", src, daemon]], None)
        if "4rsyncd" in names:
            tools[LABEL["4rsyncd"]] = four(place.client + ["rsync", "-a"], daemon)
    if (names & {"gridftp"} and shutil.which("globus-url-copy")
            and os.path.exists("/usr/sbin/globus-gridftp-server")):
        url = mover_peers.gridftp(place, dst, gport)
        tools[LABEL["gridftp"]] = lambda name, src: ([place.client + [
            "globus-url-copy", "-r", "-cd", "-cc", "4", "-p", "4", "-pp", "-fast", "file://%s/" % src, url(name)]],
            None)
    if names & {"rsync", "4rsync", "scp"} and place.bed:  # sshd on port 22: in a namespace only
        ssh = mover_peers.sshd(place, work)
        target = "root@%s:%s/" % (place.host, dst)
        if "rsync" in names:
            tools[LABEL["rsync"]] = lambda name, src: ([place.client + ["rsync", "-a", "-e", ssh, src, target]], None)
        if "4rsync" in names:
            tools[LABEL["4rsync"]] = four(place.client + ["rsync", "-a", "-e", ssh], target)
        if "scp" in names:
            tools[LABEL["scp"]] = lambda name, src: (
                [place.client + ["scp", "-r", "-q"] + ssh.split()[1:] + [src, target]]
                if tree_bytes(src)[1] <= SCP_MAX_FILES else None, None)
    return tools


def measure_set(name, src, tools, repeat, place, dst):
    """Every tool `repeat` times on one set, the order alternating between
    repetitions: {label: [(seconds, own CPU, machine CPU) per run]}."""
    size = tree_bytes(src)[0]
    runs = {label: [] for label in tools}
    order = [label for label in tools if tools[label](name, src)[0] is not None]
    for r in range(repeat):
        for label in (order if r % 2 == 0 else order[::-1]):
            if runs[label] and runs[label][0][0] > ONCE_PAST_S:
                continue
            cmd_lists, cwd = tools[label](name, src)
            clear(dst)
            runs[label].append(run_once(cmd_lists, cwd, size, place))
            print("  %s, run %d: %s %.2f s" % (name, r + 1, label, runs[label][-1][0]), file=sys.stderr)
    clear(dst)
    return {label: v for label, v in runs.items() if v}


def median(values):
    return sorted(values)[len(values) // 2]


def pair_ratios(peer, mover):
    """Peer time over mover time in each repetition both ran in (the peer's
    single run when it ran once)."""
    return [p / m for p, m in zip(peer * len(mover) if len(peer) == 1 else peer, mover)]


def ratios(peer, mover):
    pairs = pair_ratios(peer, mover)
    return "%.2fx (%.2f-%.2f)" % (median(pairs), min(pairs), max(pairs))


def congestion_control():
    """The host's TCP congestion control, every tool's here (new namespaces
    start with it): BBR and cubic ramp up differently on a long path."""
    try:
        with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def report(rows, wan, repeat):
    where = "between namespaces, 32 ms round trip" if wan else "loopback"
    print("slabcast move against peers of its kind, %s, %d cores, TCP congestion control %s for every tool,\n"
          "%d repetitions in alternating order.\n"
          "Per tool: median seconds (every run), Gbit/s, own CPU-s per GiB (the tool's clients and servers),\n"
          "machine CPU-s per GiB (everything that ran meanwhile), and seconds until the machine was first\n"
          "%.0f%% busy for %.0f ms (its start: connections, handshakes, TCP's ramp; '-': never)." % (
              where, os.cpu_count(), congestion_control(), repeat, 100 * cpu_ramp.FULL, 1000 * cpu_ramp.WINDOW_S))
    goals = []
    for name, (size, files, runs) in rows.items():
        gib = size / GIB
        print("\n%s: %.0f MiB in %d files" % (name, size / MIB, files))
        for label, rs in runs.items():
            t = median([r[0] for r in rs])
            full = [r[3] for r in rs if r[3] is not None]
            print("  %-20s %-9s %6.2f s (%s)  %5.2f Gbit/s  own %4.2f  machine %4.2f CPU-s/GiB  busy after %s" % (
                label, KIND[label], t, "/".join("%.2f" % r[0] for r in rs), size * 8e-9 / t,
                median([r[1] for r in rs]) / gib, median([r[2] for r in rs]) / gib,
                "%.2f s (%s)" % (median(full), "/".join("%.2f" % r[3] if r[3] is not None else "-" for r in rs))
                if full else "-"))
        times = {label: [r[0] for r in rs] for label, rs in runs.items()}
        for mover in MOVERS:
            if mover not in times:
                continue
            peers = [label for label in times if label not in MOVERS and KIND[label] == KIND[mover]]
            if peers:
                print("  %s against its kind: %s" % (mover, "  ".join(
                    "%s %s" % (p, ratios(times[p], times[mover])) for p in peers)))
        ceiling = times.get(LABEL["iperf3"])
        for mover in MOVERS:
            if ceiling and mover in times:
                share = median(pair_ratios(ceiling, times[mover]))  # as on the pair's line above
                if KIND[mover] == PLAIN:
                    goals.append("%s, %s: %.2f of iperf3 -P 4 (goal >= 0.8: %s)" % (
                        name, mover, share, "met" if share >= 0.8 else "not met"))
                else:  # not like with like: the goal is the plaintext mover's
                    goals.append("%s, %s: %.2f of iperf3 -P 4 (no goal: it encrypts, iperf3 does not)" % (
                        name, mover, share))
            if LABEL["iperf3-shm"] in times and mover in times:
                goals.append("%s, %s: %.2f of 4 x iperf3 writing the bytes into shm (no goal: the ceiling "
                             "with the writes)" % (name, mover, median(pair_ratios(times[LABEL["iperf3-shm"]], times[mover]))))
        if name == "small" and "move" in times and LABEL["4rsyncd"] in times:
            r = median(pair_ratios(times[LABEL["4rsyncd"]], times["move"]))
            goals.append("tree, move vs 4 x rsync daemon: %.2fx (goal >= 2: %s)" % (r, "met" if r >= 2 else "not met"))
            # The goal is relative to a peer whose speed depends on the machine:
            # say what it asks of the mover against the path's own ceilings.
            for ceiling_label in (LABEL["iperf3"], LABEL["iperf3-shm"]):
                if ceiling_label in times:
                    need = 2 * median(pair_ratios(times[ceiling_label], times[LABEL["4rsyncd"]]))
                    goals.append("  2 x 4 x rsync daemon is %.2f of %s here%s" % (
                        need, ceiling_label, ": faster than that ceiling" if need > 1 else ""))
        ssh_peers = [times[p] for p in (LABEL["rsync"], LABEL["4rsync"], LABEL["scp"]) if p in times]
        if ssh_peers and "move, encrypted" in times:
            r = min(median(pair_ratios(p, times["move, encrypted"])) for p in ssh_peers)
            goals.append("%s, encrypted move vs the best over ssh: %.2fx (goal >= 3: %s)" % (
                name, r, "met" if r >= 3 else "not met"))
    print("\n" + "\n".join(goals))
    benchlib.print_provenance()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wan", action="store_true", help="between namespaces, 32 ms round trip")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--repeat", type=int, default=3,
                    help="repetitions of every tool on each set (a run over %d s is not repeated)" % ONCE_PAST_S)
    ap.add_argument("--baseline", metavar="BUILD_DIR",
                    help="also run the mover of another build (BUILD_DIR/server/slabcast), no key: before/after")
    ap.add_argument("--ring-mb", type=int, help="serve and move --ring-mb (default: theirs)")
    ap.add_argument("--keep", action="store_true", help="keep the datasets in %s" % BASE)
    ap.add_argument("--tools", default=",".join(n for n, _, _ in TOOLS),
                    help="which to run, in this order (to look at one tool alone)")
    a = ap.parse_args()
    names = [t for t in a.tools.split(",") if t]
    if set(names) - set(LABEL):
        sys.exit("unknown --tools: %s" % ",".join(sorted(set(names) - set(LABEL))))
    sets = make_datasets([n for n in a.sets.split(",") if n])
    dst = RUN + "-dst"
    clear(dst)
    work = tempfile.mkdtemp(prefix="slabcast-bench-")
    place = Place(a.wan)
    rows = {}
    try:
        found = commands(a, place, work, dst, set(names))
        tools = {LABEL[n]: found[LABEL[n]] for n in names if LABEL[n] in found}  # in the order asked
        if "move, baseline" in found:
            tools["move, baseline"] = found["move, baseline"]
        time.sleep(1)
        for name, src in sets.items():
            size, files = tree_bytes(src)
            rows[name] = (size, files, measure_set(name, src, tools, a.repeat, place, dst))
    finally:
        place.close()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(dst, ignore_errors=True)
        if not a.keep:
            shutil.rmtree(BASE, ignore_errors=True)
    report(rows, a.wan, a.repeat)


if __name__ == "__main__":
    main()
