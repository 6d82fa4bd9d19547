#include "mover/waiting_connections.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

namespace slabcast::mover {
namespace {

constexpr std::chrono::seconds kLinger{1};

// A frame sent without waiting: what a full socket buffer does not take is
// dropped (the last words to a connection about to close).
void send_now(int fd, const Frame& f, const std::string& payload) {
    std::string bytes(kHeaderBytes, '\0');
    Frame out = f;
    out.length = static_cast<std::uint32_t>(payload.size());
    encode_header(out, reinterpret_cast<std::uint8_t*>(bytes.data()));
    bytes += payload;
    [[maybe_unused]] const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

}  // namespace

WaitingConnections::WaitingConnections(std::size_t max_waiting, std::chrono::milliseconds timeout,
                                       std::uint32_t max_hello_bytes)
    : max_(std::max<std::size_t>(1, max_waiting)), timeout_(timeout), max_hello_(max_hello_bytes) {}

void WaitingConnections::make_room() {
    while (entries_.size() >= max_) {
        // A refused connection lingering first; else the oldest of the address holding the most.
        auto victim = std::find_if(entries_.begin(), entries_.end(), [](const Entry& e) { return e.refused; });
        if (victim == entries_.end()) {
            std::map<std::string, std::size_t> count;
            for (const auto& e : entries_) ++count[e.from];
            const auto most = std::max_element(count.begin(), count.end(),
                                               [](const auto& a, const auto& b) { return a.second < b.second; });
            victim = std::find_if(entries_.begin(), entries_.end(),
                                  [&](const Entry& e) { return e.from == most->first; });
            spdlog::warn("serve: {} connections wait for their Hello (--max-waiting): the oldest from {} ({} of them) "
                         "is closed", entries_.size(), most->first, most->second);
        }
        entries_.erase(victim);
    }
}

void WaitingConnections::add(UniqueFd fd, std::string from, std::shared_ptr<void> context) {
    make_room();
    Entry& e = entries_.emplace_back();
    e.fd = std::move(fd);
    e.from = std::move(from);
    e.context = std::move(context);
    e.deadline = Clock::now() + timeout_;
}

void WaitingConnections::refuse(UniqueFd fd, const std::string& from, const std::string& why) {
    send_now(fd.get(), Frame{Kind::Error}, why);
    ::shutdown(fd.get(), SHUT_WR);
    make_room();
    Entry& e = entries_.emplace_back();
    e.fd = std::move(fd);
    e.from = from;
    e.refused = true;
    e.deadline = Clock::now() + kLinger;
}

void WaitingConnections::poll_set(std::vector<pollfd>& polled) {
    for (auto& e : entries_) {
        e.poll_index = polled.size();
        polled.push_back(pollfd{e.fd.get(), POLLIN, 0});
    }
}

int WaitingConnections::wait_ms(int cap) const {
    const auto now = Clock::now();
    auto wait = std::chrono::milliseconds(cap);
    for (const auto& e : entries_)
        wait = std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(std::max(e.deadline - now, Clock::duration(0))));
    return static_cast<int>(wait.count());
}

bool WaitingConnections::read_some(Entry& e) {
    for (;;) {
        std::uint8_t* into;
        std::size_t want;
        if (e.header_got < kHeaderBytes) {
            into = e.header + e.header_got;
            want = kHeaderBytes - e.header_got;
        } else {
            into = reinterpret_cast<std::uint8_t*>(e.payload.data()) + e.payload_got;
            want = e.payload.size() - e.payload_got;
        }
        if (want == 0) return true;
        const ssize_t r = ::recv(e.fd.get(), into, want, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
        if (r <= 0) throw std::runtime_error(r == 0 ? "closed before its Hello" : std::string("receive: ") + std::strerror(errno));
        if (e.header_got < kHeaderBytes) {
            e.header_got += static_cast<std::size_t>(r);
            if (e.header_got < kHeaderBytes) continue;
            std::string why;
            const auto f = decode_header(e.header, &why);
            if (!f) throw std::invalid_argument(why);
            if (f->kind != Kind::Hello) throw std::invalid_argument("expected a Hello frame");
            if (f->length > max_hello_)
                throw std::invalid_argument("a Hello of " + std::to_string(f->length) + " bytes (at most " +
                                            std::to_string(max_hello_) + ")");
            e.frame = *f;
            e.payload.assign(f->length, '\0');
        } else {
            e.payload_got += static_cast<std::size_t>(r);
        }
    }
}

void WaitingConnections::drain(Entry& e, bool& ended) {
    char scratch[4096];
    for (int i = 0; i < 16; ++i) {  // a bounded amount per turn
        const ssize_t r = ::recv(e.fd.get(), scratch, sizeof scratch, MSG_DONTWAIT);
        if (r > 0) continue;
        ended = !(r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
        return;
    }
}

std::vector<Arrival> WaitingConnections::service(const std::vector<pollfd>& polled) {
    std::vector<Arrival> arrived;
    const auto now = Clock::now();
    for (auto it = entries_.begin(); it != entries_.end();) {
        Entry& e = *it;
        const short revents = e.poll_index < polled.size() && polled[e.poll_index].fd == e.fd.get()
                                  ? polled[e.poll_index].revents
                                  : 0;
        e.poll_index = SIZE_MAX;
        bool ended = false;
        if (e.refused) {
            if (revents) drain(e, ended);
            if (ended || now >= e.deadline) it = entries_.erase(it);
            else ++it;
            continue;
        }
        if (revents) {
            try {
                if (read_some(e)) {
                    arrived.push_back(Arrival{std::move(e.fd), std::move(e.from), e.frame, std::move(e.payload),
                                              std::move(e.context)});
                    it = entries_.erase(it);
                    continue;
                }
            } catch (const std::invalid_argument& x) {  // not a Hello: the peer is told why
                spdlog::warn("serve: a connection from {} refused: {}", e.from, x.what());
                UniqueFd fd = std::move(e.fd);
                const std::string from = e.from;
                it = entries_.erase(it);
                refuse(std::move(fd), from, x.what());
                continue;
            } catch (const std::exception& x) {
                spdlog::warn("serve: a connection from {} dropped: {}", e.from, x.what());
                it = entries_.erase(it);
                continue;
            }
        }
        if (now >= e.deadline) {
            spdlog::warn("serve: a connection from {} dropped: no Hello within {} s (--hello-timeout)", e.from,
                         std::chrono::duration_cast<std::chrono::seconds>(timeout_).count());
            it = entries_.erase(it);
            continue;
        }
        ++it;
    }
    return arrived;
}

}  // namespace slabcast::mover
