#include "mover/manifest_wire.h"

#include <fmt/format.h>
#include <zstd.h>

#include <stdexcept>

namespace slabcast::mover {

std::string compress_manifest(const std::string& json) {
    std::string out(ZSTD_compressBound(json.size()), '\0');
    // Level 1: 7x smaller for a tree's names, in a third of the time level 3 takes.
    const std::size_t n = ZSTD_compress(out.data(), out.size(), json.data(), json.size(), 1);
    if (ZSTD_isError(n)) throw std::runtime_error(std::string("compressing the manifest: ") + ZSTD_getErrorName(n));
    out.resize(n);
    return out;
}

std::string manifest_json(std::uint32_t encoding, const std::string& bytes, std::uint64_t limit) {
    if (encoding == kManifestJson) return bytes;
    if (encoding != kManifestZstd)
        throw std::runtime_error(fmt::format("a manifest in encoding {} (field 'file'): 0 (JSON) and 1 (zstd) are known",
                                             encoding));
    const unsigned long long size = ZSTD_getFrameContentSize(bytes.data(), bytes.size());
    if (size == ZSTD_CONTENTSIZE_ERROR) throw std::runtime_error("the compressed manifest is not a zstd frame");
    if (size == ZSTD_CONTENTSIZE_UNKNOWN)
        throw std::runtime_error("the compressed manifest does not declare its size (zstd frame header)");
    if (size == 0) throw std::runtime_error("an empty manifest (its zstd frame declares 0 bytes)");
    if (size > limit)
        throw std::runtime_error(fmt::format("the manifest expands to {} bytes (its zstd frame header), above the "
                                             "limit of {} bytes (serve --max-manifest-mb)", size, limit));
    std::string json(size, '\0');
    // Expands into exactly the declared size: a frame that makes more (or a
    // second frame behind it) fails for want of room, one that makes less is
    // caught below.
    const std::size_t n = ZSTD_decompress(json.data(), json.size(), bytes.data(), bytes.size());
    if (ZSTD_isError(n)) throw std::runtime_error(std::string("the compressed manifest is damaged: ") + ZSTD_getErrorName(n));
    if (n != size)
        throw std::runtime_error(fmt::format("the compressed manifest expands to {} bytes, not the {} it declares", n, size));
    return json;
}

}  // namespace slabcast::mover
