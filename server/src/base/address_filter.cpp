#include "base/address_filter.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <stdexcept>

namespace slabcast {
namespace {

bool prefix_matches(const std::uint8_t* a, const std::uint8_t* b, int bits) {
    const int whole = bits / 8, rest = bits % 8;
    if (std::memcmp(a, b, static_cast<std::size_t>(whole)) != 0) return false;
    if (rest == 0) return true;
    const auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

}  // namespace

void AddressFilter::add(const std::string& cidr) {
    const auto slash = cidr.find('/');
    const std::string host = cidr.substr(0, slash);
    Block b{};
    b.text = cidr;
    if (::inet_pton(AF_INET, host.c_str(), b.address.data()) == 1) b.v4 = true;
    else if (::inet_pton(AF_INET6, host.c_str(), b.address.data()) == 1) b.v4 = false;
    else throw std::invalid_argument("--allow '" + cidr + "': not an IPv4 or IPv6 address");
    const int max = b.v4 ? 32 : 128;
    b.prefix = max;
    if (slash != std::string::npos) {
        const std::string bits = cidr.substr(slash + 1);
        std::size_t used = 0;
        try {
            b.prefix = std::stoi(bits, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (bits.empty() || used != bits.size() || b.prefix < 0 || b.prefix > max)
            throw std::invalid_argument("--allow '" + cidr + "': prefix must be 0.." + std::to_string(max));
    }
    blocks_.push_back(b);
}

void AddressFilter::add_list(const std::string& list) {
    // All or nothing: a list with a bad item adds none of its items.
    AddressFilter parsed;
    std::size_t at = 0;
    while (at <= list.size()) {
        const std::size_t end = std::min(list.find(',', at), list.size());
        const std::string item = list.substr(at, end - at);
        if (item.empty()) throw std::invalid_argument("--allow '" + list + "': empty item");
        parsed.add(item);
        at = end + 1;
    }
    blocks_.insert(blocks_.end(), parsed.blocks_.begin(), parsed.blocks_.end());
}

bool AddressFilter::allows(const sockaddr_storage& source) const {
    std::uint8_t v4[4], v6[16];
    bool is_v4 = false;
    if (source.ss_family == AF_INET) {
        std::memcpy(v4, &reinterpret_cast<const sockaddr_in&>(source).sin_addr, 4);
        is_v4 = true;
    } else if (source.ss_family == AF_INET6) {
        const auto& a = reinterpret_cast<const sockaddr_in6&>(source).sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(&a)) {
            std::memcpy(v4, a.s6_addr + 12, 4);
            is_v4 = true;
        } else {
            std::memcpy(v6, a.s6_addr, 16);
        }
    } else {
        return false;
    }
    for (const Block& b : blocks_)
        if (b.v4 == is_v4 && prefix_matches(b.address.data(), is_v4 ? v4 : v6, b.prefix)) return true;
    return false;
}

std::string AddressFilter::to_string() const {
    std::string out;
    for (const Block& b : blocks_) out += (out.empty() ? "" : ",") + b.text;
    return out.empty() ? "any sender" : out;
}

}  // namespace slabcast
