// Helpers shared by the io integration tests.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "io/plan/config.hpp"
#include "netns_topology.hpp"

namespace andromeda::io::testing {

// A node name (and so a pin directory) no other run or test uses.
inline std::string unique_node(const std::string& what) { return "t" + std::to_string(getpid()) + "-" + what; }

inline InstanceConfig instance_config(const std::string& what) {
    InstanceConfig config;
    config.node_name = unique_node(what);
    config.pin_dir = default_pin_dir(config.node_name);
    return config;
}

// Pin directories of test instances (t<pid>-*) whose process is gone: a test that failed
// between a simulated crash and the recovery leaves one behind.
inline void sweep_stale_test_pins() {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(kDefaultPinRoot, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.size() < 2 || name[0] != 't') continue;
        const auto pid = static_cast<pid_t>(std::strtol(name.c_str() + 1, nullptr, 10));
        if (pid <= 0 || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
        std::filesystem::remove_all(entry.path(), ec);
    }
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace andromeda::io::testing
