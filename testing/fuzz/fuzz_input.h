// A fuzzer's input read as a sequence of little-endian numbers and byte
// strings: what the mover harnesses decode their scripts from.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

class FuzzInput {
public:
    FuzzInput(const std::uint8_t* data, std::size_t size) : p_(data), left_(size) {}

    // A whole T, or false (nothing taken) when fewer than sizeof(T) bytes are left.
    template <typename T>
    bool take(T& out) {
        if (left_ < sizeof(T)) return false;
        out = take_or_short<T>();
        return true;
    }
    // A T from the bytes left, as many as there are: the missing high bytes are zero.
    template <typename T>
    T take_or_short() {
        T out = 0;
        for (std::size_t i = 0; i < sizeof(T) && left_ > 0; ++i, ++p_, --left_)
            out = static_cast<T>(out | static_cast<T>(static_cast<T>(*p_) << (8 * i)));
        return out;
    }
    // Up to `n` bytes, fewer when the input ends first.
    std::string bytes(std::size_t n) {
        n = std::min(n, left_);
        std::string out(reinterpret_cast<const char*>(p_), n);
        p_ += n;
        left_ -= n;
        return out;
    }
    std::string rest() { return bytes(left_); }
    std::size_t left() const { return left_; }

private:
    const std::uint8_t* p_;
    std::size_t left_;
};
