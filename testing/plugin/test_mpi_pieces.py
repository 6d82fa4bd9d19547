"""ctest plugin_mpi_pieces: under mpirun each pvbatch rank reads its own z-slab;
with one rank per slab the piece is the slab's memory (no copy), with another
rank count the pieces are assembled from several slabs, exactly."""
import re

import plugin_testlib as t

DIMS, DEPTH = (48, 40, 64), 16  # 4 slabs


def run_ranks(descriptor, ranks):
    cmd = t.pvbatch_cmd(t.HERE + "/pv_mpi_pieces.py", [descriptor, ",".join(map(str, DIMS)), DEPTH],
                        ranks=ranks, symmetric=True, offscreen=False)
    out, _ = t.run(cmd, env=t.paraview_env(), timeout=180)
    t.log(out)
    # mpirun may splice two ranks' lines together: match reports, not lines.
    reports = dict((int(r), verdict) for r, verdict in re.findall(r"RANK (\d+)/%d (OK|FAIL)" % ranks, out))
    t.check(sorted(reports) == list(range(ranks)), "ranks %s of %d reported" % (sorted(reports), ranks))
    t.check(all(v == "OK" for v in reports.values()), "a rank failed")


def body():
    with t.shm_dir("mpi") as d:
        descriptor = t.write_volume(d, "vol", DIMS, DEPTH)
        for ranks in (4, 3, 2):
            run_ranks(descriptor, ranks)


t.main(body)
