"""pvpython benchmark: the slabcast reader's update time against slab size, and
against VTK's raw image reader (vtkImageReader2, what ParaView's raw image
reader uses) reading the same slab file (4096-byte header skipped, float32).

    pvpython bench_reader.py --writer PATH/slabcast-test-writer [--sizes 128,256,512,1024] [--depth 32]

Prints one line per size and reader: median and min update time over --reps
updates, each after Modified() so the reader really executes. No assertions on
time; it checks only that the slabcast output was zero-copy and read right.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import time

from paraview.simple import OpenDataFile
from vtkmodules.vtkIOImage import vtkImageReader2


def timed_updates(algorithm, reps):
    times = []
    for _ in range(reps):
        algorithm.Modified()
        t0 = time.perf_counter()
        algorithm.Update()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def raw_reader(path, nx, ny, nz):
    r = vtkImageReader2()
    r.SetFileName(path)
    r.SetHeaderSize(4096)
    r.SetDataScalarTypeToFloat()
    r.SetDataByteOrderToLittleEndian()
    r.SetNumberOfScalarComponents(1)
    r.SetFileDimensionality(3)
    r.FileLowerLeftOn()  # rows in file order, as the slab stores them
    r.SetDataExtent(0, nx - 1, 0, ny - 1, 0, nz - 1)
    return r


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--writer", required=True)
    p.add_argument("--sizes", default="128,256,512,1024")
    p.add_argument("--depth", type=int, default=32)
    p.add_argument("--reps", type=int, default=15)
    args = p.parse_args()
    directory = "/dev/shm/slabcast-bench-%d" % os.getpid()
    os.makedirs(directory)
    try:
        print("%-16s %-22s %12s %12s %10s" % ("slab", "reader", "median ms", "min ms", "MiB/update"))
        for n in (int(v) for v in args.sizes.split(",")):
            name = "b%d" % n
            subprocess.run([args.writer, "write", "--dir", directory, "--name", name, "--dims",
                            "%d,%d,%d" % (n, n, args.depth), "--slab-depth", str(args.depth)],
                           check=True, stdout=subprocess.DEVNULL)
            mib = n * n * args.depth * 4 / 2.0 ** 20
            label = "%dx%dx%d" % (n, n, args.depth)

            proxy = OpenDataFile(os.path.join(directory, name + ".slabcast"))
            proxy.UpdatePipeline()
            slabcast = proxy.GetClientSideObject()
            med, best = timed_updates(slabcast, args.reps)
            image = slabcast.GetOutputDataObject(0)
            zero_copy = image.GetFieldData().GetArray("ZeroCopy").GetValue(0)
            array = image.GetPointData().GetArray("density")
            assert zero_copy == 1 and array.GetValue(array.GetNumberOfValues() - 1) == n * n * args.depth
            print("%-16s %-22s %12.3f %12.3f %10.1f" % (label, "vtkSlabcastReader", 1e3 * med, 1e3 * best, 0.0),
                  flush=True)

            raw = raw_reader(os.path.join(directory, name + ".slab0"), n, n, args.depth)
            med, best = timed_updates(raw, args.reps)
            values = raw.GetOutput().GetPointData().GetScalars()
            assert values.GetValue(values.GetNumberOfValues() - 1) == n * n * args.depth
            print("%-16s %-22s %12.3f %12.3f %10.1f" % (label, "vtkImageReader2 (raw)", 1e3 * med, 1e3 * best, mib),
                  flush=True)
            del image, array, values, raw, slabcast
            from paraview.simple import Delete
            Delete(proxy)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print("BENCH_DONE")


main()
