// A deployment described in one JSON file (docs/deployment.md) -> the
// commands each host runs, in start order: receivers, senders, controller.
// Pure text in, text out, so that it can be fuzzed (testing/fuzz/).
#pragma once

#include <string>

namespace slabcast {

// `config_name` names the file in every error; `only_host` (if not empty)
// keeps that host's commands only. Throws std::runtime_error that names the
// file and the problem for anything it cannot turn into commands.
std::string plan_commands(const std::string& json_text, const std::string& config_name, const std::string& only_host);

}  // namespace slabcast
