#include "nat_flows.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

namespace andromeda::fast_path_test {

using test_support::get16;
using test_support::put16;

std::string NatFlow::name() const {
    const char* p = protocol == kTcp ? "tcp" : protocol == kUdp ? "udp" : "icmp";
    std::string s = std::string(p) + " " + vpc + " ." + std::to_string(tenant) + ":" + std::to_string(tenant_port) +
                    " -> " + ip_text(remote) + ":" + std::to_string(remote_port);
    if (forward != 0) s += " (forward " + std::to_string(forward) + ")";
    return s;
}

andromeda_nat_key NatFlow::outbound_key() const {
    andromeda_nat_key k{};
    k.src = htonl(endpoint_def().ip);
    k.dst = htonl(remote);
    k.sport = htons(tenant_port);
    k.dport = htons(remote_port);
    k.vni = vpc_def().vni;
    k.protocol = protocol;
    k.direction = ANDROMEDA_NAT_OUTBOUND;
    return k;
}

andromeda_nat_key NatFlow::inbound_key() const {
    andromeda_nat_key k{};
    k.src = htonl(remote);
    k.dst = htonl(vpc_def().nat_address);
    k.sport = htons(remote_port);
    k.dport = htons(nat_port);
    k.protocol = protocol;
    k.direction = ANDROMEDA_NAT_INBOUND;
    return k;
}

Ipv4Frame outbound_spec(const NatFlow& f, std::size_t total) {
    const EndpointDef& e = f.endpoint_def();
    Ipv4Frame s = frame_spec(e.mac, e.ip, f.vpc_def().gateway_mac, f.remote, total, f.protocol);
    s.src_port = f.tenant_port;
    s.dst_port = f.remote_port;
    s.icmp_type = 8;
    s.icmp_id = f.tenant_port;
    return s;
}

Ipv4Frame inbound_spec(const NatFlow& f, std::size_t total) {
    Ipv4Frame s = frame_spec(kUplinkRouterMac, f.remote, kUplinkMac, f.vpc_def().nat_address, total, f.protocol);
    s.src_port = f.remote_port;
    s.dst_port = f.nat_port;
    s.icmp_type = 0;
    s.icmp_id = f.nat_port;
    return s;
}

Case from_tenant(Encap kind, const NatFlow& f, Bytes frame, std::string name, std::string expect) {
    const EndpointDef& e = f.endpoint_def();
    name = f.name() + ", out: " + name;
    if (e.node == "node1") return {std::move(name), e.port, std::move(frame), std::move(expect)};
    return {std::move(name), kUnderlay, overlay(overlay_from(kind, e.node, f.vpc_def().vni, std::move(frame))),
            std::move(expect)};
}

Case from_outside(Bytes frame, std::string name, std::string expect) {
    return {std::move(name), kUplink, std::move(frame), std::move(expect)};
}

std::string translated_in(const NatFlow& f) {
    const std::string& node = f.endpoint_def().node;
    return node == "node1" ? "nat_local" : node == "node2" ? "nat_encap" : "punt_no_next_hop";
}

Bytes icmp_error(const Mac& src_mac, const Mac& dst_mac, std::uint32_t src, std::uint32_t dst, std::uint8_t type,
                 std::uint8_t code, const Bytes& quoted_frame) {
    const std::size_t quoted = std::min<std::size_t>(quoted_frame.size() - 14, 28);
    Ipv4Frame s = frame_spec(src_mac, src, dst_mac, dst, 20 + 8 + quoted, kIcmp);
    s.icmp_type = type;
    s.icmp_code = code;
    Bytes f = ipv4(s);
    std::fill(f.begin() + 38, f.begin() + 42, 0);  // "unused" (Fragmentation Needed: the MTU)
    std::copy(quoted_frame.begin() + 14, quoted_frame.begin() + 14 + static_cast<std::ptrdiff_t>(quoted),
              f.begin() + 42);
    test_support::refresh_transport_checksum(f, 14);
    return f;
}

Bytes with_translated_checksum(Bytes frame, const Bytes& translated, std::uint16_t target) {
    const std::size_t last = frame.size() - 2;  // an even offset from the transport (even payloads only)
    Bytes t = translated;
    for (std::uint32_t w = 0; w <= 0xffff; ++w) {
        put16(&t[last], static_cast<std::uint16_t>(w));
        // The checksum the translated packet must carry, computed from scratch (UDP's "none" aside).
        const std::size_t ihl = (t[14] & 0x0f) * 4u, l4 = 14 + ihl;
        const std::uint8_t protocol = t[14 + 9];
        const std::size_t at = l4 + (protocol == kTcp ? 16 : protocol == kUdp ? 6 : 2);
        put16(&t[at], 0);
        const std::size_t length = t.size() - l4;
        const std::uint32_t pseudo =
            protocol == kIcmp ? 0
                              : test_support::ones_sum(&t[14 + 12], 8) + protocol + static_cast<std::uint32_t>(length);
        if (test_support::checksum_of(test_support::ones_sum(&t[l4], length, pseudo)) != target) continue;
        put16(&frame[last], static_cast<std::uint16_t>(w));
        test_support::refresh_transport_checksum(frame, 14);
        return frame;
    }
    ADD_FAILURE() << "no payload word gives the translated checksum " << target;
    return frame;
}

namespace {

// The NAT's port or identifier in a frame the pipeline sent out of the uplink.
std::optional<std::uint16_t> nat_port_sent(const PipelineOut& p, dataplane::PortId uplink, std::uint8_t protocol) {
    if (p.emitted.size() != 1 || p.emitted[0].first != uplink) return std::nullopt;
    const Bytes& out = p.emitted[0].second;
    const std::size_t at = protocol == kIcmp ? 14 + 20 + 4 : 14 + 20;
    if (out.size() < at + 2) return std::nullopt;
    return get16(&out[at]);
}

// The kernel holds both directions of exactly `f` (the fields the programs translate with).
std::string check_installed(World& w, const NatFlow& f) {
    const auto out = w.nat_entry(f.outbound_key());
    const auto in = w.nat_entry(f.inbound_key());
    if (!out || !in) return std::string("the kernel has no ") + (!out ? "outbound" : "inbound") + " entry";
    for (const andromeda_nat_entry* e : {&*out, &*in}) {
        const bool forward = f.forward != 0;
        if (e->vni != f.vpc_def().vni || e->tenant_ip != htonl(f.endpoint_def().ip) ||
            e->nat_ip != htonl(f.vpc_def().nat_address) || e->remote_ip != htonl(f.remote) ||
            e->tenant_port != htons(f.tenant_port) || e->nat_port != htons(f.nat_port) ||
            e->remote_port != htons(f.remote_port) || e->protocol != f.protocol ||
            e->flags != (forward ? ANDROMEDA_NAT_F_PORT_FORWARD | ANDROMEDA_NAT_F_INBOUND_ORIGIN : 0))
            return "an entry of the kernel holds another flow";
    }
    return "";
}

}  // namespace

bool open_flow(World& w, NatFlow& f, Tally& tally) {
    const Encap kind = w.encap();
    const std::string context = "opening " + f.name();
    const int failures = tally.failures;
    const auto out = [&](std::uint8_t flags, const char* what, const char* expect) {
        const Ipv4Frame s = with(outbound_spec(f), [&](Ipv4Frame& x) { x.tcp_flags = flags; });
        const PipelineOut p = run_case(w, from_tenant(kind, f, ipv4(s), what, expect), tally, context);
        w.apply_nat_changes();
        return p;
    };
    const auto in = [&](std::uint8_t flags, const char* what, const char* expect) {
        const Ipv4Frame s = with(inbound_spec(f), [&](Ipv4Frame& x) { x.tcp_flags = flags; });
        const PipelineOut p = run_case(w, from_outside(ipv4(s), what, expect), tally, context);
        w.apply_nat_changes();
        return p;
    };
    const bool tcp = f.protocol == kTcp;
    if (f.forward == 0) {
        const PipelineOut first =
            out(kSyn, tcp ? "SYN" : "first packet", tcp ? "punt_nat_control" : "punt_nat_no_flow");
        const auto port = nat_port_sent(first, w.uplink(), f.protocol);
        if (!port) {
            ADD_FAILURE() << context << ": the pipeline did not translate the first packet: " << describe(first);
            return false;
        }
        f.nat_port = *port;
        if (tcp) {
            in(kSyn | kAck, "SYN+ACK", "punt_nat_control");
            out(kAck, "ACK", "punt_nat_no_flow");
        }
    } else {
        f.nat_port = f.forward;
        in(kSyn, tcp ? "SYN" : "first packet", tcp ? "punt_nat_control" : "punt_nat_no_flow");
        if (tcp) {
            out(kSyn | kAck, "SYN+ACK", "punt_nat_control");
            in(kAck, "ACK", "punt_nat_no_flow");
        }
    }
    if (const std::string problem = check_installed(w, f); !problem.empty()) {
        ADD_FAILURE() << context << ": " << problem;
        return false;
    }
    return tally.failures == failures;
}

void NatDifferential::SetUp() {
    DifferentialTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    SkbShape shape;
    shape.checksum_complete = world_->kernel_checks_complete_checksums();
    if (!shape.checksum_complete)
        std::printf("this kernel makes no CHECKSUM_COMPLETE skbs for a test run (before 6.11): skb->csum unchecked\n");
    world_->set_skb_shape(shape);
}

void NatDifferential::open(std::vector<NatFlow>& flows, Tally& tally) {
    for (NatFlow& f : flows) ASSERT_TRUE(open_flow(*world_, f, tally)) << f.name();
}

PipelineOut NatDifferential::run(const Case& c, Tally& tally, const std::string& context) {
    return run_case(*world_, c, tally,
                    context.empty() ? ::testing::UnitTest::GetInstance()->current_test_info()->name() : context);
}

}  // namespace andromeda::fast_path_test
