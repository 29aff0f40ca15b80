// Golden frames written by scapy (tests/data/make_golden.py), an implementation independent of
// ours: every frame is decoded with the views, its fields and checksums checked against the
// manifest, and then re-encoded with the builders, headers from scratch and checksums recomputed,
// which must reproduce the frame byte for byte.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/golden_files.hpp"
#include "wire/arp.hpp"
#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ipv4.hpp"
#include "wire/ipv6.hpp"
#include "wire/tcp.hpp"
#include "wire/udp.hpp"

namespace andromeda::wire {
namespace {

using nlohmann::json;

const std::string kGoldenDir = std::string(ANDROMEDA_SOURCE_DIR) + "/tests/data/golden/";
constexpr std::uint16_t kVxlanPort = 4789;
constexpr std::uint8_t kScrub = 0xa5;  // header bytes are overwritten with this before rebuilding

json load_manifest() { return test_support::read_golden_manifest(kGoldenDir + "manifest.json"); }

std::vector<std::uint8_t> load_hex(const std::string& file) { return test_support::read_golden_hex(kGoldenDir + file); }

Ipv4Address ip4(const json& j) { return *Ipv4Address::parse(j.get<std::string>()); }
Ipv6Address ip6(const json& j) { return *Ipv6Address::parse(j.get<std::string>()); }
MacAddress mac(const json& j) { return *MacAddress::parse(j.get<std::string>()); }

// Walks one frame layer by layer, in step with the manifest's layer list.
class GoldenFrame {
public:
    GoldenFrame(std::vector<std::uint8_t> bytes, const json& layers)
        : in_(std::move(bytes)), out_(in_), layers_(layers) {}

    void check_and_rebuild() {
        ethernet(0, in_.size());
        ASSERT_EQ(next_layer_, layers_.size()) << "manifest layers left undecoded";
        // Inner checksums first: an outer UDP checksum covers the inner packet.
        for (auto it = fixups_.rbegin(); it != fixups_.rend(); ++it) (*it)();
        EXPECT_EQ(out_, in_) << "re-encoded frame differs";
    }

private:
    const json& expect(const char* layer) {
        static const json kNone;
        if (next_layer_ >= layers_.size()) {
            ADD_FAILURE() << "decoded a " << layer << " the manifest does not list";
            return kNone;
        }
        const json& j = layers_[next_layer_++];
        EXPECT_EQ(j.at("layer"), layer);
        return j;
    }
    ByteSpan in(std::size_t offset, std::size_t length) const { return ByteSpan(in_).subspan(offset, length); }
    MutableByteSpan scrubbed(std::size_t offset, std::size_t length) {
        std::fill_n(out_.begin() + static_cast<long>(offset), length, kScrub);
        return MutableByteSpan(out_).subspan(offset);
    }
    MutableByteSpan out(std::size_t offset, std::size_t length) { return MutableByteSpan(out_).subspan(offset, length); }

    void ethernet(std::size_t offset, std::size_t length) {
        const json& j = expect("ethernet");
        const auto eth = EthernetView::parse(in(offset, length));
        ASSERT_TRUE(eth) << to_string(eth.error());
        EXPECT_EQ(eth->destination(), mac(j["destination"]));
        EXPECT_EQ(eth->source(), mac(j["source"]));
        EXPECT_EQ(eth->ethertype(), j["ethertype"]);
        ASSERT_EQ(eth->vlan_count(), j["vlans"].size());
        for (std::size_t i = 0; i < eth->vlan_count(); ++i) {
            const json& v = j["vlans"][i];
            EXPECT_EQ(*eth->tag(i), (VlanTag{v["tpid"], v["priority"], v["drop_eligible"], v["vlan_id"]}));
        }
        ASSERT_EQ(write_ethernet_header(scrubbed(offset, eth->header_length()), eth->header()), eth->header_length());
        const std::size_t payload = offset + eth->header_length();
        switch (eth->ethertype()) {
            case ethertype::kIpv4: return ipv4(payload, eth->payload().size());
            case ethertype::kIpv6: return ipv6(payload, eth->payload().size());
            case ethertype::kArp: return arp(payload, eth->payload().size());
            default: FAIL() << "unexpected ethertype " << eth->ethertype();
        }
    }

    void arp(std::size_t offset, std::size_t length) {
        const json& j = expect("arp");
        const auto a = ArpView::parse(in(offset, length));
        ASSERT_TRUE(a) << to_string(a.error());
        const ArpPacket expected{j["operation"], mac(j["sender_mac"]), ip4(j["sender_ip"]), mac(j["target_mac"]),
                                 ip4(j["target_ip"])};
        EXPECT_EQ(a->packet(), expected);
        ASSERT_EQ(write_arp(scrubbed(offset, kArpLength), expected), kArpLength);
    }

    void ipv4(std::size_t offset, std::size_t length) {
        const json& j = expect("ipv4");
        const auto ip = Ipv4View::parse(in(offset, length));
        ASSERT_TRUE(ip) << to_string(ip.error());
        EXPECT_EQ(ip->version(), 4);
        EXPECT_EQ(ip->ihl(), j["ihl"]);
        EXPECT_EQ(ip->dscp(), j["dscp"]);
        EXPECT_EQ(ip->ecn(), j["ecn"]);
        EXPECT_EQ(ip->total_length(), j["total_length"]);
        EXPECT_EQ(ip->identification(), j["identification"]);
        EXPECT_EQ(ip->dont_fragment(), j["dont_fragment"]);
        EXPECT_EQ(ip->more_fragments(), j["more_fragments"]);
        EXPECT_EQ(ip->fragment_offset(), j["fragment_offset"]);
        EXPECT_EQ(ip->ttl(), j["ttl"]);
        EXPECT_EQ(ip->protocol(), j["protocol"]);
        EXPECT_EQ(ip->checksum(), j["checksum"]);
        EXPECT_TRUE(ip->checksum_valid());
        EXPECT_EQ(ip->compute_checksum(), j["checksum"]);
        EXPECT_EQ(ip->source(), ip4(j["source"]));
        EXPECT_EQ(ip->destination(), ip4(j["destination"]));
        EXPECT_EQ(ip->options().size(), j["options_length"]);
        const std::size_t header_length = ip->header_length();
        ASSERT_EQ(write_ipv4_header(scrubbed(offset, header_length), ip->header()), header_length);
        if (ip->fragment_offset() != 0) return;  // later fragment: opaque data
        const Ipv4Address src = ip->source(), dst = ip->destination();
        const std::size_t payload = offset + header_length, payload_length = ip->payload().size();
        switch (ip->protocol()) {
            case ip_protocol::kUdp: return udp(payload, payload_length, [=](auto& v) { v.update_checksum(src, dst); },
                                               [=](const auto& v) { return v.checksum_valid(src, dst); });
            case ip_protocol::kTcp: return tcp(payload, payload_length, [=](auto& v) { v.update_checksum(src, dst); },
                                               [=](const auto& v) { return v.checksum_valid(src, dst); });
            case ip_protocol::kIcmp: return icmpv4(payload, payload_length);
            default: FAIL() << "unexpected protocol " << int{ip->protocol()};
        }
    }

    void ipv6(std::size_t offset, std::size_t length) {
        const json& j = expect("ipv6");
        const auto ip = Ipv6View::parse(in(offset, length));
        ASSERT_TRUE(ip) << to_string(ip.error());
        EXPECT_EQ(ip->version(), 6);
        EXPECT_EQ(ip->traffic_class(), j["traffic_class"]);
        EXPECT_EQ(ip->flow_label(), j["flow_label"]);
        EXPECT_EQ(ip->payload_length(), j["payload_length"]);
        EXPECT_EQ(ip->next_header(), j["next_header"]);
        EXPECT_EQ(ip->hop_limit(), j["hop_limit"]);
        EXPECT_EQ(ip->source(), ip6(j["source"]));
        EXPECT_EQ(ip->destination(), ip6(j["destination"]));
        ASSERT_EQ(write_ipv6_header(scrubbed(offset, kIpv6HeaderLength), ip->header()), kIpv6HeaderLength);

        const json& exts = j["extension_headers"];
        ASSERT_EQ(ip->extension_header_count(), exts.size());
        std::size_t at = offset + kIpv6HeaderLength;
        std::uint8_t upper = ip->next_header();
        Ipv6Address final_destination = ip->destination();
        for (std::size_t i = 0; i < exts.size(); ++i) {
            const auto ext = *ip->extension_header(i);
            const json& e = exts[i];
            EXPECT_EQ(ext.type, e["type"]);
            ASSERT_EQ(ext.bytes.size(), e["length"]);
            const std::uint8_t next = ext.bytes[0];
            EXPECT_EQ(next, e["next_header"]);
            const auto dst_span = scrubbed(at, ext.bytes.size());
            std::size_t written = 0;
            if (ext.type == ip_protocol::kFragment) {
                EXPECT_EQ(ip->fragment_offset(), e["fragment_offset"]);
                EXPECT_EQ(ip->more_fragments(), e["more_fragments"]);
                EXPECT_EQ(ip->fragment_identification(), e["identification"]);
                written = write_ipv6_fragment_header(dst_span, next, ip->fragment_offset(), ip->more_fragments(),
                                                     ip->fragment_identification());
            } else if (ext.type == ip_protocol::kRouting) {
                final_destination = ip6(e["final_destination"]);
                written = write_ipv6_routing_header(dst_span, next, ext.bytes[2], ext.bytes[3], ext.bytes.subspan(4));
            } else {
                written = write_ipv6_options_header(dst_span, next, ext.bytes.subspan(2));
            }
            EXPECT_EQ(written, ext.bytes.size());
            at += ext.bytes.size();
            upper = next;
        }
        EXPECT_EQ(ip->upper_layer_protocol(), upper);
        EXPECT_EQ(ip->upper_layer_offset(), at - offset);
        EXPECT_EQ(ip->final_destination(), final_destination);

        const Ipv6Address src = ip->source(), dst = ip->final_destination();
        const std::size_t payload_length = ip->upper_layer_payload().size();
        switch (ip->upper_layer_protocol()) {
            case ip_protocol::kUdp: return udp(at, payload_length, [=](auto& v) { v.update_checksum(src, dst); },
                                               [=](const auto& v) { return v.checksum_valid(src, dst); });
            case ip_protocol::kTcp: return tcp(at, payload_length, [=](auto& v) { v.update_checksum(src, dst); },
                                               [=](const auto& v) { return v.checksum_valid(src, dst); });
            case ip_protocol::kIcmpv6: return icmpv6(at, payload_length, src, dst);
            default: FAIL() << "unexpected upper layer " << int{ip->upper_layer_protocol()};
        }
    }

    template <class Fill, class Verify>
    void udp(std::size_t offset, std::size_t length, Fill fill, Verify verify) {
        const json& j = expect("udp");
        const auto u = UdpView::parse(in(offset, length));
        ASSERT_TRUE(u) << to_string(u.error());
        EXPECT_EQ(u->source_port(), j["source_port"]);
        EXPECT_EQ(u->destination_port(), j["destination_port"]);
        EXPECT_EQ(u->length(), j["length"]);
        EXPECT_EQ(u->checksum(), j["checksum"]);
        EXPECT_TRUE(verify(*u));
        const bool has_checksum = u->checksum() != 0;
        UdpHeader h = u->header();
        h.checksum = 0;
        ASSERT_EQ(write_udp_header(scrubbed(offset, kUdpHeaderLength), h), kUdpHeaderLength);
        if (has_checksum) {
            fixups_.push_back([this, offset, len = u->length(), fill] {
                auto v = MutableUdpView::parse(out(offset, len));
                ASSERT_TRUE(v);
                fill(*v);
            });
        }
        if (u->destination_port() == kVxlanPort) vxlan(offset + kUdpHeaderLength, u->payload().size());
    }

    // VXLAN itself belongs to the overlay library; here it only leads to the inner frame.
    void vxlan(std::size_t offset, std::size_t length) {
        const json& j = expect("vxlan");
        ASSERT_GE(length, 8u);
        EXPECT_EQ(in_[offset], j["flags"]);
        EXPECT_EQ(load_be24(&in_[offset + 4]), j["vni"]);
        const auto header = scrubbed(offset, 8);
        std::fill_n(header.begin(), 8, 0);
        header[0] = j["flags"];
        store_be24(&header[4], j["vni"]);
        ethernet(offset + 8, length - 8);
    }

    template <class Fill, class Verify>
    void tcp(std::size_t offset, std::size_t length, Fill fill, Verify verify) {
        const json& j = expect("tcp");
        const auto t = TcpView::parse(in(offset, length));
        ASSERT_TRUE(t) << to_string(t.error());
        EXPECT_EQ(t->source_port(), j["source_port"]);
        EXPECT_EQ(t->destination_port(), j["destination_port"]);
        EXPECT_EQ(t->sequence(), j["sequence"]);
        EXPECT_EQ(t->acknowledgment(), j["acknowledgment"]);
        EXPECT_EQ(t->data_offset(), j["data_offset"]);
        EXPECT_EQ(t->flags(), j["flags"]);
        EXPECT_EQ(t->window(), j["window"]);
        EXPECT_EQ(t->checksum(), j["checksum"]);
        EXPECT_EQ(t->urgent_pointer(), j["urgent_pointer"]);
        EXPECT_EQ(t->options().size(), j["options_length"]);
        EXPECT_EQ(t->payload().size(), j["payload_length"]);
        EXPECT_TRUE(verify(*t));
        TcpHeader h = t->header();
        h.checksum = 0;
        ASSERT_EQ(write_tcp_header(scrubbed(offset, t->header_length()), h), t->header_length());
        fixups_.push_back([this, offset, length, fill] {
            auto v = MutableTcpView::parse(out(offset, length));
            ASSERT_TRUE(v);
            fill(*v);
        });
    }

    void icmpv4(std::size_t offset, std::size_t length) {
        const json& j = expect("icmpv4");
        const auto m = Icmpv4View::parse(in(offset, length));
        ASSERT_TRUE(m) << to_string(m.error());
        EXPECT_EQ(m->type(), j["type"]);
        EXPECT_EQ(m->code(), j["code"]);
        EXPECT_EQ(m->checksum(), j["checksum"]);
        EXPECT_TRUE(m->checksum_valid());
        EXPECT_EQ(m->compute_checksum(), j["checksum"]);
        EXPECT_EQ(m->body().size(), j["body_length"]);
        IcmpHeader h;
        if (m->is_echo()) {
            EXPECT_EQ(m->identifier(), j["identifier"]);
            EXPECT_EQ(m->sequence(), j["sequence"]);
            h = icmp_echo(m->type(), m->identifier(), m->sequence());
        } else if (m->is_fragmentation_needed()) {
            EXPECT_EQ(m->next_hop_mtu(), j["next_hop_mtu"]);
            EXPECT_EQ(m->original_datagram().size(), j["body_length"]);
            EXPECT_TRUE(Ipv4View::parse(m->original_datagram()).error() == ParseError::Truncated)
                << "a quoted datagram is cut short of its total length";
            const auto quoted = Ipv4View::parse_quoted(m->original_datagram());
            ASSERT_TRUE(quoted);
            EXPECT_EQ(quoted->total_length(), 1500);
            EXPECT_EQ(quoted->protocol(), ip_protocol::kUdp);
            EXPECT_TRUE(quoted->checksum_valid());
            EXPECT_EQ(quoted->payload().size(), 8u);
            EXPECT_EQ(UdpView::parse(quoted->payload()).error(), ParseError::Truncated);
            h = icmpv4_fragmentation_needed(m->next_hop_mtu());
        } else {
            FAIL() << "no builder rule for ICMP type " << int{m->type()};
        }
        ASSERT_EQ(write_icmp_header(scrubbed(offset, kIcmpHeaderLength), h), kIcmpHeaderLength);
        fixups_.push_back([this, offset, length] {
            auto v = MutableIcmpv4View::parse(out(offset, length));
            ASSERT_TRUE(v);
            v->update_checksum();
        });
    }

    void icmpv6(std::size_t offset, std::size_t length, const Ipv6Address& src, const Ipv6Address& dst) {
        const json& j = expect("icmpv6");
        const auto m = Icmpv6View::parse(in(offset, length));
        ASSERT_TRUE(m) << to_string(m.error());
        EXPECT_EQ(m->type(), j["type"]);
        EXPECT_EQ(m->code(), j["code"]);
        EXPECT_EQ(m->checksum(), j["checksum"]);
        EXPECT_TRUE(m->checksum_valid(src, dst));
        EXPECT_EQ(m->compute_checksum(src, dst), j["checksum"]);
        EXPECT_EQ(m->body().size(), j["body_length"]);
        IcmpHeader h;
        if (m->is_echo()) {
            EXPECT_EQ(m->identifier(), j["identifier"]);
            EXPECT_EQ(m->sequence(), j["sequence"]);
            h = icmp_echo(m->type(), m->identifier(), m->sequence());
        } else if (m->type() == icmpv6_type::kPacketTooBig) {
            EXPECT_EQ(m->mtu(), j["mtu"]);
            EXPECT_EQ(m->invoking_packet().size(), j["body_length"]);
            h = icmpv6_packet_too_big(m->mtu());
        } else {
            FAIL() << "no builder rule for ICMPv6 type " << int{m->type()};
        }
        ASSERT_EQ(write_icmp_header(scrubbed(offset, kIcmpHeaderLength), h), kIcmpHeaderLength);
        fixups_.push_back([this, offset, length, src, dst] {
            auto v = MutableIcmpv6View::parse(out(offset, length));
            ASSERT_TRUE(v);
            v->update_checksum(src, dst);
        });
    }

    std::vector<std::uint8_t> in_;
    std::vector<std::uint8_t> out_;
    const json& layers_;
    std::size_t next_layer_ = 0;
    std::vector<std::function<void()>> fixups_;
};

TEST(Golden, ManifestListsEveryKindOfFrame) {
    const json manifest = load_manifest();
    std::set<std::string> kinds;
    for (const auto& frame : manifest["frames"])
        for (const auto& layer : frame["layers"]) kinds.insert(layer["layer"].get<std::string>());
    for (const char* kind : {"ethernet", "arp", "ipv4", "ipv6", "udp", "tcp", "icmpv4", "icmpv6", "vxlan"})
        EXPECT_TRUE(kinds.count(kind)) << kind;
    EXPECT_GE(manifest["frames"].size(), 16u);
}

TEST(Golden, EveryFrameDecodesAndReencodesByteIdentically) {
    const json manifest = load_manifest();
    for (const auto& frame : manifest["frames"]) {
        SCOPED_TRACE(frame["name"].get<std::string>());
        auto bytes = load_hex(frame["file"]);
        ASSERT_EQ(bytes.size(), frame["length"]);
        GoldenFrame(std::move(bytes), frame["layers"]).check_and_rebuild();
    }
}

// Every truncation of every golden frame: the views refuse or stay inside the buffer (ASan).
TEST(Golden, TruncationsOfGoldenFramesStayInBounds) {
    const json manifest = load_manifest();
    for (const auto& frame : manifest["frames"]) {
        const auto bytes = load_hex(frame["file"]);
        for (std::size_t cut = 0; cut <= bytes.size(); ++cut) {
            const std::vector<std::uint8_t> part(bytes.begin(), bytes.begin() + static_cast<long>(cut));
            const auto eth = EthernetView::parse(part);
            if (!eth) continue;
            const auto payload = eth->payload();
            if (const auto ip = Ipv4View::parse(payload)) {
                (void)UdpView::parse(ip->payload());
                (void)TcpView::parse(ip->payload());
                if (const auto icmp = Icmpv4View::parse(ip->payload())) {
                    (void)Ipv4View::parse(icmp->original_datagram());
                    if (const auto quoted = Ipv4View::parse_quoted(icmp->original_datagram()))
                        (void)UdpView::parse(quoted->payload());
                }
            }
            if (const auto ip = Ipv6View::parse(payload)) {
                (void)UdpView::parse(ip->upper_layer_payload());
                (void)TcpView::parse(ip->upper_layer_payload());
                (void)Icmpv6View::parse(ip->upper_layer_payload());
            }
            (void)ArpView::parse(payload);
        }
    }
}

}  // namespace
}  // namespace andromeda::wire
