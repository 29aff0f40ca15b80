// Property tests for Neighbor Discovery: random bytes never crash a view or a validator and a
// parsed option area always walks to its end; random messages built with the builders parse back
// to what was built and verify their checksum; any one changed byte of a valid message is refused.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv6.hpp"
#include "wire/ipv6_addressing.hpp"
#include "wire/ndp.hpp"

namespace andromeda::wire {
namespace {

using Bytes = std::vector<std::uint8_t>;

class Random {
public:
    explicit Random(std::uint32_t seed) : engine_(seed) {}
    std::uint32_t below(std::uint32_t n) { return std::uniform_int_distribution<std::uint32_t>(0, n - 1)(engine_); }
    bool coin() { return below(2) == 1; }
    std::uint8_t byte() { return static_cast<std::uint8_t>(below(256)); }
    std::uint32_t word() { return static_cast<std::uint32_t>(engine_()); }
    Bytes bytes(std::size_t n) {
        Bytes b(n);
        for (auto& v : b) v = byte();
        return b;
    }
    Ipv6Address address() {
        std::array<std::uint8_t, 16> a{};
        for (auto& v : a) v = byte();
        return Ipv6Address(a);
    }
    Ipv6Address unicast() {
        Ipv6Address a = address();
        while (is_multicast(a) || is_unspecified(a)) a = address();
        return a;
    }
    MacAddress mac() {
        std::array<std::uint8_t, 6> m{};
        for (auto& v : m) v = byte();
        return MacAddress(m);
    }

private:
    std::mt19937 engine_;
};

// An IPv6 packet (no Ethernet) from `source` to `destination` carrying `message` as ICMPv6.
Bytes ipv6_packet(const Ipv6Address& source, const Ipv6Address& destination, const Bytes& message,
                  std::uint8_t hop_limit = kNdpHopLimit) {
    Bytes packet(kIpv6HeaderLength + message.size());
    Ipv6Header h;
    h.payload_length = static_cast<std::uint16_t>(message.size());
    h.next_header = ip_protocol::kIcmpv6;
    h.hop_limit = hop_limit;
    h.source = source;
    h.destination = destination;
    write_ipv6_header(packet, h);
    std::copy(message.begin(), message.end(), packet.begin() + kIpv6HeaderLength);
    return packet;
}

Ipv6View view_of(const Bytes& packet) {
    const auto ip = Ipv6View::parse(packet);
    EXPECT_TRUE(ip);
    return *ip;
}

// Walks every view over `message`; a parsed option area must walk exactly to its end.
void walk_every_view(ByteSpan message) {
    const auto walk = [](const auto& parsed) {
        if (!parsed) return;
        std::size_t total = 0;
        for (const NdpOption option : parsed->options()) {
            EXPECT_GT(option.bytes.size(), 0u);
            EXPECT_EQ(option.bytes.size() % kNdpOptionUnit, 0u);
            total += option.bytes.size();
            (void)decode_link_layer_address(option);
            (void)decode_prefix_information(option);
            (void)decode_mtu(option);
            if (const auto rdnss = RdnssView::parse(option))
                for (std::size_t i = 0; i < rdnss->address_count(); ++i) (void)rdnss->address(i);
        }
        EXPECT_EQ(total, parsed->options().bytes().size());
    };
    walk(RouterSolicitationView::parse(message));
    walk(RouterAdvertisementView::parse(message));
    walk(NeighborSolicitationView::parse(message));
    walk(NeighborAdvertisementView::parse(message));
}

TEST(NdpProperty, RandomBytesNeverCrashViewsOrValidators) {
    Random random(4861);
    for (int i = 0; i < 20000; ++i) {
        Bytes message = random.bytes(random.below(96));
        if (!message.empty()) message[0] = static_cast<std::uint8_t>(133 + random.below(4));
        // Options that look like options more often than pure noise would.
        for (std::size_t at = 24; at + 1 < message.size(); at += 8)
            message[at + 1] = static_cast<std::uint8_t>(random.below(3));
        walk_every_view(message);
        const Bytes packet = ipv6_packet(random.coin() ? Ipv6Address{} : random.address(), random.address(), message,
                                         random.coin() ? kNdpHopLimit : random.byte());
        const Ipv6View ip = view_of(packet);
        (void)validate_router_solicitation(ip);
        (void)validate_router_advertisement(ip);
        (void)validate_neighbor_solicitation(ip);
        (void)validate_neighbor_advertisement(ip);
    }
}

// A random option area after a random fixed part, written with the writer; returns the options.
struct BuiltOptions {
    std::optional<MacAddress> link_layer;
    std::optional<std::uint32_t> mtu;
    std::vector<PrefixInformation> prefixes;
    std::vector<Ipv6Address> dns;
    std::uint32_t dns_lifetime = 0;
    std::size_t unknown = 0;
};

BuiltOptions write_random_options(Random& random, NdpOptionWriter& writer, std::uint8_t link_layer_type,
                                  bool allow_link_layer) {
    BuiltOptions built;
    if (allow_link_layer && random.coin()) {
        built.link_layer = random.mac();
        EXPECT_TRUE(writer.link_layer_address(link_layer_type, *built.link_layer));
    }
    if (random.coin()) {
        built.mtu = random.word();
        EXPECT_TRUE(writer.mtu(*built.mtu));
    }
    for (std::uint32_t n = random.below(3); n > 0; --n) {
        const PrefixInformation p{static_cast<std::uint8_t>(random.below(129)),
                                  random.coin(),
                                  random.coin(),
                                  random.word(),
                                  random.word(),
                                  random.address()};
        built.prefixes.push_back(p);
        EXPECT_TRUE(writer.prefix_information(p));
    }
    if (random.coin()) {
        for (std::uint32_t n = 1 + random.below(6); n > 0; --n) built.dns.push_back(random.address());
        built.dns_lifetime = random.word();
        EXPECT_TRUE(writer.recursive_dns_servers(built.dns_lifetime, built.dns));
    }
    for (std::uint32_t n = random.below(3); n > 0; --n, ++built.unknown)
        EXPECT_TRUE(writer.option(static_cast<std::uint8_t>(200 + random.below(50)), random.bytes(random.below(40))));
    return built;
}

void expect_options(const NdpOptions& options, const BuiltOptions& built, std::uint8_t link_layer_type) {
    const auto link_layer = options.find(link_layer_type);
    EXPECT_EQ(link_layer ? decode_link_layer_address(*link_layer) : std::nullopt, built.link_layer);
    EXPECT_EQ(options.mtu(), built.mtu);
    std::vector<PrefixInformation> prefixes;
    std::vector<Ipv6Address> dns;
    std::size_t unknown = 0;
    for (const NdpOption option : options) {
        if (const auto p = decode_prefix_information(option)) prefixes.push_back(*p);
        if (const auto r = RdnssView::parse(option)) {
            EXPECT_EQ(r->lifetime(), built.dns_lifetime);
            for (std::size_t i = 0; i < r->address_count(); ++i) dns.push_back(r->address(i));
        }
        if (option.type >= 200) ++unknown;
    }
    EXPECT_EQ(prefixes, built.prefixes);
    EXPECT_EQ(dns, built.dns);
    EXPECT_EQ(unknown, built.unknown);
}

// Finishes `message` (fixed part + options) into a packet with its checksum.
Bytes finish(const Ipv6Address& source, const Ipv6Address& destination, Bytes message) {
    MutableIcmpv6View::parse(message)->update_checksum(source, destination);
    return ipv6_packet(source, destination, message);
}

// Every single-byte change of the message part of a valid packet is refused by `validate`.
template <class Validate>
void every_changed_byte_is_refused(Random& random, const Bytes& packet, Validate validate) {
    for (std::size_t at = kIpv6HeaderLength; at < packet.size(); ++at) {
        Bytes changed = packet;
        changed[at] = static_cast<std::uint8_t>(changed[at] ^ (1 + random.below(255)));
        EXPECT_FALSE(validate(view_of(changed))) << "byte " << at - kIpv6HeaderLength << " changed";
    }
}

TEST(NdpProperty, BuiltAdvertisementsParseBackVerifyAndRefuseAnyChangedByte) {
    Random random(8106);
    for (int i = 0; i < 500; ++i) {
        Bytes message(1024);
        RouterAdvertisementHeader header{random.byte(),
                                         random.coin(),
                                         random.coin(),
                                         static_cast<std::uint8_t>(random.below(4)),
                                         static_cast<std::uint16_t>(random.word()),
                                         random.word(),
                                         random.word()};
        ASSERT_EQ(write_router_advertisement(message, header), kRouterAdvertisementLength);
        NdpOptionWriter writer(MutableByteSpan(message).subspan(kRouterAdvertisementLength));
        const BuiltOptions built = write_random_options(random, writer, ndp_option::kSourceLinkLayerAddress, true);
        message.resize(kRouterAdvertisementLength + writer.length());
        const Bytes packet = finish(link_local_address(random.mac()), all_nodes_multicast(), message);
        const auto ra = validate_router_advertisement(view_of(packet));
        ASSERT_TRUE(ra) << to_string(ra.error());
        EXPECT_EQ(ra->header(), header);
        expect_options(ra->options(), built, ndp_option::kSourceLinkLayerAddress);
        if (i % 10 == 0) every_changed_byte_is_refused(random, packet, validate_router_advertisement);
    }
}

TEST(NdpProperty, BuiltNeighborMessagesParseBackVerifyAndRefuseAnyChangedByte) {
    Random random(4291);
    for (int i = 0; i < 1000; ++i) {
        const bool solicitation = random.coin();
        const Ipv6Address target = random.unicast();
        const Ipv6Address source = random.unicast();
        Bytes message(1024);
        NeighborAdvertisementHeader header{random.coin(), random.coin(), random.coin(), target};
        const std::size_t fixed =
            solicitation ? write_neighbor_solicitation(message, target) : write_neighbor_advertisement(message, header);
        const std::uint8_t link_layer_type =
            solicitation ? ndp_option::kSourceLinkLayerAddress : ndp_option::kTargetLinkLayerAddress;
        NdpOptionWriter writer(MutableByteSpan(message).subspan(fixed));
        const BuiltOptions built = write_random_options(random, writer, link_layer_type, true);
        message.resize(fixed + writer.length());
        const Bytes packet = finish(source, source == target ? all_nodes_multicast() : target, message);
        if (solicitation) {
            const auto ns = validate_neighbor_solicitation(view_of(packet));
            ASSERT_TRUE(ns) << to_string(ns.error());
            EXPECT_EQ(ns->target(), target);
            expect_options(ns->options(), built, link_layer_type);
            if (i % 20 == 0) every_changed_byte_is_refused(random, packet, validate_neighbor_solicitation);
        } else {
            const auto na = validate_neighbor_advertisement(view_of(packet));
            ASSERT_TRUE(na) << to_string(na.error());
            EXPECT_EQ(na->header(), header);
            expect_options(na->options(), built, link_layer_type);
            if (i % 20 == 1) every_changed_byte_is_refused(random, packet, validate_neighbor_advertisement);
        }
    }
}

TEST(NdpProperty, BuiltSolicitationsFromUnspecifiedFollowTheirRules) {
    Random random(6980);
    for (int i = 0; i < 300; ++i) {
        const Ipv6Address target = random.unicast();
        Bytes message(512);
        const std::size_t fixed = write_neighbor_solicitation(message, target);
        NdpOptionWriter writer(MutableByteSpan(message).subspan(fixed));
        const BuiltOptions built =
            write_random_options(random, writer, ndp_option::kSourceLinkLayerAddress, random.coin());
        message.resize(fixed + writer.length());
        const Bytes packet = finish(Ipv6Address{}, solicited_node_multicast(target), message);
        const auto ns = validate_neighbor_solicitation(view_of(packet));
        if (built.link_layer) {
            EXPECT_EQ(ns.error(), NdpError::UnspecifiedSourceWithLinkLayerOption);
        } else {
            ASSERT_TRUE(ns) << to_string(ns.error());
            EXPECT_EQ(ns->target(), target);
        }
        Bytes rs(512);
        const std::size_t rs_fixed = write_router_solicitation(rs);
        NdpOptionWriter rs_writer(MutableByteSpan(rs).subspan(rs_fixed));
        const BuiltOptions rs_built =
            write_random_options(random, rs_writer, ndp_option::kSourceLinkLayerAddress, true);
        rs.resize(rs_fixed + rs_writer.length());
        const auto solicitation =
            validate_router_solicitation(view_of(finish(Ipv6Address{}, all_routers_multicast(), rs)));
        EXPECT_EQ(solicitation.has_value(), !rs_built.link_layer);
    }
}

}  // namespace
}  // namespace andromeda::wire
