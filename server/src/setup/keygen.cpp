// `slabcast keygen PATH`: a fresh key for authenticating sync packets and the
// data mover's streams, to be copied (securely) to the controller, every
// shuffler and stager, and both ends of the mover (serve, move).
#include "base/key_file.h"
#include "base/roles.h"

#include <spdlog/spdlog.h>

#include <memory>

namespace slabcast {

void register_keygen(CLI::App& root, RoleMain& run) {
    auto path = std::make_shared<std::string>();
    CLI::App* c = root.add_subcommand("keygen", "write a new random key for --key-file (mode 0600)");
    c->add_option("path", *path, "file to create (never overwritten)")->required();
    c->callback([path, &run] {
        run = [path] {
            write_new_key(*path);
            spdlog::info("keygen: wrote {} (mode 0600); give the same file with --key-file to control, shuffle and "
                         "stage, and to serve and move",
                         *path);
            return 0;
        };
    });
}

}  // namespace slabcast
