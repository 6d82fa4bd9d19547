"""pvpython benchmark: what it costs a new step to reach ParaView's pipeline,
the slabcast reader against VTK's raw image reader (vtkImageReader2, what
ParaView's raw image reader uses) on the same slab's values, against slab size.

    pvpython bench_reader.py --writer PATH/slabcast-test-writer [--sizes 128,256,512,1024] [--depth 32]

Two figures per size and reader:
- new step: the reader's re-execution (Modified() then Update(), median and
  min of --reps): the slabcast reader maps the newest published buffer, the
  raw reader reads the whole file again (the slab file, its 4096-byte header
  skipped);
- first open: a new reader proxy opened and updated (OpenDataFile on the
  slabcast descriptor; ParaView's ImageReader on a raw copy of the same values,
  also in /dev/shm), median and first of --opens: what opening a stream costs.
Neither includes rendering: the frame with the renderer's upload of the new
values is testing/plugin/bench_frame.py's. No assertions on time; it checks
only that the slabcast output was zero-copy and read right.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

from paraview.simple import Delete, ImageReader, OpenDataFile
from vtkmodules.vtkIOImage import vtkImageReader2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import benchlib  # noqa: E402  (the provenance line of docs/performance.md's tables)


def timed_updates(algorithm, reps):
    times = []
    for _ in range(reps):
        algorithm.Modified()
        t0 = time.perf_counter()
        algorithm.Update()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def first_opens(open_proxy, count):
    """Seconds to create a reader proxy and update it, `count` times, each a new proxy."""
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        proxy = open_proxy()
        proxy.UpdatePipeline()
        times.append(time.perf_counter() - t0)
        Delete(proxy)
    return times


def raw_image_reader_proxy(path, nx, ny, nz):
    proxy = ImageReader(FileNames=[path])
    proxy.DataScalarType = "float"
    proxy.DataByteOrder = "LittleEndian"
    proxy.DataExtent = [0, nx - 1, 0, ny - 1, 0, nz - 1]
    return proxy


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
    p.add_argument("--opens", type=int, default=5)
    args = p.parse_args()
    directory = "/dev/shm/slabcast-bench-%d" % os.getpid()
    os.makedirs(directory)
    try:
        benchlib.print_provenance("cd build && ctest -R plugin_bench_reader -V")
        print("%-16s %-22s %-10s %12s %12s %10s" % ("slab", "reader", "figure", "median ms", "min/first", "MiB read"))
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
            print("%-16s %-22s %-10s %12.3f %12.3f %10.1f" % (label, "vtkSlabcastReader", "new step", 1e3 * med,
                                                             1e3 * best, 0.0), flush=True)

            raw = raw_reader(os.path.join(directory, name + ".slab0"), n, n, args.depth)
            med, best = timed_updates(raw, args.reps)
            values = raw.GetOutput().GetPointData().GetScalars()
            assert values.GetValue(values.GetNumberOfValues() - 1) == n * n * args.depth
            print("%-16s %-22s %-10s %12.3f %12.3f %10.1f" % (label, "vtkImageReader2 (raw)", "new step", 1e3 * med,
                                                             1e3 * best, mib), flush=True)
            del image, array, values, raw, slabcast
            Delete(proxy)

            # First open: the raw reader gets the same values without the slab's header.
            raw_copy = os.path.join(directory, name + ".raw")
            with open(os.path.join(directory, name + ".slab0"), "rb") as src, open(raw_copy, "wb") as dst:
                src.seek(4096)
                dst.write(src.read(n * n * args.depth * 4))
            opens = {"slabcast (descriptor)": first_opens(
                         lambda: OpenDataFile(os.path.join(directory, name + ".slabcast")), args.opens),
                     "ImageReader (raw)": first_opens(
                         lambda: raw_image_reader_proxy(raw_copy, n, n, args.depth), args.opens)}
            for reader, t in opens.items():
                print("%-16s %-22s %-10s %12.3f %12.3f %10.1f" % (label, reader, "first open", 1e3 * statistics.median(t),
                                                                 1e3 * t[0], 0.0 if "slabcast" in reader else mib),
                      flush=True)
            os.unlink(raw_copy)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print("BENCH_DONE")


main()
