"""What the benchmarks under testing/bench/ share: a cached dataset, one
slabcast stream on loopback with each side pinned to its own core, staged by a
real `slabcast stage` as the README deploys it (or prestaged), the library
(libslabcast) and iperf3 as peers, and socket limits raised for iperf3's sake."""

import contextlib
import json
import math
import mmap
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
import slabcast_testlib as lib  # noqa: E402,F401  (re-exported for the scripts)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SENDER_CPU, RECEIVER_CPU = 0, 1
# run_stream's staging, as the tables name it.
STAGING = {"stager": "staged by `slabcast stage` in plain /dev/shm", "prestaged": "prestaged, no stager"}


def staging_text(staging, budget=None):
    """How a table names run_stream's staging."""
    return STAGING[staging] + (", stage --budget " + budget if budget else "")


def dataset(dims, steps=4):
    """A generated dataset, kept in data/cache between runs."""
    path = os.path.join(REPO, "data", "cache", "bench-" + "x".join(map(str, dims)) + ("" if steps == 4 else "-%d" % steps))
    if not os.path.exists(os.path.join(path, "dataset.json")):
        subprocess.run([lib.DATAGEN, "--out", path, "--dims", ",".join(map(str, dims)), "--steps", str(steps)],
                       check=True)
    return path


def private_directory(path):
    """Makes `path` (if need be) with mode 0700. The stager refuses a staging
    directory anyone may write to, and makedirs' mode is masked by the umask
    (and left as it is when the directory exists): under umask 0 it would be
    0777. So the mode is set."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)


class Stager:
    """A real `slabcast stage` for the workspace's one stream, as the README
    deploys it: part of the sending host (pinned to SENDER_CPU, beside the
    shuffler), staging into a plain directory under /dev/shm (ws.staging, no
    mount of its own), following the controller's syncs (--loop). `budget`:
    its --budget (default: the stager's, half the free space). Returns once
    the stager has staged its first window (as many steps as the budget holds,
    at most the dataset's), so that the controller starts on staged steps."""

    def __init__(self, ws, dataset_dir, budget=None, timeout=300):
        private_directory(ws.staging)
        self.port = lib.free_udp_ports(1)[0]
        self.stats_json = os.path.join(ws.dir, "stage.json")
        self.role = ws.start("stage", ["stage", "--dataset", dataset_dir, "--staging", ws.staging, "--streams", "0",
                                       "--sync", "127.0.0.1:%d" % self.port, "--loop", "--stats-json", self.stats_json]
                             + (["--budget", budget] if budget else []), cpu=SENDER_CPU)
        self.role.wait_for_text("sync on")
        # Its first line says the window: "... budget B MiB (W steps ahead) ...".
        said = re.search(r"\((\d+) steps ahead\)", self.role.text())
        if not said:
            raise AssertionError("the stager did not say how many steps it stages ahead:\n" + self.role.text()[-2000:])
        window = int(said.group(1))

        def window_staged():
            if not self.role.alive():
                raise AssertionError("the stager exited (%s):\n%s" % (self.role.proc.returncode,
                                                                      self.role.text()[-2000:]))
            return len(self.staged()) >= window
        lib.wait_for(window_staged, timeout, what="the stager's first %d step(s) staged" % window,
                     seen=lambda: self.role.text()[-1000:])

    def staged(self, since=0.0, until=float("inf")):
        """Its "staged" events (a step put in place), between two unix times."""
        return [e for e in lib.read_json_lines(self.stats_json)
                if e.get("kind") == "step" and e.get("result") == "staged" and since <= e["time"] <= until]

    def copies(self, since, until):
        """Steps it copied between two unix times: its staged events, less
        those of a step still in its slot from an earlier lap (no copy)."""
        return sum(1 for e in self.staged(since, until) if e.get("copied", True))


def prestage(ws, dataset_dir, huge_pages=True):
    """Copies the steps into the staging directory once, with no stager: for a
    benchmark that does not measure staging, where on two cores the stager's
    copies would steal the sender's time (Stager runs the real one). With
    huge_pages (and root) the staging directory is a tmpfs of its own with
    huge pages, as `slabcast tune --staging` advises; returns whether it is."""
    private_directory(ws.staging)
    mounted = False
    if huge_pages and os.geteuid() == 0:
        size = sum(os.path.getsize(os.path.join(dataset_dir, n)) for n in os.listdir(dataset_dir)) + (64 << 20)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "huge=within_size,size=%d,mode=0700" % size, "tmpfs",
                                  ws.staging]).returncode == 0
        if mounted:
            ws.cleanups.append(lambda: subprocess.run(["umount", ws.staging]))
    for name in os.listdir(dataset_dir):
        if name != "dataset.json":
            shutil.copyfile(os.path.join(dataset_dir, name), os.path.join(ws.staging, name))
    return mounted


def start_receiver(ws, dims, streams, slab_depth, extra=()):
    """`slabcast receive` on RECEIVER_CPU; returns (ports, stats json path)."""
    ports = lib.free_udp_ports(streams)
    stats = os.path.join(ws.dir, "receive.json")
    args = ["receive", "--name", "bench", "--dims", ",".join(map(str, dims)), "--slab-depth", str(slab_depth),
            "--listen", "127.0.0.1", "--shm-dir", ws.shm, "--cpus", str(RECEIVER_CPU), "--stats-json", stats]
    for k, port in enumerate(ports):
        args += ["--stream", "%d:%d" % (k, port)]
    ws.start("receive", args + list(extra), cpu=RECEIVER_CPU)
    lib.wait_for(lambda: os.path.exists(os.path.join(ws.shm, "bench.slabcast")), what="receiver")
    return ports, stats


def start_shufflers(ws, dataset_dir, slab_depth, ports, rate, extra=()):
    """One `slabcast shuffle` a stream on SENDER_CPU, each listening for syncs
    when this returns; returns (sync ports, stats json paths)."""
    sync_ports = lib.free_udp_ports(len(ports))
    stats, roles = [], []
    for k, (port, sync) in enumerate(zip(ports, sync_ports)):
        stats.append(os.path.join(ws.dir, "shuffle%d.json" % k))
        roles.append(ws.start("shuffle%d" % k, ["shuffle", "--stream", str(k), "--to", "127.0.0.1:%d" % port,
                                                "--staging", ws.staging, "--dataset", dataset_dir,
                                                "--slab-depth", str(slab_depth), "--sync", "127.0.0.1:%d" % sync,
                                                "--rate", rate, "--stats-json", stats[-1]]
                              + list(extra), cpu=SENDER_CPU))
    for role in roles:
        role.wait_for_text("sync on")  # past its startup checks, and no sync goes to a socket not yet bound
    return sync_ports, stats


def control(ws, dataset_dir, sync_ports, steps, extra=(), stager_port=None):
    """`slabcast control` to its end: `steps` steps, looping over the dataset;
    the stager at `stager_port` (when there is one) follows its syncs."""
    args = ["control", "--dataset", dataset_dir, "--loop", "--count", str(steps)]
    for p in sync_ports:
        args += ["--shuffler", "127.0.0.1:%d" % p]
    if stager_port:
        args += ["--stager", "127.0.0.1:%d" % stager_port]
    r = ws.run(args + list(extra), timeout=900)
    assert r.returncode == 0, r.stderr
    return r


@contextlib.contextmanager
def workspace(tag):
    """A workspace whose cleanups (prestage's staging mount) run before it closes."""
    ws = lib.Workspace(tag)
    ws.cleanups = []
    try:
        yield ws
    finally:
        for cleanup in ws.cleanups:
            cleanup()
        ws.close()


def run_stream(dims, rate, steps, receive_args=(), shuffle_args=(), staging="stager", huge_pages=True,
               budget=None):
    """One stream of the whole volume, shuffler (SENDER_CPU) -> receiver
    (RECEIVER_CPU), `steps` steps back to back from the controller. staging:
    "stager", a real `slabcast stage` (Stager, with `budget`) staging into
    plain /dev/shm as the README deploys it, or "prestaged", the steps copied
    once before the run (prestage(), with `huge_pages`). Returns summarize()'s
    figures, with "huge_staging" (whether staging had huge pages) and
    "stager_copies" (steps the stager copied while the controller ran; None
    prestaged)."""
    with workspace("bench") as ws:
        data = dataset(dims)
        ports, recv_json = start_receiver(ws, dims, 1, dims[2], receive_args)
        stager, huge = None, False
        if staging == "stager":
            stager = Stager(ws, data, budget)
        elif staging == "prestaged":
            huge = prestage(ws, data, huge_pages)
        else:
            raise ValueError("staging: one of %s, not %r" % (sorted(STAGING), staging))
        sync_ports, shuffle_json = start_shufflers(ws, data, dims[2], ports, rate, shuffle_args)
        started = time.time()
        with ReceiveWindow([os.path.join(ws.shm, "bench.slab0")]) as window:
            control(ws, data, sync_ports, steps, stager_port=stager.port if stager else None)
            wait_sent(shuffle_json[0], steps)
        ended = time.time()
        for role in reversed(ws.roles):
            role.stop()
        return dict(summarize(shuffle_json[0], recv_json, window.seconds), huge_staging=huge,
                    stager_copies=stager.copies(started, ended) if stager else None)


def wait_sent(shuffle_json, steps, timeout=120):
    """Waits until the shuffler has reported `steps` steps sent (the controller
    returns when it has asked for the last, not when it is out: a slow codec
    takes a while longer), then for its last datagrams to land."""
    def reported():
        return sum(1 for e in lib.read_json_lines(shuffle_json) if e.get("kind") == "step")
    lib.wait_for(lambda: reported() >= steps, timeout=timeout, what="the shuffler to report %d steps sent" % steps,
                 seen=lambda: "%d reported" % reported())
    time.sleep(0.3)


def library_stream(dims, data, rate, steps, queue=0, compute_ms=0):
    """The library as the peer: testing/bench/bench_sender_library (libslabcast's
    public C++ API, one sender holding the whole volume as its slab, as a
    simulation's rank would) on SENDER_CPU sends the values of one step file of
    `data` `steps` times, run packets, codec none, at `rate`, into a real
    `slabcast receive` on RECEIVER_CPU; `queue` steps queued (0: send_step
    returns once the step is sent), `compute_ms` the caller's time between
    steps. Returns received()'s figures, the loss over every value sent, and
    the library's own: "gbps" (packet bytes over its time spent sending),
    "sent_bytes", "call_median_ms" and "call_max_ms" (the caller's time per
    send_step), "steps_sent"."""
    tool = os.path.join(lib.BUILD, "testing", "bench_sender_library")
    if not os.path.exists(tool):
        raise SystemExit("%s: not built (cmake --build build --target bench_sender_library)" % tool)
    with open(os.path.join(data, "dataset.json")) as f:
        step_file = os.path.join(data, json.load(f)["steps"][1]["file"])
    with workspace("bench") as ws:
        ports, recv_json = start_receiver(ws, dims, 1, dims[2])
        cmd = ["taskset", "-c", str(SENDER_CPU), tool, "--to", "127.0.0.1:%d" % ports[0],
               "--dims", ",".join(map(str, dims)), "--step-file", step_file, "--steps", str(steps), "--rate", rate,
               "--queue", str(queue), "--compute-ms", str(compute_ms)]
        with ReceiveWindow([os.path.join(ws.shm, "bench.slab0")]) as window:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            assert r.returncode == 0, r.stderr
            time.sleep(1.5)  # the receiver publishes a step that lost its end when its timeout passes
        for role in reversed(ws.roles):
            role.stop()
        out = json.loads(r.stdout)
        # Over every step handed to send_step.
        figures = received(recv_json, steps, window.seconds)
        return dict(figures, gbps=out["bytes"] * 8e-9 / out["send_s"], sent_bytes=out["bytes"],
                    call_median_ms=1e3 * out["call_median_s"], call_max_ms=1e3 * out["call_max_s"],
                    steps_sent=out["steps_sent"])


class ReceiveWindow:
    """The receiver's wall-clock window: from the first packet's arrival to the
    last's, in any of the slabs, to within 2 ms. It watches each slab's live
    packet counter (the receiver bumps it as packets arrive) and notes when the
    counters first moved and when they last did; iperf3's receiver counts its
    own window the same way, from its first datagram to the end of the test."""

    _PACKETS_AT = lib._LIVE + struct.calcsize(lib._LIVE_FORMAT[:lib._LIVE_FIELDS.index("packets") + 1])  # "<" + the fields before

    def __init__(self, slab_paths, poll_s=0.002):
        self.paths, self.poll_s = slab_paths, poll_s
        self.first = self.last = None

    def _packets(self):
        return [struct.unpack_from("<Q", m, self._PACKETS_AT)[0] for m in self.maps]

    def _watch(self):
        before = self._packets()
        while not self.done.is_set():
            now, counts = time.time(), self._packets()
            if counts != before:
                self.first = self.first or now
                self.last, before = now, counts
            time.sleep(self.poll_s)

    def __enter__(self):
        self.files = [open(p, "rb") for p in self.paths]
        self.maps = [mmap.mmap(f.fileno(), lib.HEADER_BYTES, prot=mmap.PROT_READ) for f in self.files]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        for m, f in zip(self.maps, self.files):
            m.close()
            f.close()

    @property
    def seconds(self):
        return (self.last - self.first) if self.first else None


def whole_seconds(events):
    """The "gbps" of a role's status lines (one a second) from its first
    second with traffic to its last, both left out (they are partial): a
    second with nothing sent or received between them (a stall, a gap between
    steps) is kept, at 0."""
    gbps = [e.get("gbps", 0) for e in events if e.get("kind") == "status"]
    busy = [k for k, g in enumerate(gbps) if g > 0]
    return gbps[busy[0] + 1:busy[-1]] if busy else []


def received(recv_json, steps_sent, window_seconds=None):
    """The receiver's figures, from its stats json (one stream), counted as
    iperf3's receiver counts: "placed_gbps" is the bytes of the datagrams its
    sockets took in (all of them stored into slabs when "not_placed" is 0) over
    its wall-clock window (ReceiveWindow: first to last packet), given
    window_seconds, and "voxels_per_s" the values placed into the slab over the
    same window. "loss": the share of values that did not arrive, of those the
    `steps_sent` steps hold, so that a step lost whole counts: it has no report
    (no packet of it arrived, or readers held every buffer). "steps": the step
    reports; "steps_lost_whole": the steps sent that have none.
    "recv_windows": Gbit/s that arrived each whole second (whole_seconds()).
    "landed": the share of datagrams whose payload landed straight in the slab."""
    events = lib.read_json_lines(recv_json)
    reports = [e for e in events if e.get("kind") == "step"]
    final = [e for e in events if e.get("kind") == "status"][-1]
    received_bytes = sum(s["bytes"] for s in final["streams"])
    # Every step of a stream expects as many values; with no report at all, every value sent was lost.
    expected = steps_sent * max((e["expected"] for e in reports), default=1)
    records = sum(e["records"] for e in reports)
    placed = sum(e["records"] + e.get("ghost_records", 0) for e in reports)
    return {"loss": 100.0 * (expected - records) / max(expected, 1), "steps": len(reports),
            "steps_lost_whole": steps_sent - len(reports),
            "recv_windows": whole_seconds(events), "received_bytes": received_bytes, "window_seconds": window_seconds,
            "placed_gbps": received_bytes * 8e-9 / window_seconds if window_seconds else None,
            "voxels_per_s": placed / window_seconds if window_seconds else None,
            "landed": sum(s.get("landed", 0) for s in final["streams"]) / max(final["packets"], 1),
            "not_placed": final["rejected"] + final["stale"] + final["duplicates"]}


def summarize(shuffle_json, recv_json, window_seconds=None):
    """The run's figures (one stream): received()'s, its loss over every step
    the shuffler began (finished, or abandoned when the controller moved on),
    and the shuffler's own over the steps it finished: "sent_gbps" is its
    packet bytes over its time sending them, "windows" its Gbit/s each whole
    second, "sent_bytes" and "packets" what it sent. What arrived is the
    receiver's to say: received()'s "placed_gbps" and "received_bytes"."""
    events = lib.read_json_lines(shuffle_json)
    began = [e for e in events if e.get("kind") == "step" and e.get("result") in ("finished", "abandoned")]
    sent = [e for e in began if e["result"] == "finished"]
    send_seconds = sum(e["seconds"] for e in sent)
    sent_bytes = sum(e["gbps"] * e["seconds"] / 8e-9 for e in sent)
    sent_gbps = sent_bytes * 8e-9 / max(send_seconds, 1e-9)
    return dict(received(recv_json, len(began), window_seconds), sent_gbps=sent_gbps,
                sent_bytes=sent_bytes, packets=sum(e["packets_sent"] for e in sent), windows=whole_seconds(events))


def iperf3(seconds, rate="0", length=8972, total_bytes=None):
    """iperf3 UDP, client on SENDER_CPU, server on RECEIVER_CPU; for `seconds`,
    or until it has sent `total_bytes` when given."""
    port = lib.free_udp_ports(1)[0]
    server = subprocess.Popen(["taskset", "-c", str(RECEIVER_CPU), "iperf3", "-s", "-1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    out = subprocess.run(["taskset", "-c", str(SENDER_CPU), "iperf3", "-c", "127.0.0.1", "-p", str(port), "-u",
                          "-b", rate, "-l", str(length), "-w", "64M", "-J"]
                         + (["-n", str(total_bytes)] if total_bytes else ["-t", str(seconds)]),
                         capture_output=True, text=True, timeout=seconds + 30)
    server.wait(10)
    result = json.loads(out.stdout)
    if "error" in result:
        raise SystemExit("iperf3: " + result["error"])
    s = result["end"]["sum"]
    sent = s["bits_per_second"] / 1e9
    windows = [i["sum"]["bits_per_second"] / 1e9 for i in result.get("intervals", [])]
    # iperf3's own receiver-side figure: bytes its server took in over the server's window.
    received = result["end"].get("sum_received", {})
    return {"sent_gbps": sent, "recv_gbps": received.get("bits_per_second", 0.0) / 1e9,
            "recv_seconds": received.get("seconds"), "loss": s["lost_percent"],
            "windows": windows, "cpu_sender": result["end"].get("cpu_utilization_percent", {}).get("host_total", 0.0)}


class RaisedSocketLimits:
    """iperf3 -w 64M needs net.core.{r,w}mem_max >= 64 MiB (slabcast uses the FORCE
    socket options instead). Raised for the run when root, then restored."""

    KNOBS = ("/proc/sys/net/core/rmem_max", "/proc/sys/net/core/wmem_max")

    def __enter__(self):
        self.saved = {}
        if os.geteuid() == 0:
            for k in self.KNOBS:
                with open(k) as f:
                    self.saved[k] = f.read().strip()
                if int(self.saved[k]) < 64 << 20:
                    with open(k, "w") as f:
                        f.write(str(64 << 20))
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            with open(k, "w") as f:
                f.write(v)


def parse_rate(text):
    """"2.81G" -> 2.81e9 bit/s, as slabcast and iperf3 read it."""
    scale = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
    text = text.strip().lower()
    return float(text[:-1]) * scale[text[-1]] if text[-1] in scale else float(text)


def provenance():
    """(short commit, whether the tree has changes not committed): read only,
    GIT_OPTIONAL_LOCKS=0 so that git status does not rewrite the index."""
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")
    try:
        head = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              env=env).stdout.strip() or "unknown"
        dirty = bool(subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, env=env).stdout.strip())
    except OSError:
        return "unknown", False
    return head, dirty


def gso_pair(seconds, port=None):
    """The raw UDP ceiling (testing/bench/udp_gso_pair.cpp): GSO sender on
    SENDER_CPU, GRO receiver on RECEIVER_CPU, counting bytes only; received
    rate over the receiver's first-to-last-datagram window."""
    tool = os.path.join(lib.BUILD, "testing", "slabcast_udp_gso_pair")
    if not os.path.exists(tool):
        raise SystemExit("%s: not built (cmake --build build --target slabcast_udp_gso_pair)" % tool)
    port = port or lib.free_udp_ports(1)[0]
    out = subprocess.run([tool, "--seconds", str(seconds), "--port", str(port), "--sender-cpu", str(SENDER_CPU),
                          "--receiver-cpu", str(RECEIVER_CPU)], capture_output=True, text=True, check=True,
                         timeout=seconds + 30)
    r = json.loads(out.stdout)
    return {"sent_gbps": r["sent_bytes"] * 8e-9 / r["sent_seconds"],
            "recv_gbps": r["received_bytes"] * 8e-9 / max(r["received_seconds"], 1e-9),
            "loss": 100.0 * (1 - r["received_bytes"] / max(r["sent_bytes"], 1))}


def nearest_rank(values, q):
    """The q-th percentile by nearest rank: the smallest value with at least
    q% of `values` at or below it (nan for none)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)] if ordered else float("nan")


def print_provenance(command=None):
    """The line every table in docs/performance.md carries: script, command,
    commit and date."""
    commit, dirty = provenance()
    script = os.path.relpath(os.path.abspath(sys.argv[0]), REPO)
    command = command or "SLABCAST_BUILD=%s python3 %s" % (os.environ.get("SLABCAST_BUILD", "build"),
                                                         " ".join([script] + sys.argv[1:]))
    print("script %s; command: %s; commit %s%s; date %s" % (script, command, commit,
          " (with uncommitted changes)" if dirty else "", time.strftime("%Y-%m-%d %H:%M %Z")))


def warm_pages(size, directory="/dev/shm"):
    """Writes and deletes `size` bytes in /dev/shm, so that the tool timed next
    writes into memory pages this machine has just used. It is a virtual machine
    whose first touch of a page it has not used lately is slow (a 2 GiB write
    into /dev/shm: 3-4 s on such pages, 0.5 s on pages just freed): without
    this, whichever tool ran first would pay that alone."""
    chunk = bytes(4 << 20)
    path = os.path.join(directory, "slabcast-bench-warm-%d" % os.getpid())
    with open(path, "wb") as f:
        for _ in range((size + len(chunk) - 1) // len(chunk)):
            f.write(chunk)
    os.unlink(path)
