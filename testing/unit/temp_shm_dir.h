// A private directory in /dev/shm (real shared memory), removed with its files.
#pragma once

#include <filesystem>
#include <string>

#include <unistd.h>

struct TempShmDir {
    std::string path;
    TempShmDir() {
        static int counter = 0;
        path = "/dev/shm/slabcast-unit-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
        std::filesystem::create_directories(path);
    }
    ~TempShmDir() { std::filesystem::remove_all(path); }
    std::string file(const std::string& name) const { return path + "/" + name; }
};
