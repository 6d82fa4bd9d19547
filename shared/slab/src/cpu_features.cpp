#include "slabcast/cpu_features.h"

namespace slabcast {

bool cpu_has_avx2_fma() {
#if defined(__x86_64__)
    // Asked once; __builtin_cpu_init first, so that a static initializer may ask too.
    static const bool yes = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }();
    return yes;
#else
    return false;
#endif
}

}  // namespace slabcast
