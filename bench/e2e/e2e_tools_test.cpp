// The end-to-end harness's tools, briefly and functionally (never timing): the AF_XDP generator
// sends the frames it was asked for, the XDP sink counts exactly those, the kernel accepts their
// checksums, the latency tool returns one sample per request, and the connection-rate tool
// completes every connection it starts.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "netns_topology.hpp"
#include "support/root.hpp"

namespace andromeda::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

json last_json(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    json found = json::object();
    while (std::getline(in, line)) {
        if (line.empty() || line[0] != '{') continue;
        auto j = json::parse(line, nullptr, false);
        if (!j.is_discarded()) found = j;
    }
    return found;
}

// One field of the "Udp:" lines of /proc/net/snmp, as seen inside `ns`.
std::uint64_t udp_counter(const Netns& ns, const std::string& field) {
    const auto r = ns.try_run({"cat", "/proc/net/snmp"});
    std::istringstream in(r.output);
    std::string names, values, line;
    while (std::getline(in, line)) {
        if (line.rfind("Udp: ", 0) != 0) continue;
        if (names.empty()) names = line;
        else {
            values = line;
            break;
        }
    }
    std::istringstream n(names), v(values);
    std::string name, value;
    while (n >> name && v >> value)
        if (name == field) return std::stoull(value);
    return ~std::uint64_t{0};
}

class E2eTools : public ::testing::Test {
protected:
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        a_ = &topo_.add_namespace("gen");
        b_ = &topo_.add_namespace("sink");
        VethOptions v;
        v.mac_b = "02:00:00:00:00:02";
        topo_.add_veth(*a_, "eth0", *b_, "eth0", v);
        topo_.add_address(*a_, "eth0", "10.9.0.1/24");
        topo_.add_address(*b_, "eth0", "10.9.0.2/24");
    }

    CommandResult generate(const std::string& count, const std::string& length, const std::string& port = "9") {
        return a_->try_run({XSKGEN_PATH, "--dev", "eth0", "--dst-mac", "02:00:00:00:00:02", "--src-ip", "10.9.0.1", "--dst-ip",
                            "10.9.0.2", "--dport", port, "--flows", "4", "--length", length, "--count", count, "--rate", "20000"},
                           30s);
    }

    Topology topo_;
    Netns* a_ = nullptr;
    Netns* b_ = nullptr;
};

TEST_F(E2eTools, GeneratorSendsExactlyTheFramesTheSinkCounts) {
    for (const auto& [count, length] : {std::pair{2000, 60}, std::pair{500, 1514}}) {
        Process& sink = topo_.spawn(*b_, {XDPSINK_PATH, "--dev", "eth0", "--port", "9"});
        ASSERT_TRUE(sink.wait_for_output("ready:", 10s)) << sink.output();
        const auto gen = generate(std::to_string(count), std::to_string(length));
        ASSERT_TRUE(gen.ok()) << gen.output;
        const json g = last_json(gen.output);
        EXPECT_EQ(g.value("sent", 0), count) << gen.output;
        EXPECT_EQ(g.value("tx_invalid_descs", 1), 0) << gen.output;
        EXPECT_EQ(g.value("mode", ""), "copy");
        EXPECT_EQ(sink.stop(), 0);
        const json s = last_json(sink.output());
        EXPECT_EQ(s.value("packets", 0), count) << sink.output();
        EXPECT_EQ(s.value("bytes", 0), count * length) << sink.output();
    }
}

TEST_F(E2eTools, GeneratedFramesPassTheKernelsChecksumChecks) {
    // No sink: the frames reach b's UDP layer, which finds no socket on port 9.
    const auto no_ports = udp_counter(*b_, "NoPorts");
    const auto csum_errors = udp_counter(*b_, "InCsumErrors");
    const auto gen = generate("200", "1514");
    ASSERT_TRUE(gen.ok()) << gen.output;
    EXPECT_EQ(udp_counter(*b_, "NoPorts") - no_ports, 200u);
    EXPECT_EQ(udp_counter(*b_, "InCsumErrors"), csum_errors);
}

TEST_F(E2eTools, LatencyToolReturnsOneSamplePerRequest) {
    Process& server = topo_.spawn(*b_, {UDPRR_PATH, "server", "--port", "7777"});
    ASSERT_TRUE(server.wait_for_output("ready:", 10s)) << server.output();
    const auto c = a_->try_run({UDPRR_PATH, "client", "--to", "10.9.0.2", "--port", "7777", "--rate", "2000", "--count", "500"}, 30s);
    ASSERT_TRUE(c.ok()) << c.output;
    const json j = last_json(c.output);
    EXPECT_EQ(j.value("sent", 0), 500) << c.output;
    EXPECT_EQ(j.value("received", 0), 500) << c.output;
    EXPECT_EQ(j.value("lost", 1), 0) << c.output;
    EXPECT_GT(j.value("p50_us", 0.0), 0.0);
    EXPECT_LE(j.value("p50_us", 0.0), j.value("p99_us", 0.0));
    EXPECT_LE(j.value("p99_us", 0.0), j.value("p999_us", 0.0));
}

// The connection-rate tool: every connection it starts completes (request and reply whole, the
// server's FIN), and the server counts the same ones, the warm-up's included.
TEST_F(E2eTools, ConnectionRateToolCompletesEveryConnectionItStarts) {
    Process& server = topo_.spawn(*b_, {TCPCRR_PATH, "server", "--port", "7800", "--request", "100", "--reply", "3000"});
    ASSERT_TRUE(server.wait_for_output("ready:", 10s)) << server.output();
    const auto c = a_->try_run({TCPCRR_PATH, "client", "--to", "10.9.0.2", "--port", "7800", "--count", "300", "--concurrency", "4",
                                "--request", "100", "--reply", "3000"},
                               30s);
    ASSERT_TRUE(c.ok()) << c.output;
    const json j = last_json(c.output);
    EXPECT_EQ(j.value("started", 0), 300) << c.output;
    EXPECT_EQ(j.value("connections", 0), 300) << c.output;
    EXPECT_EQ(j.value("failed", 1), 0) << c.output;
    EXPECT_GT(j.value("per_second", 0.0), 0.0) << c.output;
    EXPECT_LE(j.value("p50_us", 0.0), j.value("p99_us", 0.0));
    EXPECT_EQ(server.stop(), 0);
    const json s = last_json(server.output());
    EXPECT_EQ(s.value("served", 0), 301) << "the warm-up connection and the 300: " << server.output();
    EXPECT_EQ(s.value("failed", 1), 0) << server.output();
}

TEST_F(E2eTools, ConnectionRateToolFailsClearlyWithoutAServer) {
    const auto c = a_->try_run({TCPCRR_PATH, "client", "--to", "10.9.0.2", "--port", "7801", "--count", "10"}, 30s);
    EXPECT_FALSE(c.ok()) << c.output;
    EXPECT_NE(c.output.find("no connection to 10.9.0.2:7801 completed within 5 s (connect: Connection refused)"), std::string::npos)
        << c.output;
}

// The ceiling datapath's forwarder: every frame arriving on its input leaves by its output
// (--redirect) or enters the output's veth peer (--redirect-peer), with or without room made in
// front of it and an empty XDP program on the way; once it stops, nothing is forwarded.
TEST(E2eForward, RedirectsEveryFrameAndDetachesOnExit) {
    ANDROMEDA_REQUIRE_ROOT();
    Topology topo;
    Netns& gen = topo.add_namespace("fgen");
    Netns& mid = topo.add_namespace("fmid");
    Netns& sink_ns = topo.add_namespace("fsink");
    VethOptions v;
    v.mac_b = "02:00:00:00:00:02";
    topo.add_veth(gen, "eth0", mid, "in0", v);
    topo.add_veth(mid, "out0", sink_ns, "eth0", v);
    const auto send = [&](int count, int length) {
        CommandResult r;
        // The previous generator's AF_XDP socket is released asynchronously: until then, binding
        // to the queue again reports EBUSY.
        for (int attempt = 0; attempt < 50; ++attempt) {
            r = gen.try_run({XSKGEN_PATH, "--dev", "eth0", "--dst-mac", "02:00:00:00:00:02", "--src-ip", "10.9.0.1", "--dst-ip",
                             "10.9.0.2", "--dport", "9", "--length", std::to_string(length), "--count", std::to_string(count),
                             "--rate", "20000"},
                            30s);
            if (r.ok() || r.output.find("Device or resource busy") == std::string::npos) break;
            std::this_thread::sleep_for(100ms);
        }
        EXPECT_TRUE(r.ok()) << r.output;
    };
    const std::vector<std::vector<std::string>> modes = {
        {"--redirect", "in0:out0"},
        {"--redirect", "in0:out0", "--room", "256", "--xdp-pass", "out0"},
        {"--redirect-peer", "in0:out0"}};
    for (const auto& mode : modes) {
        SCOPED_TRACE(mode[0] + (mode.size() > 2 ? " with room and XDP" : ""));
        Process& sink = topo.spawn(sink_ns, {XDPSINK_PATH, "--dev", "eth0", "--port", "9", "--tc"});
        ASSERT_TRUE(sink.wait_for_output("ready:", 10s)) << sink.output();
        std::vector<std::string> argv = {FORWARD_PATH};
        argv.insert(argv.end(), mode.begin(), mode.end());
        Process& fwd = topo.spawn(mid, argv);
        ASSERT_TRUE(fwd.wait_for_output("ready:", 10s)) << fwd.output();
        send(300, 60);
        send(100, 1514);
        EXPECT_EQ(fwd.stop(), 0) << fwd.output();
        send(50, 60);  // after the forwarder is gone: mid's stack takes these, the sink sees none
        EXPECT_EQ(sink.stop(), 0);
        const json s = last_json(sink.output());
        EXPECT_EQ(s.value("packets", 0), 400) << sink.output();
        EXPECT_EQ(s.value("bytes", 0), 300 * 60 + 100 * 1514) << sink.output();
    }
}

TEST(E2eForward, RejectsAnUnknownInterfaceClearly) {
    ANDROMEDA_REQUIRE_ROOT();
    Topology topo;
    Netns& ns = topo.add_namespace("fbad");
    const auto r = ns.try_run({FORWARD_PATH, "--redirect", "nosuch0:lo"}, 10s);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.output.find("no interface nosuch0"), std::string::npos) << r.output;
    // A bad name after a good one: nothing is attached, not even for a moment (a generic XDP
    // program would outlive the process).
    const auto late = ns.try_run({FORWARD_PATH, "--xdp-pass", "lo", "--xdp-pass", "nosuch1"}, 10s);
    EXPECT_FALSE(late.ok());
    EXPECT_NE(late.output.find("no interface nosuch1"), std::string::npos) << late.output;
    const auto lo = ns.try_run({"ip", "-d", "link", "show", "dev", "lo"}, 10s);
    ASSERT_TRUE(lo.ok()) << lo.output;
    EXPECT_EQ(lo.output.find("xdp"), std::string::npos) << lo.output;
    const auto room = ns.try_run({FORWARD_PATH, "--redirect", "lo:lo", "--room", "lots"}, 10s);
    EXPECT_FALSE(room.ok());
    EXPECT_NE(room.output.find("--room lots: expected a number of bytes from 0 to 1024"), std::string::npos) << room.output;
}

}  // namespace
}  // namespace andromeda::testing
