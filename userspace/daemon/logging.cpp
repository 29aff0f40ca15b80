#include "daemon/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace andromeda::daemon {

namespace {

// Each formatted message written to stderr line by line, each line with its priority.
class JournalStreamSink final : public spdlog::sinks::base_sink<std::mutex> {
protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        spdlog::memory_buf_t formatted;
        formatter_->format(msg, formatted);
        std::string_view text(formatted.data(), formatted.size());
        while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
        const std::string lines = with_priority(text, syslog_priority(msg.level));
        std::fwrite(lines.data(), 1, lines.size(), stderr);
    }
    void flush_() override { std::fflush(stderr); }
};

bool stderr_is_journal() { return is_journal_stream(2, std::getenv("JOURNAL_STREAM")); }

// control::kLogLevels' names; spdlog says "warning" where the protocol says "warn".
std::string level_name(spdlog::level::level_enum level) {
    if (level == spdlog::level::warn) return "warn";
    const auto name = spdlog::level::to_string_view(level);
    return {name.data(), name.size()};
}

}  // namespace

bool is_journal_stream(int fd, const char* journal_stream) {
    if (journal_stream == nullptr) return false;
    unsigned long long device = 0, inode = 0;
    char tail = 0;
    if (std::sscanf(journal_stream, "%llu:%llu%c", &device, &inode, &tail) != 2) return false;
    struct stat st{};
    if (fstat(fd, &st) != 0) return false;
    return static_cast<unsigned long long>(st.st_dev) == device && static_cast<unsigned long long>(st.st_ino) == inode;
}

int syslog_priority(spdlog::level::level_enum level) noexcept {
    switch (level) {
        case spdlog::level::critical: return 2;
        case spdlog::level::err: return 3;
        case spdlog::level::warn: return 4;
        case spdlog::level::info: return 6;
        case spdlog::level::debug:
        case spdlog::level::trace:
        case spdlog::level::off:
        case spdlog::level::n_levels: break;
    }
    return 7;
}

std::string with_priority(std::string_view text, int priority) {
    const std::string prefix = "<" + std::to_string(priority) + ">";
    std::string out;
    for (;;) {
        const auto end = text.find('\n');
        out += prefix;
        out += text.substr(0, end);
        out += '\n';
        if (end == std::string_view::npos) break;
        text.remove_prefix(end + 1);
    }
    return out;
}

void setup_logging(bool verbose) {
    if (stderr_is_journal()) {
        // The journal keeps the time, the unit and the pid: the message is all a line needs.
        auto logger = std::make_shared<spdlog::logger>("andromedad", std::make_shared<JournalStreamSink>());
        logger->set_pattern("%v");
        spdlog::set_default_logger(std::move(logger));
    } else {
        spdlog::set_default_logger(spdlog::stderr_color_mt("andromedad"));
        spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ %v");
    }
    spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info);
    spdlog::flush_on(spdlog::level::trace);  // every line reaches the journal (or the terminal) as it happens
}

void print_to_stderr(spdlog::level::level_enum level, const std::string& text) {
    const std::string line = stderr_is_journal() ? with_priority(text, syslog_priority(level)) : text + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
}

control::LogLevelReply set_log_level(const std::optional<std::string>& level) {
    control::LogLevelReply reply;
    reply.previous = level_name(spdlog::default_logger()->level());
    if (level) {
        const auto parsed = *level == "warn" ? spdlog::level::warn : spdlog::level::from_str(*level);
        // spdlog reads an unknown name as "off"; the protocol lets only known names through.
        if (parsed != spdlog::level::off || *level == "off") {
            // Said at info, under whichever of the two levels shows it.
            const bool shown_before = spdlog::default_logger()->should_log(spdlog::level::info);
            if (shown_before) spdlog::info("log level {} (was {})", *level, reply.previous);
            spdlog::set_level(parsed);
            if (!shown_before) spdlog::info("log level {} (was {})", *level, reply.previous);
        }
    }
    reply.level = level_name(spdlog::default_logger()->level());
    return reply;
}

}  // namespace andromeda::daemon
