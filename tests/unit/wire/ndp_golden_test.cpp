// Golden Neighbor Discovery, ICMPv6 echo and Packet Too Big frames written by scapy
// (tests/data/make_golden_ndp.py): every frame is decoded with the views, every field, option and
// checksum checked against the manifest, then rebuilt with the builders from the decoded values
// alone (headers, ND fixed parts, options, checksums), which must reproduce it byte for byte. The
// manifest's addressing vectors check EUI-64, link-local and solicited-node derivation.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "support/golden_files.hpp"
#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ipv6.hpp"
#include "wire/ipv6_addressing.hpp"
#include "wire/ndp.hpp"
#include "wire/udp.hpp"

namespace andromeda::wire {
namespace {

using nlohmann::json;
using Bytes = std::vector<std::uint8_t>;

const std::string kGoldenDir = std::string(ANDROMEDA_SOURCE_DIR) + "/tests/data/golden/ndp/";

json load_manifest() { return test_support::read_golden_manifest(kGoldenDir + "manifest.json", "/usr/bin/python3 tests/data/make_golden_ndp.py"); }

Bytes load_hex(const std::string& file) { return test_support::read_golden_hex(kGoldenDir + file); }

Bytes from_hex(const std::string& hex) {
    Bytes bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        bytes.push_back(static_cast<std::uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return bytes;
}

Ipv6Address ip6(const json& j) { return *Ipv6Address::parse(j.get<std::string>()); }
MacAddress mac(const json& j) { return *MacAddress::parse(j.get<std::string>()); }

// Checks one option against the manifest and writes it again with the writer.
void check_and_rewrite_option(const NdpOption& option, const json& j, NdpOptionWriter& writer) {
    ASSERT_EQ(option.type, j["type"]);
    ASSERT_EQ(option.bytes.size(), j["length"]);
    switch (option.type) {
        case ndp_option::kSourceLinkLayerAddress:
        case ndp_option::kTargetLinkLayerAddress: {
            const auto address = decode_link_layer_address(option);
            ASSERT_TRUE(address);
            EXPECT_EQ(*address, mac(j["mac"]));
            EXPECT_TRUE(writer.link_layer_address(option.type, *address));
            return;
        }
        case ndp_option::kMtu: {
            const auto mtu = decode_mtu(option);
            ASSERT_TRUE(mtu);
            EXPECT_EQ(*mtu, j["mtu"]);
            EXPECT_TRUE(writer.mtu(*mtu));
            return;
        }
        case ndp_option::kPrefixInformation: {
            const auto information = decode_prefix_information(option);
            ASSERT_TRUE(information);
            const PrefixInformation expected{j["prefix_length"],      j["on_link"],
                                             j["autonomous"],         j["valid_lifetime"],
                                             j["preferred_lifetime"], ip6(j["prefix"])};
            EXPECT_EQ(*information, expected);
            EXPECT_TRUE(writer.prefix_information(*information));
            return;
        }
        case ndp_option::kRecursiveDnsServer: {
            const auto rdnss = RdnssView::parse(option);
            ASSERT_TRUE(rdnss);
            EXPECT_EQ(rdnss->lifetime(), j["lifetime"]);
            ASSERT_EQ(rdnss->address_count(), j["addresses"].size());
            std::vector<Ipv6Address> servers;
            for (std::size_t i = 0; i < rdnss->address_count(); ++i) {
                EXPECT_EQ(rdnss->address(i), ip6(j["addresses"][i]));
                servers.push_back(rdnss->address(i));
            }
            EXPECT_TRUE(writer.recursive_dns_servers(rdnss->lifetime(), servers));
            return;
        }
        default: {  // unknown to the gateway: walked over, carried as opaque data
            const Bytes data = from_hex(j["data"]);
            EXPECT_TRUE(std::equal(data.begin(), data.end(), option.bytes.begin() + 2));
            EXPECT_TRUE(writer.option(option.type, data));
            return;
        }
    }
}

// Decodes the ND message of `ip` against `j` and rebuilds it in `out` (the same size).
void check_and_rebuild_ndp(const Ipv6View& ip, const json& j, MutableByteSpan out) {
    const ByteSpan message = ip.upper_layer_payload();
    ASSERT_EQ(message[0], j["type"]);
    const auto icmp = Icmpv6View::parse(message);
    EXPECT_EQ(icmp->checksum(), j["checksum"]);
    EXPECT_EQ(icmp->compute_checksum(ip.source(), ip.destination()), j["checksum"]);
    std::size_t fixed = 0;
    const NdpOptions* options = nullptr;
    std::optional<RouterSolicitationView> rs;
    std::optional<RouterAdvertisementView> ra;
    std::optional<NeighborSolicitationView> ns;
    std::optional<NeighborAdvertisementView> na;
    switch (message[0]) {
        case icmpv6_type::kRouterSolicitation: {
            const auto v = validate_router_solicitation(ip);
            ASSERT_TRUE(v) << to_string(v.error());
            rs = *v;
            fixed = write_router_solicitation(out);
            options = &rs->options();
            break;
        }
        case icmpv6_type::kRouterAdvertisement: {
            const auto v = validate_router_advertisement(ip);
            ASSERT_TRUE(v) << to_string(v.error());
            ra = *v;
            const RouterAdvertisementHeader expected{
                j["current_hop_limit"], j["managed"],        j["other_configuration"], j["router_preference"],
                j["router_lifetime"],   j["reachable_time"], j["retrans_timer"]};
            EXPECT_EQ(ra->header(), expected);
            fixed = write_router_advertisement(out, ra->header());
            options = &ra->options();
            break;
        }
        case icmpv6_type::kNeighborSolicitation: {
            const auto v = validate_neighbor_solicitation(ip);
            ASSERT_TRUE(v) << to_string(v.error());
            ns = *v;
            EXPECT_EQ(ns->target(), ip6(j["target"]));
            fixed = write_neighbor_solicitation(out, ns->target());
            options = &ns->options();
            break;
        }
        case icmpv6_type::kNeighborAdvertisement: {
            const auto v = validate_neighbor_advertisement(ip);
            ASSERT_TRUE(v) << to_string(v.error());
            na = *v;
            const NeighborAdvertisementHeader expected{j["router"], j["solicited"], j["override"], ip6(j["target"])};
            EXPECT_EQ(na->header(), expected);
            fixed = write_neighbor_advertisement(out, na->header());
            options = &na->options();
            break;
        }
        default:
            FAIL() << "unexpected ND type " << int{message[0]};
    }
    ASSERT_NE(fixed, 0u);
    NdpOptionWriter writer(out.subspan(fixed));
    std::size_t index = 0;
    for (const NdpOption option : *options) {
        ASSERT_LT(index, j["options"].size());
        check_and_rewrite_option(option, j["options"][index++], writer);
    }
    EXPECT_EQ(index, j["options"].size());
    EXPECT_FALSE(writer.failed());
    ASSERT_EQ(fixed + writer.length(), message.size());
    MutableIcmpv6View::parse(out.first(message.size()))->update_checksum(ip.source(), ip.destination());
}

void check_and_rebuild_icmpv6(const Ipv6View& ip, const json& j, MutableByteSpan out) {
    const auto m = Icmpv6View::parse(ip.upper_layer_payload());
    ASSERT_TRUE(m);
    EXPECT_EQ(m->type(), j["type"]);
    EXPECT_EQ(m->code(), j["code"]);
    EXPECT_EQ(m->checksum(), j["checksum"]);
    EXPECT_TRUE(m->checksum_valid(ip.source(), ip.destination()));
    EXPECT_EQ(m->body().size(), j["body_length"]);
    const IcmpHeader h =
        m->is_echo() ? icmp_echo(m->type(), j["identifier"], j["sequence"]) : icmpv6_packet_too_big(j["mtu"]);
    ASSERT_EQ(write_icmp_header(out, h), kIcmpHeaderLength);
    MutableIcmpv6View::parse(out.first(m->message().size()))->update_checksum(ip.source(), ip.destination());
}

void check_and_rebuild(Bytes in, const json& layers) {
    Bytes out(in.size(), 0xa5);
    const auto eth = EthernetView::parse(in);
    ASSERT_TRUE(eth);
    const json& e = layers[0];
    EXPECT_EQ(eth->destination(), mac(e["destination"]));
    EXPECT_EQ(eth->source(), mac(e["source"]));
    EXPECT_EQ(eth->ethertype(), ethertype::kIpv6);
    ASSERT_EQ(eth->vlan_count(), e["vlans"].size());
    ASSERT_EQ(write_ethernet_header(out, eth->header()), eth->header_length());

    const auto ip = Ipv6View::parse(eth->payload());
    ASSERT_TRUE(ip) << to_string(ip.error());
    const json& i = layers[1];
    EXPECT_EQ(ip->traffic_class(), i["traffic_class"]);
    EXPECT_EQ(ip->payload_length(), i["payload_length"]);
    EXPECT_EQ(ip->hop_limit(), i["hop_limit"]);
    EXPECT_EQ(ip->source(), ip6(i["source"]));
    EXPECT_EQ(ip->destination(), ip6(i["destination"]));
    const std::size_t l3 = eth->header_length();
    ASSERT_EQ(write_ipv6_header(MutableByteSpan(out).subspan(l3), ip->header()), kIpv6HeaderLength);

    const json& l4 = layers[2];
    const MutableByteSpan message = MutableByteSpan(out).subspan(l3 + kIpv6HeaderLength);
    if (l4["layer"] == "ndp") {
        check_and_rebuild_ndp(*ip, l4, message);
    } else if (l4["layer"] == "icmpv6") {
        std::copy(ip->upper_layer_payload().begin(), ip->upper_layer_payload().end(), message.begin());
        check_and_rebuild_icmpv6(*ip, l4, message);
    } else {  // the UDP packet a Packet Too Big is about: carried whole
        std::copy(ip->payload().begin(), ip->payload().end(), message.begin());
    }
    EXPECT_EQ(out, in) << "re-encoded frame differs";
}

TEST(NdpGolden, ManifestCoversEveryMessageAndOption) {
    const json manifest = load_manifest();
    std::set<int> types, options;
    for (const auto& frame : manifest["frames"])
        for (const auto& layer : frame["layers"]) {
            if (layer["layer"] == "ndp" || layer["layer"] == "icmpv6") types.insert(layer["type"].get<int>());
            if (layer["layer"] == "ndp")
                for (const auto& option : layer["options"]) options.insert(option["type"].get<int>());
        }
    for (int type : {2, 128, 129, 133, 134, 135, 136}) EXPECT_TRUE(types.count(type)) << type;
    for (int option : {1, 2, 3, 5, 25, 31, 253}) EXPECT_TRUE(options.count(option)) << option;
}

TEST(NdpGolden, EveryFrameDecodesAndReencodesByteIdentically) {
    const json manifest = load_manifest();
    for (const auto& frame : manifest["frames"]) {
        SCOPED_TRACE(frame["name"].get<std::string>());
        Bytes bytes = load_hex(frame["file"]);
        ASSERT_EQ(bytes.size(), frame["length"]);
        check_and_rebuild(std::move(bytes), frame["layers"]);
    }
}

TEST(NdpGolden, AddressingMatchesScapy) {
    const json manifest = load_manifest();
    const Ipv6Prefix prefix(ip6(manifest["gateway"]["prefix"]), manifest["gateway"]["prefix_length"]);
    for (const auto& v : manifest["addressing"]) {
        SCOPED_TRACE(v["mac"].get<std::string>());
        const MacAddress m = mac(v["mac"]);
        const auto id = modified_eui64(m);
        const Ipv6Address link_local = link_local_address(m);
        EXPECT_TRUE(std::equal(id.begin(), id.end(), link_local.bytes().begin() + 8));
        EXPECT_EQ(link_local, ip6(v["link_local"]));
        EXPECT_EQ(Ipv6Address::parse("::" + v["interface_id"].get<std::string>())->bytes()[8], id[0]);
        EXPECT_EQ(eui64_address(prefix, m), ip6(v["eui64_address"]));
        EXPECT_EQ(solicited_node_multicast(link_local), ip6(v["solicited_node"]));
        EXPECT_TRUE(is_solicited_node_multicast(solicited_node_multicast(link_local)));
        EXPECT_EQ(multicast_mac(solicited_node_multicast(link_local)), mac(v["solicited_node_mac"]));
    }
}

std::size_t fixed_length(std::uint8_t type) {
    switch (type) {
        case icmpv6_type::kRouterSolicitation:
            return kRouterSolicitationLength;
        case icmpv6_type::kRouterAdvertisement:
            return kRouterAdvertisementLength;
        default:
            return kNeighborSolicitationLength;
    }
}

// The error (None = parsed) and option count the view of `message`'s type gives it.
std::pair<NdpError, std::size_t> parse_any(ByteSpan message, std::uint8_t type) {
    const auto count = [](const auto& parsed) {
        return parsed ? std::pair{NdpError::None, static_cast<std::size_t>(std::distance(parsed->options().begin(),
                                                                                         parsed->options().end()))}
                      : std::pair{parsed.error(), std::size_t{0}};
    };
    switch (type) {
        case icmpv6_type::kRouterSolicitation:
            return count(RouterSolicitationView::parse(message));
        case icmpv6_type::kRouterAdvertisement:
            return count(RouterAdvertisementView::parse(message));
        case icmpv6_type::kNeighborSolicitation:
            return count(NeighborSolicitationView::parse(message));
        default:
            return count(NeighborAdvertisementView::parse(message));
    }
}

// Every cut of every golden ND message: shorter than the fixed part is Truncated, a cut on an
// option boundary parses with the options before it, any other cut is BadOptionLength.
TEST(NdpGolden, EveryCutOfAMessageIsRefusedOrKeepsTheWholeOptionsBeforeIt) {
    const json manifest = load_manifest();
    for (const auto& frame : manifest["frames"]) {
        const json& layer = frame["layers"][2];
        if (layer["layer"] != "ndp") continue;
        SCOPED_TRACE(frame["name"].get<std::string>());
        const Bytes bytes = load_hex(frame["file"]);
        const auto ip = Ipv6View::parse(EthernetView::parse(bytes)->payload());
        const ByteSpan message = ip->upper_layer_payload();
        const std::uint8_t type = message[0];
        std::set<std::size_t> boundaries = {fixed_length(type)};
        std::size_t at = fixed_length(type);
        for (const auto& option : layer["options"]) boundaries.insert(at += option["length"].get<std::size_t>());
        for (std::size_t cut = 0; cut <= message.size(); ++cut) {
            const Bytes part(message.begin(), message.begin() + static_cast<long>(cut));
            const auto [error, options] = parse_any(part, type);
            if (cut < fixed_length(type)) {
                EXPECT_EQ(error, NdpError::Truncated) << cut;
            } else if (boundaries.count(cut)) {
                EXPECT_EQ(error, NdpError::None) << cut;
                EXPECT_EQ(options, static_cast<std::size_t>(std::distance(boundaries.begin(), boundaries.find(cut))))
                    << cut;
            } else {
                EXPECT_EQ(error, NdpError::BadOptionLength) << cut;
            }
        }
    }
}

}  // namespace
}  // namespace andromeda::wire
