#include "io/bpf/bpffs.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include <spdlog/spdlog.h>

#include "io/plan/io_error.hpp"

namespace andromeda::io {

namespace fs = std::filesystem;

namespace {

// The deepest existing ancestor of `path` (itself when it exists).
fs::path existing_ancestor(fs::path path) {
    std::error_code ec;
    while (!path.empty() && !fs::exists(path, ec) && path != path.root_path()) path = path.parent_path();
    return path;
}

bool below(const fs::path& path, const fs::path& dir) {
    const auto rel = path.lexically_normal().lexically_relative(dir);
    return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

bool is_bpffs(const fs::path& path) {
    struct statfs st {};
    return statfs(path.c_str(), &st) == 0 && st.f_type == static_cast<decltype(st.f_type)>(BPF_FS_MAGIC);
}

bool ensure_bpffs_for(const fs::path& pin_dir) {
    if (is_bpffs(existing_ancestor(pin_dir))) return false;
    if (!below(pin_dir, kBpffsMountPoint) && pin_dir.lexically_normal() != fs::path(kBpffsMountPoint))
        throw IoError("pin directory " + pin_dir.string() + " is not on a BPF filesystem", ENOTSUP,
                      "mount one with `mount -t bpf bpf <dir>` or use a pin_dir below /sys/fs/bpf");
    // Lock the directory under the mount point: an instance starting at the same moment
    // waits, then sees the mount and leaves it alone (a second mount would hide the first's pins).
    const int fd = open(kBpffsMountPoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        throw IoError(std::string("cannot open ") + kBpffsMountPoint, errno,
                      "the kernel needs sysfs mounted at /sys and CONFIG_BPF_SYSCALL");
    flock(fd, LOCK_EX);
    bool mounted = false;
    int error = 0;
    if (!is_bpffs(kBpffsMountPoint)) {
        mounted = mount("bpf", kBpffsMountPoint, "bpf", 0, "mode=0700") == 0;
        error = mounted ? 0 : errno;
    }
    close(fd);
    if (error != 0)
        throw IoError(std::string("mounting the BPF filesystem at ") + kBpffsMountPoint, error,
                      "mount it yourself: mount -t bpf bpf /sys/fs/bpf");
    if (mounted) spdlog::info("mounted the BPF filesystem at {}", kBpffsMountPoint);
    if (!is_bpffs(existing_ancestor(pin_dir)))
        throw IoError("pin directory " + pin_dir.string() + " is not on a BPF filesystem", ENOTSUP,
                      "another filesystem is mounted below /sys/fs/bpf");
    return mounted;
}

InstanceDirectory::InstanceDirectory(fs::path dir) : dir_(std::move(dir)) {
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) throw IoError("creating pin directory " + dir_.string(), ec.value());
    lock_fd_ = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock_fd_ < 0) throw IoError("opening pin directory " + dir_.string(), errno);
    if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        const int error = errno;
        close(lock_fd_);
        throw IoError("pin directory " + dir_.string() + " is locked", error,
                      error == EWOULDBLOCK ? "another andromedad for this node is running; stop it first, or give "
                                             "this instance its own node name or pin_dir"
                                           : "");
    }
}

InstanceDirectory::~InstanceDirectory() {
    if (lock_fd_ >= 0) close(lock_fd_);
}

std::vector<std::string> InstanceDirectory::pins() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_, ec))
        if (!entry.is_directory(ec)) names.push_back(entry.path().filename().string());
    if (ec) throw IoError("listing pin directory " + dir_.string(), ec.value());
    std::sort(names.begin(), names.end());
    return names;
}

std::vector<std::string> InstanceDirectory::remove_pins(const std::vector<std::string>& keep) {
    std::vector<std::string> removed;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
        if (entry.is_directory(ec)) {
            if (entry.path().filename() == kTcLinkDirectory) continue;  // the tc links: BpfInstance's
            spdlog::warn("{}: leaving subdirectory {} alone (not an Andromeda pin)", dir_.string(), entry.path().string());
            continue;
        }
        if (std::find(keep.begin(), keep.end(), entry.path().filename().string()) != keep.end()) continue;
        if (unlink(entry.path().c_str()) != 0)
            throw IoError("removing stale pin " + entry.path().string(), errno);
        removed.push_back(entry.path().filename().string());
    }
    if (ec) throw IoError("listing pin directory " + dir_.string(), ec.value());
    std::sort(removed.begin(), removed.end());
    return removed;
}

void InstanceDirectory::remove_if_empty() noexcept {
    std::error_code ec;
    if (fs::is_empty(dir_, ec) && !ec) fs::remove(dir_, ec);
}

}  // namespace andromeda::io
