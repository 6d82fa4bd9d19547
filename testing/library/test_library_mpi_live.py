"""ctest library_mpi_live: the MPI example (examples/zeldovich_live.py) under
`mpirun -np 4`, a Zel'dovich universe evolving step by step, each rank sending
its own z-slab of each step through libslabcast's Python module as its own
stream into one real receiver on loopback (4 streams). While it streams, the
ParaView reader shows each step, while it is the newest, as the 4 ranks' dumps
of that step put together, bit for bit: the library sends only each rank's own
planes, and the receiver, holding all 4 slabs, fills slab k's ghost plane from
slab k-1.

Each step is read back while it is the newest because the ranks send step s
only once the test has read step s - 1 (GATED below), not because a fixed
interval is longer than pvpython takes: on a busy machine it may not be."""
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import library_testlib as lt  # noqa: E402

numpy, slabcast = lt.import_slabcast()
lt.require_plugin()

RANKS, DIMS, STEPS = 4, (64, 64, 64), 3
DEPTH = DIMS[2] // RANKS

# Runs the example (argv[3:]) with each rank's Sender.send_step waiting, before
# step s > 0, for the file argv[1]/go.s that the test writes once it has read
# step s - 1 back (at most argv[2] seconds, and not once mpirun is gone: a test
# that stopped). The example itself is unchanged; its --interval pacing is 0.
GATED = r"""
import os, runpy, sys, time
import slabcast
go, wait_s, parent = sys.argv[1], float(sys.argv[2]), os.getppid()
send_step = slabcast.Sender.send_step
def gated(self, step, *args, **kwargs):
    path = os.path.join(go, "go.%d" % step)
    deadline = time.monotonic() + wait_s
    while step > 0 and not os.path.exists(path):
        if time.monotonic() > deadline or os.getppid() != parent:
            sys.exit("no %s (waited %.0f s at most, or until mpirun went): the test did not read step %d back"
                     % (path, wait_s, step - 1))
        time.sleep(0.02)
    return send_step(self, step, *args, **kwargs)
slabcast.Sender.send_step = gated
sys.argv = sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def mpirun():
    """The mpirun command, or a skip naming what this machine lacks."""
    mpiexec = os.environ.get("MPIEXEC") or shutil.which("mpirun")
    if not mpiexec or not os.path.exists(mpiexec):
        lt.skip("no mpirun (openmpi-bin; testing/install-deps.sh)")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        lt.skip("mpi4py is not installed for %s (python3-mpi4py; testing/install-deps.sh)" % sys.executable)
    return [mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", str(RANKS)]


MPIRUN = mpirun()


class MpiLive(unittest.TestCase):
    def setUp(self):
        self.receiver = lt.Receiver("library-mpi", "zeldovich", DIMS, DEPTH, range(RANKS))

    def tearDown(self):
        self.receiver.close()

    def test_four_ranks_stream_the_simulation(self):
        r = self.receiver
        dump = os.path.join(r.dir, "dump")
        to = ",".join(r.destination(k) for k in range(RANKS))  # rank k -> slab k's stream
        env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
        cmd = MPIRUN + [sys.executable, "-c", GATED, r.dir, str(5 * lt.WAIT_S),
                        os.path.join(lt.EXAMPLES, "zeldovich_live.py"), "--dims", ",".join(map(str, DIMS)),
                        "--steps", str(STEPS), "--to", to, "--rate", "200M", "--interval", "0", "--dump", dump]
        print("$ " + " ".join("GATED" if c is GATED else c for c in cmd), flush=True)
        sim = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        shown = {}  # step -> (values, ages) as the reader showed it while it was the newest
        try:
            for step in range(STEPS):
                r.wait_published(range(RANKS), step, at_least=True, sender=sim)
                got, values, ages = lt.read_back(r)
                self.assertEqual(got, step, "the reader showed step %d while the ranks waited after step %d"
                                 % (got, step))
                shown[got] = (values, ages)
                open(os.path.join(r.dir, "go.%d" % (step + 1)), "w").close()  # the ranks send the next step
            stdout, stderr = sim.communicate(timeout=5 * lt.WAIT_S)
        finally:
            if sim.poll() is None:
                sim.terminate()  # mpirun passes it on to the ranks
                try:
                    sim.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    sim.kill()
                    sim.communicate()
        print(stdout, stderr, sep="\n", flush=True)
        self.assertEqual(sim.returncode, 0, "mpirun failed")
        p = subprocess.CompletedProcess(cmd, sim.returncode, stdout, stderr)
        for rank in range(RANKS):
            for step in range(STEPS):
                self.assertIn("rank %d/%d step %d/%d" % (rank, RANKS, step, STEPS), p.stdout)
            self.assertIn("rank %d/%d: done, %d steps sent, 0 dropped" % (rank, RANKS, STEPS), p.stdout)

        def dumped(step, rank):
            with open(os.path.join(dump, "step%05d.rank%d.raw" % (step, rank)), "rb") as f:
                return f.read()

        plane_bytes = DIMS[0] * DIMS[1] * 4
        for step in range(STEPS):
            for rank in range(RANKS):
                self.assertEqual(len(dumped(step, rank)), DEPTH * plane_bytes, "rank %d's dump of step %d" % (
                    rank, step))
        # What was sent is a density field that evolves: mean 1, every value
        # > 0, and structure (the spread) growing from step to step.
        spreads = []
        for step in range(STEPS):
            rho = numpy.frombuffer(b"".join(dumped(step, k) for k in range(RANKS)), numpy.float32)
            self.assertAlmostEqual(float(rho.mean(dtype=numpy.float64)), 1.0, delta=1e-4)
            self.assertGreater(float(rho.min()), 0.0)
            spreads.append(float(rho.std()))
        self.assertEqual(spreads, sorted(spreads), "the density's spread did not grow: %s" % spreads)
        self.assertGreater(spreads[-1], 5 * spreads[0], spreads)

        # Every step was read back while it was the newest (the ranks waited).
        self.assertEqual(sorted(shown), list(range(STEPS)), "steps the reader showed: %s" % sorted(shown))
        for step, (values, ages) in sorted(shown.items()):
            want = b"".join(dumped(step, k) for k in range(RANKS))
            self.assertEqual(lt.first_difference(values, want), "",
                             "step %d: the reader's volume is not the ranks' dumps put together" % step)
            self.assertFalse(any(ages), "step %d: some values shown came from an older step" % step)
        print("LIBRARY_MPI_LIVE_OK: %d ranks, steps %s each bit for bit through the reader; density spread "
              "by step %s" % (RANKS, sorted(shown), ", ".join("%.3f" % s for s in spreads)), flush=True)


if __name__ == "__main__":
    lt.unittest_main()
