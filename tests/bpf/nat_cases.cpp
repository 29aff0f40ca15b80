#include "nat_cases.hpp"

#include <algorithm>
#include <string>

namespace andromeda::fast_path_test {

using test_support::get16;
using test_support::put16;
using test_support::put32;

namespace {

constexpr std::size_t kIp = 14;  // a tenant's or the outside's frame: untagged Ethernet, then IPv4

std::size_t transport_header(std::uint8_t protocol) { return protocol == kTcp ? 20 : 8; }
std::size_t checksum_offset(std::uint8_t protocol) { return protocol == kTcp ? 16 : protocol == kUdp ? 6 : 2; }

// The TCP data offset `doff`, the header's option bytes NOPs as far as the packet holds them.
Bytes with_data_offset(Bytes f, std::uint8_t doff) {
    const std::size_t tcp = kIp + 20;
    f.at(tcp + 12) = static_cast<std::uint8_t>(doff << 4 | (f[tcp + 12] & 0x0f));
    for (std::size_t i = tcp + 20; i < std::min(f.size(), tcp + doff * 4u); ++i) f[i] = 1;
    test_support::refresh_transport_checksum(f, kIp);
    return f;
}

Bytes with_udp_length_field(Bytes f, std::uint16_t length) {
    put16(&f.at(kIp + 20 + 4), length);
    test_support::refresh_transport_checksum(f, kIp);
    return f;
}

// The packet as NAT must translate it, worked out here: the tenant's address and port (or echo
// identifier) replaced by the NAT's going out, the NAT's by the tenant's coming in, every checksum
// computed afresh (a UDP checksum of 0 stays 0).
Bytes translated_by_hand(Bytes f, const NatFlow& n, bool outbound) {
    const std::size_t l4 = kIp + 20;
    put32(&f[kIp + (outbound ? 12 : 16)], outbound ? n.vpc_def().nat_address : n.endpoint_def().ip);
    const std::uint16_t port = outbound ? n.nat_port : n.tenant_port;
    if (n.protocol == kIcmp)
        put16(&f[l4 + 4], port);
    else
        put16(&f[l4 + (outbound ? 0 : 2)], port);
    test_support::refresh_ipv4_checksum(f, kIp);
    test_support::refresh_transport_checksum(f, kIp);
    return f;
}

}  // namespace

std::vector<Case> flow_cases(Encap kind, const NatFlow& f) {
    std::vector<Case> cases;
    const std::string in_ok = translated_in(f);
    const bool local = f.local(), tcp = f.protocol == kTcp, udp = f.protocol == kUdp, icmp = f.protocol == kIcmp;
    // What the kernel takes no further than its header checks: the tenant's tc punts it, or, from
    // a tenant on another node, the underlay's XDP hands it to the pipeline.
    const std::string header_out = local ? "punt_ip_header" : "socket";
    const auto out = [&](const std::string& name, Bytes frame, const std::string& expect) {
        cases.push_back(from_tenant(kind, f, std::move(frame), name, expect));
    };
    const auto in = [&](const std::string& name, Bytes frame, const std::string& expect) {
        cases.push_back(from_outside(std::move(frame), f.name() + ", in: " + name, expect));
    };
    const auto both = [&](const std::string& name, const std::string& expect_out, const std::string& expect_in,
                          auto edit) {
        out(name, ipv4(with(outbound_spec(f), edit)), expect_out);
        in(name, ipv4(with(inbound_spec(f), edit)), expect_in);
    };
    const auto none = [](Ipv4Frame&) {};
    const auto total = [](std::size_t n) { return [n](Ipv4Frame& s) { s.total_length = n; }; };
    const std::size_t bare = 20 + transport_header(f.protocol);

    // Translated, any shape the NAT takes.
    both("data", kTranslatedOut, in_ok, none);
    both("no payload (" + std::to_string(bare) + " bytes)", kTranslatedOut, in_ok, total(bare));
    both("one byte of payload", kTranslatedOut, in_ok, total(bare + 1));
    both("TTL 1", kTranslatedOut, in_ok, [](Ipv4Frame& s) { s.ttl = 1; });
    both("TTL 0", kTranslatedOut, in_ok, [](Ipv4Frame& s) { s.ttl = 0; });
    both("TOS 0xbb (DSCP and ECN kept)", kTranslatedOut, in_ok, [](Ipv4Frame& s) { s.tos = 0xbb; });
    both("DF clear", kTranslatedOut, in_ok, [](Ipv4Frame& s) { s.dont_fragment = false; });
    both("IPv4 ID 0xffff", kTranslatedOut, in_ok, [](Ipv4Frame& s) { s.id = 0xffff; });
    // Sizes: the overlay's MTU bounds only a packet for (or from) another node.
    const std::uint32_t mtu = f.vpc_def().inner_mtu();
    if (local) {
        both("1500 bytes", kTranslatedOut, in_ok, total(1500));
    } else {
        out(std::to_string(mtu) + " bytes (the VPC's MTU)", ipv4(with(outbound_spec(f), total(mtu))), kTranslatedOut);
        out("1450 bytes (the overlay's limit, over the VPC's MTU)", ipv4(with(outbound_spec(f), total(1450))),
            kTranslatedOut);
        for (std::uint32_t n = mtu - 1; n <= mtu + 1; ++n)
            for (const bool df : {true, false}) {
                const std::string expect = n <= mtu ? in_ok : in_ok == "nat_encap" ? "punt_too_big" : in_ok;
                in(std::to_string(n) + " bytes, MTU " + std::to_string(mtu) + (df ? ", DF" : ""),
                   ipv4(with(inbound_spec(f),
                             [&](Ipv4Frame& s) {
                                 s.total_length = n;
                                 s.dont_fragment = df;
                             })),
                   expect);
            }
    }

    // The pipeline's: IPv4 oddities, fragments, truncated transport headers.
    both("IPv4 options", header_out, "punt_ip_header", [](Ipv4Frame& s) { s.options = nop_options(8); });
    out("a bad IPv4 header checksum", flipped(ipv4(outbound_spec(f)), kIp + 10, 0x01), header_out);
    in("a bad IPv4 header checksum", flipped(ipv4(inbound_spec(f)), kIp + 10, 0x01), "punt_ip_header");
    out("2 bytes of Ethernet padding", resized(ipv4(outbound_spec(f)), 14 + 100 + 2), header_out);
    in("2 bytes of Ethernet padding", resized(ipv4(inbound_spec(f)), 14 + 100 + 2), "punt_ip_header");
    both("a first fragment (MF)", "punt_nat_control", "punt_nat_control", [](Ipv4Frame& s) { s = fragment(s, kMf); });
    both("a later fragment", "punt_nat_control", "punt_nat_control", [](Ipv4Frame& s) { s = fragment(s, 20); });
    both("the transport header cut short", "punt_nat_control", "punt_nat_control", total(20 + (tcp ? 19 : 7)));
    both("no transport header", "punt_nat_control", "punt_nat_control", total(20));
    // Behind a VLAN tag: the tenant's gateway does not take it, the uplink's pipeline does.
    out("behind an 802.1Q tag", tagged(ipv4(outbound_spec(f)), 0x8100, 7), local ? "punt_not_ipv4" : "socket");
    in("behind an 802.1Q tag", tagged(ipv4(inbound_spec(f)), 0x8100, 7), "punt_not_ipv4");
    in("behind two tags (QinQ)", tagged(tagged(ipv4(inbound_spec(f)), 0x8100, 7), 0x88a8, 9), "punt_not_ipv4");

    // Not this flow: nothing in the kernel.
    in("to another NAT port",
       ipv4(with(inbound_spec(f),
                 [&](Ipv4Frame& s) {
                     s.dst_port = static_cast<std::uint16_t>(f.nat_port + 1);
                     s.icmp_id = static_cast<std::uint16_t>(f.nat_port + 1);
                 })),
       "punt_nat_no_flow");
    in("from another address", ipv4(with(inbound_spec(f), [](Ipv4Frame& s) { s.src ^= 1; })), "punt_nat_no_flow");
    if (!icmp) {
        in("from another port", ipv4(with(inbound_spec(f), [](Ipv4Frame& s) { s.src_port ^= 0x100; })),
           "punt_nat_no_flow");
        out("to another port", ipv4(with(outbound_spec(f), [](Ipv4Frame& s) { s.dst_port ^= 0x100; })),
            "punt_nat_no_flow");
    } else {
        out("another identifier", ipv4(with(outbound_spec(f), [](Ipv4Frame& s) { s.icmp_id ^= 0x100; })),
            "punt_nat_no_flow");
    }

    if (tcp) {
        for (const auto& [flags, name] : {std::pair<std::uint8_t, const char*>{kAck, "ACK"},
                                          {0x30, "URG ACK"},
                                          {0xd8, "CWR ECE PSH ACK"},
                                          {0x00, "no flags"},
                                          {kPsh, "PSH without ACK"}})
            both(name, kTranslatedOut, in_ok, [value = flags](Ipv4Frame& s) { s.tcp_flags = value; });
        for (const auto& [flags, name] :
             {std::pair<std::uint8_t, const char*>{kSyn, "SYN"}, {kSyn | kAck, "SYN ACK"}, {kSyn | kPsh, "SYN PSH"}})
            both(name, "punt_nat_control", "punt_nat_control", [value = flags](Ipv4Frame& s) { s.tcp_flags = value; });
        // The data offset: options (NOPs) the NAT leaves alone, or a header the packet cannot hold.
        const auto doff = [&](const std::string& name, std::uint8_t d, std::size_t n, const std::string& expect_out,
                              const std::string& expect_in) {
            out(name, with_data_offset(ipv4(with(outbound_spec(f), total(n))), d), expect_out);
            in(name, with_data_offset(ipv4(with(inbound_spec(f), total(n))), d), expect_in);
        };
        doff("12 bytes of options (data offset 8)", 8, 100, kTranslatedOut, in_ok);
        doff("40 bytes of options (data offset 15)", 15, 100, kTranslatedOut, in_ok);
        doff("40 bytes of options and no payload", 15, 80, kTranslatedOut, in_ok);
        doff("data offset 6, no room for its options", 6, 40, "punt_nat_control", "punt_nat_control");
        doff("data offset 15, 39 bytes of options", 15, 79, "punt_nat_control", "punt_nat_control");
        doff("data offset 4", 4, 100, "punt_nat_control", "punt_nat_control");
        doff("data offset 0", 0, 100, "punt_nat_control", "punt_nat_control");
    }
    if (udp) {
        const std::uint16_t udp_length = 100 - 20;
        const auto length = [&](const std::string& name, std::uint16_t n, const std::string& expect_out,
                                const std::string& expect_in) {
            out(name, with_udp_length_field(ipv4(outbound_spec(f)), n), expect_out);
            in(name, with_udp_length_field(ipv4(inbound_spec(f)), n), expect_in);
        };
        length("UDP length 8 (the packet carries more)", 8, kTranslatedOut, in_ok);
        length("UDP length one short of the packet", udp_length - 1, kTranslatedOut, in_ok);
        length("UDP length one past the packet", udp_length + 1, "punt_nat_control", "punt_nat_control");
        length("UDP length 7", 7, "punt_nat_control", "punt_nat_control");
        length("UDP length 0", 0, "punt_nat_control", "punt_nat_control");
        // No checksum to offset the new port (a forward's, or any the NAT did not keep): the
        // port's change must reach a CHECKSUM_COMPLETE skb's sum all the same.
        both("no UDP checksum", kTranslatedOut, in_ok, [](Ipv4Frame& s) { s.udp_checksum = false; });
    }
    if (icmp) {
        out("an echo reply", ipv4(with(outbound_spec(f), [](Ipv4Frame& s) { s.icmp_type = 0; })), "punt_nat_control");
        in("an echo request", ipv4(with(inbound_spec(f), [](Ipv4Frame& s) { s.icmp_type = 8; })), "punt_nat_control");
        both("code 1", "punt_nat_control", "punt_nat_control", [](Ipv4Frame& s) { s.icmp_code = 1; });
        both("a timestamp request", "punt_nat_control", "punt_nat_control", [](Ipv4Frame& s) { s.icmp_type = 13; });
    }

    // ICMP errors about the flow: the pipeline's to translate (the quoted packet too).
    const Bytes sent = ipv4(with(outbound_spec(f), [&](Ipv4Frame& s) {
        s.src = f.vpc_def().nat_address;
        s.src_port = f.nat_port;
        s.icmp_id = f.nat_port;
    }));
    in("destination unreachable about it",
       icmp_error(kUplinkRouterMac, kUplinkMac, f.remote, f.vpc_def().nat_address, 3, 3, sent), "punt_nat_control");
    in("time exceeded about it, from a router",
       icmp_error(kUplinkRouterMac, kUplinkMac, ip4(198, 18, 0, 1), f.vpc_def().nat_address, 11, 0, sent),
       "punt_nat_control");
    const Bytes received = ipv4(with(inbound_spec(f), [&](Ipv4Frame& s) {
        s.dst = f.endpoint_def().ip;
        s.dst_port = f.tenant_port;
        s.icmp_id = f.tenant_port;
    }));
    out("port unreachable about a reply",
        icmp_error(f.endpoint_def().mac, f.vpc_def().gateway_mac, f.endpoint_def().ip, f.remote, 3, 3, received),
        "punt_nat_control");
    return cases;
}

std::vector<ChecksumCase> checksum_cases(Encap kind, const NatFlow& f) {
    std::vector<ChecksumCase> cases;
    const std::size_t at = 20 + checksum_offset(f.protocol);
    for (const bool outbound : {true, false}) {
        const std::string expect = outbound ? kTranslatedOut : translated_in(f);
        // Where the translated packet's IPv4 header is in the frame the pipeline emits.
        const std::size_t ip = !outbound && expect == "nat_encap" ? ANDROMEDA_ENCAP_OVERHEAD + kIp : kIp;
        const Bytes plain = ipv4(outbound ? outbound_spec(f) : inbound_spec(f));
        std::vector<std::pair<std::string, Bytes>> frames = {
            {"a checksum", plain},
            {"a translation whose checksum sums to zero",
             with_translated_checksum(plain, translated_by_hand(plain, f, outbound), 0)},
        };
        Bytes own_zero = with_translated_checksum(plain, plain, 0);  // its own checksum sums to zero
        if (f.protocol != kUdp) put16(&own_zero[kIp + at], 0xffff);  // the other zero (UDP: already so)
        frames.emplace_back("a checksum field of 0xffff", own_zero);
        if (f.protocol == kUdp)
            frames.emplace_back("no UDP checksum", ipv4(with(outbound ? outbound_spec(f) : inbound_spec(f),
                                                             [](Ipv4Frame& s) { s.udp_checksum = false; })));
        for (auto& [name, frame] : frames) {
            const std::uint16_t expected = get16(&translated_by_hand(frame, f, outbound)[kIp + at]);
            Case c = outbound ? from_tenant(kind, f, frame, name, expect)
                              : from_outside(frame, f.name() + ", in: " + name, expect);
            cases.push_back({std::move(c), ip + at, expected});
        }
    }
    return cases;
}

std::vector<Bytes> gso_segments(const Bytes& frame, std::size_t ip, std::uint16_t gso_size) {
    const std::uint8_t protocol = frame.at(ip + 9);
    const std::size_t l4 = ip + 20;
    const std::size_t payload = l4 + (protocol == kTcp ? (frame.at(l4 + 12) >> 4) * 4u : 8u);
    const std::size_t end = std::min(frame.size(), ip + get16(&frame[ip + 2]));
    const std::uint16_t id = get16(&frame[ip + 4]);
    const std::uint32_t seq = test_support::get32(&frame[l4 + 4]);
    std::vector<Bytes> segments;
    for (std::size_t at = payload; at < end; at += gso_size) {
        const std::size_t n = std::min<std::size_t>(gso_size, end - at);
        const auto i = static_cast<std::uint16_t>(segments.size());
        Bytes s(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(payload));
        s.insert(s.end(), frame.begin() + static_cast<std::ptrdiff_t>(at),
                 frame.begin() + static_cast<std::ptrdiff_t>(at + n));
        put16(&s[ip + 2], static_cast<std::uint16_t>(s.size() - ip));
        put16(&s[ip + 4], static_cast<std::uint16_t>(id + i));
        if (protocol == kTcp) {
            put32(&s[l4 + 4], seq + static_cast<std::uint32_t>(at - payload));
            if (i != 0) s[l4 + 13] &= 0x7f;  // CWR
            if (at + n != end) s[l4 + 13] &= static_cast<std::uint8_t>(~(kFin | kPsh));
        } else {
            put16(&s[l4 + 4], static_cast<std::uint16_t>(s.size() - l4));
        }
        test_support::refresh_ipv4_checksum(s, ip);
        test_support::refresh_transport_checksum(s, ip);
        if (ip > kIp) {  // the outer IPv4 and UDP headers of an overlay packet
            put16(&s[kIp + 2], static_cast<std::uint16_t>(s.size() - kIp));
            put16(&s[kIp + 20 + 4], static_cast<std::uint16_t>(s.size() - kIp - 20));
            test_support::refresh_ipv4_checksum(s, kIp);
        }
        segments.push_back(std::move(s));
    }
    return segments;
}

bool checksums_hold(const Bytes& frame, std::size_t ip) {
    Bytes fresh = frame;
    test_support::refresh_ipv4_checksum(fresh, ip);
    test_support::refresh_transport_checksum(fresh, ip);
    return fresh == frame;
}

NatFlow random_flow(Gen& g) {
    static const std::vector<std::uint32_t> remotes = {ip4(8, 8, 8, 8),     ip4(1, 1, 1, 1),     ip4(93, 184, 216, 34),
                                                       ip4(203, 0, 113, 9), ip4(192, 0, 2, 200), ip4(100, 64, 1, 1)};
    static const std::vector<std::uint16_t> services = {53, 80, 443, 123, 22, 8080};
    NatFlow f;
    f.vpc = g.chance(80) ? "orange" : "purple";
    const VpcDef& v = f.vpc_def();
    f.remote = g.pick(remotes);
    if (f.vpc == "orange" && g.chance(15)) {
        const ForwardDef& fw = g.pick(v.forwards);
        f.protocol = fw.protocol;
        f.tenant = fw.endpoint_ip & 255;
        f.tenant_port = fw.endpoint_port;
        f.forward = fw.nat_port;
        f.remote_port = static_cast<std::uint16_t>(g.range(1024, 65535));
        return f;
    }
    f.tenant = g.pick(v.endpoints).ip & 255;
    const std::uint32_t p = g.below(100);
    f.protocol = p < 40 ? kUdp : p < 80 ? kTcp : kIcmp;
    f.tenant_port = static_cast<std::uint16_t>(f.protocol == kIcmp ? g.range(0, 65535) : g.range(1024, 65535));
    f.remote_port = f.protocol == kIcmp ? 0 : g.chance(70) ? g.pick(services) : static_cast<std::uint16_t>(g.word());
    return f;
}

namespace {

std::uint8_t random_tcp_flags(Gen& g) {
    static const std::vector<std::uint8_t> common = {kAck, kPsh | kAck, 0x30, 0xd0 | kAck};
    return g.chance(94) ? g.pick(common) : g.byte();
}

// The size of a random packet: small, around the VPC's MTU, or anything up to a full frame.
std::size_t random_total(Gen& g, const NatFlow& f) {
    const std::size_t bare = 20 + transport_header(f.protocol);
    const std::uint32_t r = g.below(100);
    if (r < 45) return bare + g.below(120);
    if (r < 75) return f.vpc_def().inner_mtu() - 2 + g.below(5);
    return bare + g.below(1500 - static_cast<std::uint32_t>(bare) + 1);
}

void random_damage(Gen& g, Bytes& frame, const NatFlow& f) {
    if (g.chance(3)) frame = flipped(std::move(frame), kIp + 10, static_cast<std::uint8_t>(1u << g.below(8)));
    if (g.chance(3)) frame.resize(frame.size() + g.range(1, 20), 0);
    if (g.chance(2) && frame.size() > kIp + 20)
        frame.resize(g.range(kIp + 20, static_cast<std::uint32_t>(frame.size()) - 1));
    if (f.protocol == kTcp && g.chance(4) && frame.size() >= kIp + 40)
        frame = with_data_offset(std::move(frame), static_cast<std::uint8_t>(g.below(16)));
    if (f.protocol == kUdp && g.chance(4) && frame.size() >= kIp + 28) {
        const std::uint16_t length = get16(&frame[kIp + 24]);
        frame = with_udp_length_field(std::move(frame), g.chance(50)
                                                            ? static_cast<std::uint16_t>(g.word())
                                                            : static_cast<std::uint16_t>(length + g.range(0, 4) - 2));
    }
    if (g.chance(2) && frame.size() > kIp + 20)  // a bit of the transport flipped
        frame[g.range(kIp + 20, static_cast<std::uint32_t>(frame.size()) - 1)] ^=
            static_cast<std::uint8_t>(1u << g.below(8));
}

}  // namespace

Case random_nat_packet(Gen& g, Encap kind, const std::vector<NatFlow>& flows) {
    NatFlow f = g.pick(flows);
    if (g.chance(8)) {  // the tuple of no flow (or of one the pipeline opens now)
        switch (g.below(3)) {
            case 0:
                f.tenant_port = static_cast<std::uint16_t>(f.tenant_port + 1);
                break;
            case 1:
                f.remote = f.remote ^ g.range(1, 255);
                break;
            default:
                f.nat_port = static_cast<std::uint16_t>(g.word());
                break;
        }
    }
    const bool outbound = g.chance(50);
    Ipv4Frame s = outbound ? outbound_spec(f, random_total(g, f)) : inbound_spec(f, random_total(g, f));
    s.tcp_flags = random_tcp_flags(g);
    if (f.protocol == kIcmp && g.chance(10)) s.icmp_type = g.pick(std::vector<std::uint8_t>{0, 8, 3, 11, 13});
    if (g.chance(5)) s.icmp_code = g.chance(50) ? 1 : g.byte();
    s.dont_fragment = g.chance(70);
    s.ttl = g.chance(90) ? 64 : g.byte();
    s.tos = g.chance(90) ? 0 : g.byte();
    s.id = static_cast<std::uint16_t>(g.word());
    s.fill = g.byte();
    if (g.chance(3)) s.options = nop_options(4 * g.range(1, 10));
    if (g.chance(3))
        s = fragment(
            s, static_cast<std::uint16_t>((s.dont_fragment ? kDf : 0) | (g.chance(50) ? kMf : g.range(1, 0x1fff))));
    if (f.protocol == kUdp && g.chance(10)) s.udp_checksum = false;
    Bytes frame = ipv4(s);
    random_damage(g, frame, f);
    if (g.chance(3)) {  // an ICMP error quoting the packet
        frame = outbound ? icmp_error(f.endpoint_def().mac, f.vpc_def().gateway_mac, f.endpoint_def().ip, f.remote, 3,
                                      static_cast<std::uint8_t>(g.below(16)), frame)
                         : icmp_error(kUplinkRouterMac, kUplinkMac, f.remote, f.vpc_def().nat_address,
                                      g.chance(50) ? 3 : 11, static_cast<std::uint8_t>(g.below(4)), frame);
    }
    if (!outbound && g.chance(2)) frame = tagged(std::move(frame), 0x8100, static_cast<std::uint16_t>(g.below(4096)));
    return outbound ? from_tenant(kind, f, std::move(frame), "random", "")
                    : from_outside(std::move(frame), f.name() + ", in: random", "");
}

}  // namespace andromeda::fast_path_test
