#include "slabcast/slab_file.h"

#include "slabcast/confined_path.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace slabcast {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
    throw std::runtime_error(path + ": " + problem);
}

std::string errno_text() { return std::strerror(errno); }

// Bytes of values of a slab: NX * NY * planes * 4, or false when it does not
// fit 64 bits (a crafted header: 2^30 * 2^30 * 2^4 * 4 wraps to 0).
bool data_bytes_of(std::int64_t nx, std::int64_t ny, std::int64_t planes, std::uint64_t& out) {
    std::uint64_t plane = 0, values = 0;
    if (nx < 0 || ny < 0 || planes < 0) return false;
    return !__builtin_mul_overflow(static_cast<std::uint64_t>(nx), static_cast<std::uint64_t>(ny), &plane) &&
           !__builtin_mul_overflow(plane, static_cast<std::uint64_t>(planes), &values) &&
           !__builtin_mul_overflow(values, std::uint64_t{sizeof(float)}, &out);
}

bool round_to_page(std::uint64_t bytes, std::uint64_t& out) {
    constexpr std::uint64_t kPage = 4096;
    if (__builtin_add_overflow(bytes, kPage - 1, &out)) return false;
    out &= ~(kPage - 1);
    return true;
}

// Whether the open file `fd` is a slab of exactly this shape, `total` bytes long.
bool file_matches(int fd, std::uint64_t total, const Dims& dims, int slab_depth, const SlabGeometry& geometry,
                  const std::string& field, int buffers) {
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) != total)
        return false;
    SlabHeader h{};
    return ::pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h) && slab_header_problem(h, total).empty() &&
           h.nx == dims.nx && h.ny == dims.ny && h.nz == dims.nz && h.slab_depth == slab_depth &&
           h.slab_index == geometry.index && h.stored_z_begin == geometry.stored_z_begin && h.z_end == geometry.z_end &&
           field == h.field && h.buffers == static_cast<std::uint32_t>(buffers);
}

std::string plane_range(const SlabHeader& h) {
    return std::to_string(h.stored_z_begin) + ".." + std::to_string(h.z_end);
}

}  // namespace

bool slab_layout(std::uint64_t values, int buffers, SlabLayout& out) {
    if (buffers < kMinBuffers || buffers > kMaxBuffers) return false;
    const auto k = static_cast<std::uint64_t>(buffers);
    std::uint64_t value_area = 0, age_area = 0, ages_end = 0;
    SlabLayout l;
    return !__builtin_mul_overflow(values, std::uint64_t{sizeof(float)}, &l.data_bytes) &&
           round_to_page(l.data_bytes, l.buffer_stride) && round_to_page(values, l.age_stride) &&
           !__builtin_mul_overflow(l.buffer_stride, k, &value_area) &&
           !__builtin_add_overflow(std::uint64_t{kSlabHeaderBytes}, value_area, &l.ages_offset) &&
           !__builtin_mul_overflow(l.age_stride, k, &age_area) &&
           !__builtin_add_overflow(l.ages_offset, age_area, &ages_end) && (l.file_bytes = ages_end, out = l, true);
}

std::string slab_header_problem(const SlabHeader& h, std::uint64_t file_bytes) {
    if (std::memcmp(h.magic, kSlabMagic, sizeof kSlabMagic) != 0) return "not a slabcast slab (bad magic)";
    if (h.version != kSlabVersion)
        return "slab format version " + std::to_string(h.version) + ", this build reads version " +
               std::to_string(kSlabVersion) +
               (h.version < kSlabVersion ? " (written by an older slabcast receive: restart the receiver with this "
                                           "build)"
                                         : " (written by a newer slabcast: use a reader of that version)");
    if (h.header_bytes != kSlabHeaderBytes) return "header size " + std::to_string(h.header_bytes) + " is not 4096";
    if (h.value_type != kValueFloat32) return "value type " + std::to_string(h.value_type) + " is not float32";
    const Dims dims{h.nx, h.ny, h.nz};
    if (const std::string p = volume_problem(dims, h.slab_depth); !p.empty()) return "corrupt header: " + p;
    // Sizes are within kMaxAxis from here on: the slab arithmetic cannot overflow.
    const int count = slab_count(dims, h.slab_depth);
    if (h.slab_index < 0 || h.slab_index >= count)
        return "corrupt header: slab index " + std::to_string(h.slab_index) + " outside 0.." +
               std::to_string(count - 1) + " for dims " + to_string(dims) + " and slab depth " +
               std::to_string(h.slab_depth);
    const SlabGeometry want = slab_geometry(dims, h.slab_depth, h.slab_index, 0);
    if (h.z_begin != want.z_begin || h.z_end != want.z_end || h.stored_z_begin < 0 || h.stored_z_begin > h.z_begin)
        return "corrupt header: plane range " + plane_range(h) + " does not fit the volume (slab " +
               std::to_string(h.slab_index) + " of depth " + std::to_string(h.slab_depth) + " owns planes " +
               std::to_string(want.z_begin) + ".." + std::to_string(want.z_end) + ")";
    std::uint64_t expect = 0;
    if (!data_bytes_of(h.nx, h.ny, std::int64_t{h.z_end} - h.stored_z_begin, expect) || h.data_bytes != expect)
        return "corrupt header: data size " + std::to_string(h.data_bytes) + " does not match the plane range";
    if (h.buffers < static_cast<std::uint32_t>(kMinBuffers) || h.buffers > static_cast<std::uint32_t>(kMaxBuffers))
        return "corrupt header: " + std::to_string(h.buffers) + " buffers, not " + std::to_string(kMinBuffers) +
               ".." + std::to_string(kMaxBuffers);
    SlabLayout l;
    if (!slab_layout(h.data_bytes / sizeof(float), static_cast<int>(h.buffers), l) ||
        h.buffer_stride != l.buffer_stride || h.ages_offset != l.ages_offset || h.age_stride != l.age_stride)
        return "corrupt header: buffer layout (stride " + std::to_string(h.buffer_stride) + ", ages at " +
               std::to_string(h.ages_offset) + ", age stride " + std::to_string(h.age_stride) +
               ") does not match " + std::to_string(h.buffers) + " buffers of " + std::to_string(h.data_bytes) +
               " bytes";
    if (file_bytes < l.file_bytes)
        return "truncated: " + std::to_string(file_bytes) + " bytes, the header promises " +
               std::to_string(l.file_bytes) + " (" + std::to_string(h.buffers) + " buffers of " +
               std::to_string(h.data_bytes) + " bytes of values and their ages)";
    if (h.field[sizeof h.field - 1] != '\0') return "corrupt header: field name not terminated";
    return {};
}

bool SlabMapping::read_header(SlabHeader& out) const {
    return fd_.valid() && ::pread(fd_.get(), &out, sizeof out, 0) == static_cast<ssize_t>(sizeof out);
}

bool SlabMapping::not_truncated() const {
    struct stat st {};
    return fd_.valid() && ::fstat(fd_.get(), &st) == 0 && static_cast<std::uint64_t>(st.st_size) >= region_.length();
}

std::string SlabMapping::header_problem() const {
    SlabHeader h{};
    struct stat st {};
    if (!read_header(h) || ::fstat(fd_.get(), &st) != 0) return "it no longer holds a whole header";
    if (std::string problem = slab_header_problem(h, static_cast<std::uint64_t>(st.st_size)); !problem.empty())
        return problem;
    const bool same = Dims{h.nx, h.ny, h.nz} == dims_ && h.slab_depth == slab_depth_ &&
                      h.slab_index == geometry_.index && h.stored_z_begin == geometry_.stored_z_begin &&
                      h.data_bytes == data_bytes_ && static_cast<int>(h.buffers) == buffers_ &&
                      h.buffer_stride == layout_.buffer_stride && h.ages_offset == layout_.ages_offset &&
                      h.age_stride == layout_.age_stride;
    return same ? "" : "its header now describes another shape";
}

SlabMapping SlabMapping::create(const std::string& path, const Dims& dims, int slab_depth,
                                const SlabGeometry& geometry, const std::string& field, int buffers) {
    if (field.size() >= sizeof(SlabHeader::field)) fail(path, "field name '" + field + "' is longer than 63 bytes");
    if (const std::string p = volume_problem(dims, slab_depth); !p.empty()) fail(path, p);
    if (buffers < kMinBuffers || buffers > kMaxBuffers)
        fail(path, std::to_string(buffers) + " buffers: give " + std::to_string(kMinBuffers) + ".." +
                       std::to_string(kMaxBuffers));
    std::uint64_t data_bytes = 0;
    SlabLayout layout;
    if (!data_bytes_of(dims.nx, dims.ny, geometry.stored_planes(), data_bytes) ||
        !slab_layout(data_bytes / sizeof(float), buffers, layout))
        fail(path, "slab of " + to_string(dims) + " is too large");
    const std::uint64_t total = layout.file_bytes;

    SlabMapping m;
    m.path_ = path;
    m.dims_ = dims;
    m.geometry_ = geometry;
    m.slab_depth_ = slab_depth;
    m.field_ = field;
    m.data_bytes_ = data_bytes;
    m.buffers_ = buffers;
    m.layout_ = layout;

    // Re-attach to a slab that already has exactly this shape; never to a
    // symbolic link (O_NOFOLLOW) or anything but a regular file.
    UniqueFd f(::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    const bool reuse = file_matches(f.get(), total, dims, slab_depth, geometry, field, buffers);
    struct stat st {};
    std::string temporary;  // the new file until it is renamed into place
    if (reuse) {
        if (::fstat(f.get(), &st) != 0) fail(path, "cannot stat slab: " + errno_text());
        // Owner read/write, group read (the renderer); never world-accessible.
        if ((st.st_mode & 07777) != 0640 && ::fchmod(f.get(), 0640) != 0) fail(path, "cannot chmod 0640: " + errno_text());
    } else {
        f.reset();  // a file of another shape, or none: never written through
        temporary = directory_of(path) + "/." + name_of(path) + ".new-" + std::to_string(::getpid());
        ::unlink(temporary.c_str());  // left by a receiver of the same pid that was killed here
        f.reset(::open(temporary.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640));
        if (!f.valid()) fail(path, "cannot create slab: " + errno_text());
        std::string problem;
        if (::fchmod(f.get(), 0640) != 0) problem = "cannot chmod 0640: " + errno_text();
        else if (::ftruncate(f.get(), static_cast<off_t>(total)) != 0)
            problem = "cannot size slab to " + std::to_string(total) + " bytes: " + errno_text();
        // The header page now, so that writing it cannot fault on a full tmpfs
        // (the values' pages are the receiver's to place and pre-fault).
        else if (const int rc = ::posix_fallocate(f.get(), 0, kSlabHeaderBytes); rc != 0)
            problem = "cannot allocate the slab header in " + directory_of(path) + ": " + std::strerror(rc);
        if (!problem.empty()) {
            ::unlink(temporary.c_str());
            fail(path, problem);
        }
    }
    m.region_ = MappedRegion::map(static_cast<std::size_t>(total), PROT_READ | PROT_WRITE, MAP_SHARED, f.get());
    if (!m.region_.valid()) {
        const std::string why = errno_text();
        if (!temporary.empty()) ::unlink(temporary.c_str());
        fail(path, "cannot map slab: " + why);
    }
    if (::fstat(f.get(), &st) == 0) {
        m.device_ = st.st_dev;
        m.inode_ = st.st_ino;
    }
    m.fd_ = std::move(f);
    if (reuse) return m;

    auto& h = m.header_rw();
    h.version = kSlabVersion;
    h.header_bytes = kSlabHeaderBytes;
    h.data_bytes = data_bytes;
    h.nx = static_cast<std::int32_t>(dims.nx);
    h.ny = static_cast<std::int32_t>(dims.ny);
    h.nz = static_cast<std::int32_t>(dims.nz);
    h.slab_index = geometry.index;
    h.slab_depth = slab_depth;
    h.z_begin = static_cast<std::int32_t>(geometry.z_begin);
    h.z_end = static_cast<std::int32_t>(geometry.z_end);
    h.stored_z_begin = static_cast<std::int32_t>(geometry.stored_z_begin);
    h.value_type = kValueFloat32;
    std::memset(h.field, 0, sizeof h.field);
    std::memcpy(h.field, field.data(), field.size());
    h.buffers = static_cast<std::uint32_t>(buffers);
    h.buffer_stride = layout.buffer_stride;
    h.ages_offset = layout.ages_offset;
    h.age_stride = layout.age_stride;
    h.live.step = -1;
    h.live.last_step = -1;
    h.live.writing_buffer = -1;
    for (auto& p : h.publication) p.step = -1;
    h.live.step_expected = static_cast<std::uint64_t>(dims.plane()) * static_cast<std::uint64_t>(geometry.owned_planes());
    // Magic last: a reader that sees it sees a complete header.
    std::atomic_thread_fence(std::memory_order_release);
    std::memcpy(h.magic, kSlabMagic, sizeof kSlabMagic);
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
        const std::string why = errno_text();
        ::unlink(temporary.c_str());
        fail(path, "cannot rename the new slab into place: " + why);
    }
    return m;
}

SlabMapping SlabMapping::open_read_only(int dir_fd, const std::string& name, const std::string& path) {
    // O_NONBLOCK: a FIFO planted under the name must not hang the reader.
    UniqueFd f(open_beneath(dir_fd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY));
    if (!f.valid()) {
        if (errno == ELOOP) fail(path, "is a symbolic link; refused (a slab must be a plain file in its directory)");
        if (errno == EXDEV || errno == EINVAL) fail(path, "leads outside its directory; refused");
        fail(path, "cannot open slab: " + errno_text());
    }
    struct stat st {};
    if (::fstat(f.get(), &st) != 0) fail(path, "cannot stat slab: " + errno_text());
    if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file");
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (size < kSlabHeaderBytes)
        fail(path, "truncated: " + std::to_string(size) + " bytes, smaller than the 4096-byte header");
    // Validate a copy, and keep the shape from that same copy: the header in
    // the file may change while we look at it.
    SlabHeader h{};
    if (::pread(f.get(), &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h)) fail(path, "cannot read the slab header");
    if (const std::string problem = slab_header_problem(h, size); !problem.empty()) fail(path, problem);

    SlabMapping m;
    m.path_ = path;
    m.dims_ = Dims{h.nx, h.ny, h.nz};
    m.slab_depth_ = h.slab_depth;
    m.geometry_.index = h.slab_index;
    m.geometry_.z_begin = h.z_begin;
    m.geometry_.z_end = h.z_end;
    m.geometry_.stored_z_begin = h.stored_z_begin;
    m.field_ = h.field;
    m.data_bytes_ = h.data_bytes;
    m.buffers_ = static_cast<int>(h.buffers);
    slab_layout(h.data_bytes / sizeof(float), m.buffers_, m.layout_);  // checked by slab_header_problem
    m.device_ = st.st_dev;
    m.inode_ = st.st_ino;
    // Only what the header describes, which the check above found in the file.
    m.region_ = MappedRegion::map(static_cast<std::size_t>(m.layout_.file_bytes), PROT_READ, MAP_SHARED, f.get());
    if (!m.region_.valid()) fail(path, "cannot map slab: " + errno_text());
    m.fd_ = std::move(f);
    return m;
}

SlabMapping SlabMapping::open_read_only(const std::string& path) {
    const UniqueFd dir(::open(directory_of(path).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) fail(path, "cannot open slab: its directory: " + errno_text());
    return open_read_only(dir.get(), name_of(path), path);
}

bool slab_file_matches(const std::string& path, const Dims& dims, int slab_depth, const SlabGeometry& geometry,
                       const std::string& field, int buffers) {
    std::uint64_t data_bytes = 0;
    SlabLayout layout;
    if (!volume_problem(dims, slab_depth).empty() ||
        !data_bytes_of(dims.nx, dims.ny, geometry.stored_planes(), data_bytes) ||
        !slab_layout(data_bytes / sizeof(float), buffers, layout))
        return false;
    const UniqueFd f(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    return file_matches(f.get(), layout.file_bytes, dims, slab_depth, geometry, field, buffers);
}

namespace {
// An OFD lock (F_OFD_SETLK) of one byte of the file: F_RDLCK takes it, F_UNLCK drops it.
bool lock_pin_byte(int fd, int b, short type) {
    struct flock l {};
    l.l_type = type;
    l.l_whence = SEEK_SET;
    l.l_start = kPinLockOffset + b;
    l.l_len = 1;
    return ::fcntl(fd, F_OFD_SETLK, &l) == 0;
}
}  // namespace

bool SlabMapping::pin(int b) const {
    if (b < 0 || b >= buffers_ || !fd_.valid() || !pins_) return false;
    std::lock_guard<std::mutex> lock(pins_->mutex);
    if (pins_->count[b] == 0 && !lock_pin_byte(fd_.get(), b, F_RDLCK)) return false;
    ++pins_->count[b];
    return true;
}

void SlabMapping::unpin(int b) const {
    if (b < 0 || b >= buffers_ || !pins_) return;
    std::lock_guard<std::mutex> lock(pins_->mutex);
    if (pins_->count[b] > 0 && --pins_->count[b] == 0) lock_pin_byte(fd_.get(), b, F_UNLCK);
}

std::string slab_file_name(const std::string& name, int slab_index) {
    return name + ".slab" + std::to_string(slab_index);
}

std::string slab_file_path(const std::string& shm_dir, const std::string& name, int slab_index) {
    return shm_dir + "/" + slab_file_name(name, slab_index);
}

}  // namespace slabcast
