"""ctest library_mpi_live: the MPI example (examples/zeldovich_live.py) under
`mpirun -np 4`, a Zel'dovich universe evolving step by step, each rank sending
its own z-slab of each step through libslabcast's Python module as its own
stream into one real receiver on loopback (4 streams). While it streams (a
step every INTERVAL seconds), the ParaView reader shows each step as the 4
ranks' dumps of that step put together, bit for bit: the library sends only
each rank's own planes, and the receiver, holding all 4 slabs, fills slab k's
ghost plane from slab k-1."""
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
INTERVAL = 8  # seconds from one step to the next: time to read each one back while it is the newest
DEPTH = DIMS[2] // RANKS


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
        cmd = MPIRUN + [sys.executable, os.path.join(lt.EXAMPLES, "zeldovich_live.py"), "--dims",
                        ",".join(map(str, DIMS)), "--steps", str(STEPS), "--to", to, "--rate", "200M", "--interval",
                        str(INTERVAL), "--dump", dump]
        sim = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        shown = {}  # step -> (values, ages) as the reader showed it while it was the newest
        try:
            for step in range(STEPS):
                lt.wait_for(lambda: all(r.header(k)["last_step"] >= step for k in range(RANKS)), 120,
                            "step %d published on every slab" % step)
                got, values, ages = lt.read_back(r)
                shown.setdefault(got, (values, ages))
            stdout, stderr = sim.communicate(timeout=240)
        finally:
            if sim.poll() is None:
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

        # Every step was read back while it was the newest (a late read shows a
        # later step, which is checked all the same; the interval leaves time).
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
