#include "slabcast/step_file.h"

#include <fcntl.h>
#include <lz4frame.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace slabcast {

namespace {

// Input is compressed 4 MiB at a time into independent blocks of up to that
// size (the largest LZ4 frames allow; a small step's blocks are no larger than
// it), so the frame's overhead stays small and the buffers are allocated once
// a file.
constexpr std::size_t kChunk = std::size_t{4} << 20;
constexpr std::size_t kReadChunk = std::size_t{1} << 20;

LZ4F_preferences_t frame_preferences(std::uint64_t decoded_bytes) {
    LZ4F_preferences_t p{};
    // No larger a block than the step: both sides allocate a block's buffer.
    p.frameInfo.blockSizeID = decoded_bytes <= (64u << 10)    ? LZ4F_max64KB
                              : decoded_bytes <= (256u << 10) ? LZ4F_max256KB
                              : decoded_bytes <= (1u << 20)   ? LZ4F_max1MB
                                                              : LZ4F_max4MB;
    p.frameInfo.blockMode = LZ4F_blockIndependent;
    p.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    p.frameInfo.contentSize = decoded_bytes;
    return p;
}

}  // namespace

std::string to_string(StepCodec codec) { return codec == StepCodec::Lz4 ? "lz4" : "none"; }

StepCodec parse_step_codec(const std::string& text) {
    if (text == "none") return StepCodec::None;
    if (text == "lz4") return StepCodec::Lz4;
    throw std::invalid_argument("codec '" + text + "' is not one of: none, lz4");
}

// ---- reading ------------------------------------------------------------------

struct StepFileReader::Lz4 {
    LZ4F_dctx* dctx = nullptr;
    std::vector<std::uint8_t> in;  // a megabyte, or the whole file when it is smaller
    std::size_t in_begin = 0, in_end = 0;
    bool file_ended = false;
    bool frame_ended = false;  // its end mark and checksum read
    std::vector<std::uint8_t> scratch;  // decoded bytes a caller skips
    ~Lz4() { LZ4F_freeDecompressionContext(dctx); }
};

StepFileReader::StepFileReader(const std::string& path, StepCodec codec, std::uint64_t decoded_bytes)
    : path_(path), codec_(codec), total_(decoded_bytes) {
    fd_ = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd_.valid()) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
    if (codec_ == StepCodec::Lz4) {
        lz4_ = std::make_unique<Lz4>();
        struct stat st {};
        const std::uint64_t file = ::fstat(fd_.get(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : kReadChunk;
        lz4_->in.resize(static_cast<std::size_t>(std::clamp<std::uint64_t>(file + 1, 64, kReadChunk)));
        if (LZ4F_isError(LZ4F_createDecompressionContext(&lz4_->dctx, LZ4F_VERSION)))
            throw std::runtime_error(path + ": cannot start an LZ4 decoder");
    }
}

StepFileReader::~StepFileReader() = default;

std::uint64_t StepFileReader::read_raw(std::uint8_t* out, std::uint64_t n) {
    std::uint64_t done = 0;
    while (done < n) {
        const ssize_t got = ::read(fd_.get(), out + done, std::min<std::uint64_t>(n - done, std::uint64_t{1} << 30));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw std::runtime_error(path_ + ": read error: " + std::strerror(errno));
        if (got == 0) break;
        done += static_cast<std::uint64_t>(got);
    }
    return done;
}

std::uint64_t StepFileReader::read_lz4(std::uint8_t* out, std::uint64_t n) {
    Lz4& z = *lz4_;
    std::uint64_t done = 0;
    while (done < n && !z.frame_ended) {
        if (z.in_begin == z.in_end && !z.file_ended) {
            z.in_begin = 0;
            z.in_end = static_cast<std::size_t>(read_raw(z.in.data(), z.in.size()));
            z.file_ended = z.in_end < z.in.size();
        }
        std::size_t dst = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, kChunk));
        std::size_t src = z.in_end - z.in_begin;
        const std::size_t hint = LZ4F_decompress(z.dctx, out + done, &dst, z.in.data() + z.in_begin, &src, nullptr);
        if (LZ4F_isError(hint))
            throw std::runtime_error(path_ + ": not a whole LZ4 frame (" + LZ4F_getErrorName(hint) + ")");
        z.in_begin += src;
        done += dst;
        if (hint == 0) {
            z.frame_ended = true;
        } else if (src == 0 && dst == 0) {
            // Room to write and no progress: the frame wants input the file does not have.
            if (z.in_begin == z.in_end && z.file_ended)
                throw std::runtime_error(path_ + ": cut short: its LZ4 frame ends after " +
                                         std::to_string(position_ + done) + " of " + std::to_string(total_) + " bytes");
            throw std::runtime_error(path_ + ": the LZ4 decoder made no progress");
        }
    }
    return done;
}

void StepFileReader::read(void* out, std::uint64_t n) {
    if (n > total_ - position_)
        throw std::runtime_error(path_ + ": asked for bytes past its " + std::to_string(total_));
    if (codec_ == StepCodec::None) {
        if (out) {
            if (read_raw(static_cast<std::uint8_t*>(out), n) != n)
                throw std::runtime_error(path_ + ": shorter than the " + std::to_string(total_) + " bytes of a step");
        } else if (::lseek(fd_.get(), static_cast<off_t>(n), SEEK_CUR) < 0) {
            throw std::runtime_error(path_ + ": cannot seek: " + std::strerror(errno));
        }
    } else {
        if (!out) lz4_->scratch.resize(static_cast<std::size_t>(std::min<std::uint64_t>(n, kChunk)));
        for (std::uint64_t left = n; left > 0;) {
            const std::uint64_t piece = out ? left : std::min<std::uint64_t>(left, lz4_->scratch.size());
            std::uint8_t* to = out ? static_cast<std::uint8_t*>(out) + (n - left) : lz4_->scratch.data();
            if (read_lz4(to, piece) != piece)
                throw std::runtime_error(path_ + ": its LZ4 frame holds fewer than the " + std::to_string(total_) +
                                         " bytes of a step");
            left -= piece;
        }
    }
    position_ += n;
}

void StepFileReader::finish() {
    read(nullptr, total_ - position_);
    std::uint8_t extra = 0;
    if (codec_ == StepCodec::None) {
        if (read_raw(&extra, 1) != 0)
            throw std::runtime_error(path_ + ": longer than the " + std::to_string(total_) + " bytes of a step");
        return;
    }
    // The end mark and the checksum, checked; a frame that goes on is named.
    std::uint8_t more[4096];
    while (!lz4_->frame_ended)
        if (read_lz4(more, sizeof more) != 0)
            throw std::runtime_error(path_ + ": its LZ4 frame holds more than the " + std::to_string(total_) +
                                     " bytes of a step");
    if (lz4_->in_begin != lz4_->in_end || read_raw(&extra, 1) != 0)
        throw std::runtime_error(path_ + ": bytes after its LZ4 frame");
}

void read_step_planes(const std::string& path, StepCodec codec, const Dims& dims, std::size_t value_bytes,
                      std::int64_t z_begin, std::int64_t z_end, void* out) {
    if (z_begin < 0 || z_end > dims.nz || z_begin > z_end)
        throw std::runtime_error(path + ": planes " + std::to_string(z_begin) + ".." + std::to_string(z_end) +
                                 " lie outside " + to_string(dims));
    // Within kMaxAxis (the dataset was checked) none of these products wraps.
    const std::uint64_t plane = static_cast<std::uint64_t>(dims.plane()) * value_bytes;
    StepFileReader reader(path, codec, plane * static_cast<std::uint64_t>(dims.nz));
    reader.read(nullptr, plane * static_cast<std::uint64_t>(z_begin));
    reader.read(out, plane * static_cast<std::uint64_t>(z_end - z_begin));
    // Raw files are checked for their size only; a frame is read to its end,
    // where its checksum covers every value.
    if (codec == StepCodec::Lz4) reader.finish();
    else if (z_end == dims.nz) reader.finish();
}

// ---- writing ------------------------------------------------------------------

struct StepFileWriter::Lz4 {
    LZ4F_cctx* cctx = nullptr;
    LZ4F_preferences_t prefs{};
    std::vector<std::uint8_t> out;
    ~Lz4() { LZ4F_freeCompressionContext(cctx); }
};

StepFileWriter::StepFileWriter(int fd, StepCodec codec, std::uint64_t decoded_bytes)
    : fd_(fd), codec_(codec), total_(decoded_bytes) {
    if (codec_ != StepCodec::Lz4) return;
    lz4_ = std::make_unique<Lz4>();
    lz4_->prefs = frame_preferences(decoded_bytes);
    if (LZ4F_isError(LZ4F_createCompressionContext(&lz4_->cctx, LZ4F_VERSION)))
        throw std::runtime_error("cannot start an LZ4 encoder");
    // Room for the largest piece write() compresses at once (a small step's whole).
    const auto piece = static_cast<std::size_t>(std::min<std::uint64_t>(decoded_bytes, kChunk));
    lz4_->out.resize(std::max<std::size_t>(LZ4F_compressBound(piece, &lz4_->prefs), LZ4F_HEADER_SIZE_MAX));
    const std::size_t n = LZ4F_compressBegin(lz4_->cctx, lz4_->out.data(), lz4_->out.size(), &lz4_->prefs);
    if (LZ4F_isError(n)) throw std::runtime_error(std::string("LZ4 frame header: ") + LZ4F_getErrorName(n));
    put(lz4_->out.data(), n);
}

StepFileWriter::~StepFileWriter() = default;

void StepFileWriter::put(const void* data, std::size_t n) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    for (std::size_t done = 0; done < n;) {
        const ssize_t w = ::write(fd_, p + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) throw std::system_error(errno, std::generic_category(), "write");
        done += static_cast<std::size_t>(w);
    }
    stored_ += n;
}

void StepFileWriter::write(const void* data, std::uint64_t n) {
    if (n > total_ - written_) throw std::runtime_error("step file: more than " + std::to_string(total_) + " bytes");
    written_ += n;
    if (codec_ == StepCodec::None) {
        put(data, static_cast<std::size_t>(n));
        return;
    }
    const auto* p = static_cast<const std::uint8_t*>(data);
    for (std::uint64_t done = 0; done < n;) {
        const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, kChunk));
        const std::size_t c =
            LZ4F_compressUpdate(lz4_->cctx, lz4_->out.data(), lz4_->out.size(), p + done, piece, nullptr);
        if (LZ4F_isError(c)) throw std::runtime_error(std::string("LZ4: ") + LZ4F_getErrorName(c));
        put(lz4_->out.data(), c);
        done += piece;
    }
}

void StepFileWriter::finish() {
    if (written_ != total_)
        throw std::runtime_error("step file: " + std::to_string(written_) + " of " + std::to_string(total_) + " bytes");
    if (codec_ != StepCodec::Lz4) return;
    const std::size_t c = LZ4F_compressEnd(lz4_->cctx, lz4_->out.data(), lz4_->out.size(), nullptr);
    if (LZ4F_isError(c)) throw std::runtime_error(std::string("LZ4: ") + LZ4F_getErrorName(c));
    put(lz4_->out.data(), c);
}

}  // namespace slabcast
