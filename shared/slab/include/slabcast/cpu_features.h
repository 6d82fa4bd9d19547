// Whether this CPU runs the kernels built for more than plain x86-64 (the
// quant codec's blocks, the ray marcher's eight rays): each is called only
// where this says so. Its own file, built with no -mavx2 or -mfma, so that the
// check itself runs on any x86-64.
#pragma once

namespace slabcast {

// AVX2 and FMA both: every kernel built for AVX2 here uses FMA too. False off x86-64.
bool cpu_has_avx2_fma();

}  // namespace slabcast
