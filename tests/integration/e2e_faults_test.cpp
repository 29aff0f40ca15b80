// End to end, scenario 7 of issue 7: faults. Two nodes, one VPC (t10 on node1, t20 on node2):
//   - the underlay link of a host goes down for 2 s in the middle of a TCP transfer, and the
//     transfer completes byte-exact;
//   - andromedad is restarted (SIGTERM, then SIGKILL) in the middle of a ping, and replies come
//     back within 2 s of the restarted daemon's ready line;
//   - a flood of malformed and hostile frames hits the underlay (node2) and a tenant port (node1)
//     while a 200-packet ping runs: the ping loses nothing, both daemons stay up, and every kind
//     of frame is counted under its own drop counter, exactly as many as were sent.
#include <signal.h>

#include <chrono>
#include <string>

#include "fabric_fixture.hpp"
#include "long_ping.hpp"
#include "raw_socket.hpp"
#include "test_frames.hpp"

namespace andromeda::testing {
namespace {

class Faults : public Fabric {
protected:
    void SetUp() override {
        Fabric::SetUp();
        if (IsSkipped()) return;
        add_nodes(2);
        vpc_ = add_vpc("blue", 100);
        t10_ = &add_endpoint(vpc_, 0, "10.0.0.10", "02:00:00:00:00:10");
        t20_ = &add_endpoint(vpc_, 1, "10.0.0.20", "02:00:00:00:00:20");
        start_all();
        ASSERT_TRUE(eventually([&] { return ping_once(*t10_->ns, "10.0.0.20"); }, 5s)) << logs();
    }

    std::size_t vpc_ = 0;
    Endpoint* t10_ = nullptr;
    Endpoint* t20_ = nullptr;
};

double wall_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Timestamps (ping -D) of the echo replies in a ping's output.
std::vector<double> reply_times(const std::string& output) {
    std::vector<double> out;
    std::size_t at = 0;
    while ((at = output.find('[', at)) != std::string::npos) {
        const auto end = output.find('\n', at);
        const std::string line = output.substr(at, end == std::string::npos ? std::string::npos : end - at);
        if (contains(line, " bytes from ")) out.push_back(std::strtod(line.c_str() + 1, nullptr));
        at = end == std::string::npos ? output.size() : end;
    }
    return out;
}

TEST_F(Faults, UnderlayLinkDownForTwoSecondsMidTransferAndTcpStillCompletesByteExact) {
    // 15 MB at 40 Mbit/s: about 3 s, so the 2 s outage falls inside the transfer.
    t10_->ns->run({"tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "40mbit", "burst", "64kb", "latency", "500ms"});
    const auto [blob, digest] = random_file("blob", 15'000'000);
    const std::string received = "/tmp/" + topo_.prefix() + "received";
    files_.push_back(received);
    Process& receiver = topo_.spawn(*t20_->ns, {"sh", "-c", "exec nc -l 5001 </dev/null >" + received});
    ASSERT_TRUE(listening(*t20_->ns, 5001));
    Process& sender = topo_.spawn(*t10_->ns, {"sh", "-c", "exec nc -N 10.0.0.20 5001 < " + blob});
    // Under way: 1.5 MB of the 15 arrived (whichever path carries it).
    ASSERT_TRUE(eventually(
        [&] {
            std::error_code ec;
            const auto size = std::filesystem::file_size(received, ec);
            return !ec && size > 1'500'000;
        },
        10s))
        << logs();

    Netns& host1 = *nodes_[0].host;
    host1.run({"ip", "link", "set", "eth1", "down"});
    std::this_thread::sleep_for(2s);  // the outage (not an assertion)
    host1.run({"ip", "link", "set", "eth1", "up"});
    EXPECT_TRUE(sender.running()) << "the transfer ended before the link came back: the test proves nothing";

    EXPECT_EQ(sender.wait(60s), 0) << sender.output() << logs();
    ASSERT_NE(receiver.wait(30s), -1) << "the receiver never saw the end of the stream";
    const auto got = run_command({"sha256sum", received});
    EXPECT_TRUE(contains(got.output, digest)) << "sent " << digest << ", received " << got.output;
    EXPECT_TRUE(nodes_[0].daemon->running() && nodes_[1].daemon->running()) << logs();
    EXPECT_EQ(counter(0, "io", "ledger_violations"), 0u);
}

TEST_F(Faults, RestartMidPingConnectivityReturnsWithinTwoSecondsOfReady) {
    for (const int sig : {SIGTERM, SIGKILL}) {
        const std::string how = sig == SIGTERM ? "SIGTERM" : "SIGKILL";
        Process& ping = topo_.spawn(*t10_->ns, {"ping", "-D", "-i", "0.01", "-W", "1", "10.0.0.20"});
        const std::uint64_t before = counter(0, encapsulated_counter());
        ASSERT_TRUE(eventually([&] { return counter(0, encapsulated_counter()) > before + 20; }, 5s)) << logs();

        Process& old = *nodes_[0].daemon;
        kill(old.pid(), sig);
        ASSERT_NE(old.wait(10s), -1) << how << ": the daemon did not exit";
        const double stopped = wall_seconds();
        start_daemon(0);
        const double ready = wall_seconds();
        // Give the ping 3 s more, then stop it (SIGINT: it prints and flushes what it has).
        const std::uint64_t restarted = counter(0, encapsulated_counter());
        EXPECT_TRUE(eventually([&] { return counter(0, encapsulated_counter()) > restarted + 100; }, 5s)) << logs();
        kill(ping.pid(), SIGINT);
        ASSERT_NE(ping.wait(5s), -1);

        const auto replies = reply_times(ping.output());
        ASSERT_FALSE(replies.empty()) << ping.output();
        EXPECT_LT(replies.front(), stopped) << how << ": the ping was answered before the restart";
        double first_after = 0;
        for (double t : replies)
            if (t > stopped) {
                first_after = t;
                break;
            }
        ASSERT_GT(first_after, 0) << how << ": no reply after the restart\n" << logs();
        std::printf("%s: first reply %.3f s after the ready line (%.3f s after the stop)\n", how.c_str(),
                    first_after - ready, first_after - stopped);
        EXPECT_LT(first_after - ready, 2.0) << how << ": connectivity returned too late";
    }
}

// Every kind of hostile frame, sent kRounds times each, one of each per round, every 10 ms,
// while t10 pings t20 200 times at 10 ms.
TEST_F(Faults, FloodOfMalformedAndHostileFramesIsCountedAndThePingLosesNothing) {
    namespace f = frames;
    constexpr int kRounds = 100;
    const auto link = nodes_[1].host->run({"ip", "-o", "link", "show", "eth1"});
    const auto at = link.find("link/ether ");
    ASSERT_NE(at, std::string::npos) << link;
    const f::Mac host2 = f::mac(link.substr(at + 11, 17));
    const f::Mac any = f::mac("02:00:00:00:a1:77");
    const f::Mac gateway = f::mac("02:00:00:00:00:ff");
    const f::Mac t10_mac = f::mac("02:00:00:00:00:10");
    const std::uint32_t node1 = f::ip("192.168.1.1"), node2 = f::ip("192.168.1.2");
    const f::Bytes data(64, 0xab);

    const auto inner = [&](const std::string& src, const f::Ipv4Options& o = {}) {
        return f::ethernet(gateway, t10_mac, ETH_P_IP, f::udp_packet(f::ip(src), f::ip("10.0.0.20"), 4000, 4001, data, o));
    };
    const auto underlay = [&](std::uint32_t src, const f::Bytes& payload_inner, const f::OverlayOptions& o = {}) {
        return f::ethernet(host2, any, ETH_P_IP, f::overlay_packet(src, node2, payload_inner, o));
    };
    f::OverlayOptions bad_outer_checksum, wrong_vni, fragment;
    bad_outer_checksum.outer.bad_checksum = true;
    wrong_vni.vni = 999;
    fragment.outer.dont_fragment = false;
    fragment.outer.more_fragments = true;
    f::Ipv4Options bad_inner_checksum_options;
    bad_inner_checksum_options.bad_checksum = true;
    auto truncated_overlay = underlay(node1, inner("10.0.0.10"));
    truncated_overlay.resize(14 + 20 + 8 + 4);  // ends inside the overlay header

    // Sent on host2's bridge port, so host2's underlay receives them: {frame, node, group, counter}.
    struct Kind {
        std::string what;
        f::Bytes frame;
        std::size_t node;
        std::string group, counter;
    };
    const std::vector<Kind> underlay_kinds = {
        {"truncated overlay", truncated_overlay, 1, "xdp", "drop_truncated"},
        {"bad outer IPv4 checksum", underlay(node1, inner("10.0.0.10"), bad_outer_checksum), 1, "dataplane",
         "decap_bad_ip_checksum"},
        {"bad inner IPv4 checksum", underlay(node1, inner("10.0.0.10", bad_inner_checksum_options)), 1, "dataplane",
         "drop_malformed_inner_frame"},
        {"wrong VNI", underlay(node1, inner("10.0.0.10"), wrong_vni), 1, "xdp", "drop_unknown_vni"},
        {"unknown peer", underlay(f::ip("192.168.1.77"), inner("10.0.0.10")), 1, "xdp", "drop_unknown_peer"},
        {"spoofed inner source", underlay(node1, inner("10.0.0.99")), 1, "dataplane", "drop_fabric_spoofed_source"},
        {"overlay fragment", underlay(node1, inner("10.0.0.10"), fragment), 1, "xdp", "drop_overlay_fragment"},
    };
    // Sent by t10 itself, on its tenant port (node1).
    f::Ipv4Options df;
    const auto tenant = [&](const f::Mac& src_mac, const std::string& src_ip, std::size_t size, const f::Ipv4Options& o) {
        return f::ethernet(gateway, src_mac, ETH_P_IP,
                           f::udp_packet(f::ip(src_ip), f::ip("10.0.0.20"), 4000, 4001, f::Bytes(size, 0xcd), o));
    };
    auto truncated_ip = tenant(t10_mac, "10.0.0.10", 64, df);
    truncated_ip.resize(14 + 12);  // half an IPv4 header
    const std::vector<Kind> tenant_kinds = {
        {"truncated IPv4", truncated_ip, 0, "dataplane", "drop_malformed_ipv4"},
        {"bad IPv4 checksum", tenant(t10_mac, "10.0.0.10", 64, bad_inner_checksum_options), 0, "dataplane",
         "drop_bad_ipv4_checksum"},
        // Port security runs in the tenant port's tc program on either path.
        {"spoofed MAC", tenant(f::mac("02:00:00:00:00:66"), "10.0.0.10", 64, df), 0, "fastpath", "drop_spoofed_mac"},
        {"spoofed IP", tenant(t10_mac, "10.0.0.66", 64, df), 0, "fastpath", "drop_spoofed_ip"},
    };
    // Oversized: 1500-byte IPv4 with DF over a 1450-byte VPC MTU; each gets a frag-needed (up to
    // the rate limit) or is dropped as rate limited, so the two together count every one.
    const auto oversized = tenant(t10_mac, "10.0.0.10", 1500 - 28, df);

    const nlohmann::json before[2] = {stats(0), stats(1)};
    RawSocket wire(*topo_.find("underlay"), "p2");
    RawSocket port(*t10_->ns, "eth0");
    Process& ping = start_long_ping(topo_, *t10_->ns, "10.0.0.20");
    for (int round = 0; round < kRounds; ++round) {
        for (const auto& k : underlay_kinds) wire.send(k.frame);
        for (const auto& k : tenant_kinds) port.send(k.frame);
        port.send(oversized);
        std::this_thread::sleep_for(10ms);
    }
    std::this_thread::sleep_for(300ms);  // pings after the flood too
    const PingTally tally = stop_long_ping(ping);
    EXPECT_TRUE(tally.stopped) << "the flood must overlap the ping: " << tally.output;
    EXPECT_GT(tally.answered_through, 50u) << tally.output;
    EXPECT_EQ(tally.first_lost, 0u) << "an echo lost to the flood\n" << tally.output << logs();
    EXPECT_TRUE(nodes_[0].daemon->running() && nodes_[1].daemon->running()) << logs();

    const auto delta = [&](std::size_t node, const std::string& group, const std::string& name) {
        return stat(stats(node), group, name) - stat(before[node], group, name);
    };
    const std::uint64_t n = kRounds;
    for (const auto* kinds : {&underlay_kinds, &tenant_kinds})
        for (const auto& k : *kinds) {
            // The daemon publishes its workers' counters periodically: wait for them.
            eventually([&] { return delta(k.node, k.group, k.counter) >= n; }, 5s);
            EXPECT_EQ(delta(k.node, k.group, k.counter), n) << k.what << " -> " << k.group << "." << k.counter;
        }
    EXPECT_TRUE(eventually(
        [&] { return delta(0, "dataplane", "frag_needed_sent") + delta(0, "dataplane", "drop_icmp_error_rate_limited") >= n; },
        5s));
    EXPECT_EQ(delta(0, "dataplane", "frag_needed_sent") + delta(0, "dataplane", "drop_icmp_error_rate_limited"), n)
        << "oversized -> frag_needed_sent + drop_icmp_error_rate_limited";
    EXPECT_GT(delta(0, "dataplane", "frag_needed_sent"), 0u);
    // None of it reached t20, and nothing was corrupted on the way.
    const PathCounter delivered = delivered_from_fabric_counter();
    // The echo in flight at ^C may have been delivered and its answer not yet read.
    eventually([&] { return delta(1, delivered.group, delivered.name) >= tally.answered_through; }, 5s);
    const std::uint64_t pings = delta(1, delivered.group, delivered.name);
    EXPECT_TRUE(pings == tally.answered_through || pings == tally.answered_through + 1)
        << "only the pings are delivered: " << pings << " frames for " << tally.answered_through << " echoes";
    for (std::size_t i = 0; i < 2; ++i) EXPECT_EQ(counter(i, "io", "ledger_violations"), 0u);
}

}  // namespace
}  // namespace andromeda::testing
