"""ctest plugin_mpi_pieces: under mpirun each pvbatch rank reads its own z-slab;
with one rank per slab the piece is the slab's memory (no copy), with another
rank count the pieces are assembled from several slabs, exactly. With slabs at
different steps, every rank shows the newest step all slabs hold, and moves on
together when the lagging slabs catch up (pv_mpi_steps.py)."""
import re

import plugin_testlib as t

DIMS, DEPTH = (48, 40, 64), 16  # 4 slabs


def run_ranks(descriptor, ranks):
    cmd = t.pvbatch_cmd(t.HERE + "/pv_mpi_pieces.py", [descriptor, ",".join(map(str, DIMS)), DEPTH],
                        ranks=ranks, symmetric=True, offscreen=False)
    out, _ = t.run(cmd, env=t.paraview_env(), timeout=180)
    t.log(out)
    t.check_rank_reports(out, ranks)


def run_steps(directory, ranks):
    """Step 0 in every slab, step 1 in the first half only: the ranks agree on 0, then on 1."""
    name = "steps%d" % ranks
    descriptor = t.write_volume(directory, name, DIMS, DEPTH)
    t.write_volume(directory, name, DIMS, DEPTH, step=1, slabs="0,1", listed="all")
    cmd = t.pvbatch_cmd(t.HERE + "/pv_mpi_steps.py",
                        [descriptor, ",".join(map(str, DIMS)), DEPTH, t.env_path("SLABCAST_TEST_WRITER")],
                        ranks=ranks, symmetric=True, offscreen=False)
    out, _ = t.run(cmd, env=t.paraview_env(), timeout=180)
    t.log(out)
    reports = dict(((int(r), int(k)), verdict)
                   for r, k, verdict in re.findall(r"RANK (\d+)/%d ROUND (\d) (OK|FAIL)" % ranks, out))
    want = [(r, k) for r in range(ranks) for k in (1, 2)]
    t.check(sorted(reports) == want, "rounds reported %s, want %s" % (sorted(reports), want))
    t.check(all(v == "OK" for v in reports.values()), "a rank showed another step than the others' common one")


def body():
    with t.shm_dir("mpi") as d:
        descriptor = t.write_volume(d, "vol", DIMS, DEPTH)
        for ranks in (4, 3, 2):
            run_ranks(descriptor, ranks)
        for ranks in (4, 3):
            run_steps(d, ranks)


t.main(body)
