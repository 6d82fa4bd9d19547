// The manifest as it travels in Manifest frames: its JSON compressed with
// zstd. Ten thousand files make 873 KiB of JSON and 127 KiB compressed, and
// on a long path a fresh connection sends the first in six round trips of
// TCP's slow start and the second in three; compressing and expanding it
// takes 3 ms. The frames' `file` field names the encoding, so a peer may
// still send plain JSON.
#pragma once

#include <cstdint>
#include <string>

namespace slabcast::mover {

// The Manifest frames' `file`: how the bytes they carry are encoded.
inline constexpr std::uint32_t kManifestJson = 0, kManifestZstd = 1;

// `json` as one zstd frame that declares its own size.
std::string compress_manifest(const std::string& json);

// The JSON of a manifest that arrived as `bytes` in `encoding`. A zstd frame
// must declare its size, at most `limit` bytes (serve --max-manifest-mb),
// before anything is allocated for it, and expand to exactly that size.
// Throws std::runtime_error naming the problem.
std::string manifest_json(std::uint32_t encoding, const std::string& bytes, std::uint64_t limit);

}  // namespace slabcast::mover
