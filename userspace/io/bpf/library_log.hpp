// libbpf and libxdp print through callbacks; this routes them into spdlog. Inside a
// LibraryLogCapture scope their messages are collected instead: probing steps (libxdp trying its
// multiprog dispatcher, a zero-copy bind the driver refuses) print alarming warnings on paths
// whose failure is expected and handled, so the caller decides what to show.
#pragma once

#include <string>
#include <vector>

namespace andromeda::io {

// Idempotent; BpfInstance calls it.
void route_library_logs_to_spdlog();

class LibraryLogCapture {
public:
    LibraryLogCapture();
    ~LibraryLogCapture();
    LibraryLogCapture(const LibraryLogCapture&) = delete;
    LibraryLogCapture& operator=(const LibraryLogCapture&) = delete;

    // Lines printed on this thread since the capture began (warnings and info, no debug).
    [[nodiscard]] const std::vector<std::string>& lines() const noexcept { return lines_; }
    // The last few lines joined with "; ", for an error message.
    [[nodiscard]] std::string tail(std::size_t count = 3) const;

private:
    friend struct LibraryLogSink;
    std::vector<std::string> lines_;
    LibraryLogCapture* outer_;
};

}  // namespace andromeda::io
