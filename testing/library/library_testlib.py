"""What the libslabcast tests share (testing/library/test_library_*.py): the
checks that decide whether a test can run here, the real receiver, and reading
a volume back through the ParaView reader. Paths come from the environment
ctest sets (testing/library/CMakeLists.txt)."""
import contextlib
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "plugin"))
import plugin_testlib  # noqa: E402
from slabcast_testlib import SKIPPED, read_slab_header, unittest_main, wait_for  # noqa: E402,F401

EXAMPLES = os.environ.get("SLABCAST_EXAMPLES", os.path.join(HERE, "..", "..", "examples"))

WAIT_S = plugin_testlib.WAIT_S  # how long a wait for an event may take before it fails

# The receivers' --step-timeout: a step with no packet for this long is
# published as it is. The receiver's 0.5 s is crossed by a sender that a busy
# core holds back for half a second in the middle of a step (or by a slab
# waiting for its ghost plane from a rank that runs later): the step would be
# published with holes and the rest of its packets dropped as late. These
# tests lose no packet, so every step is whole long before this.
STEP_TIMEOUT_MS = 30000


def skip(why):
    """Exits the way every slabcast test that cannot run here does (ctest's
    SKIP_RETURN_CODE, testing/CMakeLists.txt)."""
    print("SKIPPED: %s" % why, flush=True)
    sys.exit(SKIPPED)


def import_slabcast():
    """numpy and the slabcast module, or a skip when numpy is missing. The
    library itself must load: ctest passes its path in SLABCAST_LIBRARY, so a
    module that cannot find it is a failure, not a skip."""
    try:
        import numpy
    except ImportError:
        skip("numpy is not installed for %s (python3-numpy; testing/install-deps.sh)" % sys.executable)
    if not os.environ.get("SLABCAST_LIBRARY"):
        sys.exit("SLABCAST_LIBRARY is not set: run this test through ctest")
    import slabcast
    if os.path.realpath(slabcast.LIBRARY) != os.path.realpath(os.environ["SLABCAST_LIBRARY"]):
        sys.exit("slabcast loaded %s, not SLABCAST_LIBRARY=%s" % (slabcast.LIBRARY, os.environ["SLABCAST_LIBRARY"]))
    return numpy, slabcast


def require_plugin():
    if not os.environ.get("SLABCAST_PLUGIN"):
        skip("the ParaView plugin is not built (SLABCAST_BUILD_PLUGIN=OFF)")


def rss_bytes():
    """This process's resident set size, from /proc/self/status."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def receiver(directory, name, dims, depth, slabs, server=None):
    """plugin_testlib.receiver with --step-timeout STEP_TIMEOUT_MS (a context
    manager yielding ({slab: port}, descriptor path))."""
    return plugin_testlib.receiver(directory, name, dims, depth, slabs,
                                   ("--step-timeout", str(STEP_TIMEOUT_MS)), server)


def published_step(header):
    """The step of a slab's newest publication; -1 before the first (the
    header's live counter moves a moment before a step is published)."""
    return header["last_step"] if header["newest"] >= 0 else -1


class Receiver:
    """The real `slabcast receive` on loopback (receiver() above), one
    stream per slab, in a private /dev/shm directory; close() stops it."""

    def __init__(self, tag, name, dims, depth, slabs):
        self.name, self.dims, self.depth = name, dims, depth
        self._stack = contextlib.ExitStack()
        try:
            self.dir = self._stack.enter_context(plugin_testlib.shm_dir(tag))
            self.ports, self.descriptor = self._stack.enter_context(receiver(self.dir, name, dims, depth, slabs))
        except BaseException:
            self._stack.close()
            raise

    def destination(self, slab):
        return "127.0.0.1:%d" % self.ports[slab]

    def slab_file(self, slab):
        return os.path.join(self.dir, "%s.slab%d" % (self.name, slab))

    def header(self, slab):
        return read_slab_header(self.slab_file(slab))

    def published(self, slabs):
        """Each slab's newest published step (-1: none yet)."""
        return [published_step(self.header(k)) for k in slabs]

    def wait_published(self, slabs, step, timeout=WAIT_S, at_least=False, sender=None):
        """Until each slab's newest publication is `step` (or, `at_least`, a
        later one; the receiver publishes a step once it is whole). `sender`:
        a Popen whose failure ends the wait at once (its success does not: its
        last packets may still be on their way)."""
        deadline = time.monotonic() + timeout
        while not all(s >= step if at_least else s == step for s in self.published(slabs)):
            if sender is not None and sender.poll() not in (None, 0):
                out, err = sender.communicate()
                raise AssertionError("the sender failed (exit code %s) before step %d was published on slabs %s (newest "
                                     "published: %s):\n%s\n%s" % (sender.returncode, step, list(slabs),
                                                                    self.published(slabs), out, err))
            if time.monotonic() > deadline:
                raise AssertionError("after %.0f s, step %d is not published on slabs %s (newest published: %s); "
                                     "the receiver logged:\n%s" % (timeout, step, list(slabs), self.published(slabs),
                                                                     self.log()[-3000:]))
            time.sleep(0.02)

    def log(self):
        with open(os.path.join(self.dir, self.name + ".receive.log")) as f:
            return f.read()

    def close(self):
        self._stack.close()


def read_back(receiver):
    """The whole volume as the ParaView reader shows it (pvpython,
    testing/plugin/pv_dump_volume.py): (step, values bytes, ages bytes)."""
    out = os.path.join(receiver.dir, "shown.raw")
    stdout, _ = plugin_testlib.pvpython("pv_dump_volume.py", receiver.descriptor, out)
    lines = [line for line in stdout.splitlines() if line.startswith("DUMP ")]
    if not lines:
        raise AssertionError("pv_dump_volume.py printed no DUMP line:\n" + stdout)
    step = int(lines[-1].split()[1].split("=")[1])
    with open(out, "rb") as f:
        values = f.read()
    with open(out + ".age", "rb") as f:
        ages = f.read()
    return step, values, ages


def first_difference(got, want):
    """A readable account of where two float32 byte strings differ ("" when equal)."""
    import numpy
    if got == want:
        return ""
    a, b = numpy.frombuffer(got, numpy.float32), numpy.frombuffer(want, numpy.float32)
    if a.size != b.size:
        return "%d values, expected %d" % (a.size, b.size)
    bad = numpy.flatnonzero(a.view(numpy.uint32) != b.view(numpy.uint32))
    return "%d of %d values differ, first at index %d: %r, expected %r" % (
        bad.size, a.size, bad[0], float(a[bad[0]]), float(b[bad[0]]))


def run(cmd, timeout, env=None):
    """Runs cmd; returns its CompletedProcess with stdout and stderr as text."""
    print("$ " + " ".join(cmd), flush=True)
    started = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    print("(exit %d after %.1f s)" % (p.returncode, time.monotonic() - started), flush=True)
    return p
