// Unix-socket plumbing both ends of the control socket use: the address, and a whole write.
#pragma once

#include <sys/un.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace andromeda::control {

// Fills `addr` for `path`; false (and why in `error`) when the path does not fit sun_path.
bool fill_address(const std::string& path, sockaddr_un& addr, std::string& error);

// Writes all of `data` (MSG_NOSIGNAL: a peer gone is an error, not a SIGPIPE). False on error.
bool write_all(int fd, std::string_view data);

}  // namespace andromeda::control
