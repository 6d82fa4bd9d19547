#include "slabcast/publication.h"

#include "slabcast/clock.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <map>
#include <set>
#include <stdexcept>

namespace slabcast {
namespace {

// The 64 bytes of buffer b's publication, copied with pread.
bool read_raw(const SlabMapping& m, int b, BufferPublication& out) {
    const off_t at = static_cast<off_t>(offsetof(SlabHeader, publication) + sizeof(BufferPublication) * b);
    return ::pread(m.fd(), &out, sizeof out, at) == static_cast<ssize_t>(sizeof out);
}

bool read_raw(const SlabMapping& m, int b, BufferRanges& out) {
    const off_t at = static_cast<off_t>(offsetof(SlabHeader, ranges) + sizeof(BufferRanges) * b);
    return ::pread(m.fd(), &out, sizeof out, at) == static_cast<ssize_t>(sizeof out);
}

bool read_raw(const SlabMapping& m, int b, BufferTimes& out) {
    const off_t at = static_cast<off_t>(offsetof(SlabHeader, times) + sizeof(BufferTimes) * b);
    return ::pread(m.fd(), &out, sizeof out, at) == static_cast<ssize_t>(sizeof out);
}

}  // namespace

std::optional<Publication> read_publication(const SlabMapping& m, int b) {
    if (b < 0 || b >= m.buffers()) return std::nullopt;
    // Seqlock over two copies: the same even seq before (first field of the
    // first copy) and after (first field of the second) means no writer
    // touched the buffer while the first copy's fields were read.
    BufferPublication first{}, again{};
    BufferRanges ranges{};
    BufferTimes times{};
    for (int attempt = 0; attempt < 8; ++attempt) {
        if (!read_raw(m, b, first)) return std::nullopt;
        const std::uint64_t seq = first.seq.load(std::memory_order_relaxed);
        if (seq == 0) return std::nullopt;  // never published
        if (seq & 1) return std::nullopt;   // the writer has it
        std::atomic_thread_fence(std::memory_order_acquire);
        if (!read_raw(m, b, ranges) || !read_raw(m, b, times) || !read_raw(m, b, again)) return std::nullopt;
        if (again.seq.load(std::memory_order_relaxed) != seq) continue;
        Publication p;
        p.buffer = b;
        p.seq = seq;
        p.step = first.step.load(std::memory_order_relaxed);
        p.number = first.number.load(std::memory_order_relaxed);
        p.records = first.records.load(std::memory_order_relaxed);
        p.expected = first.expected.load(std::memory_order_relaxed);
        p.holes = first.holes.load(std::memory_order_relaxed);
        p.published_ns = first.published_ns.load(std::memory_order_relaxed);
        p.complete = first.complete.load(std::memory_order_relaxed) != 0;
        if (ranges.seq == seq) {
            p.owned_range = ranges.owned;
            p.ghost_range = ranges.ghost;
        }
        if (times.seq == seq) {
            p.sent_ns = times.sent_ns;
            p.begun_ns = times.begun_ns;
            p.repaired = times.repaired;
        }
        return p;
    }
    return std::nullopt;  // a writer busy with it all along
}

std::vector<Publication> held_publications(const SlabMapping& m) {
    std::vector<Publication> held;
    for (int b = 0; b < m.buffers(); ++b)
        if (auto p = read_publication(m, b)) held.push_back(*p);
    std::sort(held.begin(), held.end(), [](const Publication& a, const Publication& b) { return a.number > b.number; });
    return held;
}

std::optional<Publication> newest_publication(const SlabMapping& m) {
    const auto held = held_publications(m);
    if (held.empty()) return std::nullopt;
    return held.front();
}

PinnedPublication::~PinnedPublication() { mapping_->unpin(publication_.buffer); }

PinnedPublicationPtr pin_publication(const std::shared_ptr<const SlabMapping>& m, const Publication& p) {
    if (!m || !m->pin(p.buffer)) return nullptr;
    // Pinned first, checked second: a writer that took the buffer before the
    // pin made its seq odd before it looked for pins, so the check sees it.
    auto pinned = std::make_shared<const PinnedPublication>(m, p);
    const auto now = read_publication(*m, p.buffer);
    if (!now || now->seq != p.seq) return nullptr;  // the destructor unpins
    return pinned;
}

PinnedPublicationPtr pin_step(const std::shared_ptr<const SlabMapping>& m, std::int64_t step) {
    for (const Publication& p : held_publications(*m))
        if (p.step == step) {
            if (auto pinned = pin_publication(m, p)) return pinned;
        }
    return nullptr;
}

std::optional<std::int64_t> newest_common_step(const std::vector<std::vector<Publication>>& held) {
    if (held.empty()) return std::nullopt;
    // The steps of the first slab, newest publication first, that every other slab holds too.
    for (const Publication& candidate : held.front()) {
        const bool everywhere = std::all_of(held.begin() + 1, held.end(), [&](const std::vector<Publication>& slab) {
            return std::any_of(slab.begin(), slab.end(), [&](const Publication& p) { return p.step == candidate.step; });
        });
        if (everywhere) return candidate.step;
    }
    return std::nullopt;
}

bool buffer_pinned(int fd, int b) {
    struct flock l {};
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    l.l_start = kPinLockOffset + b;
    l.l_len = 1;
    // F_OFD_GETLK reports a lock another open file description holds: a
    // reader's. If the call itself fails, count the buffer as pinned: never
    // write under a reader.
    if (::fcntl(fd, F_OFD_GETLK, &l) != 0) return true;
    return l.l_type != F_UNLCK;
}

int take_buffer(SlabMapping& m, std::string* why, int* pinned) {
    SlabHeader& h = m.header_rw();
    // The newest publication is taken last: it is what a reader that looks
    // now will pin. It is taken at all only when readers pin every other
    // buffer (a frame in place and the view's copy of the frame before): a
    // writer that kept it would drop every step from then on, publish no
    // news, and the readers, waiting for news, would never let go.
    int newest = -1;
    std::uint64_t newest_number = 0;
    for (int b = 0; b < m.buffers(); ++b) {
        const BufferPublication& p = h.publication[b];
        if (!(p.seq.load() & 1) && p.seq.load() != 0 && p.number.load() >= newest_number) {
            newest_number = p.number.load();
            newest = b;
        }
    }
    // On the stack: this runs for every step (m.buffers() <= kMaxBuffers).
    std::array<int, kMaxBuffers> order{};
    int candidates = 0;
    for (int b = 0; b < m.buffers() && b < kMaxBuffers; ++b)
        if (b != newest) order[static_cast<std::size_t>(candidates++)] = b;
    // Oldest publication first; a buffer never published (number 0) or left
    // half written by a killed writer first of all.
    std::sort(order.begin(), order.begin() + candidates, [&](int a, int b) {
        auto key = [&](int k) {
            const BufferPublication& p = h.publication[k];
            return (p.seq.load() == 0 || (p.seq.load() & 1)) ? 0 : p.number.load();
        };
        return key(a) != key(b) ? key(a) < key(b) : a < b;
    });
    if (newest >= 0 && candidates < kMaxBuffers) order[static_cast<std::size_t>(candidates++)] = newest;
    for (int i = 0; i < candidates; ++i) {
        const int b = order[static_cast<std::size_t>(i)];
        BufferPublication& p = h.publication[b];
        const std::uint64_t seq = p.seq.load();
        // Taken (odd) before the pin check: a reader pins, then re-reads seq.
        const std::uint64_t taken = (seq & 1) ? seq : seq + 1;
        p.seq.store(taken, std::memory_order_seq_cst);
        if (!buffer_pinned(m.fd(), b)) {
            h.live.writing_buffer.store(b);
            if (pinned) {
                // The ones tried before were pinned; of the rest, count those that are.
                *pinned = i;
                for (int j = i + 1; j < candidates; ++j)
                    *pinned += buffer_pinned(m.fd(), order[static_cast<std::size_t>(j)]) ? 1 : 0;
            }
            return b;
        }
        // Still pinned: give it back as it was, with a new even seq so that a
        // reader that saw it odd meanwhile reads it again.
        if (!(seq & 1)) p.seq.store(taken + 1, std::memory_order_release);
    }
    if (why) *why = "all " + std::to_string(m.buffers()) + " buffers pinned by readers";
    if (pinned) *pinned = candidates;
    return -1;
}

ReaderMix parse_reader_mix(const std::string& list) {
    ReaderMix mix;
    int count = 0;
    std::size_t at = 0;
    while (at <= list.size()) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const std::string item = list.substr(at, comma - at);
        at = comma + 1;
        if (++count > kMaxBuffers)
            throw std::invalid_argument("readers '" + list + "': more than " + std::to_string(kMaxBuffers));
        if (item == "view") {
            ++mix.views;
        } else if (item == "record") {
            ++mix.recorders;
        } else if (item.rfind("history:", 0) == 0) {
            const std::string n = item.substr(8);
            const bool digits = !n.empty() && n.size() <= 2 && n.find_first_not_of("0123456789") == std::string::npos;
            const int depth = digits ? std::stoi(n) : 0;
            if (depth < 1 || depth > kMaxBuffers)
                throw std::invalid_argument("readers '" + list + "': '" + item + "': History is 1.." +
                                            std::to_string(kMaxBuffers) + " steps");
            mix.histories.push_back(depth);
        } else {
            throw std::invalid_argument("readers '" + list + "': '" + item +
                                        "' is not one of view, record, history:N");
        }
    }
    return mix;
}

int buffers_for_readers(const ReaderMix& readers) {
    int buffers = 1 + 2 * readers.views + readers.recorders;
    for (int depth : readers.histories) buffers += std::max(2, depth + 1);
    return buffers;
}

void publish_buffer(SlabMapping& m, int b, const PublishInfo& info) {
    SlabHeader& h = m.header_rw();
    BufferPublication& p = h.publication[b];
    std::uint64_t seq = p.seq.load();
    if (!(seq & 1)) p.seq.store(++seq);  // not taken with take_buffer: take it now
    p.step.store(info.step, std::memory_order_relaxed);
    p.number.store(h.live.publications.load() + 1, std::memory_order_relaxed);
    p.records.store(info.records, std::memory_order_relaxed);
    p.expected.store(info.expected, std::memory_order_relaxed);
    p.holes.store(info.holes, std::memory_order_relaxed);
    p.published_ns.store(realtime_ns(), std::memory_order_relaxed);
    p.complete.store(info.complete ? 1 : 0, std::memory_order_relaxed);
    h.ranges[b] = BufferRanges{seq + 1, info.owned_range, info.ghost_range};
    h.times[b] = BufferTimes{seq + 1, info.sent_ns, info.begun_ns, info.repaired};
    // Values, ages and fields before the even seq that makes them visible.
    p.seq.store(seq + 1, std::memory_order_release);
    h.live.publications.fetch_add(1, std::memory_order_release);
    if (h.live.writing_buffer.load() == b) h.live.writing_buffer.store(-1);
}

}  // namespace slabcast
