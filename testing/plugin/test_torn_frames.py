"""ctest plugin_torn_frames (issue 17): every frame is a real step.

The real roles stream a volume whose step s holds the value s everywhere,
stepping as fast as the controller may, while ParaView re-reads as fast as it
can: with one pvpython, and with pvbatch under mpirun with 4 ranks (one per
slab) and 3 ranks (over 4 slabs). A read holding two values, or a value other
than its reported Step, is a torn frame (values a lossy step lost are shown
from an earlier step, marked by the age array, and counted apart); in every
frame all ranks must show the same step. Prints the counts (they go in the issue's closing note).
    SLABCAST_TORN_FRAMES: frames per reader (default 300);
    SLABCAST_TORN_DIMS: NX,NY,NZ of the volume (default 64,64,64; 4 slabs)."""
import os
import time

import plugin_testlib as t

DIMS = tuple(int(v) for v in os.environ.get("SLABCAST_TORN_DIMS", "64,64,64").split(","))
DEPTH = (DIMS[2] + 3) // 4
FRAMES = int(os.environ.get("SLABCAST_TORN_FRAMES", "300"))


def readers(descriptor, directory):
    """(what, ranks, the ranks' lines): each rank writes its own line to a file,
    since mpirun may interleave long lines of several ranks on stdout."""
    script = os.path.join(t.HERE, "pv_torn_frames.py")
    out, _ = t.pvpython("pv_torn_frames.py", descriptor, FRAMES, timeout=600)
    yield "pvpython", 1, out
    for ranks in (4, 3):
        prefix = os.path.join(directory, "torn-np%d" % ranks)
        env = dict(t.paraview_env(), SLABCAST_TORN_OUT=prefix)
        out, _ = t.run(t.pvbatch_cmd(script, [descriptor, FRAMES], ranks=ranks, symmetric=True), env=env,
                       timeout=600)
        lines = ""
        for r in range(ranks):
            if os.path.exists("%s.%d" % (prefix, r)):
                with open("%s.%d" % (prefix, r)) as f:
                    lines += f.read()
        yield "pvbatch -np %d" % ranks, ranks, lines or out


def wait_until_streaming(directory, slabs, least=3):
    """Until the receiver has published `least` different steps on every
    slab: the readers' fixed count of frames then falls on a stream that is
    moving, however long the roles took to start here."""
    deadline = time.monotonic() + t.WAIT_S
    while True:
        published = t.published_steps(directory)
        if all(len(set(published.get(k, []))) >= least for k in range(slabs)):
            return
        t.check(time.monotonic() < deadline, "after %d s the receiver had published steps %s only (by slab):\n%s" % (
            t.WAIT_S, {k: sorted(set(v)) for k, v in published.items()}, t.receive_log(directory)[-2000:]))
        time.sleep(0.1)


def body():
    with t.shm_dir("torn") as d:
        dataset = t.constant_dataset(os.path.join(d, "dataset"), DIMS, range(1, 9))
        with t.streaming_pipeline(d, dataset, "torn", DIMS, DEPTH) as descriptor:
            slabs = (DIMS[2] + DEPTH - 1) // DEPTH
            wait_until_streaming(d, slabs)
            problems = []
            before = sum(len(v) for v in t.published_steps(d).values())
            for what, ranks, out in readers(descriptor, d):
                published = sum(len(v) for v in t.published_steps(d).values())
                published, before = (published - before) // slabs, published
                lines = t.torn_frame_lines(out)
                t.check(sorted(lines) == list(range(ranks)), "%s: ranks %s answered:\n%s" % (what, sorted(lines), out))
                reads = sum(r for r, _, _, _ in lines.values())
                torn = sum(n for _, n, _, _ in lines.values())
                holed = sum(h for _, _, h, _ in lines.values())
                steps = [s for _, _, _, s in lines.values()]
                disagree = sum(1 for frame in zip(*steps) if len(set(frame)) > 1)
                distinct = len(set(steps[0]) - {-1})  # -1: nothing published yet
                t.log("%s: %d reads, %d torn, %d with holes (older values, marked by age), %d frames where ranks "
                      "showed different steps, %d distinct steps seen while about %d steps were published" % (
                          what, reads, torn, holed, disagree, distinct, published))
                if torn or disagree:
                    problems.append("%s: %d torn reads, %d frames with ranks at different steps\n%s" % (
                        what, torn, disagree, out))
                t.check(reads > FRAMES // 2 * ranks, "%s: only %d of %d reads had data" % (what, reads, FRAMES * ranks))
                t.check(distinct > 2, "%s: the steps did not move (%d seen while the receiver published about %d "
                        "steps a slab): nothing was tested" % (what, distinct, published))
            t.check(not problems, "\n".join(problems))


t.main(body)
