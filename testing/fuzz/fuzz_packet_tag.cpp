// libFuzzer harness: the check of a data datagram's tag (slabcast/packet_tag.h),
// what a receiver does with every datagram of a stream that has a key before
// a byte of it is placed. Two ways to read the input, by its first byte:
//   even: datagrams as a forger sends them (a 16-bit length, then the
//         bytes): none may pass (a tag forged from nothing is a break of
//         GMAC), and nothing may read past them (ASan);
//   odd:  datagrams the real sender seals (a count and lengths from the
//         input), then delivered as the input says (which one, whether a bit
//         of it is flipped and where, whether it is cut short): a datagram
//         passes at most once, never with a bit flipped or cut, and one sent
//         and delivered whole for the first time, within the window, passes.
#include "fuzz_input.h"

#include "slabcast/packet_tag.h"

#include <vector>

using namespace slabcast;

namespace {

tag::Key key() {
    tag::Key k{};
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint8_t>(i * 11 + 3);
    return k;
}

void forged(FuzzInput& in) {
    tag::Checker checker(key(), 1);
    while (in.left() > 2) {
        const auto n = in.take_or_short<std::uint16_t>();
        const std::string bytes = in.bytes(n % 9001);
        std::vector<std::uint8_t> d(bytes.begin(), bytes.end());  // exactly its length: ASan sees a read past it
        std::size_t payload = 0;
        if (checker.check(d.data(), d.size(), payload) == tag::Verdict::Ok) __builtin_trap();
    }
}

void sealed(FuzzInput& in) {
    const auto count = static_cast<std::size_t>(in.take_or_short<std::uint8_t>() % 64 + 1);
    tag::Tagger tagger(key(), 1, 1'765'000'000'000'000'000ull + in.take_or_short<std::uint8_t>());
    std::vector<std::vector<std::uint8_t>> sent;
    for (std::size_t i = 0; i < count; ++i) {
        const std::size_t length = in.take_or_short<std::uint16_t>() % 8953;
        std::vector<std::uint8_t> d(length + tag::kTrailerBytes, static_cast<std::uint8_t>(i));
        tagger.seal(d.data(), length);
        sent.push_back(std::move(d));
    }
    tag::Checker checker(key(), 1);
    std::vector<bool> passed(count, false);
    while (in.left() >= 4) {
        const std::size_t which = in.take_or_short<std::uint8_t>() % count;
        const auto how = in.take_or_short<std::uint8_t>();
        const auto where = in.take_or_short<std::uint16_t>();
        std::vector<std::uint8_t> d = sent[which];
        const bool flipped = (how & 1) != 0, cut = (how & 2) != 0 && !d.empty();
        if (flipped) d[where % d.size()] ^= static_cast<std::uint8_t>(1u << (how >> 5));
        if (cut) d.resize(where % d.size());
        std::size_t payload = 0;
        const tag::Verdict v = checker.check(d.data(), d.size(), payload);
        if (v == tag::Verdict::Ok) {
            if (flipped || cut || passed[which]) __builtin_trap();
            if (payload + tag::kTrailerBytes != d.size()) __builtin_trap();
            passed[which] = true;
        } else if (!flipped && !cut && !passed[which]) {
            // Sent once, whole, from one session: only the window can refuse
            // it, and a window of kWidth holds every one of the 64 at most.
            __builtin_trap();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzInput in(data, size);
    if (size == 0) return 0;
    if (in.take_or_short<std::uint8_t>() % 2 == 0)
        forged(in);
    else
        sealed(in);
    return 0;
}
