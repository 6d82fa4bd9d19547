// libFuzzer harness: a dataset's step file (slabcast/step_file.h), as the
// stager, the dataset reader in ParaView and `slabcast replay` read it from a
// recording someone handed over: raw or one LZ4 frame. The input picks a
// small volume, a codec and a range of planes; the rest is the file. Then,
// the other way round, the rest written as a step file and read back.
//
// It must end (a frame that never ends, or holds more than a step, is an
// error, not a loop), write no byte outside the planes asked for, and throw
// nothing but std::runtime_error; a step it writes reads back bit for bit.
#include "slabcast/step_file.h"
#include "slabcast/unique_fd.h"

#include "fuzz_input.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

using namespace slabcast;

namespace {

constexpr std::uint8_t kGuard = 0xa5;

void write_file(const std::string& path, const std::string& bytes) {
    if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string dir = "/dev/shm/slabcast-fuzz-step-file-" + std::to_string(::getpid());
    static const bool made = [] {
        std::filesystem::create_directories(dir);
        std::atexit([] { std::filesystem::remove_all(dir); });  // libFuzzer ends with exit()
        return true;
    }();
    (void)made;
    FuzzInput in(data, size);
    const Dims dims{1 + in.take_or_short<std::uint8_t>() % 16, 1 + in.take_or_short<std::uint8_t>() % 16,
                    1 + in.take_or_short<std::uint8_t>() % 16};
    const std::uint8_t how = in.take_or_short<std::uint8_t>();
    const StepCodec codec = how & 1 ? StepCodec::Lz4 : StepCodec::None;
    const std::size_t value_bytes = how & 2 ? 1 : 4;
    const std::int64_t z0 = in.take_or_short<std::uint8_t>() % (dims.nz + 1);
    const std::int64_t z1 = z0 + in.take_or_short<std::uint8_t>() % (dims.nz - z0 + 1);
    const std::string file = in.rest();
    const std::string path = dir + "/step";

    // Read: exactly the planes asked for are written, with a guard after them.
    write_file(path, file);
    const std::size_t want = static_cast<std::size_t>((z1 - z0) * dims.plane()) * value_bytes;
    std::vector<std::uint8_t> out(want + 64, kGuard);
    try {
        read_step_planes(path, codec, dims, value_bytes, z0, z1, out.data());
    } catch (const std::runtime_error&) {
    }
    for (std::size_t i = want; i < out.size(); ++i)
        if (out[i] != kGuard) __builtin_trap();

    // Write: the file's bytes as a step (cut or padded to one), then read back.
    const std::size_t step = static_cast<std::size_t>(dims.count()) * value_bytes;
    std::string values = file.substr(0, step);
    values.resize(step, '\0');
    {
        UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
        if (!fd.valid()) return 0;
        StepFileWriter w(fd.get(), codec, step);
        w.write(values.data(), values.size() / 2);
        w.write(values.data() + values.size() / 2, values.size() - values.size() / 2);
        w.finish();
    }
    std::vector<std::uint8_t> back(step);
    read_step_planes(path, codec, dims, value_bytes, 0, dims.nz, back.data());
    if (step && std::memcmp(back.data(), values.data(), step) != 0) __builtin_trap();
    return 0;
}
