// SIGINT/SIGTERM set a flag that every role's loops poll; blocking calls wake
// up through their receive timeouts, so shutdown is prompt and clean.
#pragma once

#include <atomic>

namespace slabcast {

void install_stop_handlers();
bool stop_requested();
void request_stop();

}  // namespace slabcast
