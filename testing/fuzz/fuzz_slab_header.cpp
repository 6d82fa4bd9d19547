// libFuzzer harness: a slab file as the ParaView reader takes it. The input is
// the whole file (header and values), written to a real file in /dev/shm and
// opened as the reader opens it: SlabMapping::open_read_only beneath its
// directory, then SlabPool::get against a descriptor of the shape the header
// claims (the reader's own check of a slab against its descriptor) and
// select_slabs for the slab's pieces, then the publication records as a reader
// reads them (read_publication, under the seqlock, with pread) and the step
// choice that pins one. Whatever passes must be a slab whose every buffer lies
// inside the file: the harness reads the first and last value and age of each
// buffer through the mapping (a byte past the file's end would fault) and
// compares them with what pread finds.
#include "slabcast/descriptor.h"
#include "slabcast/publication.h"
#include "slabcast/slab_file.h"
#include "slabcast/slab_pool.h"
#include "slabcast/slab_selection.h"
#include "slabcast/step_choice.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

using namespace slabcast;

namespace {

const std::string& directory() {
    static const std::string dir = [] {
        const std::string d = "/dev/shm/slabcast-fuzz-slab-" + std::to_string(::getpid());
        std::filesystem::create_directories(d);
        std::atexit([] { std::filesystem::remove_all("/dev/shm/slabcast-fuzz-slab-" + std::to_string(::getpid())); });
        return d;
    }();
    return dir;
}

void check(bool ok) {
    if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string& dir = directory();
    const std::string name = "f.slab0";
    const std::string path = dir + "/" + name;
    if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(data, 1, size, f);
        std::fclose(f);
    }
    const int dir_fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    check(dir_fd >= 0);
    try {
        const SlabMapping m = SlabMapping::open_read_only(dir_fd, name, path);
        // What passed is a slab within the caps, whole in the file.
        const Dims& d = m.dims();
        check(volume_problem(d, m.slab_depth()).empty());
        const SlabGeometry& g = m.geometry();
        const SlabGeometry want = slab_geometry(d, m.slab_depth(), g.index, 0);
        check(g.z_begin == want.z_begin && g.z_end == want.z_end && g.stored_z_begin >= 0 &&
              g.stored_z_begin <= g.z_begin);
        check(m.value_count() == static_cast<std::size_t>(d.plane() * g.stored_planes()));
        check(m.buffers() >= kMinBuffers && m.buffers() <= kMaxBuffers);
        check(m.layout().file_bytes <= size && m.mapped_bytes() == m.layout().file_bytes);
        for (int b = 0; b < m.buffers(); ++b) {
            float ends[2];
            std::uint8_t age_ends[2];
            const auto first = static_cast<off_t>(m.values_offset(b));
            const auto last = static_cast<off_t>(m.values_offset(b) + (m.value_count() - 1) * sizeof(float));
            check(::pread(m.fd(), &ends[0], 4, first) == 4 && ::pread(m.fd(), &ends[1], 4, last) == 4);
            check(std::memcmp(&ends[0], &m.values(b)[0], 4) == 0 &&
                  std::memcmp(&ends[1], &m.values(b)[m.value_count() - 1], 4) == 0);
            const auto ages = static_cast<off_t>(m.ages_offset(b));
            check(::pread(m.fd(), &age_ends[0], 1, ages) == 1 &&
                  ::pread(m.fd(), &age_ends[1], 1, ages + static_cast<off_t>(m.value_count() - 1)) == 1);
            check(age_ends[0] == m.ages(b)[0] && age_ends[1] == m.ages(b)[m.value_count() - 1]);
            // A publication record is any bytes: read, it only names its own buffer.
            if (const auto p = read_publication(m, b)) check(p->buffer == b && p->seq % 2 == 0 && p->seq != 0);
        }

        // The reader: a descriptor of this shape, the pool's checks, and the
        // selection of the slab's own piece and of its first plane alone.
        Descriptor desc;
        desc.name = "f";
        desc.field = m.field();
        desc.dims = d;
        desc.slab_depth = m.slab_depth();
        desc.ghost_planes = static_cast<int>(g.ghost_planes());
        desc.slabs = {SlabEntry{g.index, name}};
        SlabPool pool;
        const SlabMappingPtr got = pool.get(desc, dir + "/f.slabcast", desc.slabs[0]);
        check(got->inode() == m.inode() && got->value_count() == m.value_count());
        const int piece[6] = {0, static_cast<int>(d.nx - 1), 0, static_cast<int>(d.ny - 1),
                              static_cast<int>(g.stored_z_begin), static_cast<int>(g.z_end - 1)};
        const auto sel = select_slabs(desc, dir + "/f.slabcast", piece);
        check(sel.planes.size() == static_cast<std::size_t>(g.stored_planes()));
        for (std::size_t i = 0; i < sel.planes.size(); ++i) {
            // The offset the copy path reads each plane's rows from stays inside the slab.
            const std::int64_t z = g.stored_z_begin + static_cast<std::int64_t>(i);
            check(sel.planes[i].slab == g.index);
            const std::int64_t last = slab_offset(d, g, d.nx - 1, d.ny - 1, z);
            check(last >= 0 && static_cast<std::size_t>(last) < m.value_count());
        }
        // The step a reader would show: a buffer of this slab, pinned, or none.
        const StepChoice c = choose_whole_step({{g.index, got}});
        check(c.buffers.empty() || (c.buffers.size() == 1 && c.buffers.begin()->second.buffer >= 0 &&
                                    c.buffers.begin()->second.buffer < got->buffers() && c.whole));
        const StepChoice newest = choose_newest_data({{g.index, got}});
        for (const auto& kv : newest.buffers) check(kv.second.buffer >= 0 && kv.second.buffer < got->buffers());
    } catch (const std::runtime_error& e) {
        check(std::strstr(e.what(), path.c_str()) == e.what());  // refused, naming the file
    } catch (const std::invalid_argument&) {
        __builtin_trap();  // an index-math precondition the checks above should have caught
    }
    ::close(dir_fd);
    return 0;
}
