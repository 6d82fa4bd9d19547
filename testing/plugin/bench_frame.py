"""Benchmark (ctest plugin_bench_frame, label benchmark): pvbatch frame time on
slabcast data against the same volume loaded by ParaView's raw image reader,
both from /dev/shm, under a private Xvfb. Prints the table of pv_frame_times.py.

    python3 bench_frame.py [--dims 256,256,256] [--depth 64] [--size 800x800]
"""
import argparse
import os
import sys

import plugin_testlib as t

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import benchlib  # noqa: E402  (the provenance line of docs/performance.md's tables)

ARGS = None


def body():
    with t.shm_dir("benchframe") as d, t.xvfb() as display:
        dims = tuple(int(v) for v in ARGS.dims.split(","))
        descriptor = t.write_volume(d, "frame", dims, ARGS.depth, pattern="blobs")
        out, _ = t.run(t.pvbatch_cmd(os.path.join(t.HERE, "pv_frame_times.py"),
                                     [descriptor, os.path.join(d, "volume.raw"), "--render-script",
                                      t.env_path("SLABCAST_RENDER"), "--size", ARGS.size]),
                       env=t.paraview_env(display), timeout=900)
        print("\npvbatch, 1 rank, llvmpipe, %s in %d slabs, %s:" % (ARGS.dims, dims[2] // ARGS.depth, ARGS.size))
        benchlib.print_provenance("cd build && ctest -R plugin_bench_frame -V")
        print(out[out.index("source"):])


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--dims", default="256,256,256")
    p.add_argument("--depth", type=int, default=64)
    p.add_argument("--size", default="800x800")
    ARGS, rest = p.parse_known_args()
    sys.argv[1:] = rest
    t.main(body)
