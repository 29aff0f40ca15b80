// Reaching into another network namespace for a moment: an attachment made in one namespace is
// detached there, whichever thread (a test's teardown, an exit path) drops it.
#pragma once

#include <filesystem>
#include <functional>

namespace andromeda::io {

// Runs `task` on a short-lived thread that has entered the namespace `ns`; the caller's
// namespace is untouched. Exceptions from `task` are rethrown here; IoError when `ns` cannot
// be entered.
void run_in_netns_thread(const std::filesystem::path& ns, const std::function<void()>& task);

}  // namespace andromeda::io
