// End to end, scenario 1 of issue 7: three nodes, two VPCs on the same 10.0.0.0/24 with the same
// addresses (blue VNI 100, red VNI 200), an endpoint of each on every node:
//
//   node1: blue 10.0.0.10, red 10.0.0.10     node2: blue 10.0.0.20, red 10.0.0.20
//   node3: blue 10.0.0.30, red 10.0.0.30     (every endpoint its own MAC)
//
// Every pair of endpoints in a VPC pings both ways and moves 50 MB over TCP byte-exact, and a
// tenant's 10.0.0.20 is always its own VPC's: a listener on each answers with its VPC's name, and
// the other VPC's tenant interface sees not one packet meanwhile.
#include <string>

#include "fabric_fixture.hpp"

namespace andromeda::testing {
namespace {

class MultiVpc : public Fabric {
protected:
    void SetUp() override {
        Fabric::SetUp();
        if (IsSkipped()) return;
        add_nodes(3);
        blue_ = add_vpc("blue", 100);
        red_ = add_vpc("red", 200);
        for (std::size_t node = 0; node < 3; ++node) {
            const std::string octet = std::to_string(10 * (node + 1));
            const std::string hex = node == 0 ? "0a" : node == 1 ? "14" : "1e";
            add_endpoint(blue_, node, "10.0.0." + octet, "02:00:00:64:00:" + hex);
            add_endpoint(red_, node, "10.0.0." + octet, "02:00:00:c8:00:" + hex);
        }
        start_all();
    }

    // The endpoints of one VPC, in node order.
    std::vector<const Endpoint*> of(std::size_t vpc) const {
        std::vector<const Endpoint*> out;
        for (const auto& e : endpoints_)
            if (e.vpc == vpc) out.push_back(&e);
        return out;
    }

    std::size_t blue_ = 0;
    std::size_t red_ = 0;
};

TEST_F(MultiVpc, EveryPairPingsAndMovesFiftyMegabytesByteExact) {
    const auto [blob, digest] = random_file("blob", 50'000'000);
    int port = 5001;
    for (std::size_t vpc : {blue_, red_}) {
        const auto eps = of(vpc);
        ASSERT_EQ(eps.size(), 3u);
        for (std::size_t a = 0; a < eps.size(); ++a)
            for (std::size_t b = a + 1; b < eps.size(); ++b) {
                const Endpoint& from = *eps[a];
                const Endpoint& to = *eps[b];
                const std::string pair = vpcs_[vpc].name + " " + from.ip + " <-> " + to.ip;
                ASSERT_TRUE(eventually([&] { return ping_once(*from.ns, to.ip); }, 5s)) << pair << logs();
                const auto there = from.ns->try_run({"ping", "-c", "3", "-i", "0.2", "-W", "1", to.ip});
                EXPECT_TRUE(there.ok() && contains(there.output, " 0% packet loss")) << pair << there.output;
                const auto back = to.ns->try_run({"ping", "-c", "3", "-i", "0.2", "-W", "1", from.ip});
                EXPECT_TRUE(back.ok() && contains(back.output, " 0% packet loss")) << pair << back.output;

                double seconds = 0;
                ASSERT_NO_FATAL_FAILURE(send_file(from, to, ++port, blob, digest, 120s, &seconds)) << pair;
                std::printf("%s: 50 MB in %.2f s\n", pair.c_str(), seconds);
            }
    }
    // All of it crossed the overlay. The pipeline sees segments of at most 1398 bytes (VPC MTU
    // 1450 less IP and TCP headers with timestamps), so at least that many encapsulated packets;
    // the fast path keeps GSO packets whole and counts bytes, at least six times 50 MB.
    std::uint64_t encapsulated = 0, decapsulated = 0;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const auto s = stats(i);
        EXPECT_EQ(stat(s, "io", "ledger_violations"), 0u) << nodes_[i].name;
        EXPECT_EQ(stat(s, "dataplane", "drop_fabric_spoofed_source"), 0u) << nodes_[i].name;
        encapsulated += fast_path_on() ? stat(s, "fastpath", "encap_bytes") : stat(s, "dataplane", "encapsulated");
        decapsulated += fast_path_on() ? stat(s, "fastpath", "decap_bytes") : stat(s, "dataplane", "decapsulated");
    }
    const std::uint64_t least = fast_path_on() ? 6u * 50'000'000u : 6u * 50'000'000u / 1398u;
    EXPECT_GE(encapsulated, least);
    EXPECT_GE(decapsulated, least);
}

TEST_F(MultiVpc, EachTenantReachesItsOwnVpcsTenTwentyNeverTheOthers) {
    // A listener on each 10.0.0.20 that names its VPC.
    const Endpoint* blue20 = of(blue_)[1];
    const Endpoint* red20 = of(red_)[1];
    // One connection each (exec: the process is nc itself, stopped with the fixture).
    const auto serve_identity = [&](const Endpoint& e) {
        const std::string identity = "/tmp/" + topo_.prefix() + vpcs_[e.vpc].name + "-identity";
        std::ofstream(identity) << vpcs_[e.vpc].name << "\n";
        files_.push_back(identity);
        topo_.spawn(*e.ns, {"sh", "-c", "exec nc -N -l 7000 < " + identity});
        return listening(*e.ns, 7000);
    };
    for (std::size_t vpc : {blue_, red_}) {
        const Endpoint* other20 = vpc == blue_ ? red20 : blue20;
        for (const Endpoint* from : {of(vpc)[0], of(vpc)[2]}) {
            const std::string who = vpcs_[vpc].name + " " + from->ip;
            ASSERT_TRUE(eventually([&] { return ping_once(*from->ns, "10.0.0.20"); }, 5s)) << who << logs();
            ASSERT_TRUE(serve_identity(*of(vpc)[1]));
            const auto other_before = packet_counts(*other20->ns, "eth0");
            const auto answer = from->ns->try_run({"nc", "-w", "5", "10.0.0.20", "7000"}, 10s);
            EXPECT_TRUE(answer.ok()) << who << answer.output;
            EXPECT_EQ(answer.output, vpcs_[vpc].name + "\n") << who << " reached the wrong 10.0.0.20";
            const auto ping = from->ns->try_run({"ping", "-c", "10", "-i", "0.05", "-W", "1", "10.0.0.20"});
            EXPECT_TRUE(contains(ping.output, " 0% packet loss")) << who << ping.output;
            // The other VPC's 10.0.0.20 is idle: its interface saw nothing of this, either way.
            const auto other_after = packet_counts(*other20->ns, "eth0");
            EXPECT_EQ(other_after.first, other_before.first) << who << ": the other VPC's 10.0.0.20 received packets";
            EXPECT_EQ(other_after.second, other_before.second) << who << ": the other VPC's 10.0.0.20 sent packets";
        }
    }
    // Each VPC's traffic was carried under its own VNI and nothing was refused as a stranger.
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const auto s = stats(i);
        EXPECT_EQ(stat(s, "xdp", "drop_unknown_vni"), 0u) << nodes_[i].name;
        EXPECT_EQ(stat(s, "dataplane", "drop_not_local_endpoint"), 0u) << nodes_[i].name;
        EXPECT_EQ(stat(s, "dataplane", "drop_fabric_spoofed_source"), 0u) << nodes_[i].name;
    }
}

}  // namespace
}  // namespace andromeda::testing
