// libFuzzer harness: the deployment file of `slabcast plan`. It must either
// throw std::runtime_error that names the file, or print commands whose every
// line is a comment or a `slabcast` command made of safe words (no text from
// the file can reach a shell as anything but one plain word).
#include "setup/deploy_plan.h"

#include <cstring>
#include <stdexcept>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    static const char* hosts[] = {"", "r1", "s1", "ctl"};
    for (const char* host : hosts) {
        std::string out;
        try {
            out = slabcast::plan_commands(text, "fuzz.json", host);
        } catch (const std::runtime_error& e) {
            if (std::strncmp(e.what(), "fuzz.json: ", 11) != 0) __builtin_trap();
            continue;
        }  // anything else (a JSON library exception, std::bad_alloc ...) escapes and fails the run
        std::size_t line = 0;
        while (line < out.size()) {
            const std::size_t end = out.find('\n', line);
            if (end == std::string::npos) __builtin_trap();  // every line ends with a newline
            const std::string l = out.substr(line, end - line);
            if (l.rfind("# ", 0) != 0 && l.rfind("slabcast ", 0) != 0) __builtin_trap();
            const bool command = l[0] != '#';
            if (command && l.find_first_of("`$;&|<>()\"'\\*?!{}~#\t\r") != std::string::npos) __builtin_trap();
            line = end + 1;
        }
    }
    return 0;
}
