#include "io/plan/config.hpp"

#include <cerrno>

#include "andromeda_kern_user.h"
#include "io/plan/io_error.hpp"

namespace andromeda::io {

namespace {

bool power_of_two(std::uint32_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }

void check_ring(std::vector<std::string>& out, const char* name, std::uint32_t size) {
    if (!power_of_two(size) || size < 64 || size > 65536)
        out.push_back(std::string(name) + " must be a power of two from 64 to 65536, not " + std::to_string(size));
}

}  // namespace

std::optional<XdpModePreference> parse_xdp_mode(std::string_view text) noexcept {
    if (text == "auto") return XdpModePreference::best;
    if (text == "native" || text == "driver") return XdpModePreference::native_only;
    if (text == "generic" || text == "skb") return XdpModePreference::generic_only;
    return std::nullopt;
}

std::optional<BindPreference> parse_bind_mode(std::string_view text) noexcept {
    if (text == "auto") return BindPreference::best;
    if (text == "zerocopy" || text == "zero-copy" || text == "zc") return BindPreference::zero_copy_only;
    if (text == "copy") return BindPreference::copy_only;
    return std::nullopt;
}

const char* to_string(XdpMode mode) noexcept { return mode == XdpMode::native ? "native" : "generic"; }
const char* to_string(BindMode mode) noexcept { return mode == BindMode::zero_copy ? "zero-copy" : "copy"; }
const char* to_string(TcAttachMode mode) noexcept { return mode == TcAttachMode::tcx ? "tcx" : "clsact"; }

const char* to_string(XdpModePreference mode) noexcept {
    switch (mode) {
    case XdpModePreference::native_only: return "native";
    case XdpModePreference::generic_only: return "generic";
    default: return "auto";
    }
}

const char* to_string(BindPreference mode) noexcept {
    switch (mode) {
    case BindPreference::zero_copy_only: return "zerocopy";
    case BindPreference::copy_only: return "copy";
    default: return "auto";
    }
}

std::vector<std::string> UmemConfig::problems() const {
    std::vector<std::string> out;
    if (!power_of_two(frame_size) || frame_size < 2048 || frame_size > 4096)
        out.push_back("frame_size must be 2048 or 4096, not " + std::to_string(frame_size));
    if (frame_headroom < ANDROMEDA_ENCAP_OVERHEAD)
        out.push_back("frame_headroom must be at least " + std::to_string(ANDROMEDA_ENCAP_OVERHEAD) +
                      " (the encapsulation is written in place in front of the frame), not " +
                      std::to_string(frame_headroom));
    else if (frame_headroom + kKernelRxHeadroom + 1514 > frame_size)
        out.push_back("frame_headroom " + std::to_string(frame_headroom) + " leaves no room for a 1514-byte frame in a " +
                      std::to_string(frame_size) + "-byte chunk");
    if (frame_count < 64 || frame_count > (1u << 20))
        out.push_back("frame_count must be from 64 to 1048576, not " + std::to_string(frame_count));
    check_ring(out, "fill_size", fill_size);
    check_ring(out, "completion_size", completion_size);
    check_ring(out, "rx_size", rx_size);
    check_ring(out, "tx_size", tx_size);
    if (batch_size == 0 || batch_size > 64)
        out.push_back("batch_size must be from 1 to 64, not " + std::to_string(batch_size));
    return out;
}

void UmemConfig::validate() const {
    const auto found = problems();
    if (found.empty()) return;
    std::string joined;
    for (const auto& p : found) joined += (joined.empty() ? "" : "; ") + p;
    throw IoError("invalid UMEM configuration: " + joined, EINVAL);
}

std::filesystem::path default_pin_dir(std::string_view node_name) {
    const bool unsafe = node_name.empty() || node_name == "." || node_name == ".." ||
                        node_name.find('/') != std::string_view::npos || node_name.find('\0') != std::string_view::npos;
    if (unsafe)
        throw IoError("node name '" + std::string(node_name) + "' cannot name a pin directory", EINVAL,
                      "use a name without '/', or set pin_dir in [node]");
    return std::filesystem::path(kDefaultPinRoot) / std::string(node_name);
}

InstanceConfig instance_config_from(const fabric::LocalNodeSettings& local) {
    InstanceConfig config;
    config.node_name = local.name;
    config.pin_dir = local.pin_dir.empty() ? default_pin_dir(local.name) : std::filesystem::path(local.pin_dir);
    if (local.uplink) config.nat_flow_entries = 2 * local.uplink->kernel_flows;
    if (local.encap == fabric::Encap::vxlan) {
        config.encap_kind = ANDROMEDA_ENCAP_VXLAN;
        config.overlay_port = local.vxlan_port;
    } else {
        config.encap_kind = ANDROMEDA_ENCAP_ANDROMEDA;
        config.overlay_port = ANDROMEDA_OVERLAY_PORT;
    }
    return config;
}

}  // namespace andromeda::io
