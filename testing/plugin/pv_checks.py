"""Helpers for the scripts that run inside pvpython/pvbatch."""
import os


class CheckFailed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise CheckFailed(message)


def expected_index_values(dims, ext, step):
    """The test writer's "index" pattern over a VTK extent, x fastest:
    v = (x + NX*(y + NY*z)) + 1 + 0.5*step, exact in float32 for test sizes."""
    nx, ny, _ = dims
    out = []
    for z in range(ext[4], ext[5] + 1):
        for y in range(ext[2], ext[3] + 1):
            base = (z * ny + y) * nx + 1 + 0.5 * step
            out.extend(float(base + x) for x in range(ext[0], ext[1] + 1))
    return out


def address_of(array):
    """Address of a VTK array's data: the wrapper spells it '_<hex>_p_void'."""
    text = array.GetVoidPointer(0)
    return int(text[1:].split("_")[0], 16)


def mapping_of_address(address):
    """(start, end, path) of the region of this process that holds `address`."""
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            start, end = (int(v, 16) for v in parts[0].split("-"))
            if start <= address < end:
                return start, end, parts[5].strip() if len(parts) > 5 else ""
    return None


def slab_path(descriptor, index):
    """Where the writer and the receiver put slab `index` next to `descriptor`."""
    directory = os.path.dirname(descriptor)
    name = os.path.basename(descriptor)[: -len(".slabcast")]
    return os.path.join(directory, "%s.slab%d" % (name, index))
