#include "io/netlink/rps.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>

namespace andromeda::io {

namespace {

constexpr std::uint32_t kCpuLimit = 65536;          // CPUs 0..65535: far above any NR_CPUS
constexpr std::size_t kMaxGroups = kCpuLimit / 32;  // hex groups of a mask of that many CPUs
constexpr std::size_t kMaxFile = 16 * 1024;         // rps_cpus of 65,536 CPUs: 2,048 groups of 9

std::string_view without_newline(std::string_view text) {
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    return text;
}

void trim(CpuMask& mask) {
    while (!mask.empty() && mask.back() == 0) mask.pop_back();
}

void add_cpu(CpuMask& mask, std::uint32_t cpu) {
    if (mask.size() <= cpu / 32) mask.resize(cpu / 32 + 1, 0);
    mask[cpu / 32] |= 1u << (cpu % 32);
}

std::optional<std::uint32_t> decimal(std::string_view digits) {
    if (digits.empty() || digits.size() > 5) return std::nullopt;
    std::uint32_t value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc{} || end != digits.data() + digits.size() || value >= kCpuLimit) return std::nullopt;
    return value;
}

// A small sysfs file whole, or nullopt with errno's value in `error`.
std::optional<std::string> read_file(const std::filesystem::path& path, int& error) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        error = errno;
        return std::nullopt;
    }
    std::string out;
    std::array<char, 4096> buffer{};
    for (;;) {
        const ssize_t n = ::read(fd, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) error = errno;
        if (n <= 0) break;
        out.append(buffer.data(), static_cast<std::size_t>(n));
        if (out.size() > kMaxFile) {
            error = EFBIG;
            break;
        }
    }
    ::close(fd);
    if (error != 0) return std::nullopt;
    return out;
}

// Writes `text` to a sysfs attribute in one write, as sysfs wants it. 0 or errno's value.
int write_file(const std::filesystem::path& path, const std::string& text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);  // as the shell's > does
    if (fd < 0) return errno;
    ssize_t n = 0;
    do n = ::write(fd, text.data(), text.size());
    while (n < 0 && errno == EINTR);
    const int error = n < 0 ? errno : (static_cast<std::size_t>(n) == text.size() ? 0 : EIO);
    ::close(fd);
    return error;
}

std::optional<CpuMask> read_mask(const std::filesystem::path& queue) {
    int error = 0;
    const auto text = read_file(queue / "rps_cpus", error);
    if (!text) return std::nullopt;
    return parse_cpu_mask(*text);
}

// Runs `work` on a thread of its own with a private mount namespace in which a sysfs of the
// daemon's network namespace is mounted on /sys (what `ip netns exec` does for a whole process):
// for a daemon started in a namespace by nsenter, whose /sys still shows the namespace it came
// from. The mount goes with the thread. False, with the reason in `error`, when the kernel or
// a sandbox refuses (systemd's RestrictNamespaces=; a daemon under the shipped unit runs in the
// host's namespace and never needs this).
template <typename Work>
bool with_own_sysfs(Work&& work, std::string& error) {
    bool done = false;
    std::thread thread([&] {
        if (::unshare(CLONE_NEWNS) != 0) {
            error = std::string("a sysfs of its own: unshare(CLONE_NEWNS): ") + std::strerror(errno);
        } else if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
            error = std::string("a sysfs of its own: making / a slave mount: ") + std::strerror(errno);
        } else if (::mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
            error = std::string("a sysfs of its own: mounting it on /sys: ") + std::strerror(errno);
        } else {
            work();
            done = true;
        }
    });
    thread.join();
    return done;
}

// Runs `here` (true when `sysfs` showed the device) and, when it did not and `sysfs` is the real
// /sys, once more in a sysfs of the daemon's own namespace (with_own_sysfs); why that second run
// could not be made goes to `refused`.
template <typename Here>
void here_or_in_own_sysfs(const std::filesystem::path& sysfs, Here&& here, std::string& refused) noexcept {
    if (here() || sysfs != "/sys") return;
    try {
        with_own_sysfs([&] { here(); }, refused);
    } catch (const std::exception& e) {
        refused = e.what();
    }
}

}  // namespace

std::optional<CpuMask> parse_cpu_list(std::string_view text) {
    text = without_newline(text);
    CpuMask mask;
    while (!text.empty()) {
        const std::size_t comma = text.find(',');
        const std::string_view item = text.substr(0, comma);
        const std::size_t dash = item.find('-');
        const auto first = decimal(item.substr(0, dash));
        const auto last = dash == std::string_view::npos ? first : decimal(item.substr(dash + 1));
        if (!first || !last || *last < *first) return std::nullopt;
        for (std::uint32_t cpu = *first; cpu <= *last; ++cpu) add_cpu(mask, cpu);
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
        if (text.empty()) return std::nullopt;  // a trailing comma
    }
    trim(mask);
    return mask;
}

std::optional<CpuMask> parse_cpu_mask(std::string_view text) {
    text = without_newline(text);
    if (text.empty()) return std::nullopt;
    std::vector<std::uint32_t> groups;  // most significant first, as written
    for (;;) {
        const std::size_t comma = text.find(',');
        const std::string_view group = text.substr(0, comma);
        if (group.empty() || group.size() > 8 || groups.size() == kMaxGroups) return std::nullopt;
        std::uint32_t value = 0;
        const auto [end, ec] = std::from_chars(group.data(), group.data() + group.size(), value, 16);
        if (ec != std::errc{} || end != group.data() + group.size()) return std::nullopt;
        groups.push_back(value);
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
    }
    CpuMask mask(groups.rbegin(), groups.rend());
    trim(mask);
    return mask;
}

std::string format_cpu_mask(std::span<const std::uint32_t> mask) {
    std::size_t words = mask.size();
    while (words > 0 && mask[words - 1] == 0) --words;
    if (words == 0) return "0";
    std::string out;
    std::array<char, 9> digits{};
    for (std::size_t i = words; i-- > 0;) {
        const auto [end, ec] = std::to_chars(digits.data(), digits.data() + digits.size(), mask[i], 16);
        const std::string_view group(digits.data(), static_cast<std::size_t>(end - digits.data()));
        if (i + 1 != words) {
            out += ',';
            out.append(8 - group.size(), '0');
        }
        out += group;
    }
    return out;
}

std::string format_cpu_list(std::span<const std::uint32_t> mask) {
    std::string out;
    const auto has = [&](std::size_t cpu) {
        return cpu / 32 < mask.size() && (mask[cpu / 32] >> (cpu % 32) & 1u) != 0;
    };
    const std::size_t end = mask.size() * 32;
    for (std::size_t cpu = 0; cpu < end; ++cpu) {
        if (!has(cpu)) continue;
        std::size_t last = cpu;
        while (last + 1 < end && has(last + 1)) ++last;
        if (!out.empty()) out += ',';
        out += std::to_string(cpu);
        if (last > cpu) out += '-' + std::to_string(last);
        cpu = last;
    }
    return out;
}

CpuMask RpsSteering::online_cpus(const std::filesystem::path& sysfs) {
    int error = 0;
    const auto text = read_file(sysfs / "devices/system/cpu/online", error);
    if (!text) return {};
    auto mask = parse_cpu_list(*text);
    if (!mask) return {};
    std::size_t count = 0;
    for (const std::uint32_t word : *mask) count += static_cast<std::size_t>(__builtin_popcount(word));
    if (count < 2) return {};
    return *mask;
}

std::optional<std::vector<std::filesystem::path>> RpsSteering::rx_queues(const RpsDevice& device,
                                                                         std::string& error) const {
    const std::filesystem::path dir = sysfs_ / "class/net" / device.name;
    int read_error = 0;
    const auto seen = read_file(dir / "ifindex", read_error);
    if (!seen) {
        error =
            dir.string() + ": " + std::strerror(read_error) + " (no sysfs here, or it shows another network namespace)";
        return std::nullopt;
    }
    const std::string_view text = without_newline(*seen);
    std::uint32_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    const auto mac = read_file(dir / "address", read_error);
    if (ec != std::errc{} || end != text.data() + text.size() || value != device.ifindex || !mac ||
        without_newline(*mac) != device.mac) {
        error = dir.string() + " is ifindex " + std::string(text) + " (" +
                (mac ? std::string(without_newline(*mac)) : "no address") + "), not " + std::to_string(device.ifindex) +
                " (" + device.mac +
                "): this sysfs shows another network namespace (mount one of the daemon's own: ip netns exec does)";
        return std::nullopt;
    }
    std::vector<std::filesystem::path> queues;
    std::error_code list_error;
    for (const auto& entry : std::filesystem::directory_iterator(dir / "queues", list_error)) {
        if (entry.path().filename().string().starts_with("rx-")) queues.push_back(entry.path());
    }
    if (list_error) {
        error = (dir / "queues").string() + ": " + list_error.message();
        return std::nullopt;
    }
    std::sort(queues.begin(), queues.end());
    return queues;
}

RpsOutcome RpsSteering::steer(const RpsDevice& device) const noexcept {
    RpsOutcome out;
    if (cpus_.empty()) return out;
    std::string refused;
    here_or_in_own_sysfs(
        sysfs_,
        [&] {
            out = RpsOutcome{};
            return steer_here(device, out);
        },
        refused);
    if (!refused.empty()) out.error += "; " + refused;
    return out;
}

bool RpsSteering::steer_here(const RpsDevice& device, RpsOutcome& out) const noexcept {
    try {
        const auto queues = rx_queues(device, out.error);
        if (!queues) return false;
        out.queues = queues->size();
        const std::string text = format_cpu_mask(cpus_) + "\n";
        for (const auto& queue : *queues) {
            const auto mask = read_mask(queue);
            if (!mask) {
                out.error =
                    (queue / "rps_cpus").string() + ": unreadable (a kernel without CONFIG_RPS has no such file)";
                continue;
            }
            if (!mask->empty()) {
                ++out.kept;
                continue;
            }
            if (const int error = write_file(queue / "rps_cpus", text); error != 0) {
                out.error = (queue / "rps_cpus").string() + ": " + std::strerror(error);
                continue;
            }
            ++out.set;
        }
    } catch (const std::exception& e) {
        out.error = e.what();
    }
    return true;
}

std::size_t RpsSteering::release(const RpsDevice& device) const noexcept {
    if (cpus_.empty()) return 0;
    std::size_t emptied = 0;
    std::string refused;
    here_or_in_own_sysfs(
        sysfs_, [&] { return release_here(device, emptied); }, refused);
    return emptied;
}

bool RpsSteering::release_here(const RpsDevice& device, std::size_t& emptied) const noexcept {
    try {
        std::string error;
        const auto queues = rx_queues(device, error);
        if (!queues) return false;
        for (const auto& queue : *queues) {
            const auto mask = read_mask(queue);
            if (mask && *mask == cpus_ && write_file(queue / "rps_cpus", "0\n") == 0) ++emptied;
        }
    } catch (const std::exception&) {
    }
    return true;
}

}  // namespace andromeda::io
