#include "slabcast/render/ray_march.h"

#include "ray_kernels.h"
#include "slabcast/cpu_features.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

namespace slabcast::render {

void Image::resize(int w, int h) {
    width = w;
    height = h;
    rgba.resize(4 * static_cast<std::size_t>(w) * static_cast<std::size_t>(h));
}

void Piece::whole_is_piece() {
    const std::int64_t n[3] = {nx, ny, nz};
    for (int a = 0; a < 3; ++a) {
        whole_lo[a] = origin[a];
        whole_hi[a] = origin[a] + static_cast<double>(n[a] - 1) * spacing[a];
    }
}

namespace {

// A frame's stop (March::stop): asked by the calling thread (0) before any
// task is handed out (begin), and then before its tasks every kStopCheck;
// once it says stop, every thread leaves the tasks it has not begun. (Asked
// only before thread 0's tasks, a frame whose other threads took every task
// first would never ask.)
class StopCheck {
public:
    explicit StopCheck(const std::function<bool()>& stop) : stop_(stop) {}
    // On the calling thread, before the tasks: whether to do none.
    bool begin() { return now(0); }
    // Whether `thread` is to leave its next task.
    bool now(int thread) {
        if (stopped_.load(std::memory_order_relaxed)) return true;
        if (thread != 0 || !stop_) return false;
        const auto t = std::chrono::steady_clock::now();
        if (t - asked_ < kStopCheck) return false;
        asked_ = t;
        if (!stop_()) return false;
        stopped_.store(true, std::memory_order_relaxed);
        return true;
    }
    bool stopped() const { return stopped_.load(std::memory_order_relaxed); }

private:
    const std::function<bool()>& stop_;
    std::atomic<bool> stopped_{false};
    std::chrono::steady_clock::time_point asked_{};  // thread 0's only
};

}  // namespace

bool RayMarcher::measure(const Piece& piece, WorkerPool& pool, const std::function<bool()>& stop) {
    if (!bricks_.sized_for(piece.nx, piece.ny, piece.nz, pool.threads()))
        bricks_.resize(piece.nx, piece.ny, piece.nz, pool.threads());
    StopCheck check(stop);
    auto layer = [&](std::int64_t z, int thread) {
        if (!check.now(thread)) bricks_.measure(piece.values, z, z + 1, thread);
    };
    if (!check.begin()) pool.run(bricks_.bricks_z(), layer);
    measured_ = !check.stopped();
    return measured_;
}

namespace {

void transform(const double m[16], double x, double y, double z, double out[3]) {
    double v[4];
    for (int r = 0; r < 4; ++r) v[r] = m[4 * r] * x + m[4 * r + 1] * y + m[4 * r + 2] * z + m[4 * r + 3];
    for (int c = 0; c < 3; ++c) out[c] = v[c] / v[3];
}

}  // namespace

namespace detail {

bool ray_through(const Piece& p, const Rays& rays, double x, double y, Ray& ray) {
    double near[3], far[3];
    transform(rays.to_world, x, y, -1.0, near);
    transform(rays.to_world, x, y, 1.0, far);
    double d[3] = {far[0] - near[0], far[1] - near[1], far[2] - near[2]};
    const double length = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (!(length > 0)) return false;
    const double n[3] = {static_cast<double>(p.nx - 1), static_cast<double>(p.ny - 1), static_cast<double>(p.nz - 1)};
    ray.enter = 0.0;
    ray.leave = length;
    double whole = 0.0;  // where the ray enters the whole volume
    for (int a = 0; a < 3; ++a) {
        ray.o[a] = (near[a] - p.origin[a]) / p.spacing[a];
        ray.d[a] = d[a] / length / p.spacing[a];
        const double whole_lo = (p.whole_lo[a] - p.origin[a]) / p.spacing[a];
        const double whole_hi = (p.whole_hi[a] - p.origin[a]) / p.spacing[a];
        if (ray.d[a] == 0.0) {
            if (ray.o[a] < 0.0 || ray.o[a] > n[a]) return false;
            continue;
        }
        double t0 = (0.0 - ray.o[a]) / ray.d[a], t1 = (n[a] - ray.o[a]) / ray.d[a];
        if (t0 > t1) std::swap(t0, t1);
        ray.enter = std::max(ray.enter, t0);
        ray.leave = std::min(ray.leave, t1);
        whole = std::max(whole, std::min((whole_lo - ray.o[a]) / ray.d[a], (whole_hi - ray.o[a]) / ray.d[a]));
    }
    if (!(ray.enter < ray.leave)) return false;
    // The lattice starts where the ray enters the whole volume, whichever
    // piece this is: t = 0 there from here on (as VTK's CPU ray caster
    // starts its samples at the volume's face; small t keeps floats exact).
    whole = std::min(whole, ray.enter);
    for (int a = 0; a < 3; ++a) ray.o[a] += whole * ray.d[a];
    ray.enter -= whole;
    ray.leave -= whole;
    return true;
}

double brick_exit(const Ray& ray, const std::int64_t brick[3]) {
    double t = std::numeric_limits<double>::infinity();
    for (int a = 0; a < 3; ++a) {
        if (ray.d[a] == 0.0) continue;
        const double face = static_cast<double>((brick[a] + (ray.d[a] > 0 ? 1 : 0)) * BrickGrid::kCells);
        t = std::min(t, (face - ray.o[a]) / ray.d[a]);
    }
    return t;
}

void composite(const Frame& frame, const Ray& ray, float out[4]) {
    const Piece& p = frame.piece;
    const TransferTable& table = frame.table;
    const BrickGrid& bricks = frame.bricks;
    const March& march = frame.march;
    {
        const double dt = march.sample_distance;
        const std::int64_t nx = p.nx, plane = p.nx * p.ny;
        const double top[3] = {static_cast<double>(p.nx - 2), static_cast<double>(p.ny - 2),
                               static_cast<double>(p.nz - 2)};
        float r = 0, g = 0, b = 0, a = 0;
        // The samples on the ray's lattice t = k dt that lie in [enter, leave).
        double k = std::ceil(ray.enter / dt);
        for (;; k += 1.0) {
            const double t = k * dt;
            if (t >= ray.leave) break;
            double q[3];
            std::int64_t cell[3];
            float f[3];
            for (int c = 0; c < 3; ++c) {
                q[c] = std::clamp(ray.o[c] + t * ray.d[c], 0.0, top[c] + 1.0);
                const double whole = std::min(std::floor(q[c]), top[c]);
                cell[c] = static_cast<std::int64_t>(whole);
                f[c] = static_cast<float>(q[c] - whole);
            }
            const std::int64_t brick[3] = {cell[0] >> BrickGrid::kShift, cell[1] >> BrickGrid::kShift,
                                           cell[2] >> BrickGrid::kShift};
            if (march.skip_empty && !bricks.visible(brick[0], brick[1], brick[2])) {
                // Empty under this transfer function: on to the first sample past it.
                k = std::max(k, std::ceil(brick_exit(ray, brick) / dt) - 1.0);
                continue;
            }
            const float* v = p.values + cell[2] * plane + cell[1] * nx + cell[0];
            float value;
            if (march.linear) {
                const float x00 = v[0] + f[0] * (v[1] - v[0]);
                const float x10 = v[nx] + f[0] * (v[nx + 1] - v[nx]);
                const float x01 = v[plane] + f[0] * (v[plane + 1] - v[plane]);
                const float x11 = v[plane + nx] + f[0] * (v[plane + nx + 1] - v[plane + nx]);
                const float y0 = x00 + f[1] * (x10 - x00), y1 = x01 + f[1] * (x11 - x01);
                value = y0 + f[2] * (y1 - y0);
            } else {
                value = v[(f[2] >= 0.5f ? plane : 0) + (f[1] >= 0.5f ? nx : 0) + (f[0] >= 0.5f ? 1 : 0)];
            }
            const float* e = table.entry(table.index(value));
            if (e[3] == 0.0f) continue;
            const float clear = 1.0f - a;
            r += clear * e[0];
            g += clear * e[1];
            b += clear * e[2];
            a += clear * e[3];
            if (a >= march.opaque) break;
        }
        out[0] = r;
        out[1] = g;
        out[2] = b;
        out[3] = a;
    }
}

}  // namespace detail

namespace {

// Inverts a row-major 4x4 matrix (Gauss-Jordan, partial pivoting); false when singular.
bool invert(const double m[16], double out[16]) {
    double a[4][8];
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 8; ++c) a[r][c] = c < 4 ? m[4 * r + c] : (c - 4 == r ? 1.0 : 0.0);
    for (int c = 0; c < 4; ++c) {
        int pivot = c;
        for (int r = c + 1; r < 4; ++r)
            if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
        if (a[pivot][c] == 0.0) return false;
        std::swap(a[c], a[pivot]);
        const double d = a[c][c];
        for (double& v : a[c]) v /= d;
        for (int r = 0; r < 4; ++r) {
            if (r == c) continue;
            const double f = a[r][c];
            for (int k = 0; k < 8; ++k) a[r][k] -= f * a[c][k];
        }
    }
    for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) out[4 * r + c] = a[r][c + 4];
    return true;
}

// The pixels [x0, y0, x1, y1] (inclusive) that the piece's box can cover: its
// eight corners projected, a pixel of margin. The whole image where a corner
// lies behind the eye (it projects nowhere sensible).
void covered_pixels(const Piece& p, const Rays& rays, int width, int height, int cover[4]) {
    cover[0] = 0;
    cover[1] = 0;
    cover[2] = width - 1;
    cover[3] = height - 1;
    double to_screen[16];
    if (!invert(rays.to_world, to_screen)) return;
    double lo[2] = {1e300, 1e300}, hi[2] = {-1e300, -1e300};
    const std::int64_t n[3] = {p.nx, p.ny, p.nz};
    for (int corner = 0; corner < 8; ++corner) {
        double w[3];
        for (int a = 0; a < 3; ++a) w[a] = p.origin[a] + ((corner >> a) & 1 ? static_cast<double>(n[a] - 1) * p.spacing[a] : 0.0);
        double v[4];
        for (int r = 0; r < 4; ++r)
            v[r] = to_screen[4 * r] * w[0] + to_screen[4 * r + 1] * w[1] + to_screen[4 * r + 2] * w[2] + to_screen[4 * r + 3];
        if (!(v[3] > 0)) return;
        for (int a = 0; a < 2; ++a) {
            lo[a] = std::min(lo[a], v[a] / v[3]);
            hi[a] = std::max(hi[a], v[a] / v[3]);
        }
    }
    // NDC to pixels: pixel x's centre is at 2 (x + 0.5) / width - 1.
    const auto pixel = [](double ndc, int size) { return (ndc + 1.0) * 0.5 * size - 0.5; };
    cover[0] = std::max(0, static_cast<int>(std::floor(pixel(lo[0], width))) - 1);
    cover[1] = std::max(0, static_cast<int>(std::floor(pixel(lo[1], height))) - 1);
    cover[2] = std::min(width - 1, static_cast<int>(std::ceil(pixel(hi[0], width))) + 1);
    cover[3] = std::min(height - 1, static_cast<int>(std::ceil(pixel(hi[1], height))) + 1);
}

std::uint8_t to_byte(float v) { return static_cast<std::uint8_t>(std::clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f); }

}  // namespace

bool RayMarcher::render(const Piece& given, const TransferTable& table, const Rays& rays, const March& march,
                        Image& image, WorkerPool& pool) {
    std::fill(image.rgba.begin(), image.rgba.end(), std::uint8_t{0});
    Piece piece = given;
    if (!(piece.whole_lo[0] <= piece.whole_hi[0] && piece.whole_lo[1] <= piece.whole_hi[1] &&
          piece.whole_lo[2] <= piece.whole_hi[2]))
        piece.whole_is_piece();
    if (!piece.values || piece.nx < 2 || piece.ny < 2 || piece.nz < 2 || !(march.sample_distance > 0) ||
        image.width <= 0 || image.height <= 0)
        return true;
    March how = march;
    how.skip_empty = march.skip_empty && table.transparent_share() >= kSkipFrom && (measured_ || march.may_measure);
    if (how.skip_empty) {
        if (!measured_ && !measure(piece, pool, how.stop)) return false;
        bricks_.classify(table);
    }
    const detail::Frame frame{piece, table, bricks_, how};
    // Eight rays at once where the CPU can and every point's index fits the
    // 32-bit lanes; a row of a tile is two such packets.
    const bool packets = how.vectorised && cpu_has_avx2_fma() &&
                         piece.nx * piece.ny * piece.nz < (std::int64_t{1} << 31);
    // Only the pixels the piece covers: a ray's setup costs as much as a
    // few samples, and on several ranks each piece covers a part of the frame.
    int cover[4];
    covered_pixels(piece, rays, image.width, image.height, cover);
    if (cover[0] > cover[2] || cover[1] > cover[3]) return true;
    const int tiles_x = (cover[2] - cover[0]) / kTile + 1, tiles_y = (cover[3] - cover[1]) / kTile + 1;
    StopCheck check(how.stop);
    auto tile = [&](std::int64_t i, int thread) {
        if (check.now(thread)) return;
        const int x0 = cover[0] + static_cast<int>(i % tiles_x) * kTile;
        const int y0 = cover[1] + static_cast<int>(i / tiles_x) * kTile;
        const int x_end = std::min(cover[2] + 1, x0 + kTile);
        detail::Ray ray[8];
        bool hit[8];
        float colour[8][4];
        for (int y = y0; y < std::min(cover[3] + 1, y0 + kTile); ++y) {
            const double ndc_y = 2.0 * (y + 0.5) / image.height - 1.0;
            std::uint8_t* row = &image.rgba[4 * static_cast<std::size_t>(y) * image.width];
            for (int x = x0; x < x_end; x += 8) {
                const int lanes = std::min(8, x_end - x);
                bool any = false;
                for (int l = 0; l < 8; ++l) {
                    hit[l] = l < lanes && detail::ray_through(piece, rays, 2.0 * (x + l + 0.5) / image.width - 1.0,
                                                              ndc_y, ray[l]);
                    any = any || hit[l];
                }
                if (!any) continue;
                if (packets) {
                    detail::composite8_avx2(frame, ray, hit, colour);
                } else {
                    for (int l = 0; l < lanes; ++l)
                        if (hit[l]) detail::composite(frame, ray[l], colour[l]);
                }
                for (int l = 0; l < lanes; ++l)
                    if (hit[l])
                        for (int c = 0; c < 4; ++c) row[4 * (x + l) + c] = to_byte(colour[l][c]);
            }
        }
    };
    if (!check.begin()) pool.run(static_cast<std::int64_t>(tiles_x) * tiles_y, tile);
    return !check.stopped();
}

}  // namespace slabcast::render
