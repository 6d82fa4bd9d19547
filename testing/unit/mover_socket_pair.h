// Both ends of a real local stream connection (socketpair), closed with the
// object: the mover's unit tests put channels on them.
#pragma once

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

struct Pair {
    int a = -1, b = -1;
    Pair() {
        int ends[2];
        REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0);
        a = ends[0];
        b = ends[1];
    }
    ~Pair() {
        ::close(a);
        ::close(b);
    }
    Pair(const Pair&) = delete;
    Pair& operator=(const Pair&) = delete;
};
