// The linear field is white noise drawn per voxel (hash_random.h, so it depends
// only on seed and dims), FFT'd and coloured by sqrt(P(k)); psi follows in
// Fourier space as i k delta_k / k^2. Single precision and in-place transforms
// keep memory at about two complex grids; FFTW_ESTIMATE plans (no timing runs)
// keep the arithmetic, hence the output bytes, the same from run to run.
#include "zeldovich.h"

#include "hash_random.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

namespace datagen {
namespace {

struct FftwFree {
    void operator()(float* p) const { fftwf_free(p); }
};
using FftBuffer = std::unique_ptr<float, FftwFree>;

FftBuffer fft_alloc(std::size_t floats) {
    FftBuffer b(fftwf_alloc_real(floats));
    if (!b) throw std::runtime_error("out of memory for the FFT grids");
    return b;
}

struct Plan {
    fftwf_plan p = nullptr;
    explicit Plan(fftwf_plan q) : p(q) {
        if (!p) throw std::runtime_error("FFTW could not plan the transform");
    }
    ~Plan() { fftwf_destroy_plan(p); }
    void run() const { fftwf_execute(p); }
};

// sqrt(P(k)) * Gaussian filter on a log-k table: the mode loop visits every
// Fourier cell, and a table lookup is much cheaper than the transfer function.
class AmplitudeTable {
public:
    AmplitudeTable(const std::function<double(double)>& power, double kmin, double kmax, double radius)
        : lo_(std::log(kmin)), step_((std::log(kmax) - lo_) / (kSize - 1)), v_(kSize) {
        for (int i = 0; i < kSize; ++i) {
            const double k = std::exp(lo_ + i * step_);
            v_[i] = std::sqrt(power(k)) * std::exp(-0.5 * k * k * radius * radius);
        }
    }
    double operator()(double k) const {
        const double t = std::clamp((std::log(k) - lo_) / step_, 0.0, kSize - 1.000001);
        const int i = static_cast<int>(t);
        return v_[i] + (t - i) * (v_[i + 1] - v_[i]);
    }

private:
    static constexpr int kSize = 8192;
    double lo_, step_;
    std::vector<double> v_;
};

// ESTIMATE: no timing runs, so the same plan every time. NO_SIMD: the same plan on
// every x86-64 CPU (otherwise AVX-512 vs AVX2 machines pick different codelets and
// round differently), for a small cost: the FFTs are a minor part of the setup.
constexpr unsigned kPlanFlags = FFTW_ESTIMATE | FFTW_NO_SIMD;

std::int64_t signed_index(std::int64_t i, std::int64_t n) { return 2 * i <= n ? i : i - n; }
bool is_nyquist(std::int64_t i, std::int64_t n) { return n % 2 == 0 && 2 * i == n; }

}  // namespace

std::uint64_t ZeldovichField::peak_bytes(const slabcast::Dims& d) {
    const std::uint64_t n = static_cast<std::uint64_t>(d.count());
    const std::uint64_t spectrum = static_cast<std::uint64_t>(d.nz * d.ny * (d.nx / 2 + 1)) * 8;
    return std::max(2 * spectrum + 2 * n * 2,  // delta_k, work grid, psi_x and psi_y
                    3 * n * 2 + n * 4);        // psi and the caller's density grid
}

ZeldovichField::ZeldovichField(const slabcast::Dims& dims, double cell, std::uint64_t seed,
                               const std::function<double(double)>& power, double smoothing)
    : dims_(dims) {
    const std::int64_t nx = dims.nx, ny = dims.ny, nz = dims.nz, nxh = nx / 2 + 1;
    const std::size_t n = static_cast<std::size_t>(dims.count()), nc = static_cast<std::size_t>(nz * ny * nxh);
    const std::int64_t row = 2 * nxh;  // padded real row of an in-place r2c transform

    FftBuffer delta = fft_alloc(2 * nc), work = fft_alloc(2 * nc);
    auto* dk = reinterpret_cast<fftwf_complex*>(delta.get());
    auto* wk = reinterpret_cast<fftwf_complex*>(work.get());
    const int n0 = static_cast<int>(nz), n1 = static_cast<int>(ny), n2 = static_cast<int>(nx);
    const Plan forward(fftwf_plan_dft_r2c_3d(n0, n1, n2, delta.get(), dk, kPlanFlags));
    const Plan back_work(fftwf_plan_dft_c2r_3d(n0, n1, n2, wk, work.get(), kPlanFlags));
    const Plan back_delta(fftwf_plan_dft_c2r_3d(n0, n1, n2, dk, delta.get(), kPlanFlags));

    // Unit white noise; its transform has <|w_k|^2> = N, so w_k * sqrt(P / cell^3) / N
    // transformed back is a field with power P(k) in a box of N cells.
    float* r = delta.get();
    for (std::int64_t z = 0; z < nz; ++z)
        for (std::int64_t y = 0; y < ny; ++y)
            for (std::int64_t x = 0; x < nx; ++x)
                r[(z * ny + y) * row + x] = static_cast<float>(
                    gaussian(seed, static_cast<std::uint64_t>(slabcast::volume_offset(dims, x, y, z))));
    forward.run();

    const double kfx = 2 * M_PI / (nx * cell), kfy = 2 * M_PI / (ny * cell), kfz = 2 * M_PI / (nz * cell);
    const double kmin = std::min({kfx, kfy, kfz}), kmax = 2 * M_PI / cell;  // > sqrt(3) * Nyquist
    const AmplitudeTable amplitude(power, kmin, kmax, smoothing * cell);
    const double norm = 1.0 / (std::pow(cell, 1.5) * static_cast<double>(n));
    // Visits every Fourier cell with its wave vector (h/Mpc); the Nyquist planes are
    // dropped, since their gradient has no real-valued counterpart on the grid.
    auto for_each_mode = [&](auto&& f) {
        for (std::int64_t iz = 0; iz < nz; ++iz)
            for (std::int64_t iy = 0; iy < ny; ++iy)
                for (std::int64_t ix = 0; ix < nxh; ++ix) {
                    const std::size_t i = static_cast<std::size_t>((iz * ny + iy) * nxh + ix);
                    const bool keep = (ix | iy | iz) != 0 && !is_nyquist(ix, nx) && !is_nyquist(iy, ny) &&
                                      !is_nyquist(iz, nz);
                    f(i, keep, ix * kfx, signed_index(iy, ny) * kfy, signed_index(iz, nz) * kfz);
                }
    };
    for_each_mode([&](std::size_t i, bool keep, double kx, double ky, double kz) {
        const double a = keep ? amplitude(std::sqrt(kx * kx + ky * ky + kz * kz)) * norm : 0;
        dk[i][0] = static_cast<float>(dk[i][0] * a);
        dk[i][1] = static_cast<float>(dk[i][1] * a);
    });

    // psi_c = i k_c delta_k / k^2, in cells. x and y go through the work grid; z,
    // needed last, is transformed in delta's own storage.
    double sum_sq = 0;
    for (int c = 0; c < 3; ++c) {
        fftwf_complex* out = c < 2 ? wk : dk;
        for_each_mode([&](std::size_t i, bool keep, double kx, double ky, double kz) {
            const double k2 = kx * kx + ky * ky + kz * kz, kc = c == 0 ? kx : c == 1 ? ky : kz;
            const double f = keep ? kc / (k2 * cell) : 0;
            const float re = dk[i][0], im = dk[i][1];
            out[i][0] = static_cast<float>(-im * f);
            out[i][1] = static_cast<float>(re * f);
        });
        (c < 2 ? back_work : back_delta).run();
        const float* v = c < 2 ? work.get() : delta.get();
        double maxabs = 0;
        for (std::int64_t line = 0; line < nz * ny; ++line)
            for (std::int64_t x = 0; x < nx; ++x) {
                const double p = v[line * row + x];
                maxabs = std::max(maxabs, std::fabs(p));
                sum_sq += p * p;
            }
        scale_[c] = maxabs / 32767;
        psi_[c].resize(n);
        const double inv = maxabs > 0 ? 1 / scale_[c] : 0;
        for (std::int64_t line = 0; line < nz * ny; ++line)
            for (std::int64_t x = 0; x < nx; ++x)
                psi_[c][static_cast<std::size_t>(line * nx + x)] =
                    static_cast<std::int16_t>(std::lround(v[line * row + x] * inv));
        if (c == 1) work.reset();  // frees a complex grid before the density grid is needed
    }
    rms_ = std::sqrt(sum_sq / static_cast<double>(n));
}

double ZeldovichField::max_displacement() const {
    return 32767 * std::sqrt(scale_[0] * scale_[0] + scale_[1] * scale_[1] + scale_[2] * scale_[2]);
}

namespace {

// Cloud-in-cell onto a periodic grid: a particle at p (cells, cell centres at
// integers) spreads its mass over the 8 cells around it. Inlined into both
// deposit loops; floor is an offset truncation, as baseline x86-64 has no cheap floor.
class Cic {
public:
    Cic(const slabcast::Dims& d, float* rho) : nx_(d.nx), ny_(d.ny), nz_(d.nz), rho_(rho) {}

    __attribute__((always_inline)) inline void add(double px, double py, double pz, float mass) const {
        std::int64_t x0, x1, y0, y1, z0, z1;
        const float fx = split(px, nx_, x0, x1), fy = split(py, ny_, y0, y1), fz = split(pz, nz_, z0, z1);
        float* r00 = rho_ + (z0 * ny_ + y0) * nx_;
        float* r01 = rho_ + (z0 * ny_ + y1) * nx_;
        float* r10 = rho_ + (z1 * ny_ + y0) * nx_;
        float* r11 = rho_ + (z1 * ny_ + y1) * nx_;
        const float a00 = (1 - fz) * (1 - fy) * mass, a01 = (1 - fz) * fy * mass, a10 = fz * (1 - fy) * mass,
                    a11 = fz * fy * mass;
        r00[x0] += a00 * (1 - fx);
        r00[x1] += a00 * fx;
        r01[x0] += a01 * (1 - fx);
        r01[x1] += a01 * fx;
        r10[x0] += a10 * (1 - fx);
        r10[x1] += a10 * fx;
        r11[x0] += a11 * (1 - fx);
        r11[x1] += a11 * fx;
    }

private:
    // Cell index i0 (and i1 = the next one, periodic) and the fraction that spills into i1.
    // Valid for |p| < 2^22; positions stay within a few hundred cells of the box.
    static float split(double p, std::int64_t n, std::int64_t& i0, std::int64_t& i1) {
        constexpr std::int64_t kBig = std::int64_t{1} << 22;
        const std::int64_t f = static_cast<std::int64_t>(p + static_cast<double>(kBig)) - kBig;
        i0 = f;
        if (i0 < 0 || i0 >= n) i0 = ((i0 % n) + n) % n;
        i1 = i0 + 1 == n ? 0 : i0 + 1;
        return static_cast<float>(p - static_cast<double>(f));
    }
    std::int64_t nx_, ny_, nz_;
    float* rho_;
};

}  // namespace

void ZeldovichField::deposit(double growth, int per_axis, float* rho) const {
    const std::int64_t nx = dims_.nx, ny = dims_.ny, nz = dims_.nz;
    if (growth * max_displacement() > 1 << 20) throw std::runtime_error("displacements beyond 2^20 cells");
    std::fill(rho, rho + dims_.count(), 0.0f);
    const Cic cic(dims_, rho);
    const float g[3] = {static_cast<float>(growth * scale_[0]), static_cast<float>(growth * scale_[1]),
                        static_cast<float>(growth * scale_[2])};
    if (per_axis == 1) {
        std::size_t i = 0;
        for (std::int64_t z = 0; z < nz; ++z)
            for (std::int64_t y = 0; y < ny; ++y)
                for (std::int64_t x = 0; x < nx; ++x, ++i)
                    cic.add(x + g[0] * psi_[0][i], y + g[1] * psi_[1][i], z + g[2] * psi_[2][i], 1.0f);
        return;
    }
    // 8 particles a cell, at q + 1/4 and q + 3/4 along each axis of the cube between
    // neighbouring lattice points, psi linear in between: in voids, where particles
    // spread apart, this keeps CIC from leaving a lattice of empty cells. psi is
    // interpolated separably: z into a plane, y into a line, then x per particle.
    static constexpr float kOffset[2] = {0.25f, 0.75f};
    const std::size_t plane = static_cast<std::size_t>(nx * ny);
    std::vector<float> pz(3 * plane), line(3 * static_cast<std::size_t>(nx));
    for (std::int64_t z = 0; z < nz; ++z)
        for (const float tz : kOffset) {
            const std::size_t p0 = static_cast<std::size_t>(z) * plane, p1 = (z + 1 == nz ? 0 : z + 1) * plane;
            for (int c = 0; c < 3; ++c)
                for (std::size_t i = 0; i < plane; ++i)
                    pz[c * plane + i] = g[c] * ((1 - tz) * psi_[c][p0 + i] + tz * psi_[c][p1 + i]);
            for (std::int64_t y = 0; y < ny; ++y)
                for (const float ty : kOffset) {
                    const std::size_t r0 = y * nx, r1 = (y + 1 == ny ? 0 : y + 1) * nx;
                    for (int c = 0; c < 3; ++c)
                        for (std::int64_t x = 0; x < nx; ++x)
                            line[c * nx + x] = (1 - ty) * pz[c * plane + r0 + x] + ty * pz[c * plane + r1 + x];
                    const float *lx = line.data(), *ly = lx + nx, *lz = ly + nx;
                    for (std::int64_t x = 0; x < nx; ++x) {
                        const std::int64_t x1 = x + 1 == nx ? 0 : x + 1;
                        for (const float tx : kOffset)
                            cic.add(x + tx + ((1 - tx) * lx[x] + tx * lx[x1]), y + ty + ((1 - tx) * ly[x] + tx * ly[x1]),
                                    z + tz + ((1 - tx) * lz[x] + tx * lz[x1]), 0.125f);
                    }
                }
        }
}

}  // namespace datagen
