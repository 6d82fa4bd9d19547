// The C API (slabcast/slabcast.h): every call catches what the C++ below it
// throws and turns it into a status code and the calling thread's message.
#include "sender.h"

#include <algorithm>
#include <new>
#include <string>

struct slabcast_sender {
    slabcast::library::Sender sender;
};

namespace {

thread_local std::string last_error;

template <class F>
int guarded(F f) {
    try {
        f();
        last_error.clear();
        return SLABCAST_OK;
    } catch (const slabcast::library::Error& e) {
        last_error = e.what();
        return e.code;
    } catch (const std::bad_alloc&) {
        last_error = "out of memory";
        return SLABCAST_ERROR_MEMORY;
    } catch (const std::exception& e) {
        last_error = e.what();
        return SLABCAST_ERROR_STATE;
    }
}

int missing(const char* what) {
    last_error = std::string(what) + ": NULL";
    return SLABCAST_ERROR_ARGUMENT;
}

}  // namespace

extern "C" {

void slabcast_options_init(slabcast_options* options) {
    if (options) *options = slabcast_options{};
}

int slabcast_rank_slab(int64_t nz, int rank, int size, int64_t* z_begin, int64_t* z_end, int64_t* slab_depth) {
    if (!z_begin || !z_end || !slab_depth) return missing("z_begin, z_end or slab_depth");
    return guarded([&] {
        if (nz < 1 || nz > slabcast::kMaxAxis)
            throw slabcast::library::Error(SLABCAST_ERROR_ARGUMENT, "nz " + std::to_string(nz) + ": expected 1..2^20");
        if (size < 1 || rank < 0 || rank >= size)
            throw slabcast::library::Error(SLABCAST_ERROR_ARGUMENT, "rank " + std::to_string(rank) + " of " +
                                                                        std::to_string(size) + ": expected 0..size-1");
        const int64_t depth = (nz + size - 1) / size;
        *slab_depth = depth;
        *z_begin = std::min(nz, rank * depth);
        *z_end = std::min(nz, (rank + 1) * depth);
    });
}

int slabcast_open(const slabcast_options* options, slabcast_sender** sender) {
    if (!options) return missing("options");
    if (!sender) return missing("sender");
    *sender = nullptr;
    return guarded([&] { *sender = new slabcast_sender{slabcast::library::Sender(*options)}; });
}

int slabcast_send_step(slabcast_sender* sender, int32_t step, const float* values) {
    if (!sender) return missing("sender");
    return guarded([&] { sender->sender.send_step(step, values); });
}

int slabcast_flush(slabcast_sender* sender) {
    if (!sender) return missing("sender");
    return guarded([&] { sender->sender.flush(); });
}

int slabcast_get_stats(const slabcast_sender* sender, slabcast_stats* stats) {
    if (!sender) return missing("sender");
    if (!stats) return missing("stats");
    return guarded([&] { *stats = sender->sender.stats(); });
}

int slabcast_close(slabcast_sender* sender) {
    if (!sender) return SLABCAST_OK;
    const int status = guarded([&] { sender->sender.flush(); });
    delete sender;  // stops the sending thread
    return status;
}

const char* slabcast_last_error(void) { return last_error.c_str(); }

}  // extern "C"
