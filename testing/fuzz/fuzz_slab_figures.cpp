// libFuzzer harness: the stream figures one ParaView process sends another
// (slab_figures_wire.h). Whatever decodes must encode back to the same bytes:
// the decoder took exactly one message, field by field.
#include "slabcast/slab_figures_wire.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto slabs = slabcast::decode_figures(data, size);
    if (!slabs) return 0;
    const std::string again = slabcast::encode_figures(*slabs);
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) std::abort();
    return 0;
}
