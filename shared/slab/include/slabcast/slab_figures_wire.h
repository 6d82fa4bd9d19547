// Slabs' stream figures as bytes, the one encoding for the two ways they
// travel between processes: from pvserver's ranks to the client's stream
// monitor (vtkSlabcastStreamInformation) and among the reader's ranks before
// they total the stream (SlabcastAgreement.cxx). The bytes come from another
// process, perhaps another host: decoding checks every count and length.
#pragma once

#include "slabcast/slab_figures.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace slabcast {

// What one message may hold: more slabs, or a longer host name, are refused.
constexpr std::size_t kMaxFigureSlabs = 65536;
constexpr std::size_t kMaxFigureHostBytes = 255;
constexpr std::size_t kMaxFigureReadersBytes = 255;
// The longest message: a count, then each slab's index, host name (a length
// and its bytes), fourteen 8-byte figures, whether it is receiving, whether
// it holds no step, its last publication (three 8-byte figures: step, time,
// latency), its buffers and pins (three 4-byte figures) and its readers (a
// length and its bytes).
constexpr std::size_t kMaxFigureSlabBytes =
    4 + 1 + kMaxFigureHostBytes + 14 * 8 + 1 + 1 + 3 * 8 + 3 * 4 + 1 + kMaxFigureReadersBytes;
constexpr std::size_t kMaxFigureBytes = 4 + kMaxFigureSlabs * kMaxFigureSlabBytes;

// Every field of every slab, in the host's byte order (as every slabcast
// message); a host name longer than kMaxFigureHostBytes is cut there (the
// readers' text at kMaxFigureReadersBytes), and
// slabs past kMaxFigureSlabs are left out.
std::string encode_figures(const std::vector<SlabFigures>& slabs);
// nullopt unless `bytes` is exactly one encode_figures message (a count
// within kMaxFigureSlabs, each slab whole, nothing after the last).
std::optional<std::vector<SlabFigures>> decode_figures(const void* bytes, std::size_t length);

}  // namespace slabcast
