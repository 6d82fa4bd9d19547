"""Helpers for slabcast's end-to-end tests: real processes, real UDP on
loopback, real /dev/shm. Standard library only."""

import json
import math
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

BUILD = os.environ.get("SLABCAST_BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build"))


def slabcast_in(build_dir):
    """The slabcast program of a build directory (this one's, or another's
    for a benchmark's --baseline)."""
    return os.path.join(os.path.abspath(build_dir), "server", "slabcast")


SLABCAST = slabcast_in(BUILD)
DATAGEN = os.path.join(BUILD, "data", "slabcast-datagen")

# The exit code of a test that cannot run here: every slabcast test is registered
# with it as ctest's SKIP_RETURN_CODE (testing/CMakeLists.txt), so ctest shows it
# as skipped rather than passed, and `make test` under CI fails on it.
SKIPPED = 77

QUAD_MAX = 560
HEADER_BYTES = 4096
# Offsets of the slab header, version 2 (shared/slab/include/slabcast/slab_file.h,
# pinned there by static_asserts; docs/shared-memory.md).
_LIVE = 256
_LIVE_FIELDS = ["generation", "writes", "step", "step_records", "step_expected", "last_step",
                "last_step_records", "last_step_loss_ppm", "last_step_complete", "packets", "rejected",
                "stale", "duplicates", "writer_pid", "heartbeat_ns", "foreign", "writing_buffer", "_reserved0",
                "publications", "dropped_steps", "dropped_packets", "bytes", "rate_bits_per_s", "rate_ns",
                "pinned", "pinned_peak", "stamps", "fec_data", "fec_parity", "fec_repaired", "fec_unrepaired",
                "fec_malformed"]
_LIVE_FORMAT = "<QQqQQqQIIQQQQqqQiIQQQQQqIIQQQQQQ"
_PUBLICATIONS = 512
_PUBLICATION_FIELDS = ["seq", "step", "number", "records", "expected", "holes", "published_ns", "complete"]
_PUBLICATION_FORMAT = "<QqQQQQqI"
PIN_LOCK_OFFSET = 2048
AGE_NEVER_ARRIVED = 255

def unittest_main(**kwargs):
    """unittest.main(), except that a run in which any test was skipped exits
    SKIPPED (after naming each skipped test and why), and a run in which no test
    ran fails: neither may look like a pass."""
    result = unittest.main(exit=False, **kwargs).result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun == 0:
        print("FAIL: no test ran", flush=True)
        sys.exit(1)
    if result.skipped:
        for test, why in result.skipped:
            print("SKIPPED: %s: %s" % (test.id(), why), flush=True)
        sys.exit(SKIPPED)
    sys.exit(0)


def quad_packet(batch, records):
    """records: iterable of (x, y, z, v) -> one quad packet (little-endian)."""
    records = list(records)
    body = b"".join(struct.pack("<iiif", x, y, z, v) for x, y, z, v in records)
    return struct.pack("<ii", batch, len(records)) + body


def free_tcp_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_HANDED_OUT = set()  # ports this process gave a role already: released, but maybe not bound yet


def free_udp_ports(count):
    """Ports free right now on loopback (bound, then released), none handed
    out before by this process: a role binds its port only when it starts,
    and the kernel may offer a released port again meanwhile
    (plugin_live_history once found its shuffler's sync port taken). The
    plugin tests take theirs here too (plugin_testlib): one registry."""
    socks, ports = [], []
    while len(ports) < count:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)  # held until the end: the kernel cannot offer it twice meanwhile
        port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            ports.append(port)
    for s in socks:
        s.close()
    _HANDED_OUT.update(ports)
    return ports


def read_slab_header(path):
    """The header as a dict; "publications_of" lists each buffer's publication
    record (dicts), "newest" the buffer of the newest one (-1: none yet), and
    "last_step" is the step of the newest publication when there is one."""
    with open(path, "rb") as f:
        raw = f.read(HEADER_BYTES)
    h = {"magic": raw[0:8]}
    (h["version"], h["header_bytes"], h["data_bytes"]) = struct.unpack_from("<IIQ", raw, 8)
    (h["nx"], h["ny"], h["nz"], h["slab_index"], h["slab_depth"], h["z_begin"], h["z_end"],
     h["stored_z_begin"]) = struct.unpack_from("<8i", raw, 24)
    (h["buffers"], h["buffer_stride"], h["ages_offset"], h["age_stride"]) = struct.unpack_from("<IQQQ", raw, 124)
    h.update(zip(_LIVE_FIELDS, struct.unpack_from(_LIVE_FORMAT, raw, _LIVE)))
    h["publications_of"] = []
    for b in range(h["buffers"] if h["version"] == 2 else 0):
        p = dict(zip(_PUBLICATION_FIELDS, struct.unpack_from(_PUBLICATION_FORMAT, raw, _PUBLICATIONS + 64 * b)))
        p["buffer"] = b
        p["published"] = p["seq"] != 0 and p["seq"] % 2 == 0
        h["publications_of"].append(p)
    published = [p for p in h["publications_of"] if p["published"]]
    h["newest"] = max(published, key=lambda p: p["number"])["buffer"] if published else -1
    # What a reader can see: the newest published step, not the counter the
    # receiver bumps a moment before it publishes.
    h["live_last_step"] = h["last_step"]
    if published:
        h["last_step"] = h["publications_of"][h["newest"]]["step"]
    return h


def _buffer_of(h, buffer):
    """None: the newest publication; "writing": the buffer of the step being
    written (-1 when none); else that buffer."""
    if buffer is None:
        return h["newest"]
    if buffer == "writing":
        return h["writing_buffer"]
    return buffer


def slab_file_bytes(h):
    """The size a version-2 slab file has: header, value buffers, age buffers."""
    return h["ages_offset"] + h["buffers"] * h["age_stride"]


def read_slab_values(path, buffer=None):
    """The values of one buffer (default: the newest publication; "writing":
    the step being written), as bytes; empty when there is no such buffer."""
    h = read_slab_header(path)
    b = _buffer_of(h, buffer)
    if b < 0:
        return b""
    with open(path, "rb") as f:
        f.seek(HEADER_BYTES + b * h["buffer_stride"])
        return f.read(h["data_bytes"])


def read_slab_ages(path, buffer=None):
    """The age of each value of one buffer (default: the newest publication),
    as bytes: 0 arrived in that step, k k steps old, 255 never arrived."""
    h = read_slab_header(path)
    b = _buffer_of(h, buffer)
    if b < 0:
        return b""
    with open(path, "rb") as f:
        f.seek(h["ages_offset"] + b * h["age_stride"])
        return f.read(h["data_bytes"] // 4)


def pin_buffer(fd, buffer, lock=True):
    """Takes (or drops) a reader's pin on a buffer of the slab open as `fd`:
    an OFD read lock on its pin byte, as the ParaView reader does."""
    import fcntl
    flock = struct.pack("hhqqi4x", fcntl.F_RDLCK if lock else fcntl.F_UNLCK, os.SEEK_SET,
                        PIN_LOCK_OFFSET + buffer, 1, 0)
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, flock)


def read_json_lines(path):
    """The complete lines of a --stats-json file. A last line without its
    newline is one the role is writing at this moment (a long line can take
    more than one write): left for the next read, not a JSON error."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        lines = f.read().split("\n")
    return [json.loads(line) for line in lines[:-1] if line.strip()]


def udp_queued_bytes(port):
    """Bytes waiting in the receive queue of the UDP socket bound to `port`
    (/proc/net/udp, this network namespace); None when no socket has it. A
    datagram sent over loopback is queued by the time sendto returns, so 0
    after a send means the socket's owner has read it."""
    with open("/proc/net/udp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if int(fields[1].split(":")[1], 16) == port:
                return int(fields[4].split(":")[1], 16)
    return None


# Long enough for a machine 2-5x slower than usual with its other core busy
# (tests wait on events, never on the clock, so a passing run does not pay it).
WAIT_S = 60.0


def wait_for(predicate, timeout=WAIT_S, what="condition", seen=None):
    """Polls `predicate` until it is true; on timeout fails naming `what` and,
    when given, what `seen()` returns at that moment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    if predicate():
        return
    raise AssertionError("timed out after %.0f s waiting for %s%s" % (timeout, what,
                                                                     "; saw: %s" % (seen(),) if seen else ""))


def run_demo_until(cmd, log_path, enough, limit_s):
    """Runs a `slabcast demo ... --forever` command line until `enough()` is
    true, the demo ends by itself, or `limit_s` passes; then stops it with
    Ctrl-C as a user does. The output goes to `log_path`. Returns (its exit
    code when it ended by itself, else None; its exit code after Ctrl-C; its
    output)."""
    with open(log_path, "w+") as log:
        demo = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + limit_s
            while demo.poll() is None and not enough() and time.monotonic() < deadline:
                time.sleep(0.25)
            ended_by_itself = demo.poll()
            demo.send_signal(signal.SIGINT)
            rc = demo.wait(120)
        finally:
            if demo.poll() is None:
                demo.kill()
                demo.wait()
        log.seek(0)
        return ended_by_itself, rc, log.read()


class Role:
    """One slabcast process with its log."""

    def __init__(self, workspace, name, args, cpu=None, prefix=(), program=SLABCAST):
        """prefix: e.g. `ip netns exec NS` to run it on another (namespace) host."""
        self.name = name
        self.log_path = os.path.join(workspace.dir, name + ".log")
        self.log = open(self.log_path, "w")
        pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
        self.proc = subprocess.Popen(list(prefix) + pin + [program] + args, stdout=self.log, stderr=subprocess.STDOUT)

    def alive(self):
        return self.proc.poll() is None

    def wait_for_text(self, text, timeout=WAIT_S):
        """Waits until `text` is in the log; fails at once, with the log's end,
        if the process exits first."""
        def there():
            if text in self.text():
                return True
            if not self.alive():
                raise AssertionError("%s exited (%s) before logging %r:\n%s" % (self.name, self.proc.returncode, text,
                                                                               self.text()[-2000:]))
            return False
        wait_for(there, timeout, what="%r in the log of %s" % (text, self.name), seen=lambda: self.text()[-1000:])

    def stop(self, timeout=30):
        """SIGTERM, wait, and return the exit code."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.log.close()
        return rc

    def wait(self, timeout=120):
        rc = self.proc.wait(timeout)
        self.log.close()
        return rc

    def text(self):
        with open(self.log_path) as f:
            return f.read()


class Workspace:
    """A temporary directory for datasets and logs, and a private shm directory."""

    def __init__(self, tag):
        self.dir = tempfile.mkdtemp(prefix="slabcast-%s-" % tag)
        self.shm = "/dev/shm/slabcast-test-%s-%d" % (tag, os.getpid())
        self.staging = self.shm + "-staging"
        self.roles = []

    def start(self, name, args, cpu=None, prefix=(), program=SLABCAST):
        """Starts `slabcast ARGS` (or `program ARGS`), pinned to `cpu` if given."""
        role = Role(self, name, args, cpu, prefix, program)
        self.roles.append(role)
        return role

    def run(self, args, timeout=120):
        return subprocess.run([SLABCAST] + args, capture_output=True, text=True, timeout=timeout)

    def generate(self, name, dims, steps, seed=1):
        out = os.path.join(self.dir, name)
        subprocess.run([DATAGEN, "--out", out, "--dims", ",".join(map(str, dims)), "--steps", str(steps),
                        "--seed", str(seed)], check=True, capture_output=True)
        return out

    def close(self):
        for role in self.roles:
            if role.alive():
                role.stop()
        for path in (self.shm, self.staging):
            shutil.rmtree(path, ignore_errors=True)
        if os.environ.get("SLABCAST_KEEP_TEST_DIR"):
            print("kept", self.dir, file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def zfp_bounds(want, rate):
    """zfp's error bound for each value of `want` (as sent) once it came
    through zfp:RATE run packets: zfp codes each packet's run in 1-D blocks of
    4 from its first value, and each value comes back within 2^(7 - rate) of
    the largest magnitude in its block (docs/wire-format.md, "Codecs"; the
    bound test_run_codec.cpp holds the codec to). The blocks are counted from
    want's first value: where they lie when every run starts a multiple of 4
    values from it, as when `want` is a slab's stored values (in scan order
    every packet but a step's last holds whole blocks; in Morton order a run
    is a tile of whole rows). A list, one bound a value."""
    scale = 2.0 ** (7 - rate)
    bounds = []
    for b in range(0, len(want), 4):
        block = want[b:b + 4]
        bounds.extend([max(abs(v) for v in block) * scale] * len(block))
    return bounds


def quant_bound(want, bits):
    """The quant codec's error bound for any value of `want` (as sent) once it
    came through quant:BITS run packets, `want` holding every value of those
    packets (a slab's stored values): half a level, a level being at most the
    range of `want` over 2^BITS - 1 (each packet's range lies inside it), plus
    float32's half ulp of the result (docs/wire-format.md, "Codecs"; the bound
    test_quant_codec.cpp holds the codec to). A function of the value."""
    level = (max(want) - min(want)) / (2 ** bits - 1) * (1 + 2.0 ** -22)
    return lambda v: level / 2 + math.ulp(abs(v))


def source_planes(dataset_dir, step_file, dims, z0, z1):
    """Raw bytes of planes [z0, z1) of a step file."""
    plane = dims[0] * dims[1] * 4
    with open(os.path.join(dataset_dir, step_file), "rb") as f:
        f.seek(z0 * plane)
        return f.read((z1 - z0) * plane)
