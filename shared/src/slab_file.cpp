#include "slabcast/slab_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace slabcast {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
    throw std::runtime_error(path + ": " + problem);
}

std::string errno_text() { return std::strerror(errno); }

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// Everything a header must satisfy, for a file of `file_bytes`; "" when sound.
std::string header_problem(const SlabHeader& h, std::size_t file_bytes) {
    if (std::memcmp(h.magic, kSlabMagic, sizeof kSlabMagic) != 0) return "not a slabcast slab (bad magic)";
    if (h.version != kSlabVersion)
        return "slab format version " + std::to_string(h.version) + ", this build reads version " +
               std::to_string(kSlabVersion);
    if (h.header_bytes != kSlabHeaderBytes) return "header size " + std::to_string(h.header_bytes) + " is not 4096";
    if (h.value_type != kValueFloat32) return "value type " + std::to_string(h.value_type) + " is not float32";
    if (h.nx < 1 || h.ny < 1 || h.nz < 1 || h.slab_depth < 1) return "corrupt header: non-positive dims or depth";
    if (!(0 <= h.stored_z_begin && h.stored_z_begin <= h.z_begin && h.z_begin < h.z_end && h.z_end <= h.nz))
        return "corrupt header: plane range " + std::to_string(h.stored_z_begin) + ".." + std::to_string(h.z_end) +
               " does not fit the volume";
    const std::uint64_t expect = static_cast<std::uint64_t>(h.nx) * h.ny * (h.z_end - h.stored_z_begin) * 4;
    if (h.data_bytes != expect) return "corrupt header: data size does not match the plane range";
    if (file_bytes < kSlabHeaderBytes + h.data_bytes)
        return "truncated: " + std::to_string(file_bytes) + " bytes, the header promises " +
               std::to_string(kSlabHeaderBytes + h.data_bytes);
    if (h.field[sizeof h.field - 1] != '\0') return "corrupt header: field name not terminated";
    return {};
}

}  // namespace

SlabMapping::SlabMapping(SlabMapping&& o) noexcept : base_(o.base_), size_(o.size_), path_(std::move(o.path_)) {
    o.base_ = nullptr;
    o.size_ = 0;
}

SlabMapping& SlabMapping::operator=(SlabMapping&& o) noexcept {
    if (this != &o) {
        if (base_) ::munmap(base_, size_);
        base_ = o.base_;
        size_ = o.size_;
        path_ = std::move(o.path_);
        o.base_ = nullptr;
        o.size_ = 0;
    }
    return *this;
}

SlabMapping::~SlabMapping() {
    if (base_) ::munmap(base_, size_);
}

Dims SlabMapping::dims() const { return Dims{header().nx, header().ny, header().nz}; }

SlabGeometry SlabMapping::geometry() const {
    SlabGeometry g;
    g.index = header().slab_index;
    g.z_begin = header().z_begin;
    g.z_end = header().z_end;
    g.stored_z_begin = header().stored_z_begin;
    return g;
}

SlabMapping SlabMapping::create(const std::string& path, const Dims& dims, int slab_depth,
                                const SlabGeometry& geometry, const std::string& field) {
    if (field.size() >= sizeof(SlabHeader::field)) fail(path, "field name '" + field + "' is longer than 63 bytes");
    const std::uint64_t data_bytes = static_cast<std::uint64_t>(dims.plane()) * geometry.stored_planes() * 4;
    const std::size_t total = kSlabHeaderBytes + data_bytes;

    // Owner read/write, group read (the renderer); never world-accessible.
    Fd f{::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640)};
    if (f.fd < 0) fail(path, "cannot create slab: " + errno_text());
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) fail(path, "cannot stat slab: " + errno_text());
    if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file");
    // An existing file keeps its mode through O_CREAT: narrow it as well.
    if ((st.st_mode & 07777) != 0640 && ::fchmod(f.fd, 0640) != 0) fail(path, "cannot chmod 0640: " + errno_text());

    // Re-attach to a slab that already has exactly this shape (a restarted
    // receiver keeps what it had placed); otherwise start afresh.
    bool reuse = false;
    if (static_cast<std::size_t>(st.st_size) == total) {
        SlabHeader existing{};
        if (::pread(f.fd, &existing, sizeof existing, 0) == static_cast<ssize_t>(sizeof existing) &&
            header_problem(existing, total).empty() && existing.nx == dims.nx && existing.ny == dims.ny &&
            existing.nz == dims.nz && existing.slab_depth == slab_depth && existing.slab_index == geometry.index &&
            existing.stored_z_begin == geometry.stored_z_begin && existing.z_end == geometry.z_end &&
            field == existing.field)
            reuse = true;
    }
    if (!reuse) {
        if (::ftruncate(f.fd, 0) != 0 || ::ftruncate(f.fd, static_cast<off_t>(total)) != 0)
            fail(path, "cannot size slab to " + std::to_string(total) + " bytes: " + errno_text());
    }
    void* p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
    if (p == MAP_FAILED) fail(path, "cannot map slab: " + errno_text());

    SlabMapping m;
    m.base_ = static_cast<std::uint8_t*>(p);
    m.size_ = total;
    m.path_ = path;
    if (!reuse) {
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
        h.live.step = -1;
        h.live.last_step = -1;
        h.live.step_expected = static_cast<std::uint64_t>(dims.plane()) * geometry.owned_planes();
        // Magic last: a reader that sees it sees a complete header.
        std::atomic_thread_fence(std::memory_order_release);
        std::memcpy(h.magic, kSlabMagic, sizeof kSlabMagic);
    }
    return m;
}

SlabMapping SlabMapping::open_read_only(const std::string& path) {
    Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) fail(path, "cannot open slab: " + errno_text());
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) fail(path, "cannot stat slab: " + errno_text());
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size < kSlabHeaderBytes)
        fail(path, "truncated: " + std::to_string(size) + " bytes, smaller than the 4096-byte header");
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, f.fd, 0);
    if (p == MAP_FAILED) fail(path, "cannot map slab: " + errno_text());
    SlabMapping m;
    m.base_ = static_cast<std::uint8_t*>(p);
    m.size_ = size;
    m.path_ = path;
    const std::string problem = header_problem(m.header(), size);
    if (!problem.empty()) fail(path, problem);
    return m;
}

std::string slab_file_path(const std::string& shm_dir, const std::string& name, int slab_index) {
    return shm_dir + "/" + name + ".slab" + std::to_string(slab_index);
}

}  // namespace slabcast
