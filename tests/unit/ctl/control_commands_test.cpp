#include "ctl/control_commands.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "control/client.hpp"
#include "daemon/control_server.hpp"

namespace andromeda::ctl {
namespace {

using nlohmann::json;

// The reply a daemon would send as this JSON; the test fails if it does not decode.
template <class Reply>
Reply as(const json& j) {
    auto decoded = control::decode<Reply>(j);
    if (const auto* e = std::get_if<control::ProtocolError>(&decoded)) ADD_FAILURE() << e->message;
    return std::holds_alternative<Reply>(decoded) ? std::get<Reply>(decoded) : Reply{};
}

class CtlTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("andromedactl-" + std::to_string(getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::filesystem::path dir_;
};

TEST_F(CtlTest, ResolvesTheOnlyInstanceOrSaysWhichToPick) {
    std::string error;
    EXPECT_FALSE(resolve_socket({}, error, dir_.string()));
    EXPECT_NE(error.find("is andromedad running?"), std::string::npos);
    std::ofstream(dir_ / "node1.sock").put('x');
    EXPECT_EQ(resolve_socket({}, error, dir_.string()), (dir_ / "node1.sock").string());
    std::ofstream(dir_ / "node2.sock").put('x');
    EXPECT_FALSE(resolve_socket({}, error, dir_.string()));
    EXPECT_EQ(error, "several andromedad instances run here; pick one with --node NAME: node1 node2");
    EXPECT_EQ(resolve_socket({std::nullopt, "node2"}, error, dir_.string()), (dir_ / "node2.sock").string());
    EXPECT_EQ(resolve_socket({"/x.sock", "node2"}, error, dir_.string()), "/x.sock");
}

TEST(CtlRender, StatusTable) {
    const json r = {{"node", "node1"},       {"pid", 42},         {"uptime_s", 3725},
                    {"fabric_generation", 3}, {"workers", 1},      {"config", "/etc/a.toml"},
                    {"pin_dir", "/sys/fs/bpf/andromeda/node1"},
                    {"ports", {{{"name", "eth1"}, {"role", "underlay"}, {"xdp_mode", "native"}, {"bind", "copy"},
                                {"queue_ids", {0, 1}}, {"workers", {0, 1}}, {"endpoint", nullptr},
                                {"paths", "fast path (tc decap) + pipeline"},
                                {"tc", "andromeda_tc_underlay (clsact)"}},
                               {{"name", "tap-blue-10"}, {"role", "tenant"}, {"xdp_mode", "native"}, {"bind", "copy"},
                                {"queue_ids", {0}}, {"workers", {2}}, {"endpoint", "10.0.0.10 vni 100"},
                                {"paths", "fast path (tc) + pipeline via anx3"}, {"tc", "andromeda_tc_tenant (tcx)"}},
                               {{"name", "uplink0"}, {"role", "uplink"}, {"xdp_mode", "generic"}, {"bind", "copy"},
                                {"queue_ids", {0}}, {"endpoint", "203.0.113.1"}, {"paths", "pipeline"}}}}};
    EXPECT_EQ(render_status(as<control::StatusReply>(r)),
              "node node1  pid 42  up 1h 2m  fabric generation 3  workers 1\n"
              "config /etc/a.toml\n"
              "pins /sys/fs/bpf/andromeda/node1\n"
              "\n"
              "PORT         ROLE      XDP      TC      AF_XDP  QUEUES  WORKERS  ENDPOINT           PATHS\n"
              "eth1         underlay  native   clsact  copy    2       0,1      -                  fast path (tc decap) + pipeline\n"
              "tap-blue-10  tenant    native   tcx     copy    1       2        10.0.0.10 vni 100  fast path (tc) + pipeline via anx3\n"
              "uplink0      uplink    generic  -       copy    1       -        203.0.113.1        pipeline\n");
}

TEST(CtlRender, StatusNamesPinnedWorkerCpus) {
    json r = {{"node", "node1"}, {"pid", 42}, {"uptime_s", 5}, {"fabric_generation", 1}, {"workers", 2},
              {"config", "/etc/a.toml"}, {"pin_dir", "/p"}, {"ports", json::array()}};
    EXPECT_EQ(render_status(as<control::StatusReply>(r)).find("worker cpus"), std::string::npos) << "unpinned workers: no line";
    r["worker_cpus"] = {{{"cpu", 1}, {"pinned", true}}, {{"cpu", 0}, {"pinned", false}}};
    EXPECT_NE(render_status(as<control::StatusReply>(r)).find("worker cpus 0:cpu1 1:cpu0(not pinned)\n"), std::string::npos) << render_status(as<control::StatusReply>(r));
}

TEST(CtlRender, StatusNamesTheUnderlayAndTheVlanItTags) {
    json r = {{"node", "node1"}, {"pid", 42}, {"uptime_s", 5}, {"fabric_generation", 1}, {"workers", 1},
              {"config", "/etc/a.toml"}, {"pin_dir", "/p"}, {"ports", json::array()},
              {"underlay", "eth1"}, {"underlay_address", "192.168.1.1"}, {"underlay_vlan", 0}, {"encap", "vxlan"}};
    EXPECT_NE(render_status(as<control::StatusReply>(r)).find("\nunderlay eth1 192.168.1.1  encap vxlan\n"), std::string::npos) << render_status(as<control::StatusReply>(r));
    r["underlay_vlan"] = 100;
    EXPECT_NE(render_status(as<control::StatusReply>(r)).find("\nunderlay eth1 VLAN 100 192.168.1.1  encap vxlan\n"), std::string::npos)
        << render_status(as<control::StatusReply>(r));
}

TEST(CtlRender, StatsShowsWhatHappenedAndRates) {
    const json now = {{"xdp", {{"rx_packets", 150}, {"drop_unknown_vni", 0}}}, {"nat", {{"flows", 0}}}};
    // Groups and counters come in name order.
    EXPECT_EQ(render_stats(as<control::StatsReply>(now)), "nat:\n  (all zero)\nxdp:\n  COUNTER     VALUE\n  rx_packets  150\n");
    const json before = {{"xdp", {{"rx_packets", 100}, {"drop_unknown_vni", 0}}}};
    const auto previous = as<control::StatsReply>(before);
    const auto watched = render_stats(as<control::StatsReply>(now), &previous, 2.0);
    EXPECT_NE(watched.find("  rx_packets        150    25/s"), std::string::npos) << watched;
    EXPECT_NE(watched.find("  drop_unknown_vni  0      0/s"), std::string::npos) << watched;
}

TEST_F(CtlTest, CommandsTalkToTheDaemonAndReportItsRefusal) {
    daemon::ControlServer server;
    std::string error;
    const auto path = (dir_ / "node1.sock").string();
    ASSERT_TRUE(server.start(
        path,
        [](const control::ControlRequest& r) {
            if (r.command == control::Command::reload)
                return control::render_error("node.toml:4: vpc[0].vni: 16777216 is out of range; use 1-16777215");
            return control::render_ok({{"generation", 7}, {"local_node", "node1"}, {"nodes", json::array()},
                                      {"vpcs", json::array()}});
        },
        error))
        << error;
    std::ostringstream out, err;
    EXPECT_EQ(run_control_command({path, std::nullopt}, {control::Command::fabric, std::nullopt}, {}, out, err), 0);
    EXPECT_NE(out.str().find("fabric generation 7  local node node1"), std::string::npos) << out.str();
    out.str("");
    EXPECT_EQ(run_control_command({path, std::nullopt}, {control::Command::fabric, std::nullopt}, {true, {}}, out, err),
              0);
    EXPECT_EQ(json::parse(out.str())["generation"], 7);
    EXPECT_EQ(run_control_command({path, std::nullopt}, {control::Command::reload, std::nullopt}, {}, out, err), 1);
    EXPECT_EQ(err.str(), "andromedactl reload: node.toml:4: vpc[0].vni: 16777216 is out of range; use 1-16777215\n");
    server.stop();
    err.str("");
    EXPECT_EQ(run_control_command({path, std::nullopt}, {control::Command::status, std::nullopt}, {}, out, err), 2);
    EXPECT_NE(err.str().find("is it running?"), std::string::npos);
}

TEST_F(CtlTest, AReplyThatDoesNotFitIsRefusedAndNamesTheKey) {
    daemon::ControlServer server;
    std::string error;
    const auto path = (dir_ / "node1.sock").string();
    ASSERT_TRUE(server.start(
        path,
        [](const control::ControlRequest&) {
            return control::render_ok({{"node", "node1"}, {"ports", {{{"name", "eth1"}}, {{"name", "tap1"}, {"xdp_mode", 7}}}}});
        },
        error))
        << error;
    std::ostringstream out, err;
    EXPECT_EQ(run_control_command({path, std::nullopt}, {control::Command::status, std::nullopt}, {}, out, err), 2);
    EXPECT_EQ(err.str(), "andromedactl: the daemon's reply does not match this andromedactl: ports[1].xdp_mode: wrong type (number)\n");
    EXPECT_EQ(out.str(), "");
    server.stop();
}

TEST(CtlRender, ConntrackAndReloadAndFabric) {
    control::ConntrackReply c{true, 1, {}, 0, 0, 0, 0, {}, 0};
    c.flows.push_back({100, "tcp", "outbound", "established", false, {"10.0.0.10", 40000, "203.0.113.7", 443},
                       {"198.51.100.1", 40000, "203.0.113.7", 443}, 12.7, 7427.2});
    EXPECT_EQ(render_conntrack(c),
              "PROTO  ORIGINAL                            TRANSLATED                             STATE        AGE  EXPIRES  PATH      KERNEL PKTS/BYTES\n"
              "tcp    10.0.0.10:40000 -> 203.0.113.7:443  198.51.100.1:40000 -> 203.0.113.7:443  established  12   7427     pipeline  -\n"
              "1 flows\n");
    EXPECT_EQ(render_reload({4, ""}), "reloaded: fabric generation 4\nno changes\n");
    EXPECT_EQ(render_reload({5, "endpoints: +1\n"}), "reloaded: fabric generation 5\nendpoints: +1\n");
    control::FabricReply f{2,
                           "node.toml",
                           "node1",
                           {{"node1", "192.168.1.1", "02:00:00:00:a1:01", true, std::nullopt, std::nullopt},
                            {"node2", "192.168.1.2", std::nullopt, false, 1400, 583}},
                           {}};
    f.vpcs.push_back({"blue", 100, "10.0.0.0/24", "10.0.0.1", "02:00:00:00:00:ff", 1450,
                      control::VpcNat{"node2", "203.0.113.10", {1024, 65535}, {}},
                      {{"10.0.0.10", "02:00:00:00:00:10", "node1", "tap1", std::nullopt}, {"10.0.0.20", "02:00:00:00:00:20", "node2", std::nullopt, std::nullopt}},
                      std::nullopt, std::nullopt, std::nullopt});
    EXPECT_EQ(render_fabric(f),
              "fabric generation 2  local node node1\n"
              "\nnodes:\n"
              "NAME   ADDRESS      MAC                PATH MTU\n"
              "node1  192.168.1.1  02:00:00:00:a1:01  -\n"
              "node2  192.168.1.2  -                  1400 (learned, 583 s left)\n"
              "\nvpc blue  vni 100  cidr 10.0.0.0/24  gateway 10.0.0.1  mtu 1450  nat 203.0.113.10 via node2\n"
              "  IP         MAC                NODE   PORT\n"
              "  10.0.0.10  02:00:00:00:00:10  node1  tap1\n"
              "  10.0.0.20  02:00:00:00:00:20  node2  -\n");
    // A dual-stack VPC: its prefix and router, and an IPV6 column (issue 30).
    f.vpcs[0].nat.reset();
    f.vpcs[0].ipv6_prefix = "fd00:0:0:1::/64";
    f.vpcs[0].ipv6_router = "fe80::ff:fe00:ff";
    f.vpcs[0].endpoints[0].ipv6 = "fd00::1:0:ff:fe00:10";
    const std::string text = render_fabric(f);
    EXPECT_NE(text.find("\nvpc blue  vni 100  cidr 10.0.0.0/24  gateway 10.0.0.1  mtu 1450  ipv6 fd00:0:0:1::/64 router "
                        "fe80::ff:fe00:ff\n"
                        "  IP         MAC                NODE   PORT  IPV6\n"
                        "  10.0.0.10  02:00:00:00:00:10  node1  tap1  fd00::1:0:ff:fe00:10\n"
                        "  10.0.0.20  02:00:00:00:00:20  node2  -     -\n"),
              std::string::npos)
        << text;
}

}  // namespace
}  // namespace andromeda::ctl

namespace andromeda::ctl {
namespace {

control::ConntrackFlow udp_flow(std::uint16_t port) {
    return {100, "udp", "outbound", "replied", false, {"10.0.0.10", port, "198.51.100.53", 53},
            {"203.0.113.10", port, "198.51.100.53", 53}, 1, 29};
}

TEST(CtlRender, ConntrackNeverPassesAPageOffAsTheWhole) {
    control::ConntrackReply page{true, 2, {udp_flow(1), udp_flow(2)}, 12000, 12000, 0, 2, {}, 0};
    std::string text = render_conntrack(page);
    EXPECT_NE(text.find("\nflows 1-2 of 12000 flows; next page: --offset 2\n"), std::string::npos) << text;
    page.offset = 11998;
    text = render_conntrack(page);
    EXPECT_NE(text.find("\nflows 11999-12000 of 12000 flows\n"), std::string::npos) << text;
    control::ConntrackReply filtered{true, 2, {udp_flow(1), udp_flow(2)}, 2, 12000, 0, 1000, {}, 0};
    text = render_conntrack(filtered);
    EXPECT_NE(text.find("\n2 flows match of 12000 in the table\n"), std::string::npos) << text;
    control::ConntrackReply past{true, 0, {}, 5, 5, 10, 1000, {}, 0};
    EXPECT_NE(render_conntrack(past).find("\n5 flows; none from offset 10\n"), std::string::npos);
    EXPECT_NE(render_conntrack(control::ConntrackReply{}).find("not a NAT gateway: no flows\n"), std::string::npos);
}

TEST(CtlRender, HealthSaysWhatIsWrongLineByLine) {
    EXPECT_EQ(render_health({}), "healthy\n");
    control::HealthReply degraded{false, {{"reload", "the last reload was refused: x.toml:3: a\nx.toml:4: b\n"},
                                          {"etcd", "etcd unreachable"}}};
    EXPECT_EQ(render_health(degraded),
              "DEGRADED (2 problems):\n"
              "  reload: the last reload was refused: x.toml:3: a\n"
              "    x.toml:4: b\n"
              "  etcd: etcd unreachable\n");
    EXPECT_EQ(render_log_level({"debug", "info"}), "log level debug (was info)\n");
    EXPECT_EQ(render_log_level({"info", "info"}), "log level info\n");
}

// health and status exit 3 when the daemon says it is degraded, 0 when healthy (or too old to say).
TEST_F(CtlTest, HealthAndStatusExitNonZeroWhenDegraded) {
    daemon::ControlServer server;
    std::string error;
    const auto path = (dir_ / "node1.sock").string();
    bool healthy = false;
    ASSERT_TRUE(server.start(
        path,
        [&healthy](const control::ControlRequest& r) {
            const control::HealthReply health =
                healthy ? control::HealthReply{} : control::HealthReply{false, {{"port", "tap1: its XDP program is gone"}}};
            if (r.command == control::Command::health) return control::render_ok(health);
            if (r.command == control::Command::log_level) return control::render_ok(control::LogLevelReply{"debug", "info"});
            control::StatusReply status;
            status.node = "node1";
            status.version = "0.1.0 (git 0123456789ab)";
            if (r.command == control::Command::status) status.health = health;
            return control::render_ok(status);  // Command::stats stands in for a daemon without health
        },
        error))
        << error;
    std::ostringstream out, err;
    const Target target{path, std::nullopt};
    EXPECT_EQ(run_control_command(target, {control::Command::health}, {}, out, err), kExitDegraded);
    EXPECT_EQ(out.str(), "DEGRADED (1 problem):\n  port: tap1: its XDP program is gone\n");
    out.str("");
    EXPECT_EQ(run_control_command(target, {control::Command::status}, {}, out, err), kExitDegraded);
    EXPECT_NE(out.str().find("version 0.1.0 (git 0123456789ab)\nhealth DEGRADED (1 problem):\n"), std::string::npos) << out.str();
    out.str("");
    EXPECT_EQ(run_control_command(target, {control::Command::status}, {true, {}}, out, err), kExitDegraded);  // --json too
    EXPECT_FALSE(json::parse(out.str())["health"]["healthy"].get<bool>());
    healthy = true;
    out.str("");
    EXPECT_EQ(run_control_command(target, {control::Command::health}, {}, out, err), kExitOk);
    EXPECT_EQ(out.str(), "healthy\n");
    EXPECT_EQ(run_control_command(target, {control::Command::status}, {}, out, err), kExitOk);
    out.str("");
    EXPECT_EQ(run_control_command(target, {control::Command::log_level, std::nullopt, "debug"}, {}, out, err), kExitOk);
    EXPECT_EQ(out.str(), "log level debug (was info)\n");
    EXPECT_EQ(err.str(), "");
    server.stop();
}

TEST(CtlRender, PolicyListsEveryRuleWithItsHitsAndConntrackTheFirewallFlows) {
    control::PolicyReply none;
    EXPECT_EQ(render_policy(none), "no VPC has security groups: every VPC is open\n");
    control::PolicyReply p;
    p.enforced_vpcs = {"blue"};
    p.rules = {{"blue", "", -1, "ingress", "deny", 0, "ingress default deny", 3},
               {"blue", "web", 0, "ingress", "allow", 100, "ingress allow tcp 80 from group app (priority 100)", 2}};
    p.flows = 4;
    p.opened = 5;
    p.denied = 3;
    const std::string text = render_policy(p);
    EXPECT_NE(text.find("(default)"), std::string::npos) << text;
    EXPECT_NE(text.find("ingress allow tcp 80 from group app (priority 100)  2"), std::string::npos) << text;
    EXPECT_NE(text.find("4 flows tracked; 5 opened, 3 denied"), std::string::npos) << text;

    control::ConntrackReply c{false, 0, {}, 0, 0, 0, 1000, {}, 0};
    control::FirewallFlow f;
    f.vni = 100;
    f.endpoint = "10.0.0.10";
    f.direction = "ingress";
    f.protocol = "tcp";
    f.tuple = {"10.0.0.20", 40000, "10.0.0.10", 80};
    f.packets = 7;
    f.rule = "web[0]";
    c.firewall_flows = {f};
    c.firewall_in_table = 1;
    const std::string flows = render_conntrack(c);
    EXPECT_NE(flows.find("not a NAT gateway"), std::string::npos) << flows;
    EXPECT_NE(flows.find("security-group flows:"), std::string::npos) << flows;
    EXPECT_NE(flows.find("10.0.0.20:40000 -> 10.0.0.10:80"), std::string::npos) << flows;
    EXPECT_NE(flows.find("web[0]"), std::string::npos) << flows;
    EXPECT_NE(flows.find("1 of 1 firewall flows"), std::string::npos) << flows;
}

}  // namespace
}  // namespace andromeda::ctl
