// Unix-socket plumbing both ends of the control socket use: the address, and a line read and a
// whole write with a deadline.
#pragma once

#include <sys/un.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace andromeda::control {

// Fills `addr` for `path`; false (and why in `error`) when the path does not fit sun_path.
bool fill_address(const std::string& path, sockaddr_un& addr, std::string& error);

// Reads until newline, EOF, `limit` bytes or `timeout_ms` without data; `out` holds the line
// without its newline. False on timeout or error.
bool read_line(int fd, std::string& out, std::size_t limit, int timeout_ms);

// Writes all of `data` (MSG_NOSIGNAL: a peer gone is an error, not a SIGPIPE). False on error.
bool write_all(int fd, std::string_view data);

}  // namespace andromeda::control
