// libFuzzer harness: the dataset descriptor (dataset.json), the config every
// role reads. It must either throw std::exception naming the file, or return
// a dataset whose step files stay inside its directory.
#include "slabcast/dataset.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

using namespace slabcast;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string dir = "/dev/shm/slabcast-fuzz-dataset-" + std::to_string(::getpid());
    static const bool made = [] {
        std::filesystem::create_directories(dir);
        std::atexit([] { std::filesystem::remove_all(dir); });  // libFuzzer ends with exit()
        return true;
    }();
    (void)made;
    const std::string path = dir + "/dataset.json";
    if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(data, 1, size, f);
        std::fclose(f);
    }
    try {
        const Dataset d = read_dataset(path);
        for (const auto& s : d.steps)
            if (s.file.empty() || s.file.find('/') != std::string::npos || s.file == "..") __builtin_trap();
    } catch (const std::exception&) {
    }
    return 0;
}
