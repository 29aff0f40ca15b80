// Neighbor Discovery and the IPv6 gateway under arbitrary frames: the ND views and validators,
// the ND proxy, Router Solicitation answers (twice, to reach the schedule's deferral), ICMPv6 echo
// (copied and in place) and Packet Too Big. It must never crash, the judges must agree with the
// writers, and every frame written must be one a receiver accepts: Ethernet and IPv6 lengths that
// agree, a verifying ICMPv6 checksum, and for NA/RA, RFC 4861's receive checks.
//
// Input: byte 0 picks the gateway (bit 0: a global address; bits 1-3: DNS servers; bit 4: the
// asker has a second address; bit 5: SLAAC off and a /48 prefix); the rest is the frame.
// Seeds: tests/fuzz/corpus/ndp, written by tests/data/make_golden_ndp.py from the golden frames.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gateway/icmp_echo.hpp"
#include "gateway/icmp_error.hpp"
#include "gateway/nd_proxy.hpp"
#include "gateway/router_advertisement.hpp"
#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ipv6.hpp"
#include "wire/ipv6_addressing.hpp"
#include "wire/ndp.hpp"

namespace {

using namespace andromeda;
using Bytes = std::vector<std::uint8_t>;

[[noreturn]] void violation(const char* what, const std::string& detail = "") {
    std::fprintf(stderr, "ndp_fuzz: %s %s\n", what, detail.c_str());
    std::abort();
}

wire::Ipv6Address ip6(const char* text) { return *wire::Ipv6Address::parse(text); }

gateway::Ipv6Gateway make_gateway(std::uint8_t selector) {
    gateway::Ipv6GatewayConfig config;
    config.mac = *wire::MacAddress::parse("02:aa:00:00:00:01");
    const bool slaac_off = (selector & 0x20) != 0;
    config.prefix = *wire::Ipv6Prefix::parse(slaac_off ? "fd00::/48" : "fd00:0:0:1::/64");
    config.router_advertisements.autonomous = !slaac_off;
    if (selector & 1) config.global_address = ip6(slaac_off ? "fd00::1" : "fd00:0:0:1::1");
    config.mtu = 1450;
    for (int i = 0; i < ((selector >> 1) & 7); ++i) config.dns_servers.push_back(ip6("2001:db8::53"));
    const auto problems = gateway::check_ipv6_gateway_config(config);
    if (!problems.empty()) violation("test gateway does not check:", problems.front());
    return gateway::Ipv6Gateway(config);
}

// Whatever the views and validators make of the frame's IPv6 payload; an accepted message must
// really have hop limit 255 and a verifying checksum.
void exercise_wire(wire::ByteSpan frame) {
    const auto eth = wire::EthernetView::parse(frame);
    if (!eth) return;
    const auto ip = wire::Ipv6View::parse(eth->payload());
    if (!ip) return;
    const auto message = ip->upper_layer_payload();
    const auto accepted = [&](const auto& parsed) {
        if (!parsed) return;
        if (ip->hop_limit() != wire::kNdpHopLimit) violation("accepted an ND message with hop limit != 255");
        if (!wire::checksum_verifies(message, ip->pseudo_header_sum())) violation("accepted a bad checksum");
        std::size_t total = 0;
        for (const wire::NdpOption option : parsed->options()) {
            if (option.bytes.empty()) violation("an option of length 0 walked");
            total += option.bytes.size();
            (void)wire::decode_prefix_information(option);
            if (const auto rdnss = wire::RdnssView::parse(option))
                for (std::size_t i = 0; i < rdnss->address_count(); ++i) (void)rdnss->address(i);
        }
        if (total != parsed->options().bytes().size()) violation("options do not walk to the end");
    };
    accepted(wire::validate_router_solicitation(*ip));
    accepted(wire::validate_router_advertisement(*ip));
    accepted(wire::validate_neighbor_solicitation(*ip));
    accepted(wire::validate_neighbor_advertisement(*ip));
}

// Every frame the gateway writes: parses, lengths agree, checksum verifies, NA/RA validate.
void check_written(wire::ByteSpan frame, const char* what) {
    const auto eth = wire::EthernetView::parse(frame);
    if (!eth || eth->ethertype() != wire::ethertype::kIpv6) violation(what, "is not Ethernet/IPv6");
    const auto ip = wire::Ipv6View::parse(eth->payload());
    if (!ip) violation(what, "does not parse as IPv6");
    if (ip->packet().size() != eth->payload().size()) violation(what, "has bytes past the IPv6 payload");
    const auto icmp = wire::Icmpv6View::parse(ip->upper_layer_payload());
    if (!icmp || !icmp->checksum_valid(ip->source(), ip->destination())) violation(what, "has a bad ICMPv6 checksum");
    if (wire::is_multicast(ip->source()) || wire::is_unspecified(ip->source()))
        violation(what, "is from a non-unicast source");
    if (icmp->type() == wire::icmpv6_type::kNeighborAdvertisement) {
        const auto na = wire::validate_neighbor_advertisement(*ip);
        if (!na) violation(what, std::string("is an invalid NA: ") + std::string(wire::to_string(na.error())));
    } else if (icmp->type() == wire::icmpv6_type::kRouterAdvertisement) {
        const auto ra = wire::validate_router_advertisement(*ip);
        if (!ra) violation(what, std::string("is an invalid RA: ") + std::string(wire::to_string(ra.error())));
    }
}

void exercise_gateway(const gateway::Ipv6Gateway& gateway, const gateway::Ipv6Endpoint& asker, wire::ByteSpan frame) {
    static Bytes out(4096);
    const auto written = [](std::size_t length) { return wire::ByteSpan(out).first(length); };

    const auto na = gateway::write_neighbor_advertisement_reply(frame, gateway, asker, out);
    const auto judged = gateway::judge_neighbor_solicitation(frame, gateway, asker);
    if (judged.outcome != na.outcome || judged.length != na.length) violation("ND proxy judge and writer disagree");
    if (na.answered()) check_written(written(na.length), "NA");

    gateway::RouterAdvertisementSchedule schedule(gateway.config().router_advertisements, 1);
    for (const std::uint64_t now : {std::uint64_t{1'000'000'000}, std::uint64_t{2'000'000'000}}) {
        const auto ra = gateway::answer_router_solicitation(frame, gateway, schedule, now, out);
        if (ra.answered()) check_written(written(ra.length), "RA");
        if (ra.outcome == gateway::RouterSolicitationOutcome::deferred && now == 1'000'000'000)
            violation("the first solicitation was deferred");
    }

    const auto echo = gateway::write_echo_reply(frame, gateway, out);
    Bytes in_place(frame.begin(), frame.end());
    const auto echoed = gateway::echo_reply_in_place(in_place, gateway);
    if (echo.outcome != echoed.outcome) violation("echo copied and in place disagree");
    if (echo.replied()) {
        check_written(written(echo.length), "echo reply");
        if (!std::equal(written(echo.length).begin(), written(echo.length).end(), in_place.begin() + echoed.offset) ||
            echo.length != echoed.length)
            violation("echo in place wrote other bytes");
    }

    gateway::IcmpErrorRateLimiter limiter({}, [] { return std::uint64_t{0}; });
    const auto ptb = gateway::write_packet_too_big_rate_limited(frame, 1280, gateway, limiter, 1, 0, out);
    if (ptb.written()) check_written(written(ptb.length), "Packet Too Big");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 9000) return 0;
    static const std::vector<wire::Ipv6Address> one = {ip6("fd00:0:0:1:0:ff:fe00:a")};
    static const std::vector<wire::Ipv6Address> two = {ip6("fd00:0:0:1:0:ff:fe00:a"), ip6("fd00::a")};
    const gateway::Ipv6Gateway gateway = make_gateway(data[0]);
    const gateway::Ipv6Endpoint asker{*wire::MacAddress::parse("02:00:00:00:00:0a"), (data[0] & 0x10) ? two : one};
    const wire::ByteSpan frame(data + 1, size - 1);
    exercise_wire(frame);
    exercise_gateway(gateway, asker, frame);
    return 0;
}
