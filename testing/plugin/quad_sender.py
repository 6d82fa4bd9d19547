"""Sends a volume to `slabcast receive` as quad packets over loopback UDP:
little-endian int32 batch (= step), int32 n, then n records {int32 x, y, z;
float32 v}, n <= 560. Used from pvpython scripts and the drivers alike."""
import socket
import struct
import time

MAX_RECORDS = 560


def index_value(dims, x, y, z, step):
    """The test writer's "index" pattern; exact in float32 at test sizes."""
    nx, ny, _ = dims
    return float((z * ny + y) * nx + x + 1) + 0.5 * step


def slab_packets(dims, depth, slab, step, value=index_value):
    """Packets carrying slab `slab`'s owned planes at `step`."""
    nx, ny, nz = dims
    records = []
    for z in range(slab * depth, min(nz, (slab + 1) * depth)):
        for y in range(ny):
            for x in range(nx):
                records.append(struct.pack("<iiif", x, y, z, value(dims, x, y, z, step)))
    for i in range(0, len(records), MAX_RECORDS):
        chunk = records[i:i + MAX_RECORDS]
        yield struct.pack("<ii", step, len(chunk)) + b"".join(chunk)


def send(ports, dims, depth, step, value=index_value, fraction=None, limit=None):
    """Sends step `step` of every slab in `ports` ({slab: port}). fraction:
    {slab: f} sends only every packet whose position keeps the kept share near f
    (loss on purpose); limit: {slab: n} sends only the first n packets."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for slab, port in sorted(ports.items()):
            packets = list(slab_packets(dims, depth, slab, step, value))
            if limit and slab in limit:
                packets = packets[:limit[slab]]
            for i, p in enumerate(packets):
                if fraction and slab in fraction and int((i + 1) * fraction[slab]) == int(i * fraction[slab]):
                    continue  # dropped on purpose
                sock.sendto(p, ("127.0.0.1", port))
                if i % 32 == 31:
                    time.sleep(0.001)  # loopback has buffers, not infinite ones
    finally:
        sock.close()


def blob_value(dims, x, y, z, step):
    """A density-like clump on a 0.1 floor that moves along x with the step,
    so successive steps render visibly differently."""
    nx, ny, nz = dims
    cx = nx * (0.25 + 0.1 * (step % 6))
    r2 = ((x - cx) ** 2 + (y - ny / 2.0) ** 2 + (z - nz / 2.0) ** 2) / (0.15 * nx) ** 2
    return 0.1 + 6.0 * 2.718281828459045 ** (-r2)
