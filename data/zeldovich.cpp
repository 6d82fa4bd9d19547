// The linear field is white noise drawn per voxel (hash_random.h, so it depends
// only on seed and dims), FFT'd and coloured by sqrt(P(k)); psi follows in
// Fourier space as i k delta_k / k^2. Single precision and in-place transforms
// keep memory at about two complex grids; FFTW_ESTIMATE plans (no timing runs)
// keep the arithmetic, hence the output bytes, the same from run to run.
#include "zeldovich.h"

#include "hash_random.h"
#include "parallel.h"
#include "progress.h"

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
    Progress progress("setup: displacements", 9);
    float* r = delta.get();
    parallel_for(nz, [&](std::int64_t z_begin, std::int64_t z_end) {
        for (std::int64_t z = z_begin; z < z_end; ++z)
            for (std::int64_t y = 0; y < ny; ++y)
                for (std::int64_t x = 0; x < nx; ++x)
                    r[(z * ny + y) * row + x] = static_cast<float>(
                        gaussian(seed, static_cast<std::uint64_t>(slabcast::volume_offset(dims, x, y, z))));
    });
    progress.advance();
    forward.run();
    progress.advance();

    const double kfx = 2 * M_PI / (nx * cell), kfy = 2 * M_PI / (ny * cell), kfz = 2 * M_PI / (nz * cell);
    const double kmin = std::min({kfx, kfy, kfz}), kmax = 2 * M_PI / cell;  // > sqrt(3) * Nyquist
    const AmplitudeTable amplitude(power, kmin, kmax, smoothing * cell);
    const double norm = 1.0 / (std::pow(cell, 1.5) * static_cast<double>(n));
    // Visits every Fourier cell with its wave vector (h/Mpc); the Nyquist planes are
    // dropped, since their gradient has no real-valued counterpart on the grid.
    // f changes mode i only, so the planes go to threads in any split.
    auto for_each_mode = [&](auto&& f) {
        parallel_for(nz, [&](std::int64_t z_begin, std::int64_t z_end) {
            for (std::int64_t iz = z_begin; iz < z_end; ++iz)
                for (std::int64_t iy = 0; iy < ny; ++iy)
                    for (std::int64_t ix = 0; ix < nxh; ++ix) {
                        const std::size_t i = static_cast<std::size_t>((iz * ny + iy) * nxh + ix);
                        const bool keep = (ix | iy | iz) != 0 && !is_nyquist(ix, nx) && !is_nyquist(iy, ny) &&
                                          !is_nyquist(iz, nz);
                        f(i, keep, ix * kfx, signed_index(iy, ny) * kfy, signed_index(iz, nz) * kfz);
                    }
        });
    };
    for_each_mode([&](std::size_t i, bool keep, double kx, double ky, double kz) {
        const double a = keep ? amplitude(std::sqrt(kx * kx + ky * ky + kz * kz)) * norm : 0;
        dk[i][0] = static_cast<float>(dk[i][0] * a);
        dk[i][1] = static_cast<float>(dk[i][1] * a);
    });
    progress.advance();

    // psi_c = i k_c delta_k / k^2, in cells. x and y go through the work grid; z,
    // needed last, is transformed in delta's own storage.
    double sum_sq = 0;
    std::vector<double> plane_max(static_cast<std::size_t>(nz)), plane_sum_sq(static_cast<std::size_t>(nz));
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
        // Per plane, then summed in plane order: the same sums whatever the threads.
        parallel_for(nz, [&](std::int64_t z_begin, std::int64_t z_end) {
            for (std::int64_t z = z_begin; z < z_end; ++z) {
                double maxabs = 0, sq = 0;
                for (std::int64_t line = z * ny; line < (z + 1) * ny; ++line)
                    for (std::int64_t x = 0; x < nx; ++x) {
                        const double p = v[line * row + x];
                        maxabs = std::max(maxabs, std::fabs(p));
                        sq += p * p;
                    }
                plane_max[static_cast<std::size_t>(z)] = maxabs;
                plane_sum_sq[static_cast<std::size_t>(z)] = sq;
            }
        });
        double maxabs = 0;
        for (std::int64_t z = 0; z < nz; ++z) {
            maxabs = std::max(maxabs, plane_max[static_cast<std::size_t>(z)]);
            sum_sq += plane_sum_sq[static_cast<std::size_t>(z)];
        }
        scale_[c] = maxabs / 32767;
        psi_[c].resize(n);
        const double inv = maxabs > 0 ? 1 / scale_[c] : 0;
        std::int16_t* psi = psi_[c].data();
        parallel_for(nz * ny, [&](std::int64_t line_begin, std::int64_t line_end) {
            for (std::int64_t line = line_begin; line < line_end; ++line)
                for (std::int64_t x = 0; x < nx; ++x)
                    psi[line * nx + x] = static_cast<std::int16_t>(std::lround(v[line * row + x] * inv));
        });
        if (c == 1) work.reset();  // frees a complex grid before the density grid is needed
        progress.advance(2);
    }
    rms_ = std::sqrt(sum_sq / static_cast<double>(n));
}

double ZeldovichField::max_displacement() const {
    return 32767 * std::sqrt(scale_[0] * scale_[0] + scale_[1] * scale_[1] + scale_[2] * scale_[2]);
}

}  // namespace datagen
