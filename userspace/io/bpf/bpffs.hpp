// The BPF filesystem side of an instance: bpffs mounted at /sys/fs/bpf, and the instance's own
// pin directory, locked so that two daemons configured with the same node name cannot both
// think the pins are theirs (the lock dies with its process, so a crashed instance's
// directory is free to recover).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace andromeda::io {

inline constexpr const char* kBpffsMountPoint = "/sys/fs/bpf";
// The subdirectory of an instance's pin directory that holds its pinned tcx links
// (tc_<ifname>); the maps are pinned in the directory itself.
inline constexpr const char* kTcLinkDirectory = "links";

[[nodiscard]] bool is_bpffs(const std::filesystem::path& path);

// Makes sure `pin_dir` lies on a BPF filesystem. When /sys/fs/bpf holds none and pin_dir is
// below it, mounts one there (serialized against other instances starting at the same time).
// Returns true when it mounted. Throws IoError when it cannot.
bool ensure_bpffs_for(const std::filesystem::path& pin_dir);

class InstanceDirectory {
public:
    // Creates the directory (and parents) and takes its lock. Throws IoError when another live
    // process holds it.
    explicit InstanceDirectory(std::filesystem::path dir);
    ~InstanceDirectory();
    InstanceDirectory(const InstanceDirectory&) = delete;
    InstanceDirectory& operator=(const InstanceDirectory&) = delete;

    // Unlinks every pin in the directory (not below it), or only those not named in `keep`;
    // returns the names removed, sorted.
    std::vector<std::string> remove_pins(const std::vector<std::string>& keep = {});
    // The names of the pins in the directory, sorted.
    [[nodiscard]] std::vector<std::string> pins() const;
    // Removes the directory when it is empty; best effort, for a clean exit.
    void remove_if_empty() noexcept;
    [[nodiscard]] const std::filesystem::path& path() const noexcept { return dir_; }

private:
    std::filesystem::path dir_;
    int lock_fd_ = -1;
};

}  // namespace andromeda::io
