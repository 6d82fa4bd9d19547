// The ray marcher's rules on small volumes: the opacity correction, the
// brick ranges it skips by, and pictures that must not change whichever way
// the work is cut (pieces, threads, skipping).
#include "slabcast/render/ray_march.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace slabcast::render;

namespace {

// Colour ramps from blue to red over [lo, hi]; opacity `a` above `from` (of
// the range, 0..1), none below.
TransferTable ramp(float lo, float hi, float a, float from, double sample, double unit) {
    std::vector<float> rgb(3 * TransferTable::kEntries), opacity(TransferTable::kEntries);
    for (int i = 0; i < TransferTable::kEntries; ++i) {
        const float t = static_cast<float>(i) / (TransferTable::kEntries - 1);
        rgb[3 * i] = t;
        rgb[3 * i + 1] = 0.5f;
        rgb[3 * i + 2] = 1.0f - t;
        opacity[i] = t >= from ? a : 0.0f;
    }
    TransferTable table;
    table.set(lo, hi, rgb.data(), opacity.data(), sample, unit);
    return table;
}

// Looking down -z at a box of `extent` world units a side from the origin,
// orthographic, the image covering exactly the box's x and y.
Rays down_z(double extent) {
    const double h = extent / 2;
    Rays rays;
    const double m[16] = {h, 0, 0, h, 0, h, 0, h, 0, 0, -(h + 1), h, 0, 0, 0, 1};
    std::copy(m, m + 16, rays.to_world);
    return rays;
}

// A skewed perspective-like view: NDC to world through a general matrix.
Rays oblique(double extent) {
    const double c = extent / 2;
    Rays rays;
    // Rows: x and y mix in z, and w grows with z (a perspective divide).
    const double m[16] = {c, 0.1 * c, 0.3 * c, c, -0.05 * c, c, 0.2 * c, c, 0.2, -0.1, -(c + 4), c, 0, 0, 0.05, 1};
    std::copy(m, m + 16, rays.to_world);
    return rays;
}

std::vector<float> random_volume(std::int64_t nx, std::int64_t ny, std::int64_t nz, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<float> v(static_cast<std::size_t>(nx * ny * nz));
    for (auto& x : v) x = u(gen) * u(gen);  // most values low: much empty space under ramp(.., from 0.4)
    return v;
}

// Mostly empty: random values in two balls, none elsewhere (bricks to skip).
std::vector<float> sparse_volume(std::int64_t nx, std::int64_t ny, std::int64_t nz, unsigned seed) {
    std::vector<float> v = random_volume(nx, ny, nz, seed);
    for (std::int64_t z = 0; z < nz; ++z)
        for (std::int64_t y = 0; y < ny; ++y)
            for (std::int64_t x = 0; x < nx; ++x) {
                const auto in_ball = [&](double cx, double cy, double cz, double r) {
                    return (x - cx) * (x - cx) + (y - cy) * (y - cy) + (z - cz) * (z - cz) < r * r;
                };
                if (!in_ball(5, 5, 8, 4) && !in_ball(14, 12, 24, 6)) v[static_cast<std::size_t>((z * ny + y) * nx + x)] = 0;
            }
    return v;
}

Image render(const Piece& piece, const TransferTable& table, const Rays& rays, const March& march, int threads,
             int size = 48) {
    WorkerPool pool(threads);
    RayMarcher marcher;
    marcher.measure(piece, pool);
    Image image;
    image.resize(size, size);
    marcher.render(piece, table, rays, march, image, pool);
    return image;
}

int largest_difference(const Image& a, const Image& b) {
    int most = 0;
    for (std::size_t i = 0; i < a.rgba.size(); ++i) most = std::max(most, std::abs(int(a.rgba[i]) - int(b.rgba[i])));
    return most;
}

}  // namespace

TEST_CASE("the transfer table corrects opacity for the sample distance and drops what VTK's ray caster rounds away") {
    TransferTable same = ramp(0, 1, 0.3f, 0.0f, 1.0, 1.0);
    CHECK(same.entry(TransferTable::kEntries - 1)[3] == Approx(0.3f));
    TransferTable half = ramp(0, 1, 0.3f, 0.0f, 0.5, 1.0);
    CHECK(half.entry(0)[3] == Approx(1.0 - std::sqrt(0.7)));
    // Premultiplied: the last entry is red at full.
    CHECK(half.entry(TransferTable::kEntries - 1)[0] == Approx(half.entry(TransferTable::kEntries - 1)[3]));
    TransferTable faint = ramp(0, 1, 1e-6f, 0.0f, 1.0, 1.0);
    CHECK(faint.entry(10)[3] == 0.0f);
    CHECK_FALSE(faint.any_opacity(0.0f, 1.0f));

    TransferTable upper = ramp(0, 2, 0.5f, 0.5f, 1.0, 1.0);  // opaque from value 1 up
    CHECK_FALSE(upper.any_opacity(0.0f, 0.9f));
    CHECK(upper.any_opacity(0.9f, 1.1f));
    CHECK(upper.any_opacity(5.0f, 7.0f));  // clamped to the last entry
    CHECK_FALSE(upper.any_opacity(-4.0f, -1.0f));
    CHECK(upper.index(std::numeric_limits<float>::quiet_NaN()) == 0);
}

TEST_CASE("each brick's range covers every point a sample in it interpolates between") {
    const std::int64_t nx = 21, ny = 17, nz = 10;  // bricks of 8 cells: 3 x 2 x 2, the last ones partial
    std::vector<float> v = random_volume(nx, ny, nz, 7);
    v[5] = std::numeric_limits<float>::quiet_NaN();   // four at a time
    v[20] = std::numeric_limits<float>::quiet_NaN();  // a line's last, one at a time
    BrickGrid grid;
    grid.resize(nx, ny, nz, 2);
    REQUIRE(grid.bricks_x() == 3);
    REQUIRE(grid.bricks_y() == 2);
    REQUIRE(grid.bricks_z() == 2);
    grid.measure(v.data(), 1, 2, 1);  // layers in any order, as threads take them
    grid.measure(v.data(), 0, 1, 0);
    for (std::int64_t bz = 0; bz < 2; ++bz)
        for (std::int64_t by = 0; by < 2; ++by)
            for (std::int64_t bx = 0; bx < 3; ++bx) {
                float lo = INFINITY, hi = -INFINITY;
                for (std::int64_t z = bz * 8; z <= std::min(nz - 1, bz * 8 + 8); ++z)
                    for (std::int64_t y = by * 8; y <= std::min(ny - 1, by * 8 + 8); ++y)
                        for (std::int64_t x = bx * 8; x <= std::min(nx - 1, bx * 8 + 8); ++x) {
                            const float value = v[static_cast<std::size_t>((z * ny + y) * nx + x)];
                            if (std::isnan(value)) continue;
                            lo = std::min(lo, value);
                            hi = std::max(hi, value);
                        }
                const std::int64_t b = (bz * 2 + by) * 3 + bx;
                CHECK(grid.least(b) == lo);
                CHECK(grid.greatest(b) == hi);
            }
}

TEST_CASE("a ray through a uniform volume composites to the opacity the sample count gives") {
    const std::int64_t n = 9;  // 8 world units deep, spacing 1
    std::vector<float> v(static_cast<std::size_t>(n * n * n), 1.0f);
    Piece piece{v.data(), n, n, n};
    const TransferTable table = ramp(0, 1, 0.1f, 0.0f, 1.0, 1.0);
    March march;
    march.opaque = 1.0f;
    const Image image = render(piece, table, down_z(8.0), march, 1, 16);
    // Samples from where the ray enters the volume (z = 8), one a unit:
    // z = 8 .. 1, 8 of them; z = 0 is where the ray leaves, which a piece
    // below would take.
    const double expected = 1.0 - std::pow(0.9, 8);
    const std::uint8_t* centre = &image.rgba[4 * (8 * 16 + 8)];
    CHECK(std::abs(centre[3] - expected * 255) <= 1.0);
    CHECK(std::abs(centre[0] - expected * 255) <= 1.0);  // value 1: red
    CHECK(centre[2] <= 1);
}

TEST_CASE("the picture does not depend on threads, empty-space skipping, prefetching or how the volume is cut into pieces") {
    const std::int64_t nx = 20, ny = 18, nz = 33;
    const TransferTable table = ramp(0, 1, 0.2f, 0.4f, 0.7, 2.0);
    March march;
    march.sample_distance = 0.7;
    const bool sparse = GENERATE(false, true);
    const std::vector<float> v = sparse ? sparse_volume(nx, ny, nz, 11) : random_volume(nx, ny, nz, 11);
    if (sparse) {  // there is empty space to skip
        WorkerPool pool(1);
        RayMarcher marcher;
        marcher.measure(Piece{v.data(), nx, ny, nz}, pool);
        BrickGrid grid = marcher.bricks();
        grid.classify(table);
        int empty = 0;
        for (std::int64_t z = 0; z < grid.bricks_z(); ++z)
            for (std::int64_t y = 0; y < grid.bricks_y(); ++y)
                for (std::int64_t x = 0; x < grid.bricks_x(); ++x) empty += grid.visible(x, y, z) ? 0 : 1;
        CHECK(empty > 3);
    }
    for (const Rays& rays : {down_z(33.0), oblique(33.0)}) {
        const Piece whole{v.data(), nx, ny, nz};
        const Image one = render(whole, table, rays, march, 1);
        REQUIRE(std::any_of(one.rgba.begin(), one.rgba.end(), [](std::uint8_t b) { return b > 0; }));
        CHECK(largest_difference(one, render(whole, table, rays, march, 3)) == 0);
        March every = march;
        every.skip_empty = false;
        CHECK(largest_difference(one, render(whole, table, rays, every, 2)) == 0);
        March unfetched = march;  // asking for values ahead reads the same ones
        unfetched.prefetch = false;
        CHECK(largest_difference(one, render(whole, table, rays, unfetched, 2)) == 0);
        // Eight rays at once (where the CPU has AVX2) against one at a time:
        // float against double positions, the same samples.
        March single = march;
        single.vectorised = false;
        CHECK(largest_difference(one, render(whole, table, rays, single, 1)) <= 1);
        March nearest = march, nearest_single = march;
        nearest.linear = nearest_single.linear = false;
        nearest_single.vectorised = false;
        const Image points = render(whole, table, rays, nearest, 2);
        CHECK(largest_difference(one, points) > 0);  // it is another picture
        CHECK(largest_difference(points, render(whole, table, rays, nearest_single, 1)) <= 1);

        // Two pieces sharing plane 16 (as ParaView splits a point extent),
        // each told the whole volume's box, rendered apart and composited
        // front (higher z) over back.
        const std::int64_t cut = 16;
        Piece back{v.data(), nx, ny, cut + 1};
        Piece front{v.data() + cut * nx * ny, nx, ny, nz - cut};
        front.origin[2] = static_cast<double>(cut);
        Piece box = whole;
        box.whole_is_piece();
        for (Piece* p : {&back, &front})
            for (int a = 0; a < 3; ++a) {
                p->whole_lo[a] = box.whole_lo[a];
                p->whole_hi[a] = box.whole_hi[a];
            }
        const Image b = render(back, table, rays, march, 2), f = render(front, table, rays, march, 2);
        Image over = b;
        for (std::size_t i = 0; i < over.rgba.size(); i += 4)
            for (int c = 0; c < 4; ++c)
                over.rgba[i + c] = static_cast<std::uint8_t>(std::lround(
                    f.rgba[i + c] + (1.0 - f.rgba[i + 3] / 255.0) * b.rgba[i + c]));
        CHECK(largest_difference(one, over) <= 2);  // 8-bit rounding of the two parts
    }
}

TEST_CASE("a coarse frame of a new step marches without measuring its bricks; a frame that may measure does, once") {
    const std::int64_t nx = 20, ny = 18, nz = 33;
    const std::vector<float> v = sparse_volume(nx, ny, nz, 5);
    const Piece piece{v.data(), nx, ny, nz};
    const TransferTable table = ramp(0, 1, 0.2f, 0.4f, 0.7, 2.0);
    WorkerPool pool(2);
    RayMarcher marcher;
    Image coarse, fine;
    coarse.resize(48, 48);
    fine.resize(48, 48);
    March march;
    march.sample_distance = 0.7;
    march.may_measure = false;
    marcher.render(piece, table, down_z(33.0), march, coarse, pool);
    CHECK_FALSE(marcher.measured());
    march.may_measure = true;
    marcher.render(piece, table, down_z(33.0), march, fine, pool);
    CHECK(marcher.measured());
    // Skipping or not, the same picture.
    CHECK(largest_difference(coarse, fine) == 0);
    // Measured once for these values, a coarse frame skips by them too.
    march.may_measure = false;
    marcher.render(piece, table, down_z(33.0), march, coarse, pool);
    CHECK(marcher.measured());
    marcher.new_values();
    CHECK_FALSE(marcher.measured());
}

TEST_CASE("a frame asked to stop stops and says so; one never stopped is the frame drawn without asking") {
    const std::int64_t nx = 20, ny = 18, nz = 33;
    const std::vector<float> v = random_volume(nx, ny, nz, 7);
    const Piece piece{v.data(), nx, ny, nz};
    const TransferTable table = ramp(0, 1, 0.2f, 0.1f, 0.7, 2.0);
    WorkerPool pool(2);
    RayMarcher marcher;
    March march;
    march.sample_distance = 0.7;
    Image plain, asked, stopped;
    for (Image* image : {&plain, &asked, &stopped}) image->resize(96, 96);
    CHECK(marcher.render(piece, table, down_z(33.0), march, plain, pool));

    int asks = 0;
    march.stop = [&asks] {
        ++asks;
        return false;
    };
    CHECK(marcher.render(piece, table, down_z(33.0), march, asked, pool));
    CHECK(asks >= 1);  // before any tile is handed out, whichever thread takes them
    CHECK(largest_difference(plain, asked) == 0);

    // On the calling thread alone (no other thread to have begun a tile),
    // stopped before its first tile: nothing drawn.
    WorkerPool alone(1);
    march.stop = [] { return true; };
    CHECK_FALSE(marcher.render(piece, table, down_z(33.0), march, stopped, alone));
    CHECK(std::all_of(stopped.rgba.begin(), stopped.rgba.end(), [](std::uint8_t c) { return c == 0; }));
    CHECK(std::any_of(plain.rgba.begin(), plain.rgba.end(), [](std::uint8_t c) { return c != 0; }));

    // A new step's first full frame measures its bricks first (a pass over the
    // piece): that stops too, and leaves them to measure again.
    RayMarcher fresh;
    CHECK_FALSE(fresh.render(piece, table, down_z(33.0), march, stopped, alone));
    CHECK_FALSE(fresh.measured());
    march.stop = nullptr;
    CHECK(fresh.render(piece, table, down_z(33.0), march, stopped, alone));
    CHECK(fresh.measured());
    CHECK(largest_difference(plain, stopped) == 0);
}
