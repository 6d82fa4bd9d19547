// One file of a dataset step: a step's values (float32, x fastest) or, in a
// recording, its ages (one byte a value), stored raw or as one LZ4 frame (the
// `lz4` tool's format, with its content checksum, so a damaged file is named,
// never read as data, and `lz4 -d` restores the raw file). Read and written a
// piece at a time, so neither side holds a whole step twice.
#pragma once

#include "slabcast/unique_fd.h"
#include "slabcast/volume.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace slabcast {

enum class StepCodec { None, Lz4 };

// "none", "lz4".
std::string to_string(StepCodec codec);
// Throws std::invalid_argument naming the text and the codecs there are.
StepCodec parse_step_codec(const std::string& text);

// Reads a step file from its start. Throws std::runtime_error naming the file
// and the problem: missing, shorter or longer than `decoded_bytes`, not an LZ4
// frame, its checksum wrong.
class StepFileReader {
public:
    StepFileReader(const std::string& path, StepCodec codec, std::uint64_t decoded_bytes);
    ~StepFileReader();
    StepFileReader(const StepFileReader&) = delete;
    StepFileReader& operator=(const StepFileReader&) = delete;

    // The next `n` decoded bytes into `out` (nullptr: skipped).
    void read(void* out, std::uint64_t n);
    // Reads what is left and checks the file ends there, with the checksum.
    void finish();
    std::uint64_t position() const { return position_; }
    std::uint64_t total() const { return total_; }
    const std::string& path() const { return path_; }

private:
    std::uint64_t read_raw(std::uint8_t* out, std::uint64_t n);  // file bytes, short only at the end
    // Up to `n` decoded bytes (fewer only where the frame ends).
    std::uint64_t read_lz4(std::uint8_t* out, std::uint64_t n);
    std::string path_;
    StepCodec codec_;
    UniqueFd fd_;
    std::uint64_t total_ = 0, position_ = 0;
    struct Lz4;
    std::unique_ptr<Lz4> lz4_;
};

// Planes [z_begin, z_end) of a whole-volume step file of `dims` with
// `value_bytes` bytes a value, into `out` ((z_end - z_begin) planes). The
// planes before are decoded and dropped (LZ4) or skipped (raw, pread).
void read_step_planes(const std::string& path, StepCodec codec, const Dims& dims, std::size_t value_bytes,
                      std::int64_t z_begin, std::int64_t z_end, void* out);

// Writes a step file into `fd` (a new, empty file) a piece at a time. Throws
// std::system_error with the errno of a failed write (ENOSPC: the disk is full).
class StepFileWriter {
public:
    StepFileWriter(int fd, StepCodec codec, std::uint64_t decoded_bytes);
    ~StepFileWriter();
    StepFileWriter(const StepFileWriter&) = delete;
    StepFileWriter& operator=(const StepFileWriter&) = delete;

    void write(const void* data, std::uint64_t n);
    // Ends the frame; throws when fewer or more than `decoded_bytes` were written.
    void finish();
    // Bytes written to the file so far.
    std::uint64_t stored_bytes() const { return stored_; }

private:
    void put(const void* data, std::size_t n);
    int fd_;
    StepCodec codec_;
    std::uint64_t total_ = 0, written_ = 0, stored_ = 0;
    struct Lz4;
    std::unique_ptr<Lz4> lz4_;
};

}  // namespace slabcast
