// andromedad's log: to stderr, and, when stderr is the journal (systemd sets JOURNAL_STREAM to
// its device and inode), every line prefixed with its syslog priority ("<3>" for an error, as
// sd-daemon(3) describes), so `journalctl -p err` shows exactly the errors, however many lines
// one message has. The level can change while the daemon runs (`andromedactl log-level`).
#pragma once

#include <spdlog/common.h>

#include <optional>
#include <string>
#include <string_view>

#include "control/messages.hpp"

namespace andromeda::daemon {

// Whether file descriptor `fd` is the stream JOURNAL_STREAM ("<device>:<inode>") names.
[[nodiscard]] bool is_journal_stream(int fd, const char* journal_stream);

// The syslog priority of a level: critical 2, error 3, warn 4, info 6, debug and trace 7.
[[nodiscard]] int syslog_priority(spdlog::level::level_enum level) noexcept;

// `text` with "<priority>" at the start of each of its lines, each line ended by '\n'.
[[nodiscard]] std::string with_priority(std::string_view text, int priority);

// The default logger "andromedad" on stderr: journal-prefixed lines when stderr is the journal,
// else timestamped and coloured as on a terminal.
void setup_logging(bool verbose);

// One line for --check's output, prefixed with its priority when stderr is the journal.
void print_to_stderr(spdlog::level::level_enum level, const std::string& text);

// Sets the level (one of control::kLogLevels) when given; returns the level before and after.
control::LogLevelReply set_log_level(const std::optional<std::string>& level);

}  // namespace andromeda::daemon
