// Peers for bench_run_codecs: published lossy codecs measured on the same
// slab as the run packets' codecs, each cut into pieces that decode on their
// own as a packet would. Benchmark-only: no wire format carries them.
//
//   bitround:N+shuffle+lz4   float32 mantissas rounded to N bits, round to
//   bitround:N+shuffle+zstd  nearest, ties to even ("bitround": Kloewer et al.,
//                            2021, Nat. Comput. Sci. 1, 713-724; Blosc2's
//                            TRUNC_PREC filter keeps N bits by truncation),
//                            then the 4 byte planes of a run of kMaxValues
//                            values (a full codec-none packet) shuffled apart
//                            and compressed: LZ4 (LZ4_compress_default) or
//                            zstd level 1. NaN and infinity pass unchanged.
//   zfp3d:RATE               zfp fixed rate (Lindstrom, 2014, IEEE TVCG 20(12),
//                            2674-2683) on 3-D blocks: one piece is a brick of
//                            nx x 4 rows x 4 planes of the slab, so each of its
//                            4x4x4 blocks decorrelates across rows and planes
//                            too, where the project's zfp:RATE codes 1-D blocks
//                            of 4 values along a run.
#pragma once

#include "slabcast/volume.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace slabcast::bench {

// The peers bench_run_codecs measures, by name.
const std::vector<std::string>& peer_names();

// One peer over one slab of `dims.nx x dims.ny x planes` values (x fastest).
class CodecPeer {
public:
    virtual ~CodecPeer() = default;
    virtual std::size_t pieces() const = 0;
    // The most bytes one piece's encoding takes (room encode needs at `out`).
    virtual std::size_t max_piece_bytes() const = 0;
    // Codes piece `i` of the slab at `slab` into `out`; returns its bytes.
    virtual std::size_t encode(std::size_t i, const float* slab, std::uint8_t* out) = 0;
    // Decodes piece `i` from its `bytes` bytes into its place in `slab`; false
    // when they do not decode to exactly its values.
    virtual bool decode(std::size_t i, const std::uint8_t* in, std::size_t bytes, float* slab) = 0;
};

// Throws std::invalid_argument for a name peer_names() does not list.
std::unique_ptr<CodecPeer> make_peer(const std::string& name, const Dims& dims, std::int64_t planes);

}  // namespace slabcast::bench
