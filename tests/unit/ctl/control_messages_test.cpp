// The control replies' JSON, defined once in control/messages.cpp: what the daemon encodes
// decodes to the same reply, missing keys take the defaults, and a value of the wrong type is
// refused with the path to it.
#include "control/messages.hpp"

#include <gtest/gtest.h>

namespace andromeda::control {
namespace {

using nlohmann::json;

template <class Reply>
json round_trip(const Reply& reply) {
    const json encoded = reply;
    auto decoded = decode<Reply>(encoded);
    EXPECT_TRUE(std::holds_alternative<Reply>(decoded)) << std::get<ProtocolError>(decoded).message;
    return json(std::get<Reply>(decoded));
}

TEST(ControlMessages, EveryReplyDecodesToWhatWasEncoded) {
    StatusReply s;
    s.node = "node1";
    s.pid = 4242;
    s.uptime_s = 9;
    s.worker_rx_frames = {1, 2};
    s.worker_cpus = {WorkerCpu{1, true}, std::nullopt};
    s.underlay_vlan = 100;
    s.nat_gateway = true;
    s.ports.push_back({"tap1", 7, "tenant", "native", "native on anx3", "andromeda_fp_tenant", "anx3",
                       "fast path (tc) + pipeline via anx3", "copy", {0, 1}, "10.0.0.10 vni 100", {2}});
    s.ports.push_back({"eth2", 3, "uplink", std::nullopt, std::nullopt, std::nullopt, "eth2", "pipeline", std::nullopt, {}, std::nullopt, {}});
    s.peers.push_back({"node2", "192.168.1.2", std::nullopt, "unresolved", "no neighbour entry"});
    s.worker_failures = {"worker 1: gone"};
    const json status = s;
    EXPECT_EQ(round_trip(s), status);
    EXPECT_TRUE(status["ports"][1]["xdp_mode"].is_null());
    EXPECT_EQ(status["worker_cpus"][0]["cpu"], 1);
    EXPECT_TRUE(status["worker_cpus"][1].is_null());
    EXPECT_EQ(status["ports"][0]["workers"], json::array({2}));

    StatsReply st;
    st.groups["xdp"] = {{"rx_packets", 150}, {"drop_unknown_vni", 0}};
    st.groups["nat"] = {};
    EXPECT_EQ(round_trip(st), json(st));
    EXPECT_EQ(json(st)["xdp"]["rx_packets"], 150);
    EXPECT_EQ(st.value("xdp", "rx_packets"), 150u);
    EXPECT_EQ(st.value("xdp", "nothing"), 0u);
    EXPECT_EQ(st.value("nothing", "rx_packets"), 0u);

    FabricReply f{3,
                  "node.toml",
                  "node1",
                  {{"node1", "192.168.1.1", std::nullopt, true, std::nullopt, std::nullopt},
                   {"node2", "192.168.2.2", std::nullopt, false, 1400, 599}},
                  {}};
    f.vpcs.push_back({"blue", 100, "10.0.0.0/24", "10.0.0.1", "02:00:00:00:00:ff", 1450,
                      VpcNat{"node1", "203.0.113.10", {1024, 65535}, {{"tcp", 8080, "10.0.0.20:80"}}},
                      {{"10.0.0.10", "02:00:00:00:00:10", "node1", "tap1", std::nullopt}},
                      std::nullopt, std::nullopt, std::nullopt});
    EXPECT_EQ(round_trip(f), json(f));
    EXPECT_EQ(json(f)["vpcs"][0]["nat"]["port_range"], json({1024, 65535}));
    EXPECT_EQ(json(f)["nodes"][1]["path_mtu"], 1400);
    EXPECT_EQ(json(f)["nodes"][1]["path_mtu_expires_in_s"], 599);
    f.vpcs[0].ipv6_prefix = "fd00:0:0:1::/64";
    f.vpcs[0].ipv6_router = "fe80::ff:fe00:ff";
    f.vpcs[0].endpoints[0].ipv6 = "fd00::1:0:ff:fe00:10";
    EXPECT_EQ(round_trip(f), json(f));
    EXPECT_EQ(json(f)["vpcs"][0]["endpoints"][0]["ipv6"], "fd00::1:0:ff:fe00:10");

    ConntrackReply c{true, 1, {}, 0, 0, 0, 0, {}, 0};
    c.flows.push_back({100, "udp", "inbound", "replied", true, {"203.0.113.9", 5555, "198.51.100.1", 8080},
                       {"203.0.113.9", 5555, "10.0.0.20", 80}, 1.5, 29.5});
    EXPECT_EQ(round_trip(c), json(c));
    EXPECT_EQ(json(c)["flows"][0]["translated"]["destination"], "10.0.0.20");

    EXPECT_EQ(round_trip(ReloadReply{7, "endpoints: +1\n"}), json({{"generation", 7}, {"summary", "endpoints: +1\n"}}));

    ConntrackReply paged{true, 1, c.flows, 12000, 15000, 200, 1, {}, 0};
    FirewallFlow ff;
    ff.vni = 100;
    ff.endpoint = "10.0.0.10";
    ff.direction = "egress";
    ff.protocol = "udp";
    ff.tuple = {"10.0.0.10", 5353, "10.0.0.20", 53};
    ff.packets = 3;
    ff.rule = "egress default allow";
    paged.firewall_flows = {ff};
    paged.firewall_in_table = 1;
    EXPECT_EQ(round_trip(paged), json(paged));
    EXPECT_EQ(json(paged)["total"], 12000);
    EXPECT_EQ(json(paged)["in_table"], 15000);

    HealthReply h{false, {{"etcd", "etcd unreachable"}, {"port", "tap1: gone"}}};
    EXPECT_EQ(round_trip(h), json(h));
    EXPECT_EQ(json(h)["problems"][1]["check"], "port");
    s.health = h;
    s.version = "0.1.0 (git 0123456789ab)";
    EXPECT_EQ(round_trip(s), json(s));
    EXPECT_EQ(json(s)["health"]["healthy"], false);
    EXPECT_EQ(round_trip(LogLevelReply{"debug", "info"}), json({{"level", "debug"}, {"previous", "info"}}));
    EXPECT_EQ(json(paged)["firewall_flows"][0]["tuple"]["destination_port"], 53);

    PolicyReply p;
    p.generation = 3;
    p.enforced_vpcs = {"blue"};
    p.rules = {{"blue", "web", 0, "ingress", "allow", 100, "ingress allow tcp 80 from group app (priority 100)", 9}};
    p.revoked = 1;
    EXPECT_EQ(round_trip(p), json(p));
    EXPECT_EQ(json(p)["rules"][0]["hits"], 9);
}

TEST(ControlMessages, HealthFromADaemonThatDoesNotReportItIsAbsent) {
    const auto s = decode<StatusReply>(json{{"node", "node1"}});
    ASSERT_TRUE(std::holds_alternative<StatusReply>(s));
    EXPECT_FALSE(std::get<StatusReply>(s).health);
    const auto wrong = decode<HealthReply>(json{{"healthy", "yes"}});
    ASSERT_TRUE(std::holds_alternative<ProtocolError>(wrong));
    EXPECT_NE(std::get<ProtocolError>(wrong).message.find("healthy: wrong type (string)"), std::string::npos);
}

TEST(ControlMessages, MissingKeysTakeTheDefaults) {
    const auto s = decode<StatusReply>(json{{"node", "node1"}, {"ports", {{{"name", "eth1"}}}}});
    ASSERT_TRUE(std::holds_alternative<StatusReply>(s));
    const StatusReply& status = std::get<StatusReply>(s);
    EXPECT_EQ(status.node, "node1");
    EXPECT_EQ(status.pid, 0);
    EXPECT_TRUE(status.worker_cpus.empty());
    ASSERT_EQ(status.ports.size(), 1u);
    EXPECT_EQ(status.ports[0].name, "eth1");
    EXPECT_FALSE(status.ports[0].xdp_mode);
    EXPECT_TRUE(std::holds_alternative<ReloadReply>(decode<ReloadReply>(json::object())));
}

TEST(ControlMessages, AValueOfTheWrongTypeIsRefusedWithItsPath) {
    auto error = [](auto decoded) {
        const auto* e = std::get_if<ProtocolError>(&decoded);
        return e != nullptr ? e->message : std::string("decoded");
    };
    const std::string prefix = "the daemon's reply does not match this andromedactl: ";
    EXPECT_EQ(error(decode<StatusReply>(json{{"pid", "x"}})), prefix + "pid: wrong type (string)");
    EXPECT_EQ(error(decode<StatusReply>(json{{"ports", {{{"name", "a"}}, {{"queue_ids", {0, "1"}}}}}})),
              prefix + "ports[1].queue_ids: wrong type (array)");
    EXPECT_EQ(error(decode<FabricReply>(json{{"vpcs", {{{"nat", {{"port_range", 5}}}}}}})),
              prefix + "vpcs[0].nat.port_range: wrong type (number)");
    EXPECT_EQ(error(decode<ConntrackReply>(json{{"flows", {{{"original", {{"source_port", "80"}}}}}}})),
              prefix + "flows[0].original.source_port: wrong type (string)");
    EXPECT_EQ(error(decode<StatsReply>(json{{"xdp", {{"rx_packets", "many"}}}})), prefix + "xdp.rx_packets: not a counter (string)");
    EXPECT_EQ(error(decode<StatsReply>(json{{"xdp", {{"rx_packets", -3}}}})), prefix + "xdp.rx_packets: not a counter (number)");
    EXPECT_EQ(error(decode<StatusReply>(json::array())), prefix + "an object, found array");
    EXPECT_EQ(error(decode<StatsReply>(json{{"version", "2"}, {"xdp", {{"rx_packets", 1}}}})), "decoded")
        << "a top-level value that is no group is not a counter group, and is left alone";
}

}  // namespace
}  // namespace andromeda::control
