#include "differential_check.hpp"

#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "io/bpf/kernel_probe.hpp"
#include "io/bpf/xdp_stats.hpp"
#include "support/root.hpp"

namespace andromeda::fast_path_test {

namespace dp = dataplane;
using test_support::checksum_of;
using test_support::get16;
using test_support::put16;

namespace {

// The first 256 bytes in hex, for outputs (inputs are printed whole, to be replayed).
std::string hex_start(const Bytes& b) {
    if (b.size() <= 256) return hex(b);
    return hex(Bytes(b.begin(), b.begin() + 256)) + "...";
}
std::string hex8(std::uint8_t x) { return "0x" + hex(Bytes{x}); }

// ---- names of the bytes, for reporting a difference --------------------------------------------

std::string frame_field(std::size_t i) {  // Ethernet + IPv4 without options
    if (i < 6) return "destination MAC";
    if (i < 12) return "source MAC";
    if (i < 14) return "ethertype";
    static const char* const kIpv4[20] = {"IPv4 version/IHL",
                                          "IPv4 TOS",
                                          "IPv4 total length",
                                          "IPv4 total length",
                                          "IPv4 ID",
                                          "IPv4 ID",
                                          "IPv4 flags/fragment offset",
                                          "IPv4 flags/fragment offset",
                                          "IPv4 TTL",
                                          "IPv4 protocol",
                                          "IPv4 header checksum",
                                          "IPv4 header checksum",
                                          "IPv4 source",
                                          "IPv4 source",
                                          "IPv4 source",
                                          "IPv4 source",
                                          "IPv4 destination",
                                          "IPv4 destination",
                                          "IPv4 destination",
                                          "IPv4 destination"};
    if (i < 34) return kIpv4[i - 14];
    return "IPv4 payload byte " + std::to_string(i - 34);
}

std::string encap_field(std::size_t i) {  // outer headers + inner frame
    if (i < 34) return "outer " + frame_field(i);
    static const char* const kUdpFields[8] = {
        "outer UDP source port", "outer UDP source port", "outer UDP destination port", "outer UDP destination port",
        "outer UDP length",      "outer UDP length",      "outer UDP checksum",         "outer UDP checksum"};
    if (i < 42) return kUdpFields[i - 34];
    if (i < 50) return "overlay header byte " + std::to_string(i - 42) + (i >= 46 && i <= 48 ? " (VNI)" : "");
    return "inner " + frame_field(i - 50);
}

std::string encap6_field(std::size_t i) {  // outer headers over IPv6 + inner frame
    if (i < 12) return "outer " + frame_field(i);
    if (i < 14) return "outer ethertype";
    if (i < 54) {
        const std::size_t at = i - 14;
        return at < 4    ? "outer IPv6 version/traffic class/flow label"
               : at < 6  ? "outer IPv6 payload length"
               : at == 6 ? "outer IPv6 next header"
               : at == 7 ? "outer IPv6 hop limit"
               : at < 24 ? "outer IPv6 source"
                         : "outer IPv6 destination";
    }
    static const char* const kUdpFields[8] = {
        "outer UDP source port", "outer UDP source port", "outer UDP destination port", "outer UDP destination port",
        "outer UDP length",      "outer UDP length",      "outer UDP checksum",         "outer UDP checksum"};
    if (i < 62) return kUdpFields[i - 54];
    if (i < 70) return "overlay header byte " + std::to_string(i - 62) + (i >= 66 && i <= 68 ? " (VNI)" : "");
    return "inner " + frame_field(i - 70);
}

bool outer_ipv6(const Bytes& packet) { return packet.size() >= 14 && get16(&packet[12]) == 0x86dd; }

// The names of an overlay packet's bytes, over either underlay.
auto overlay_field_of(const Bytes& packet) { return outer_ipv6(packet) ? encap6_field : encap_field; }

// "" when `a` and `b` are identical; otherwise where they first differ.
std::string first_difference(const Bytes& a, const Bytes& b, std::string (*field)(std::size_t)) {
    const std::string lengths =
        a.size() == b.size() ? "" : "; lengths " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        if (a[i] != b[i])
            return "byte " + std::to_string(i) + " (" + field(i) + "): " + hex8(a[i]) + " vs " + hex8(b[i]) + lengths;
    return lengths.empty() ? "" : lengths.substr(2);
}

// Over an IPv6 underlay (bpf/lib/outer6.h) the fast path derives the outer UDP checksum from the
// headers, taking the inner TCP, UDP, ICMP or ICMPv6 checksum to be right; the pipeline sums the
// whole datagram. They write the same value exactly when the inner checksum is right; when it is
// not (a tenant's corrupt packet, which the receiving tenant drops either way), the fast path's
// value must be the checksum the datagram would have with its inner checksum made right.
std::string diff_encapsulated6(const Bytes& bpf, const Bytes& reference) {
    constexpr std::size_t kCheck = 14 + 40 + 6;
    if (bpf.size() < kCheck + 2 || reference.size() < kCheck + 2) return first_difference(bpf, reference, encap6_field);
    Bytes same = bpf;
    std::copy(reference.begin() + kCheck, reference.begin() + kCheck + 2, same.begin() + kCheck);
    if (const std::string d = first_difference(same, reference, encap6_field); !d.empty()) return d;
    const std::uint16_t written = get16(&bpf[kCheck]);
    if (written == get16(&reference[kCheck])) return "";
    const std::optional<std::uint16_t> derived = derived_outer6_checksum(bpf);
    const std::string values = "0x" + hex(Bytes(bpf.begin() + kCheck, bpf.begin() + kCheck + 2)) + " vs 0x" +
                               hex(Bytes(reference.begin() + kCheck, reference.begin() + kCheck + 2));
    if (!derived) return "byte 60 (outer UDP checksum): " + values + ", and the inner packet has no checksum to derive it from";
    if (*derived == udp6_checksum(&bpf[14], &bpf[54]))
        return "byte 60 (outer UDP checksum): " + values + " with the inner checksum right";
    if (written != *derived)
        return "byte 60 (outer UDP checksum): " + values + ", not even the one derived for a right inner checksum (0x" +
               hex(Bytes{static_cast<std::uint8_t>(*derived >> 8), static_cast<std::uint8_t>(*derived)}) + ")";
    ++derived_checksum_count;
    return "";
}

// An encapsulated packet from the fast path against the pipeline's: byte for byte once the fast
// path's outer IPv4 ID is the pipeline's (and its checksum updated for that change alone); over
// IPv6 as diff_encapsulated6 says.
std::string diff_encapsulated(Bytes bpf, const Bytes& reference) {
    if (outer_ipv6(bpf) || outer_ipv6(reference)) return diff_encapsulated6(bpf, reference);
    if (bpf.size() >= 34 && reference.size() >= 34) set_ipv4_id(bpf, 14, get16(&reference[18]));
    return first_difference(bpf, reference, encap_field);
}

// The counter structs and their named field lists are io's (io/xdp_stats.hpp): the same X-macros
// as the BPF side, summed over the CPUs the same way the daemon sums them.
template <class Stats, class Fields>
std::vector<std::string> moved_fields(const Stats& delta, const Fields& fields, const char* skip) {
    std::vector<std::string> names;
    for (const auto& f : fields) {
        const std::string name(f.name);
        const __u64 d = delta.*(f.member);
        if (d == 0 || name == skip || name.ends_with("_bytes")) continue;
        names.push_back(d == 1 ? name : name + " x" + std::to_string(d));
    }
    return names;
}

// BPF_PROG_TEST_RUN refuses (EINVAL) an skb whose ethertype is IPv4 or IPv6 but which is too short
// for that header (the kernel reads the addresses of the network header). Such frames are run
// through the pipeline only, and counted as "untestable".
bool kernel_refuses(const Bytes& frame, const TestRun& run) {
    if (run.error != EINVAL || frame.size() < 14) return false;
    const std::uint16_t ethertype = get16(&frame[12]);
    return (ethertype == 0x0800 && frame.size() < 14 + 20) || (ethertype == 0x86dd && frame.size() < 14 + 40);
}

// The outcome of a tc run the kernel refused ("untestable") or that failed (EBADMSG: the program
// left a CHECKSUM_COMPLETE skb's sum stale); nullopt for a run that ran. `program` names it in
// the failure.
std::optional<Outcome> tc_run_failed(const Bytes& input, const TestRun& run, const char* program) {
    if (kernel_refuses(input, run)) return Outcome{"untestable", ""};
    if (run.error != 0)
        return Outcome{"", std::string("BPF_PROG_TEST_RUN") + program + " failed: " + std::strerror(run.error)};
    return std::nullopt;
}

bool port_security_drop(const std::string& outcome) {
    return outcome == "drop_spoofed_mac" || outcome == "drop_spoofed_ip" || outcome == "drop_spoofed_arp";
}

// What XDP hands tc with a packet for the fast path (struct andromeda_fp_handoff, in the packet's
// metadata) is what tc's own check finds for it: the target's port, its MAC, the gateway MAC (tc,
// run here without the metadata, decapsulated by itself into b.tc.out). Empty when they agree.
std::string check_handoff(const UnderlayBpf& b) {
    const Bytes& m = b.xdp.meta;
    // A kernel that refuses bpf_xdp_adjust_meta to XDP programs gets an object that hands nothing
    // over (the xdp_metadata rodata flag): tc checks the packet itself, as it does for a driver
    // without metadata.
    static const bool kernel_takes_metadata = io::probe_kernel_features().xdp_metadata;
    if (m.empty() && !kernel_takes_metadata) return "";
    andromeda_fp_handoff h{};
    if (m.size() != sizeof h)
        return "XDP handed the packet over with " + std::to_string(m.size()) + " bytes of metadata, not " +
               std::to_string(sizeof h);
    std::memcpy(&h, m.data(), sizeof h);
    if (h.cookie != kHandoffCookie) return "the handed-over metadata has another cookie than this node's";
    if (h.ifindex != b.target)
        return "XDP handed over ifindex " + std::to_string(h.ifindex) + ", the target is " + std::to_string(b.target);
    if (b.tc.out.size() < 12 || !std::equal(h.mac, h.mac + 6, b.tc.out.begin()) ||
        !std::equal(h.gateway_mac, h.gateway_mac + 6, b.tc.out.begin() + 6))
        return "XDP handed over other MACs than tc writes into the decapsulated frame";
    if (h.dev != b.underlay)
        return "XDP handed over device " + std::to_string(h.dev) + ", it ran on " + std::to_string(b.underlay);
    return "";
}

// A packet XDP handed to the fast path: tc decapsulates it for the pipeline's port, byte for byte.
void check_decapsulated(const UnderlayBpf& b, const Outcome& tc, const PipelineOut& p,
                        std::vector<std::string>& problems) {
    if (tc.name != "decap")
        problems.push_back("XDP handed it to the fast path (pass_fastpath), tc then: " + tc.name +
                           "; the pipeline: " + describe(p));
    else if (p.verdict != dp::Verdict::deliver || p.emitted.size() != 1 || p.emitted[0].first != b.target)
        problems.push_back("the fast path decapsulated it for ifindex " + std::to_string(b.target) +
                           ", the pipeline: " + describe(p));
    else if (const std::string d = first_difference(b.tc.out, p.emitted[0].second, frame_field); !d.empty())
        problems.push_back("the decapsulated frames differ at " + d);
    else if (const std::string h = check_handoff(b); !h.empty())
        problems.push_back(h);
}

// A punt: punt_packets and one reason, redirected, the whole frame counted; "" otherwise.
std::string punt_reason(const std::vector<std::string>& moved, bool redirect, const andromeda_fp_stats& d,
                        std::size_t length) {
    if (moved.size() == 2 && moved[0] == "punt_packets" && moved[1].starts_with("punt_") && redirect &&
        d.punt_bytes == length)
        return moved[1];
    return "";
}

// A frame the fast path translated out of the uplink (NAT, outbound): the pipeline sends the same
// bytes out of the uplink.
void check_translated_out(const Bytes& out, const PipelineOut& p, dp::PortId uplink,
                          std::vector<std::string>& problems) {
    if (p.verdict != dp::Verdict::forward || p.emitted.size() != 1 || p.emitted[0].first != uplink)
        problems.push_back("the fast path translated it out of the uplink, the pipeline: " + describe(p));
    else if (const std::string d = first_difference(out, p.emitted[0].second, frame_field); !d.empty())
        problems.push_back("the translated frames differ at " + d);
}

// The entry a packet's tuple finds, before and after: equal flows, counts and use.
bool same_entry(const andromeda_nat_entry& a, const andromeda_nat_entry& b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

// Why the pipeline dropped a frame: its NAT engine's reason ("nat no_flow"), its NAT stage's, or
// its own; "" for a frame it did not drop.
std::string drop_text(const PipelineOut& p) {
    if (p.verdict != dp::Verdict::drop) return "";
    if (p.nat_drop != nat::DropReason::none) return "nat " + std::string(nat::to_string(p.nat_drop));
    if (p.stage_drop != dp::NatStageDrop::none) return std::string(dp::to_string(p.stage_drop));
    return std::string(dp::to_string(p.reason));
}

constexpr int kMaxReported = 8;  // frames reported in full; the rest are counted

}  // namespace

int derived_checksum_count = 0;
int header_verified_count = 0;

bool verifies_from_headers_only(const Bytes& packet) {
    if (!outer_ipv6(packet) || packet.size() < 62) return false;
    const std::uint16_t written = get16(&packet[60]);
    const std::optional<std::uint16_t> derived = derived_outer6_checksum(packet);
    return derived && *derived == written && udp6_checksum(&packet[14], &packet[54]) != written;
}

std::optional<std::uint16_t> derived_outer6_checksum(Bytes packet) {
    constexpr std::size_t kInner = ANDROMEDA_ENCAP_OVERHEAD6, kIp = kInner + 14;
    if (!outer_ipv6(packet) || packet.size() < kIp + 20) return std::nullopt;
    const std::uint16_t ethertype = get16(&packet[kInner + 12]);
    if (ethertype == 0x0800) {
        const std::size_t total = get16(&packet[kIp + 2]);
        const std::uint8_t protocol = packet[kIp + 9];
        if (packet[kIp] != 0x45 || (get16(&packet[kIp + 6]) & 0x3fff) != 0 || packet.size() != kIp + total)
            return std::nullopt;
        const std::size_t at = protocol == kTcp ? 16 : protocol == kUdp ? 6 : protocol == kIcmp ? 2 : 0;
        if (at == 0 || total < 20 + at + 2 || (protocol == kUdp && get16(&packet[kIp + 20 + 6]) == 0))
            return std::nullopt;
        test_support::refresh_transport_checksum(packet, kIp);
    } else if (ethertype == 0x86dd) {
        if (packet.size() < kIp + 40) return std::nullopt;
        const std::size_t length = get16(&packet[kIp + 4]);
        const std::uint8_t next = packet[kIp + 6];
        const std::size_t at = next == kTcp ? 16 : next == kUdp ? 6 : next == kIcmpv6 ? 2 : 0;
        if (at == 0 || length < at + 2 || packet.size() != kIp + 40 + length) return std::nullopt;
        std::uint8_t* l4 = &packet[kIp + 40];
        put16(l4 + at, 0);
        const std::uint32_t pseudo = test_support::ones_sum(&packet[kIp + 8], 32) + next + static_cast<std::uint32_t>(length);
        const std::uint16_t check = checksum_of(test_support::ones_sum(l4, length, pseudo));
        put16(l4 + at, next == kUdp && check == 0 ? 0xffff : check);
    } else {
        return std::nullopt;
    }
    return udp6_checksum(&packet[14], &packet[54]);
}

void set_ipv4_id(Bytes& f, std::size_t ip, std::uint16_t id) {
    const std::uint16_t old_id = get16(&f[ip + 4]);
    const std::uint16_t old_sum = get16(&f[ip + 10]);
    const std::uint32_t sum =
        static_cast<std::uint16_t>(~old_sum) + static_cast<std::uint32_t>(static_cast<std::uint16_t>(~old_id)) + id;
    put16(&f[ip + 4], id);
    put16(&f[ip + 10], checksum_of(sum));
}

std::vector<std::string> moved(const andromeda_fp_stats& delta) {
    // policy_packets goes with a pass in a VPC with security groups (the encap, local delivery or
    // NAT it then counts names the outcome); tests/bpf/policy_test.cpp checks it on its own.
    std::vector<std::string> names = moved_fields(delta, io::kFastPathCounterFields, "policy_packets");
    // ipv6_packets goes with the encap, local delivery or decap of an IPv6 frame, which names the
    // outcome (daemon_ipv6_test checks it counts a transfer's packets on both nodes).
    std::erase_if(names, [](const std::string& n) { return n.starts_with("ipv6_packets"); });
    return names;
}
std::vector<std::string> moved(const andromeda_xdp_stats& delta, const char* skip) {
    return moved_fields(delta, io::kXdpCounterFields, skip);
}

std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s.empty() ? "none" : s;
}

std::string describe(const PipelineOut& p) {
    std::string s(dp::to_string(p.verdict));
    if (const std::string why = drop_text(p); !why.empty()) s += " (" + why + ")";
    for (const auto& [port, bytes] : p.emitted)
        s += ", " + std::to_string(bytes.size()) + " bytes to port " + std::to_string(port);
    return s;
}

// ---- outcomes ----------------------------------------------------------------------------------

Outcome tenant_outcome(const TenantBpf& b, const Bytes& input) {
    const std::size_t length = input.size();
    if (auto failed = tc_run_failed(input, b.run, "")) return *failed;
    const auto m = moved(b.delta);
    const auto& d = b.delta;
    const bool redirect = b.run.retval == TC_ACT_REDIRECT;
    if (m == std::vector<std::string>{"encap_packets"} && redirect && d.encap_bytes == length) return {"encap", ""};
    // The outside, encapsulated towards the VPC's NAT node: compared byte for byte as any encap.
    if (m == std::vector<std::string>{"encap_packets", "to_nat_node_packets"} && redirect && d.encap_bytes == length)
        return {"encap", ""};
    if (m == std::vector<std::string>{"local_packets"} && redirect && d.local_bytes == length) return {"local", ""};
    if (m == std::vector<std::string>{"nat_out_packets"} && redirect && d.nat_out_bytes == length)
        return {"nat_out", ""};
    if (const std::string punt = punt_reason(m, redirect, d, length); !punt.empty()) return {punt, ""};
    if (m.size() == 1 && m[0].starts_with("drop_") && b.run.retval == TC_ACT_SHOT) return {m[0], ""};
    return {"", "tc tenant: return code " + std::to_string(b.run.retval) + ", counters " + joined(m)};
}

Outcome xdp_outcome(const UnderlayBpf& b) {
    if (b.xdp.error != 0) return {"", "BPF_PROG_TEST_RUN (XDP) failed: " + std::string(std::strerror(b.xdp.error))};
    const auto m = moved(b.xdp_delta, "rx_packets");
    const std::uint32_t r = b.xdp.retval;
    if (b.xdp_delta.rx_packets == 1 && m.size() == 1) {
        if (m[0] == "pass_fastpath" && r == XDP_PASS) return {"fastpath", ""};
        if (m[0] == "pass_host" && r == XDP_PASS) return {"host", ""};
        // No AF_XDP socket is bound here: steering ends in drop_no_socket (redirect_overlay with one).
        if ((m[0] == "drop_no_socket" && r == XDP_DROP) || (m[0] == "redirect_overlay" && r == XDP_REDIRECT))
            return {"socket", ""};
        if (m[0].starts_with("drop_") && r == XDP_DROP) return {m[0], ""};
    }
    return {"", "XDP: return code " + std::to_string(r) + ", counters " + joined(m)};
}

Outcome tc_underlay_outcome(const UnderlayBpf& b, const Bytes& input) {
    const std::size_t length = input.size();
    if (auto failed = tc_run_failed(input, b.tc, " (tc underlay)")) return *failed;
    const auto m = moved(b.tc_delta);
    if (m.empty() && b.tc.retval == static_cast<std::uint32_t>(TC_ACT_UNSPEC)) return {"pass", ""};
    const bool redirect = b.tc.retval == TC_ACT_REDIRECT;
    const std::size_t overhead = outer_ipv6(input) ? ANDROMEDA_ENCAP_OVERHEAD6 : ANDROMEDA_ENCAP_OVERHEAD;
    if (m == std::vector<std::string>{"decap_packets"} && redirect && b.tc_delta.decap_bytes == length - overhead)
        return {"decap", ""};
    if (m == std::vector<std::string>{"nat_out_packets"} && redirect &&
        b.tc_delta.nat_out_bytes == length - ANDROMEDA_ENCAP_OVERHEAD)
        return {"nat_out", ""};
    if (const std::string punt = punt_reason(m, redirect, b.tc_delta, length); !punt.empty()) return {punt, ""};
    if (m.size() == 1 && m[0].starts_with("drop_") && b.tc.retval == TC_ACT_SHOT) return {m[0], ""};
    return {"", "tc underlay: return code " + std::to_string(b.tc.retval) + ", counters " + joined(m)};
}

Outcome uplink_outcome(const UplinkBpf& b, const Bytes& input) {
    const std::size_t length = input.size();
    if (auto failed = tc_run_failed(input, b.run, " (tc uplink)")) return *failed;
    const auto m = moved(b.delta);
    const auto& d = b.delta;
    const bool redirect = b.run.retval == TC_ACT_REDIRECT;
    if (m.empty() && b.run.retval == static_cast<std::uint32_t>(TC_ACT_UNSPEC)) return {"pass", ""};
    if (m == std::vector<std::string>{"nat_in_packets"} && redirect && d.nat_in_bytes == length)
        return {"nat_local", ""};
    if (m == std::vector<std::string>{"encap_packets", "nat_in_packets"} && redirect && d.nat_in_bytes == length &&
        d.encap_bytes == length)
        return {"nat_encap", ""};
    if (const std::string punt = punt_reason(m, redirect, d, length); !punt.empty()) return {punt, ""};
    if (m.size() == 1 && m[0].starts_with("drop_") && b.run.retval == TC_ACT_SHOT) return {m[0], ""};
    return {"", "tc uplink: return code " + std::to_string(b.run.retval) + ", counters " + joined(m)};
}

// ---- the comparison ----------------------------------------------------------------------------

std::string check_nat_use(const NatUse& use, bool translated) {
    if (!translated) {
        if (use.before.has_value() != use.after.has_value())
            return "a run that translated nothing added or removed the flow entry of its tuple";
        if (use.before && !same_entry(*use.before, *use.after))
            return "a run that translated nothing changed the flow entry of its tuple (packets " +
                   std::to_string(use.before->packets) + " -> " + std::to_string(use.after->packets) + ")";
        return "";
    }
    if (!use.key || !use.before || !use.after) return "translated, but its tuple has no flow entry";
    const andromeda_nat_entry& a = *use.before;
    const andromeda_nat_entry& z = *use.after;
    if (std::memcmp(&a, &z, offsetof(andromeda_nat_entry, last_used_ns)) != 0)
        return "the translation changed the flow of its entry";
    if (z.packets != a.packets + 1 || z.bytes != a.bytes + use.length)
        return "the flow entry counted " + std::to_string(z.packets - a.packets) + " packet(s) of " +
               std::to_string(z.bytes - a.bytes) + " bytes, not 1 of " + std::to_string(use.length);
    if (z.last_used_ns < use.ran_at_ns) return "the flow entry's last use is older than the translation";
    return "";
}

std::vector<std::string> check_tenant(const Bytes& input, const TenantBpf& b, const PipelineOut& p, dp::PortId underlay,
                                      dp::PortId uplink) {
    std::vector<std::string> problems;
    const Outcome o = tenant_outcome(b, input);
    if (!o.problem.empty()) return {o.problem};
    const bool one = p.emitted.size() == 1;
    if (o.name == "encap") {
        if (p.verdict != dp::Verdict::forward || !one || p.emitted[0].first != underlay)
            problems.push_back("the fast path encapsulated it, the pipeline: " + describe(p));
        else if (const std::string d = diff_encapsulated(b.run.out, p.emitted[0].second); !d.empty())
            problems.push_back("the encapsulated packets differ at " + d);
    } else if (o.name == "local") {
        if (p.verdict != dp::Verdict::deliver || !one || p.emitted[0].first != b.local_target)
            problems.push_back("the fast path delivered it to ifindex " + std::to_string(b.local_target) +
                               ", the pipeline: " + describe(p));
        else if (const std::string d = first_difference(b.run.out, p.emitted[0].second, frame_field); !d.empty())
            problems.push_back("the delivered frames differ at " + d);
    } else if (o.name == "nat_out") {
        check_translated_out(b.run.out, p, uplink, problems);
    } else if (o.name.starts_with("punt_")) {
        if (b.run.out != input)
            problems.push_back("the punted frame was changed: " + first_difference(b.run.out, input, frame_field));
    } else if (o.name == "untestable") {
        // the pipeline alone decides
    } else if (port_security_drop(o.name) || o.name == "drop_no_port") {
        // (drop_no_port: a port the reload removed, whose tc program the daemon detaches.)
        if (p.verdict != dp::Verdict::drop)
            problems.push_back("the fast path dropped it (" + o.name + "), the pipeline: " + describe(p));
        else if (o.name == "drop_spoofed_mac" && p.reason != dp::DropReason::spoofed_source_mac &&
                 p.reason != dp::DropReason::malformed_ethernet)  // (a VLAN tag cut short: refused first)
            problems.push_back("the fast path dropped a spoofed MAC, the pipeline: " + describe(p));
    } else {
        problems.push_back("the fast path did something it never should here: " + o.name);
    }
    if (p.verdict == dp::Verdict::drop && p.reason == dp::DropReason::spoofed_source_mac &&
        o.name != "drop_spoofed_mac" && o.name != "untestable")
        problems.push_back("the pipeline drops a spoofed source MAC, the fast path: " + o.name);
    if (const std::string n = check_nat_use(b.nat, o.name == "nat_out"); !n.empty()) problems.push_back(n);
    return problems;
}

std::vector<std::string> check_underlay(const Bytes& input, const UnderlayBpf& b, const PipelineOut& p,
                                        dp::PortId uplink) {
    std::vector<std::string> problems;
    const Outcome x = xdp_outcome(b);
    if (!x.problem.empty()) return {x.problem};
    if (x.name == "fastpath" || x.name == "host") {
        if (!b.tc_ran) return {"XDP passed it, but tc did not run"};
        const Outcome t = tc_underlay_outcome(b, input);
        if (!t.problem.empty()) return {t.problem};
        if (x.name == "fastpath" && t.name == "nat_out") {
            check_translated_out(b.tc.out, p, uplink, problems);
        } else if (x.name == "fastpath" && t.name.starts_with("punt_")) {
            // Still encapsulated, out of the underlay's punt device: the pipeline's to decide.
            if (b.tc.out != input)
                problems.push_back("the punted packet was changed: " +
                                   first_difference(b.tc.out, input, overlay_field_of(input)));
        } else if (x.name == "fastpath" && t.name == "decap" && p.verdict == dp::Verdict::drop &&
                   p.reason == dp::DropReason::malformed_overlay && verifies_from_headers_only(input)) {
            // Over IPv6 the fast path verifies the outer checksum from the headers, leaving the
            // payload to the inner checksum, which the tenant checks (bpf/lib/decap.h); the
            // pipeline sums it all. A packet corrupted below the headers is delivered as it came.
            ++header_verified_count;
            if (b.tc.out.size() + ANDROMEDA_ENCAP_OVERHEAD6 != input.size() ||
                !std::equal(b.tc.out.begin() + 12, b.tc.out.end(), input.begin() + ANDROMEDA_ENCAP_OVERHEAD6 + 12))
                problems.push_back("the fast path decapsulated a packet the pipeline refuses, and changed it");
        } else if (x.name == "fastpath" && t.name == "drop_decap_bad_outer_csum") {
            // Above the underlay's MTU XDP takes a packet whose outer checksum fails for a GSO
            // packet (whose checksum is one segment's); tc, which sees it is not GSO, drops it
            // (bpf/lib/decap.h, decap_classify_vni6), as the pipeline does.
            if (input.size() - 14 <= kUnderlayMtu || p.verdict != dp::Verdict::drop ||
                udp6_checksum(&input[14], &input[54]) == get16(&input[60]))
                problems.push_back("tc dropped for its outer checksum a packet it should have checked in XDP, or "
                                   "whose checksum is right, or that the pipeline keeps: " + describe(p));
        } else if (x.name == "fastpath") {
            check_decapsulated(b, t, p, problems);
        } else {
            if (!b.xdp.meta.empty()) problems.push_back("XDP left metadata on host traffic");
            if (t.name != "pass" && t.name != "untestable")
                problems.push_back("XDP passed host traffic (pass_host), tc then: " + t.name);
            if (p.verdict == dp::Verdict::deliver || p.verdict == dp::Verdict::forward)
                problems.push_back("XDP passed it to the host stack, the pipeline: " + describe(p));
        }
    } else if (x.name != "socket" && p.verdict != dp::Verdict::drop) {
        problems.push_back("XDP dropped it (" + x.name + "), the pipeline: " + describe(p));
    }
    if (b.tc_ran && b.tc.error == 0 && !b.xdp.meta.empty() && tc_underlay_outcome(b, input).name != "decap")
        problems.push_back("XDP handed over metadata with a packet tc did not decapsulate into a tenant");
    const bool translated = b.tc_ran && tc_underlay_outcome(b, input).name == "nat_out";
    if (const std::string n = check_nat_use(b.nat, translated); !n.empty()) problems.push_back(n);
    return problems;
}

std::vector<std::string> check_uplink(const Bytes& input, const UplinkBpf& b, const PipelineOut& p,
                                      dp::PortId underlay) {
    std::vector<std::string> problems;
    const Outcome o = uplink_outcome(b, input);
    if (!o.problem.empty()) return {o.problem};
    const bool one = p.emitted.size() == 1;
    if (o.name == "nat_local") {
        if (p.verdict != dp::Verdict::deliver || !one || p.emitted[0].first != b.local_target)
            problems.push_back("the fast path translated it into ifindex " + std::to_string(b.local_target) +
                               ", the pipeline: " + describe(p));
        else if (const std::string d = first_difference(b.run.out, p.emitted[0].second, frame_field); !d.empty())
            problems.push_back("the translated frames differ at " + d);
    } else if (o.name == "nat_encap") {
        if (p.verdict != dp::Verdict::forward || !one || p.emitted[0].first != underlay)
            problems.push_back("the fast path translated and encapsulated it, the pipeline: " + describe(p));
        else if (const std::string d = diff_encapsulated(b.run.out, p.emitted[0].second); !d.empty())
            problems.push_back("the encapsulated packets differ at " + d);
    } else if (o.name.starts_with("punt_")) {
        if (b.run.out != input)
            problems.push_back("the punted frame was changed: " + first_difference(b.run.out, input, frame_field));
    } else if (o.name == "pass") {
        if (b.run.out != input) problems.push_back("a frame passed to the host was changed");
        if (p.verdict != dp::Verdict::drop)
            problems.push_back("the fast path passed it to the host, the pipeline: " + describe(p));
    } else if (o.name != "untestable") {
        problems.push_back("the fast path did something it never should here: " + o.name);
    }
    const bool translated = o.name == "nat_local" || o.name == "nat_encap";
    if (const std::string n = check_nat_use(b.nat, translated); !n.empty()) problems.push_back(n);
    return problems;
}

// ---- cases and their runs ----------------------------------------------------------------------

void Tally::add(const std::string& bpf, const PipelineOut& p) {
    ++cases;
    ++fast_path[bpf];
    std::string verdict(dp::to_string(p.verdict));
    if (const std::string why = drop_text(p); !why.empty()) verdict += "(" + why + ")";
    ++pairs[bpf + " -> " + verdict];
}

int Tally::count(const std::string& outcome) const {
    const auto it = fast_path.find(outcome);
    return it == fast_path.end() ? 0 : it->second;
}

int Tally::count_prefix(const std::string& prefix) const {
    int n = 0;
    for (const auto& [name, c] : fast_path) n += name.starts_with(prefix) ? c : 0;
    return n;
}

std::string Tally::report() const {
    std::string s = std::to_string(cases) + " frames, " + std::to_string(failures) + " disagreements\n";
    for (const auto& [pair, n] : pairs) s += "  " + std::to_string(n) + "\t" + pair + "\n";
    return s;
}

PipelineOut run_case(World& w, const Case& c, Tally& tally, const std::string& context) {
    std::vector<std::string> problems;
    std::string outcome;
    std::string bpf_text;
    PipelineOut p;
    if (c.port == kUplink) {
        const UplinkBpf b = w.run_uplink(c.frame);
        p = w.run_pipeline(w.uplink(), c.frame);
        problems = check_uplink(c.frame, b, p, w.underlay());
        const Outcome o = uplink_outcome(b, c.frame);
        outcome = o.name.empty() ? "?" : o.name;
        bpf_text = "tc uplink -> " + outcome + ", return " + std::to_string(b.run.retval) + ", " +
                   std::to_string(b.run.out.size()) + " bytes: " + hex_start(b.run.out);
    } else if (c.port != kUnderlay) {
        const std::uint32_t ifindex = w.tenant(c.port);
        const TenantBpf b = w.run_tenant(ifindex, c.frame);
        p = w.run_pipeline(ifindex, c.frame);
        problems = check_tenant(c.frame, b, p, w.underlay(), w.uplink());
        const Outcome o = tenant_outcome(b, c.frame);
        outcome = o.name.empty() ? "?" : o.name;
        bpf_text = "tc tenant -> " + outcome + ", return " + std::to_string(b.run.retval) + ", " +
                   std::to_string(b.run.out.size()) + " bytes: " + hex_start(b.run.out);
    } else {
        const UnderlayBpf b = w.run_underlay(c.frame);
        p = w.run_pipeline(w.underlay(), c.frame);
        problems = check_underlay(c.frame, b, p, w.uplink());
        const Outcome x = xdp_outcome(b);
        outcome = x.name.empty() ? "?" : x.name;
        bpf_text = "XDP -> " + outcome;
        if (b.tc_ran) {
            const Outcome t = tc_underlay_outcome(b, c.frame);
            // A packet XDP hands tc for NAT is named by what tc did with it.
            if (x.name == "fastpath" && t.problem.empty() && t.name != "decap") outcome = t.name;
            bpf_text += "; tc underlay -> " + t.name + ", return " + std::to_string(b.tc.retval) + ", " +
                        std::to_string(b.tc.out.size()) + " bytes: " + hex_start(b.tc.out);
        }
    }
    if (!c.expect.empty() && outcome != c.expect)
        problems.push_back("expected the fast path's outcome " + c.expect + ", got " + outcome);
    tally.add(outcome, p);
    if (problems.empty()) return p;
    if (++tally.failures > kMaxReported) return p;
    std::string pipeline_text = describe(p);
    for (const auto& [port, bytes] : p.emitted)
        pipeline_text += "\n    to " + std::to_string(port) + ": " + hex_start(bytes);
    ADD_FAILURE() << context << ": " << c.name << " (" << to_string(w.encap()) << ", "
                  << (c.port == kUnderlay ? "underlay" : c.port) << ")\n  " << joined(problems) << "\n  input "
                  << c.frame.size() << " bytes: " << hex(c.frame) << "\n  fast path: " << bpf_text
                  << "\n  pipeline: " << pipeline_text;
    return p;
}

std::uint32_t seed_for(std::uint32_t fixed) {
    if (const char* s = std::getenv("ANDROMEDA_FAST_PATH_SEED"); s != nullptr && *s != '\0')
        return static_cast<std::uint32_t>(std::strtoul(s, nullptr, 0));
    return fixed;
}

void DifferentialTest::SetUp() {
    ANDROMEDA_REQUIRE_ROOT();
    world_ = std::make_unique<World>(GetParam(), fabric_toml(GetParam()));
    ASSERT_TRUE(world_->error().empty()) << world_->error();
}

Tally DifferentialTest::run_table(const std::vector<Case>& cases, const std::string& context) {
    Tally tally;
    for (const Case& c : cases) run_case(*world_, c, tally, context);
    EXPECT_EQ(tally.failures, 0) << context << ":\n" << tally.report();
    EXPECT_EQ(tally.cases, static_cast<int>(cases.size()));
    RecordProperty("frames", tally.cases);
    return tally;
}

Tally DifferentialTest::run_random(const char* what, std::uint32_t seed, int n,
                                   const std::function<Case(int i)>& next) {
    Tally tally;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
        Case c = next(i);
        c.name += " #" + std::to_string(i);
        run_case(*world_, c, tally, "seed " + std::to_string(seed));
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    EXPECT_EQ(tally.failures, 0) << "seed " << seed << " (ANDROMEDA_FAST_PATH_SEED=" << seed << " repeats it)\n"
                                 << tally.report();
    std::printf("%s (%s, seed %u): %lld ms\n%s", what, to_string(GetParam()), seed, static_cast<long long>(ms.count()),
                tally.report().c_str());
    RecordProperty("frames", tally.cases);
    return tally;
}

std::string encapsulation_name(const ::testing::TestParamInfo<Encap>& param) { return to_string(param.param); }

void run_stale_entries(World& w, const StaleEntries& s) {
    Tally tally;
    {
        const auto erased =
            MapEntryOverride::erased<andromeda_fabric_entry>(World::fd(w.skel().maps.andromeda_fabric), s.erased);
        ASSERT_EQ(erased->error(), "");
        for (const Case& c : s.while_erased) run_case(w, c, tally, "stale");
    }
    ASSERT_TRUE(w.reload(fabric_toml(w.encap(), s.removed_by_reload))) << w.error();
    for (const Case& c : s.after_reload) run_case(w, c, tally, "after the reload");
    for (int i = 0; i < s.random_frames; ++i) run_case(w, s.random_after_reload(), tally, "after the reload, random");
    EXPECT_EQ(tally.failures, 0) << tally.report();
    EXPECT_EQ(tally.cases, static_cast<int>(s.while_erased.size() + s.after_reload.size()) + s.random_frames);
}

}  // namespace andromeda::fast_path_test
