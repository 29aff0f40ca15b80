#include "io/bpf/bpf_instance.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <spdlog/spdlog.h>

#include "andromeda_xdp.skel.h"
#include "io/bpf/library_log.hpp"
#include "io/netlink/interfaces.hpp"
#include "io/plan/io_error.hpp"
#include "io/plan/port_table.hpp"

namespace andromeda::io {

namespace {

bpf_map* map_of(andromeda_xdp& skel, MapId id) noexcept {
    switch (id) {
    case MapId::xsks: return skel.maps.andromeda_xsks;
    case MapId::ports: return skel.maps.andromeda_ports;
    case MapId::peers: return skel.maps.andromeda_peers;
    case MapId::vnis: return skel.maps.andromeda_vnis;
    case MapId::fabric: return skel.maps.andromeda_fabric;
    case MapId::nat_addrs: return skel.maps.andromeda_nat_addrs;
    case MapId::stats: return skel.maps.andromeda_stats;
    case MapId::daemon_stats: return skel.maps.andromeda_daemon_stats;
    case MapId::fp_config: return skel.maps.andromeda_fp_config;
    case MapId::fp_stats: return skel.maps.andromeda_fp_stats;
    case MapId::fp_ip_id: return skel.maps.andromeda_fp_ip_id;
    case MapId::vpc_cidrs: return skel.maps.andromeda_vpc_cidrs;
    case MapId::nat_flows: return skel.maps.andromeda_nat_flows;
    case MapId::punt_limits: return skel.maps.andromeda_punt_limits;
    case MapId::peer_mtu: return skel.maps.andromeda_peer_mtu;
    case MapId::policy_flows: return skel.maps.andromeda_policy_flows;
    case MapId::fabric6: return skel.maps.andromeda_fabric6;
    case MapId::policy_flows6: return skel.maps.andromeda_policy_flows6;
    }
    return nullptr;
}

// The layout stamp: a one-entry array pinned beside the maps (not part of the BPF object: the
// programs never read it), holding ANDROMEDA_MAP_LAYOUT.
std::optional<std::uint32_t> read_layout_stamp(const std::filesystem::path& pin) {
    const int fd = bpf_obj_get(pin.c_str());
    if (fd < 0) return std::nullopt;
    const __u32 key = 0;
    __u32 value = 0;
    bpf_map_info info{};
    __u32 length = sizeof info;
    const bool ok = bpf_obj_get_info_by_fd(fd, &info, &length) == 0 && info.type == BPF_MAP_TYPE_ARRAY &&
                    info.key_size == sizeof key && info.value_size == sizeof value &&
                    bpf_map_lookup_elem(fd, &key, &value) == 0;
    close(fd);
    return ok ? std::optional(value) : std::nullopt;
}

void write_layout_stamp(const std::filesystem::path& pin) {
    std::error_code ec;
    std::filesystem::remove(pin, ec);
    const int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "andromeda_stamp", sizeof(__u32), sizeof(__u32), 1, nullptr);
    if (fd < 0) throw IoError("creating the map layout stamp", errno);
    const __u32 key = 0, value = ANDROMEDA_MAP_LAYOUT;
    const bool ok = bpf_map_update_elem(fd, &key, &value, BPF_ANY) == 0 && bpf_obj_pin(fd, pin.c_str()) == 0;
    const int error = errno;
    close(fd);
    if (!ok) throw IoError("stamping the map layout at " + pin.string(), error);
}

// Writes through the map fds, checking sizes against what the kernel map was created with.
class BpfMapWriter final : public MapWriter {
public:
    explicit BpfMapWriter(andromeda_xdp& skel) : skel_(skel) {}

    void upsert(MapId id, std::span<const std::byte> key, std::span<const std::byte> value) override {
        const bpf_map* map = checked(id, key, value.size());
        // A full hash map answers E2BIG (ENOMEM without preallocation), a full LPM trie ENOSPC.
        if (bpf_map_update_elem(bpf_map__fd(map), key.data(), value.data(), BPF_ANY) != 0)
            throw IoError(std::string("writing an entry of ") + bpf_name(id), errno,
                          errno == E2BIG || errno == ENOMEM || errno == ENOSPC ? "the map is full" : "");
    }
    InsertResult insert(MapId id, std::span<const std::byte> key, std::span<const std::byte> value) override {
        const bpf_map* map = checked(id, key, value.size());
        if (bpf_map_update_elem(bpf_map__fd(map), key.data(), value.data(), BPF_NOEXIST) == 0) return InsertResult::inserted;
        if (errno == EEXIST) return InsertResult::exists;
        if (errno == E2BIG || errno == ENOMEM) return InsertResult::full;
        throw IoError(std::string("inserting an entry of ") + bpf_name(id), errno);
    }
    std::optional<std::string> lookup(MapId id, std::span<const std::byte> key) const override {
        const bpf_map* map = map_of(skel_, id);
        std::string value(bpf_map__value_size(map), '\0');
        if (key.size() != bpf_map__key_size(map))
            throw IoError(std::string("key size mismatch for ") + bpf_name(id), EINVAL);
        if (bpf_map_lookup_elem(bpf_map__fd(map), key.data(), value.data()) == 0) return value;
        if (errno == ENOENT) return std::nullopt;
        throw IoError(std::string("reading an entry of ") + bpf_name(id), errno);
    }
    void erase(MapId id, std::span<const std::byte> key) override {
        const bpf_map* map = checked(id, key, bpf_map__value_size(map_of(skel_, id)));
        if (bpf_map_delete_elem(bpf_map__fd(map), key.data()) != 0 && errno != ENOENT)
            throw IoError(std::string("deleting an entry of ") + bpf_name(id), errno);
    }

    std::vector<std::pair<std::string, std::string>> entries(MapId id) const override {
        const bpf_map* map = map_of(skel_, id);
        const int fd = bpf_map__fd(map);
        std::string key(bpf_map__key_size(map), '\0'), next(key.size(), '\0'), value(bpf_map__value_size(map), '\0');
        std::vector<std::pair<std::string, std::string>> out;
        const void* previous = nullptr;
        while (bpf_map_get_next_key(fd, previous, next.data()) == 0) {
            key = next;
            previous = key.data();
            if (bpf_map_lookup_elem(fd, key.data(), value.data()) == 0) out.emplace_back(key, value);
            else if (errno != ENOENT) throw IoError(std::string("reading ") + bpf_name(id), errno);
        }
        if (errno != ENOENT) throw IoError(std::string("listing the keys of ") + bpf_name(id), errno);
        return out;
    }

private:
    const bpf_map* checked(MapId id, std::span<const std::byte> key, std::size_t value_size) const {
        const bpf_map* map = map_of(skel_, id);
        if (key.size() != bpf_map__key_size(map) || value_size != bpf_map__value_size(map))
            throw IoError(std::string("entry size mismatch for ") + bpf_name(id), EINVAL,
                          "shared/andromeda_kern_user.h and the loaded object disagree; rebuild");
        return map;
    }
    andromeda_xdp& skel_;
};

}  // namespace

std::unique_ptr<MapWriter> make_map_writer(andromeda_xdp& skel) { return std::make_unique<BpfMapWriter>(skel); }

std::string RecoveryReport::message() const {
    if (!recovered()) return {};
    std::vector<std::string> parts;
    if (!adopted_pins.empty())
        parts.push_back("adopted " + std::to_string(adopted_pins.size()) + " pinned maps from " + pin_dir.string() +
                        " with their contents");
    if (!adoption_refused.empty()) parts.push_back("could not adopt its maps (" + adoption_refused + ")");
    if (!removed_pins.empty()) {
        std::string names;
        for (const auto& name : removed_pins) names += (names.empty() ? "" : ", ") + name;
        parts.push_back("removed " + std::to_string(removed_pins.size()) + " stale pins from " + pin_dir.string() + " (" +
                        names + ")");
    }
    for (const auto& d : detached) parts.push_back("detached XDP from " + d);
    for (const auto& r : replaced_xdp) parts.push_back("replaced XDP in place on " + r);
    for (const auto& p : adopted_tc) parts.push_back("took over the tc link of " + p);
    for (const auto& p : released_tc) parts.push_back("released the tc link of " + p + " (no longer a port)");
    std::string out = "recovered from a previous instance: ";
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
    return out;
}

void BpfInstance::SkeletonDeleter::operator()(andromeda_xdp* skel) const noexcept { andromeda_xdp::destroy(skel); }

BpfInstance::BpfInstance(InstanceConfig config) : config_(std::move(config)) {
    route_library_logs_to_spdlog();
    if (config_.pin_dir.empty()) config_.pin_dir = default_pin_dir(config_.node_name);
    recovery_.pin_dir = config_.pin_dir;
    recovery_.mounted_bpffs = ensure_bpffs_for(config_.pin_dir);
    directory_ = std::make_unique<InstanceDirectory>(config_.pin_dir);
    kernel_ = probe_kernel_features();
    spdlog::info("{}", kernel_.message());
    // A previous instance that was killed left its maps pinned (and its programs attached, still
    // forwarding): this one adopts them, contents and all, when they carry its layout stamp and
    // match its own definitions, and starts afresh otherwise. Pins of no map of ours are removed
    // either way.
    std::vector<std::string> ours{kLayoutPin};
    for (const MapId id : kAllMaps) ours.emplace_back(pin_name(id));
    recovery_.removed_pins = directory_->remove_pins(ours);
    std::vector<std::string> left = directory_->pins();
    std::erase(left, std::string(kLayoutPin));
    if (!left.empty()) refuse_other_layouts(left);
    try {
        try {
            load_and_pin();
            recovery_.adopted_pins = left;
        } catch (const IoError& e) {
            if (left.empty()) throw;
            recovery_.adoption_refused = e.what();
            skel_.reset();
            for (auto& name : directory_->remove_pins())
                if (name != kLayoutPin) recovery_.removed_pins.push_back(std::move(name));
            std::sort(recovery_.removed_pins.begin(), recovery_.removed_pins.end());
            load_and_pin();
        }
        write_layout_stamp(config_.pin_dir / kLayoutPin);
    } catch (...) {
        unpin_all();
        throw;
    }
    // tcx links a killed instance left pinned: taken over by attach_tc, released when unclaimed.
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(config_.pin_dir / kTcLinkDirectory, ec))
        leftover_tc_links_.push_back(entry.path().filename().string());
    if (recovery_.recovered()) spdlog::info("{}", recovery_.message());
}

BpfInstance::~BpfInstance() {
    tc_.clear();     // detaches the tc programs and removes their link pins
    ports_.clear();  // detaches
    for (const auto& name : leftover_tc_links_) remove_pinned_tc_link(config_.pin_dir / kTcLinkDirectory / name);
    std::error_code ec;
    std::filesystem::remove(config_.pin_dir / kTcLinkDirectory, ec);  // only when empty
    unpin_all();
    skel_.reset();
    directory_->remove_if_empty();
}

// The stamp a killed predecessor left beside its maps, read before libbpf reuses any of them.
void BpfInstance::refuse_other_layouts(std::vector<std::string>& left) {
    const std::optional<std::uint32_t> found = read_layout_stamp(config_.pin_dir / kLayoutPin);
    if (found == ANDROMEDA_MAP_LAYOUT) return;
    recovery_.adoption_refused = "they carry map layout " + (found ? std::to_string(*found) : std::string("none")) +
                                 ", this andromedad uses layout " + std::to_string(ANDROMEDA_MAP_LAYOUT);
    spdlog::warn("the maps pinned in {} carry map layout {}{}; this andromedad uses layout {}: not adopting them. "
                 "They are rebuilt, and the tenants' kernel path with them (a short interruption until the "
                 "fabric is written again)",
                 config_.pin_dir.string(), found ? std::to_string(*found) : std::string("none"),
                 found ? "" : " (no stamp: left by an older andromedad)", ANDROMEDA_MAP_LAYOUT);
    for (auto& name : directory_->remove_pins())
        if (name != kLayoutPin) recovery_.removed_pins.push_back(std::move(name));
    std::sort(recovery_.removed_pins.begin(), recovery_.removed_pins.end());
    left.clear();
}

void BpfInstance::load_and_pin() {
    skel_.reset(andromeda_xdp::open());
    if (!skel_) throw IoError("opening the andromeda_xdp BPF object", errno);
    skel_->rodata->overlay_port = config_.overlay_port;
    skel_->rodata->encap_kind = config_.encap_kind;
    skel_->rodata->decap_l4_udp = kernel_.decap_l4_udp ? 1 : 0;
    skel_->rodata->xdp_metadata = kernel_.xdp_metadata ? 1 : 0;
    if (const int rc = bpf_map__set_max_entries(skel_->maps.andromeda_nat_flows, config_.nat_flow_entries); rc != 0)
        throw IoError("sizing andromeda_nat_flows", -rc);
    for (const MapId id : kAllMaps)
        if (const int rc = bpf_map__set_pin_path(map_of(*skel_, id), pin_path(id).c_str()); rc != 0)
            throw IoError("setting the pin path of " + std::string(bpf_name(id)), -rc);
    {
        LibraryLogCapture capture;
        if (const int rc = andromeda_xdp::load(skel_.get()); rc != 0) {
            // A pinned map that does not match its definition is the reason worth naming.
            for (const auto& line : capture.lines())
                if (line.find("reuse pinned map") != std::string::npos)
                    throw IoError("adopting the maps pinned in " + config_.pin_dir.string(), -rc, line);
            for (const auto& line : capture.lines()) spdlog::warn("{}", line);
            throw IoError("loading the andromeda_xdp BPF object", -rc, capture.tail(2));
        }
    }
    // libbpf pinned every map it created, and reused every compatible one pinned already.
    bpf_prog_info info{};
    __u32 length = sizeof info;
    if (bpf_obj_get_info_by_fd(program_fd(), &info, &length) == 0) program_id_ = info.id;
    writer_ = std::make_unique<BpfMapWriter>(*skel_);
    spdlog::info("loaded {} (prog id {}), maps pinned under {}", kXdpProgramName, program_id_, config_.pin_dir.string());
}

void BpfInstance::unpin_all() noexcept {
    std::error_code ec;
    std::filesystem::remove(config_.pin_dir / kLayoutPin, ec);
    if (!skel_) return;
    for (const MapId id : kAllMaps) {
        bpf_map* map = map_of(*skel_, id);
        if (bpf_map__is_pinned(map)) bpf_map__unpin(map, nullptr);
    }
}

const AttachReport& BpfInstance::attach(std::string_view ifname, std::optional<XdpModePreference> mode) {
    for (const auto& port : ports_)
        if (port.ifname == ifname) return port.attachment->report();
    const InterfaceInfo link = require_interface(ifname);
    auto attachment = std::make_unique<XdpAttachment>(program_fd(), link, mode.value_or(config_.xdp_mode),
                                                      config_.replace_foreign_xdp);
    if (const AttachReport& r = attachment->report(); !r.replaced.empty())
        (r.replaced_in_place ? recovery_.replaced_xdp : recovery_.detached).push_back(link.name + ": " + r.replaced);
    ports_.push_back({std::string(ifname), std::move(attachment)});
    return ports_.back().attachment->report();
}

bool BpfInstance::detach(std::string_view ifname) {
    const auto it = std::find_if(ports_.begin(), ports_.end(), [&](const Port& p) { return p.ifname == ifname; });
    if (it == ports_.end()) return false;
    const bool detached = it->attachment->detach();
    ports_.erase(it);
    return detached;
}

std::vector<AttachReport> BpfInstance::attachments() const {
    std::vector<AttachReport> out;
    for (const auto& port : ports_) out.push_back(port.attachment->report());
    return out;
}

const TcAttachment& BpfInstance::attach_tc(std::string_view ifname, TcProgram program) {
    for (const auto& tc : tc_)
        if (tc->ifname() == ifname) return *tc;
    const InterfaceInfo link = require_interface(ifname);
    const bpf_program* prog = program == TcProgram::tenant   ? skel_->progs.andromeda_tc_tenant
                              : program == TcProgram::punt   ? skel_->progs.andromeda_tc_punt
                              : program == TcProgram::uplink ? skel_->progs.andromeda_tc_uplink
                              : program == TcProgram::reseg  ? skel_->progs.andromeda_tc_reseg
                                                             : skel_->progs.andromeda_tc_underlay;
    tc_.push_back(std::make_unique<TcAttachment>(bpf_program__fd(prog), link.ifindex, link.name, bpf_program__name(prog),
                                                 config_.tc_attach, tc_link_pin(link.name)));
    const auto pin = tc_link_pin(link.name).filename().string();
    std::erase(leftover_tc_links_, pin);
    if (tc_.back()->adopted()) recovery_.adopted_tc.push_back(link.name);
    spdlog::info("{}", tc_.back()->message());  // "... (tcx, adopted)" for a link taken over
    return *tc_.back();
}

std::filesystem::path BpfInstance::tc_link_pin(std::string_view ifname) const {
    return config_.pin_dir / kTcLinkDirectory / ("tc_" + std::string(ifname));
}

std::vector<std::string> BpfInstance::release_unclaimed_tc_links() {
    std::vector<std::string> released;
    for (const auto& name : leftover_tc_links_) {
        if (!remove_pinned_tc_link(config_.pin_dir / kTcLinkDirectory / name)) continue;
        released.push_back(name.rfind("tc_", 0) == 0 ? name.substr(3) : name);
        spdlog::info("released the tc link a previous instance left on {} (no longer a port)", released.back());
    }
    leftover_tc_links_.clear();
    recovery_.released_tc.insert(recovery_.released_tc.end(), released.begin(), released.end());
    return released;
}

bool BpfInstance::detach_tc(std::string_view ifname) {
    const auto it = std::find_if(tc_.begin(), tc_.end(), [&](const auto& tc) { return tc->ifname() == ifname; });
    if (it == tc_.end()) return false;
    const bool detached = (*it)->detach();
    tc_.erase(it);
    return detached;
}

std::string BpfInstance::tc_program_on(std::string_view ifname) const {
    for (const auto& tc : tc_)
        if (tc->ifname() == ifname) return tc->program_name() + " (" + to_string(tc->mode()) + ")";
    return {};
}

std::vector<std::pair<std::string, std::uint32_t>> BpfInstance::tc_devices() const {
    std::vector<std::pair<std::string, std::uint32_t>> out;
    for (const auto& tc : tc_) out.emplace_back(tc->ifname(), tc->ifindex());
    return out;
}

void BpfInstance::set_fast_path(const andromeda_fp_config& config) {
    const __u32 key = 0;
    if (bpf_map_update_elem(map_fd(MapId::fp_config), &key, &config, BPF_ANY) != 0)
        throw IoError("writing andromeda_fp_config", errno);
}

andromeda_fp_config BpfInstance::fast_path() const {
    const __u32 key = 0;
    andromeda_fp_config config{};
    if (bpf_map_lookup_elem(map_fd(MapId::fp_config), &key, &config) != 0)
        throw IoError("reading andromeda_fp_config", errno);
    return config;
}

void BpfInstance::set_punt_limits(const PortTable& ports, PuntLimit limit) {
    const int fd = map_fd(MapId::punt_limits);
    for (const auto& [ifindex, port] : ports) {
        if (port.role != ANDROMEDA_PORT_TENANT || port.slot >= ANDROMEDA_MAX_PORTS) continue;
        const std::optional<andromeda_punt_limit> now = punt_bucket(port.slot);
        if (!now) throw IoError("reading andromeda_punt_limits", errno);
        const auto next = punt_bucket_update(*now, ifindex, limit);
        // Without BPF_F_LOCK: the kernel copies everything but the lock, which stays the map's.
        if (next && bpf_map_update_elem(fd, &port.slot, &*next, BPF_ANY) != 0)
            throw IoError("writing andromeda_punt_limits", errno);
    }
}

std::optional<andromeda_punt_limit> BpfInstance::punt_bucket(std::uint32_t slot) const {
    andromeda_punt_limit bucket{};
    if (bpf_map_lookup_elem(map_fd(MapId::punt_limits), &slot, &bucket) != 0) return std::nullopt;
    return bucket;
}

void BpfInstance::register_socket(std::uint32_t slot, std::uint32_t queue, int xsk_fd) {
    if (slot >= ANDROMEDA_MAX_PORTS || queue >= ANDROMEDA_MAX_QUEUES)
        throw IoError("XSKMAP slot " + std::to_string(slot) + " queue " + std::to_string(queue) + " out of range", ERANGE,
                      "at most " + std::to_string(ANDROMEDA_MAX_QUEUES) + " queues per port");
    const std::uint32_t key = xsk_key(slot, queue);
    if (bpf_map_update_elem(map_fd(MapId::xsks), &key, &xsk_fd, BPF_ANY) != 0)
        throw IoError("registering an AF_XDP socket in andromeda_xsks", errno);
}

void BpfInstance::unregister_socket(std::uint32_t slot, std::uint32_t queue) {
    const std::uint32_t key = xsk_key(slot, queue);
    if (bpf_map_delete_elem(map_fd(MapId::xsks), &key) != 0 && errno != ENOENT)
        throw IoError("removing an AF_XDP socket from andromeda_xsks", errno);
}

int BpfInstance::map_fd(MapId map) const noexcept { return bpf_map__fd(map_of(*skel_, map)); }

int BpfInstance::program_fd() const noexcept { return bpf_program__fd(skel_->progs.andromeda_xdp); }

}  // namespace andromeda::io
