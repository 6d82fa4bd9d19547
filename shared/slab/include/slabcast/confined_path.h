// Names that stay in their directory, and opening them without leaving it.
// A file written by someone else (a descriptor, a dataset description) names
// other files; those names must not lead anywhere else.
#pragma once

#include <string>

namespace slabcast {

// A file name in one directory: non-empty, at most 255 bytes, not "." or "..",
// no '/', no NUL or other control character.
bool is_plain_name(const std::string& name);

// Opens the plain name `name` in the directory `dir_fd` (read-only flags and
// O_CLOEXEC are the caller's and are added), never leaving that directory and
// never following a symbolic link: openat2 with RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS, and on a kernel without openat2, openat with
// O_NOFOLLOW (equivalent for a plain name). Returns the descriptor, or -1 with
// errno set (EINVAL for a name that is not plain, ELOOP for a symbolic link).
int open_beneath(int dir_fd, const std::string& name, int flags);

// The directory part of `path` ("." when it has none) and its last component.
std::string directory_of(const std::string& path);
std::string name_of(const std::string& path);

}  // namespace slabcast
