// Reaching into another network namespace for a moment: a veth's tenant side lives in the
// tenant's namespace, and only from there can ethtool ask it anything.
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>

namespace andromeda::io {

// The /run/netns/<name> file of the namespace that this namespace knows by `nsid`
// (IFLA_LINK_NETNSID), or nullopt when no named namespace has that id.
[[nodiscard]] std::optional<std::filesystem::path> find_named_netns(std::int32_t nsid);

// Runs `task` on a short-lived thread that has entered the namespace `ns`; the caller's
// namespace is untouched. Exceptions from `task` are rethrown here; IoError when `ns` cannot
// be entered.
void run_in_netns_thread(const std::filesystem::path& ns, const std::function<void()>& task);

template <class Task>
auto run_in_netns(const std::filesystem::path& ns, Task&& task) -> decltype(task()) {
    std::optional<decltype(task())> result;
    run_in_netns_thread(ns, [&] { result.emplace(task()); });
    return std::move(*result);
}

}  // namespace andromeda::io
