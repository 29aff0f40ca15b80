// The gateway's IPv6 answers against scapy (tests/data/make_golden_ndp.py): for every request in
// the manifest, the gateway configured as the manifest says must answer with the manifest's answer
// frame byte for byte, or not answer, with the outcome the manifest names.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/golden_files.hpp"
#include "gateway/icmp_echo.hpp"
#include "gateway/icmp_error.hpp"
#include "gateway/nd_proxy.hpp"
#include "gateway/router_advertisement.hpp"

namespace andromeda::gateway {
namespace {

using nlohmann::json;
using Bytes = std::vector<std::uint8_t>;

const std::string kGoldenDir = std::string(ANDROMEDA_SOURCE_DIR) + "/tests/data/golden/ndp/";

json load_manifest() { return test_support::read_golden_manifest(kGoldenDir + "manifest.json", "/usr/bin/python3 tests/data/make_golden_ndp.py"); }

Bytes load_hex(const std::string& file) { return test_support::read_golden_hex(kGoldenDir + file); }

wire::Ipv6Address ip6(const json& j) { return *wire::Ipv6Address::parse(j.get<std::string>()); }
wire::MacAddress mac(const json& j) { return *wire::MacAddress::parse(j.get<std::string>()); }

Ipv6GatewayConfig config_of(const json& g) {
    Ipv6GatewayConfig config;
    config.mac = mac(g["mac"]);
    config.prefix = wire::Ipv6Prefix(ip6(g["prefix"]), g["prefix_length"]);
    config.global_address = ip6(g["global_address"]);
    config.mtu = g["mtu"];
    for (const auto& server : g["dns_servers"]) config.dns_servers.push_back(ip6(server));
    const json& r = g["router_advertisements"];
    RouterAdvertisementConfig& ra = config.router_advertisements;
    ra.max_interval_s = r["max_interval_s"];
    ra.min_interval_s = r["min_interval_s"];
    ra.router_lifetime_s = r["router_lifetime_s"];
    ra.valid_lifetime_s = r["valid_lifetime_s"];
    ra.preferred_lifetime_s = r["preferred_lifetime_s"];
    ra.on_link = r["on_link"];
    ra.autonomous = r["autonomous"];
    ra.managed = r["managed"];
    ra.other_configuration = r["other_configuration"];
    ra.router_preference = r["router_preference"];
    ra.current_hop_limit = r["current_hop_limit"];
    ra.reachable_time_ms = r["reachable_time_ms"];
    ra.retrans_timer_ms = r["retrans_timer_ms"];
    ra.dns_lifetime_s = r["dns_lifetime_s"];
    return config;
}

class Ipv6GoldenTest : public ::testing::Test {
protected:
    void SetUp() override {
        const Ipv6GatewayConfig config = config_of(manifest_["gateway"]);
        ASSERT_EQ(check_ipv6_gateway_config(config), std::vector<std::string>{});
        gateway_.emplace(config);
        for (const auto& a : manifest_["asker"]["addresses"]) asker_addresses_.push_back(ip6(a));
        asker_ = Ipv6Endpoint{mac(manifest_["asker"]["mac"]), asker_addresses_};
    }

    const json& frame(const std::string& name) const {
        for (const auto& f : manifest_["frames"])
            if (f["name"] == name) return f;
        ADD_FAILURE() << "no frame " << name;
        return manifest_["frames"][0];
    }

    const json manifest_ = load_manifest();
    std::optional<Ipv6Gateway> gateway_;
    std::vector<wire::Ipv6Address> asker_addresses_;
    Ipv6Endpoint asker_;
};

TEST_F(Ipv6GoldenTest, GatewayLinkLocalIsTheManifests) {
    EXPECT_EQ(gateway_->link_local(), ip6(manifest_["gateway"]["link_local"]));
}

// Every request answered with its answer frame, or not answered with its outcome.
TEST_F(Ipv6GoldenTest, EveryRequestGetsScapysAnswerByteForByte) {
    std::size_t requests = 0;
    for (const auto& f : manifest_["frames"]) {
        if (!f.contains("answer")) continue;
        ++requests;
        const std::string name = f["name"];
        SCOPED_TRACE(name);
        const Bytes request = load_hex(f["file"]);
        const std::uint8_t type = f["layers"][2].contains("type") ? f["layers"][2]["type"].get<std::uint8_t>() : 0;
        Bytes out(2048, 0xa5);
        std::size_t length = 0;
        std::string outcome;
        if (type == wire::icmpv6_type::kNeighborSolicitation) {
            const NdProxyReply reply = write_neighbor_advertisement_reply(request, *gateway_, asker_, out);
            EXPECT_EQ(judge_neighbor_solicitation(request, *gateway_, asker_).outcome, reply.outcome);
            length = reply.length;
            outcome = to_string(reply.outcome);
        } else if (type == wire::icmpv6_type::kRouterSolicitation) {
            RouterAdvertisementSchedule schedule(gateway_->config().router_advertisements, 1);
            const RouterAdvertisementReply reply = answer_router_solicitation(request, *gateway_, schedule, 5, out);
            EXPECT_EQ(judge_router_solicitation(request, *gateway_).length, reply.length);
            length = reply.length;
            outcome = to_string(reply.outcome);
        } else if (type == wire::icmpv6_type::kEchoRequest) {
            const EchoReply reply = write_echo_reply(request, *gateway_, out);
            length = reply.length;
            outcome = to_string(reply.outcome);
            // In place: the same bytes, in the request's own buffer.
            Bytes in_place = request;
            const EchoReply again = echo_reply_in_place(in_place, *gateway_);
            ASSERT_TRUE(again.replied());
            EXPECT_EQ(Bytes(in_place.begin() + static_cast<long>(again.offset),
                            in_place.begin() + static_cast<long>(again.offset + again.length)),
                      Bytes(out.begin(), out.begin() + static_cast<long>(length)));
        } else {  // oversize: Packet Too Big
            IcmpErrorRateLimiter limiter({}, [] { return std::uint64_t{0}; });
            const IcmpErrorFrame error = write_packet_too_big_rate_limited(request, manifest_["gateway"]["mtu"],
                                                                           *gateway_, limiter, 100, 0, out);
            length = error.length;
            outcome = to_string(error.outcome);
        }
        if (f["answer"].is_null()) {
            EXPECT_EQ(outcome, f["outcome"]);
            EXPECT_EQ(length, 0u);
            continue;
        }
        const Bytes expected = load_hex(frame(f["answer"])["file"]);
        out.resize(length);
        EXPECT_EQ(out, expected) << "answered " << outcome;
    }
    EXPECT_GE(requests, 10u);
}

TEST_F(Ipv6GoldenTest, UnsolicitedAdvertisementIsTheMulticastAnswer) {
    Bytes out(kMaxRouterAdvertisementFrame);
    out.resize(write_unsolicited_router_advertisement(*gateway_, out));
    EXPECT_EQ(out, load_hex(frame("ra_multicast")["file"]));

    RouterAdvertisementSchedule schedule(gateway_->config().router_advertisements, 7);
    Bytes due(kMaxRouterAdvertisementFrame);
    due.resize(advertise_if_due(*gateway_, schedule, 1000, due));
    EXPECT_EQ(due, out);
    EXPECT_EQ(advertise_if_due(*gateway_, schedule, 1001, due), 0u) << "not due again at once";
}

}  // namespace
}  // namespace andromeda::gateway
