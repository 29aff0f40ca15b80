// NAT-style rewrites through the whole header stack, the way the data plane does them: change an
// IPv4 address or a port with the setters (incremental RFC 1624 patches of the IPv4 header
// checksum and of the UDP/TCP checksum over the pseudo-header) and compare with recomputing both
// checksums from scratch.
#include <gtest/gtest.h>

#include <random>
#include <type_traits>
#include <vector>

#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"
#include "wire/tcp.hpp"
#include "wire/udp.hpp"

namespace andromeda::wire {
namespace {

std::vector<std::uint8_t> random_packet(std::mt19937& rng, std::uint8_t protocol) {
    const std::size_t transport_header = protocol == ip_protocol::kTcp ? 20 + (rng() % 11) * 4 : kUdpHeaderLength;
    const std::size_t transport_length = transport_header + rng() % 64;
    std::vector<std::uint8_t> packet(kIpv4MinHeaderLength + transport_length);
    for (auto& b : packet) b = static_cast<std::uint8_t>(rng());
    Ipv4Header ip;
    ip.total_length = static_cast<std::uint16_t>(packet.size());
    ip.protocol = protocol;
    ip.ttl = static_cast<std::uint8_t>(rng());
    ip.identification = static_cast<std::uint16_t>(rng());
    ip.source = Ipv4Address(static_cast<std::uint32_t>(rng()));
    ip.destination = Ipv4Address(static_cast<std::uint32_t>(rng()));
    if (write_ipv4_header(packet, ip) == 0) ADD_FAILURE();
    const MutableByteSpan transport = MutableByteSpan(packet).subspan(kIpv4MinHeaderLength);
    if (protocol == ip_protocol::kTcp) {
        transport[12] = static_cast<std::uint8_t>(transport_header / 4 << 4);
        MutableTcpView::parse(transport)->update_checksum(ip.source, ip.destination);
    } else {
        store_be16(&transport[4], static_cast<std::uint16_t>(transport_length));
        const auto udp = MutableUdpView::parse(transport);
        // One in eight without a checksum, as tunnels send it: it must stay absent.
        if (rng() % 8 == 0) udp->clear_checksum(); else udp->update_checksum(ip.source, ip.destination);
    }
    return packet;
}

template <class TransportView>
void rewrite_and_check(std::mt19937& rng, std::vector<std::uint8_t>& packet) {
    const auto ip = MutableIpv4View::parse(packet);
    ASSERT_TRUE(ip);
    const auto transport = TransportView::parse(ip->payload());
    ASSERT_TRUE(transport);
    const std::uint16_t checksum_before = transport->checksum();

    const bool snat = rng() % 2 == 0;
    const Ipv4Address old_address = snat ? ip->source() : ip->destination();
    const Ipv4Address new_address(rng() % 16 == 0 ? 0 : static_cast<std::uint32_t>(rng()));
    if (snat) {
        ip->set_source(new_address);
        transport->patch_checksum_for_address(old_address, new_address);
        transport->set_source_port(static_cast<std::uint16_t>(rng()));
    } else {
        ip->set_destination(new_address);
        transport->patch_checksum_for_address(old_address, new_address);
        transport->set_destination_port(static_cast<std::uint16_t>(rng()));
    }
    ip->decrement_ttl();

    ASSERT_EQ(ip->checksum(), ip->compute_checksum());
    if constexpr (std::is_same_v<TransportView, MutableUdpView>) {
        if (checksum_before == 0) {
            ASSERT_EQ(transport->checksum(), 0);
            return;
        }
    }
    ASSERT_EQ(transport->checksum(), transport->compute_checksum(ip->source(), ip->destination()));
    ASSERT_TRUE(transport->checksum_valid(ip->source(), ip->destination()));
}

TEST(Rewrite, PropertyIpv4UdpNatEqualsRecompute) {
    std::mt19937 rng(20240601);
    for (int iter = 0; iter < 5000; ++iter) {
        auto packet = random_packet(rng, ip_protocol::kUdp);
        rewrite_and_check<MutableUdpView>(rng, packet);
        if (HasFatalFailure()) return;
    }
}

TEST(Rewrite, PropertyIpv4TcpNatEqualsRecompute) {
    std::mt19937 rng(20240602);
    for (int iter = 0; iter < 5000; ++iter) {
        auto packet = random_packet(rng, ip_protocol::kTcp);
        rewrite_and_check<MutableTcpView>(rng, packet);
        if (HasFatalFailure()) return;
    }
}

}  // namespace
}  // namespace andromeda::wire
