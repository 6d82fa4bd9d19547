#!/usr/bin/env python3
"""A running "simulation" that streams itself: the Zel'dovich approximation of
a LambdaCDM universe, evolved step by step under MPI, each rank sending its own
z-slab of every step's density as its own slabcast stream (libslabcast's
Python module). No step is written to a file on the way.

    mpirun -np 4 python3 examples/zeldovich_live.py --dims 64,64,64 --steps 5 \\
        --to 127.0.0.1:9000            # rank r sends to port 9000 + r
    slabcast receive --name live --dims 64,64,64 --slab-depth 16 --listen 127.0.0.1 \\
        --stream 0:9000 --stream 1:9001 --stream 2:9002 --stream 3:9003

The physics is that of the `cosmo` dataset `slabcast demo` streams
(data/README.md; data/cosmology.cpp, data/zeldovich.cpp), written again with
numpy alone: a Gaussian random field with the Eisenstein & Hu no-wiggle power
spectrum (sigma_8 = 0.81), smoothed by a Gaussian of 1.5 cells; its Zel'dovich
displacement psi = -grad(phi), laplacian(phi) = delta, by FFT; at each step
particles move to q + D(a) psi(q) (8 a cell, psi interpolated between lattice
points) and are deposited cloud-in-cell on the periodic grid; a small floor
with a per-voxel jitter keeps every value > 0 and distinct. Steps are evenly
spaced in scale factor from z = 30 to z = 0. The random numbers are numpy's,
not the C++ generator's, so the field differs from a `slabcast-datagen` one.

Every rank computes the same displacement field (the same seed, the same
FFT); each then moves and deposits only the particles that can reach its own
planes, so the per-step work is split across the ranks. --dump DIR writes
exactly the float32 values each rank sent (DIR/step%05d.rank%d.raw, x fastest)
so that a test can compare what a receiver shows with what was sent.
"""
import argparse
import math
import os
import sys
import time

import numpy

import slabcast

# Planck-2018-like flat LambdaCDM: the parameters data/cosmology.h uses.
OMEGA_M, OMEGA_B, H, N_S, SIGMA8, T_CMB = 0.31, 0.049, 0.677, 0.965, 0.81, 2.7255
FLOOR = 1e-3  # the density floor, as data/cosmo.cpp's kFloor


def simpson(values, h):
    """Simpson's rule over an odd number of evenly spaced samples."""
    return h / 3 * (values[0] + values[-1] + 4 * values[1:-1:2].sum() + 2 * values[2:-1:2].sum())


def transfer(k):
    """Eisenstein & Hu (1998) no-wiggle transfer function, k in h/Mpc."""
    theta, om, ob, fb = T_CMB / 2.7, OMEGA_M * H * H, OMEGA_B * H * H, OMEGA_B / OMEGA_M
    s = 44.5 * math.log(9.83 / om) / math.sqrt(1 + 10 * ob**0.75)  # sound horizon, Mpc
    alpha = 1 - 0.328 * math.log(431 * om) * fb + 0.38 * math.log(22.3 * om) * fb * fb
    gamma = OMEGA_M * H * (alpha + (1 - alpha) / (1 + (0.43 * k * H * s) ** 4))
    q = k * theta * theta / gamma
    l0 = numpy.log(2 * math.e + 1.8 * q)
    return l0 / (l0 + (14.2 + 731 / (1 + 62.5 * q)) * q * q)


def power(k):
    """Linear P(k) at z = 0 in (Mpc/h)^3, normalised to sigma_8."""
    def unnormalised(k):
        return k**N_S * transfer(k) ** 2
    lnk = numpy.linspace(math.log(1e-5), math.log(1e3), 8001)
    kk = numpy.exp(lnk)
    x = kk * 8.0
    with numpy.errstate(invalid="ignore", divide="ignore"):  # the series takes over where x is tiny
        tophat = numpy.where(x < 1e-3, 1 - x * x / 10, 3 * (numpy.sin(x) - x * numpy.cos(x)) / x**3)
    sigma8_sq = simpson(kk**3 * unnormalised(kk) * tophat**2, lnk[1] - lnk[0]) / (2 * math.pi**2)
    return SIGMA8**2 / sigma8_sq * unnormalised(k)


def growth(a):
    """Linear growth factor D(a) / D(1) of flat LambdaCDM (Heath 1977)."""
    ol = 1 - OMEGA_M

    def d(a):
        y = numpy.linspace(1e-12, a, 4001)
        return math.sqrt(OMEGA_M / a**3 + ol) * simpson((OMEGA_M / y + ol * y * y) ** -1.5, y[1] - y[0])
    return d(a) / d(1.0)


def displacement(dims, cell, seed, smoothing):
    """psi (3, nz, ny, nx), in cells, of a Gaussian random field drawn with `seed`."""
    nx, ny, nz = dims
    noise = numpy.random.default_rng(seed).standard_normal((nz, ny, nx))
    wk = numpy.fft.rfftn(noise)
    kz = numpy.fft.fftfreq(nz, d=cell / (2 * math.pi))[:, None, None]
    ky = numpy.fft.fftfreq(ny, d=cell / (2 * math.pi))[None, :, None]
    kx = numpy.fft.rfftfreq(nx, d=cell / (2 * math.pi))[None, None, :]
    k2 = kx * kx + ky * ky + kz * kz
    k2[0, 0, 0] = 1.0  # the mean mode is dropped below; this only avoids 0/0
    # White noise of unit variance times sqrt(P / cell^3): a field with power
    # P(k) in a box of these cells (irfftn divides by the voxel count).
    delta_k = wk * numpy.sqrt(power(numpy.sqrt(k2)) / cell**3) * numpy.exp(-0.5 * k2 * (smoothing * cell) ** 2)
    delta_k[0, 0, 0] = 0
    # Nyquist planes have no real-valued gradient on the grid: dropped.
    for axis, n in ((0, nz), (1, ny), (2, nx)):
        if n % 2 == 0:
            index = [slice(None)] * 3
            index[axis] = n // 2
            delta_k[tuple(index)] = 0
    return numpy.stack([numpy.fft.irfftn(1j * kc / (k2 * cell) * delta_k, s=(nz, ny, nx))
                        for kc in (kx, ky, kz)]).astype(numpy.float32)


def voxel_floor(dims, seed, z0, z1):
    """FLOOR * (1 + u), u uniform in (0, 1) hashed from (seed, voxel index)
    (splitmix64), for planes z0..z1: every rank computes just its own."""
    plane = dims[0] * dims[1]
    v = numpy.arange(z0 * plane, z1 * plane, dtype=numpy.uint64) ^ numpy.uint64(seed * 0x9E3779B97F4A7C15 % 2**64)
    with numpy.errstate(over="ignore"):
        v = v + numpy.uint64(0x9E3779B97F4A7C15)
        v = (v ^ (v >> numpy.uint64(30))) * numpy.uint64(0xBF58476D1CE4E5B9)
        v = (v ^ (v >> numpy.uint64(27))) * numpy.uint64(0x94D049BB133111EB)
        v = v ^ (v >> numpy.uint64(31))
    u = ((v >> numpy.uint64(11)).astype(numpy.float64) + 0.5) * 2.0**-53
    return FLOOR * (1 + u)


def deposit(psi, d, z0, z1, per_axis):
    """Density / mean (mass only, no floor) of planes z0..z1 once particles
    moved by d * psi: per_axis^3 particles a cell, at q + 1/4 and q + 3/4 when
    2 (psi linear in between, which keeps voids smooth), at q when 1.
    Only the lattice planes whose particles can reach z0..z1 are moved."""
    _, nz, ny, nx = psi.shape
    reach = int(math.ceil(d * float(numpy.abs(psi[2]).max()))) + 2
    if z1 - z0 + 2 * reach >= nz:
        source = numpy.arange(nz)
    else:
        source = numpy.arange(z0 - reach, z1 + reach) % nz
    offsets = (0.25, 0.75) if per_axis == 2 else (0.0,)
    mass = 1.0 / per_axis**3
    rho = numpy.zeros((z1 - z0) * ny * nx)
    y, x = numpy.meshgrid(numpy.arange(ny), numpy.arange(nx), indexing="ij")
    for tz in offsets:
        pz = (1 - tz) * psi[:, source] + tz * psi[:, (source + 1) % nz] if tz else psi[:, source]
        for ty in offsets:
            py = (1 - ty) * pz + ty * numpy.roll(pz, -1, axis=2) if ty else pz
            for tx in offsets:
                p = (1 - tx) * py + tx * numpy.roll(py, -1, axis=3) if tx else py
                positions = (x + tx + d * p[0], y + ty + d * p[1], source[:, None, None] + tz + d * p[2])
                cic(rho, positions, (nx, ny, nz), z0, z1, mass)
    return rho.reshape(z1 - z0, ny, nx)


def cic(rho, positions, dims, z0, z1, mass):
    """Cloud-in-cell: each particle's mass over the 8 cells around it (cell
    centres at integers, periodic), kept where the cell is in planes z0..z1."""
    nx, ny, nz = dims
    cells, fractions = [], []
    for p, n in zip(positions, dims):
        f = numpy.floor(p)
        fractions.append((p - f).ravel())
        cells.append(f.astype(numpy.int64).ravel() % n)
    (ix, iy, iz), (fx, fy, fz) = cells, fractions
    for dz, wz in ((0, 1 - fz), (1, fz)):
        z = (iz + dz) % nz - z0
        keep = numpy.flatnonzero((z >= 0) & (z < z1 - z0))  # the particles with a corner in these planes
        if keep.size == 0:
            continue
        x, y, w = ix[keep], iy[keep], wz[keep] * mass
        plane_rows = z[keep] * ny
        for row_y, wy in ((y, 1 - fy[keep]), ((y + 1) % ny, fy[keep])):
            row, w_zy = (plane_rows + row_y) * nx, w * wy
            for col, wx in ((x, 1 - fx[keep]), ((x + 1) % nx, fx[keep])):
                rho += numpy.bincount(row + col, w_zy * wx, minlength=rho.size)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dims", default="64,64,64", help="NX,NY,NZ of the volume (default 64,64,64)")
    p.add_argument("--steps", type=int, default=5, help="steps, z = 30 to z = 0 (default 5)")
    p.add_argument("--to", required=True,
                   help="HOST:PORT: rank r sends to PORT + r; or a comma-separated list, one HOST:PORT a rank")
    p.add_argument("--rate", default="2.81G", help="per stream (rank), e.g. 500M, 2.81G; 0: unpaced")
    p.add_argument("--wire", default="run", choices=["run", "quad"])
    p.add_argument("--codec", default="none", help="run packets: none, lz4 or zfp:RATE")
    p.add_argument("--order", default="scan", choices=["scan", "morton"])
    p.add_argument("--interval", type=float, default=1.0, help="seconds from one step's start to the next's")
    p.add_argument("--queue-steps", type=int, default=0, help="send from a queue of N steps (0: synchronously)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cell", type=float, default=1.0, help="cell size, Mpc/h (default 1)")
    p.add_argument("--smoothing", type=float, default=1.5, help="Gaussian filter of the linear field, cells")
    p.add_argument("--particles", type=int, default=8, choices=[1, 8], help="particles a cell")
    p.add_argument("--dump", metavar="DIR", help="also write each step each rank sent: DIR/step%%05d.rank%%d.raw")
    args = p.parse_args(argv)
    try:
        args.dims = tuple(int(v) for v in args.dims.split(","))
    except ValueError:
        p.error("--dims: expected NX,NY,NZ, got %r" % args.dims)
    if len(args.dims) != 3 or min(args.dims) < 2:
        p.error("--dims: expected NX,NY,NZ, each at least 2, got %r" % (args.dims,))
    if args.steps < 1 or args.interval < 0:
        p.error("--steps must be at least 1 and --interval at least 0")
    return args


def destination(to, rank, size):
    """Where rank `rank` sends: the list's entry, or PORT + rank."""
    targets = to.split(",")
    if len(targets) > 1:
        if len(targets) != size:
            sys.exit("--to lists %d destinations for %d ranks" % (len(targets), size))
        return targets[rank]
    host, _, port = to.rpartition(":")
    if not port.isdigit() or not host:
        sys.exit("--to %r: expected HOST:PORT" % to)
    return "%s:%d" % (host, int(port) + rank)


def main(argv):
    args = parse_args(argv)
    from mpi4py import MPI  # here, so that --help works without MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    nx, ny, nz = args.dims
    z0, z1, depth = slabcast.rank_slab(nz, rank, size)
    where = destination(args.to, rank, size)
    tag = "rank %d/%d" % (rank, size)

    t0 = time.monotonic()
    psi = displacement(args.dims, args.cell, args.seed, args.smoothing)
    floor = voxel_floor(args.dims, args.seed, z0, z1).reshape(z1 - z0, ny, nx)
    # Divide by 1 + the floor's mean over the whole volume, so the mean density
    # stays 1: each rank adds up its own planes' floor.
    floor_mean = comm.allreduce(float(floor.sum()), op=MPI.SUM) / (nx * ny * nz)
    print("%s: planes %d-%d of %dx%dx%d (slab %s of depth %d) to %s; displacement field in %.1f s, "
          "max %.1f cells at z=0" % (tag, z0, z1 - 1, nx, ny, nz, z0 // depth if z1 > z0 else "-", depth, where,
                                     time.monotonic() - t0, float(numpy.abs(psi).max())), flush=True)
    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
    if z1 == z0:  # more ranks than slabs of ceil(nz / size) planes: this one has none
        print("%s: no planes, nothing to send" % tag, flush=True)
        return 0

    a0, a1 = 1 / (1 + 30.0), 1.0
    with slabcast.Sender(args.dims, (z0, z1), where, rate=args.rate, wire=args.wire, codec=args.codec,
                         order=args.order, slab_depth=depth, queue_steps=args.queue_steps) as sender:
        start = time.monotonic()
        for step in range(args.steps):
            a = a1 if args.steps == 1 else a0 + (a1 - a0) * step / (args.steps - 1)
            d = growth(a)
            t = time.monotonic()
            rho = deposit(psi, d, z0, z1, 2 if args.particles == 8 else 1)
            values = ((rho + floor) / (1 + floor_mean)).astype(numpy.float32)  # (planes, ny, nx), C order
            computed = time.monotonic() - t
            t = time.monotonic()
            sender.send_step(step, values)
            sent = time.monotonic() - t
            if args.dump:
                values.tofile(os.path.join(args.dump, "step%05d.rank%d.raw" % (step, rank)))
            print("%s step %d/%d z=%.2f D=%.3f: planes %d-%d, %d values (%.2f MiB), min %.4g max %.4g mean %.4g; "
                  "computed in %.2f s, sent in %.1f ms" % (
                      tag, step, args.steps, 1 / a - 1, d, z0, z1 - 1, values.size, values.nbytes / 2**20,
                      values.min(), values.max(), values.mean(), computed, sent * 1e3), flush=True)
            # Step at the set pace: the next step starts `interval` after this one did.
            time.sleep(max(0.0, start + (step + 1) * args.interval - time.monotonic()))
        sender.flush()
        stats = sender.stats()
    print("%s: done, %d steps sent, %d dropped, %d packets (%d a step), %.1f MB, %.2f s sending" % (
        tag, stats["steps_sent"], stats["steps_dropped"], stats["packets"], stats["packets_a_step"],
        stats["bytes"] / 1e6, stats["send_seconds"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
