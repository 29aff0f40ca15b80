#include "io/bpf/library_log.hpp"

#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>
#include <xdp/libxdp.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace andromeda::io {

namespace {
thread_local LibraryLogCapture* active_capture = nullptr;
}  // namespace

struct LibraryLogSink {
    // libbpf and libxdp share this shape: (level, format, args); their level enums agree
    // (0 warn, 1 info, 2 debug).
    static int print(int level, const char* format, va_list args) {
        char buffer[1024];
        std::vsnprintf(buffer, sizeof buffer, format, args);
        std::string line(buffer);
        while (!line.empty() && line.back() == '\n') line.pop_back();
        if (active_capture != nullptr) {
            if (level <= LIBBPF_INFO) active_capture->lines_.push_back(line);
            spdlog::trace("{}", line);
            return 0;
        }
        if (level == LIBBPF_WARN) spdlog::warn("{}", line);
        else if (level == LIBBPF_INFO) spdlog::debug("{}", line);
        else spdlog::trace("{}", line);
        return 0;
    }
    static int libbpf_print(enum libbpf_print_level level, const char* format, va_list args) {
        return print(static_cast<int>(level), format, args);
    }
    static int libxdp_print(enum libxdp_print_level level, const char* format, va_list args) {
        return print(static_cast<int>(level), format, args);
    }
};

void route_library_logs_to_spdlog() {
    static std::once_flag once;
    std::call_once(once, [] {
        libbpf_set_print(&LibraryLogSink::libbpf_print);
        libxdp_set_print(&LibraryLogSink::libxdp_print);
    });
}

LibraryLogCapture::LibraryLogCapture() : outer_(active_capture) { active_capture = this; }

LibraryLogCapture::~LibraryLogCapture() {
    if (outer_ != nullptr) outer_->lines_.insert(outer_->lines_.end(), lines_.begin(), lines_.end());
    active_capture = outer_;
}

std::string LibraryLogCapture::tail(std::size_t count) const {
    std::string out;
    const std::size_t start = lines_.size() > count ? lines_.size() - count : 0;
    for (std::size_t i = start; i < lines_.size(); ++i) out += (out.empty() ? "" : "; ") + lines_[i];
    return out;
}

}  // namespace andromeda::io
