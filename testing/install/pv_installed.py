"""pvpython/pvbatch with PV_PLUGIN_PATH at an installed plugin folder and
nothing else: the reader is loaded from that folder, and reads back exactly
what was written.

    pv_installed.py PLUGIN_DIR index DESC NX,NY,NZ
        the test writer's "index" pattern at step 0, the whole volume
    pv_installed.py PLUGIN_DIR example DESC NX,NY,NZ PIECES STEP
        examples/c/stream_slab.c's values (step * 1e6 + linear index) in piece
        0 of PIECES (the slab the example sends), waiting for STEP to be shown
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plugin"))
from pv_checks import check, expected_index_values  # noqa: E402

from paraview import servermanager  # noqa: E402
from paraview.simple import OpenDataFile  # noqa: E402


def loaded_from(plugin_dir):
    """The Slabcast plugin ParaView loaded came from plugin_dir (PV_PLUGIN_PATH)."""
    plugins = servermanager.vtkSMProxyManager.GetProxyManager().GetPluginManager().GetLocalInformation()
    found = {plugins.GetPluginName(i): (plugins.GetPluginFileName(i), plugins.GetPluginLoaded(i))
             for i in range(plugins.GetNumberOfPlugins())}
    check("Slabcast" in found and found["Slabcast"][1], "the Slabcast plugin is not loaded: %s" % found)
    path = os.path.realpath(found["Slabcast"][0])
    check(os.path.dirname(path) == os.path.realpath(plugin_dir),
          "the Slabcast plugin came from %s, not the installed %s" % (path, plugin_dir))
    print("ok: ParaView loaded the installed plugin %s" % path, flush=True)


def density(image):
    array = image.GetPointData().GetArray("density")
    check(array is not None, "no 'density' point array")
    return memoryview(array).tolist()


def first_difference(got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return "%d values, first difference at %d: %r != %r" % (len(got), i, g, w)
    return "%d values against %d expected" % (len(got), len(want))


def check_index(desc, dims):
    reader = OpenDataFile(desc)
    check(reader is not None and reader.GetXMLName() == "SlabcastReader",
          "OpenDataFile(%s) did not pick SlabcastReader" % desc)
    reader.UpdatePipeline()
    whole = servermanager.Fetch(reader)
    nx, ny, nz = dims
    check(whole.GetExtent() == (0, nx - 1, 0, ny - 1, 0, nz - 1), "whole extent %s" % (whole.GetExtent(),))
    got, want = density(whole), expected_index_values(dims, whole.GetExtent(), 0)
    check(got == want, "values differ from the writer's: " + first_difference(got, want))
    print("ok: the installed reader read all %d values of the %dx%dx%d volume exactly" % (len(got), nx, ny, nz))


def example_values(dims, ext, step):
    nx, ny, _ = dims
    return [float(step * 1e6 + (x + nx * (y + ny * z)))  # exact: below 2^24
            for z in range(ext[4], ext[5] + 1) for y in range(ext[2], ext[3] + 1) for x in range(ext[0], ext[1] + 1)]


def check_example(desc, dims, pieces, step):
    reader = OpenDataFile(desc)
    check(reader is not None and reader.GetXMLName() == "SlabcastReader",
          "OpenDataFile(%s) did not pick SlabcastReader" % desc)
    algo = reader.GetClientSideObject()
    # The receiver publishes a step once it is whole; Python does not poll live
    # sources, so ask again until the step shows (plugin/README.md), for as long
    # as a busy machine may need (the step is usually there at once).
    started = time.monotonic()
    deadline, shown = started + 90, None
    while True:
        algo.Modified()
        algo.UpdatePiece(0, pieces, 0)
        image = algo.GetOutputDataObject(0)
        steps = image.GetFieldData().GetArray("Step")
        shown = steps.GetValue(0) if steps is not None and image.GetNumberOfPoints() else None
        if shown == step or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    check(shown == step, "step %s not shown after %.0f s (the reader shows %s)" % (
        step, time.monotonic() - started, shown))
    ext = image.GetExtent()
    got, want = density(image), example_values(dims, ext, step)
    check(got == want, "step %d, extent %s: %s" % (step, ext, first_difference(got, want)))
    ages = image.GetPointData().GetArray("density_age")
    check(ages is not None and ages.GetRange() == (0.0, 0.0), "some values are from an older step (density_age)")
    print("ok: step %d, extent %s: all %d values equal the example's, bit for bit" % (step, ext, len(got)))


def main(argv):
    plugin_dir, mode, desc, dims = argv[1], argv[2], argv[3], tuple(int(v) for v in argv[4].split(","))
    if mode == "index":
        check_index(desc, dims)
    else:
        check_example(desc, dims, int(argv[5]), int(argv[6]))
    loaded_from(plugin_dir)  # after a read: the reader loaded it by then, whichever way


main(sys.argv)
print("PV_INSTALLED_OK", flush=True)
