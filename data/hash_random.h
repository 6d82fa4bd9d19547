// Counter-based random numbers: value i of stream `seed` depends only on (seed, i),
// never on the order values are drawn in, so a voxel's noise is the same however
// the loops run and std::*_distribution's library-specific algorithms are avoided.
#pragma once

#include <cmath>
#include <cstdint>

namespace datagen {

inline std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Uniform in (0, 1): never 0, so log() below is finite.
inline double uniform_open(std::uint64_t h) { return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53; }

// Standard normal deviate number `i` of stream `seed` (Box-Muller, cosine branch).
inline double gaussian(std::uint64_t seed, std::uint64_t i) {
    const std::uint64_t h = mix(seed ^ mix(2 * i));
    const double u1 = uniform_open(h), u2 = uniform_open(mix(h ^ 0x5851f42d4c957f2dULL));
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace datagen
