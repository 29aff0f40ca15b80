// andromedad end to end, when a reload does not fit the BPF maps: a fabric beyond a map's size
// (5000 VPCs against andromeda_vnis' 4096) is refused by SIGHUP and by `andromedactl reload`
// alike, with an error naming the map; and a write the kernel refuses in the middle of a reload
// (here: andromeda_vnis filled behind the daemon's back) is undone, so the maps hold the running
// fabric's entries. Either way the daemon stays up and the tenants' pings go on passing.
#include <arpa/inet.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "andromeda_kern_user.h"
#include "daemon_fixture.hpp"
#include "pinned_map.hpp"

namespace andromeda::testing {
namespace {

class TwoNodesAtCapacity : public TwoNodes {
protected:
    // node1's running config (the file SIGHUP reads) replaced by `text`.
    void rewrite_running_config(const std::string& text) {
        std::ofstream(nodes_[0].config, std::ios::trunc) << with_path_mode(text, fast_path());
    }

    // The shipped fabric seen from node1 with `extra` more VPCs (VNIs 1000...), each with its CIDR
    // and gateway: 1 + extra VPCs.
    std::string config_with_vpcs(int extra) const {
        std::string text = base_config(0);
        for (int v = 0; v < extra; ++v)
            text += "\n[[vpc]]\nname = \"x" + std::to_string(v) + "\"\nvni = " + std::to_string(1000 + v) +
                    "\ncidr = \"10.200.0.0/24\"\ngateway = \"10.200.0.1\"\n";
        return text;
    }

    // The shipped fabric with a third node (192.168.1.3, no host) and VPC red (VNI 300) with an
    // endpoint on it: a reload of it writes a peer entry, then a VNI, a CIDR and an endpoint.
    std::string config_with_red_on_node3() const {
        return base_config(0) + "\n[[nodes]]\nname = \"" + node3() +
               "\"\naddress = \"192.168.1.3\"\n\n[[vpc]]\nname = \"red\"\nvni = 300\ncidr = \"10.3.0.0/24\"\n"
               "gateway = \"10.3.0.1\"\n\n[[vpc.endpoint]]\nip = \"10.3.0.30\"\nmac = \"02:00:00:00:03:30\"\n"
               "node = \"" +
               node3() + "\"\n";
    }
    std::string node3() const { return "t" + std::to_string(getpid()) + "-node3"; }

    std::uint64_t generation(int i) const { return ctl_json(i, "status").value("fabric_generation", std::uint64_t{0}); }

    // Pings t10 -> t20 `count` times; how many were answered.
    int pings_answered(int count) const {
        int answered = 0;
        for (int k = 0; k < count; ++k) answered += ping_once(*t10_, "10.0.0.20") ? 1 : 0;
        return answered;
    }
};

constexpr const char* kVnisFull = "5000 VPCs, but andromeda_vnis holds at most 4096";

TEST_F(TwoNodesAtCapacity, AFabricBeyondTheMapsIsRefusedBySighupAndReloadAndTheDaemonForwardsOn) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    const std::uint64_t running = generation(0);
    const std::string good = read_text(nodes_[0].config);

    rewrite_running_config(config_with_vpcs(4999));
    kill(nodes_[0].daemon->pid(), SIGHUP);
    ASSERT_TRUE(nodes_[0].daemon->wait_for_output(kVnisFull, 30s)) << "the log says why:\n" << logs();
    EXPECT_TRUE(nodes_[0].daemon->running()) << "SIGHUP must not take the daemon down:\n" << logs();
    EXPECT_TRUE(contains(nodes_[0].daemon->output(), "reload of ")) << logs();
    EXPECT_FALSE(contains(nodes_[0].daemon->output(), "cannot start")) << logs();
    EXPECT_EQ(generation(0), running);
    EXPECT_EQ(counter(0, "daemon", "reloads_failed"), 1u);
    PinnedMap vnis(pin_dir(0) + "/vnis");
    ASSERT_TRUE(vnis.ok());
    EXPECT_EQ(vnis.keys<__u32>(), std::vector<__u32>{100}) << "nothing of the refused fabric was written";
    EXPECT_EQ(pings_answered(3), 3) << logs();
    const auto health = ctl(0, {"health"});
    EXPECT_EQ(health.exit_code, 3) << health.output;
    EXPECT_TRUE(contains(health.output, kVnisFull)) << health.output;

    const auto r = ctl(0, {"reload", nodes_[0].config});
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(contains(r.output, std::string("vpc: ") + kVnisFull)) << r.output;
    EXPECT_TRUE(contains(r.output, "fabric not changed")) << r.output;
    EXPECT_TRUE(nodes_[0].daemon->running());
    EXPECT_EQ(generation(0), running);
    EXPECT_EQ(pings_answered(3), 3) << logs();

    // The file put right, the next SIGHUP applies it.
    rewrite_running_config(good);
    kill(nodes_[0].daemon->pid(), SIGHUP);
    EXPECT_TRUE(eventually([&] { return counter(0, "daemon", "reloads_ok") == 1; }, 10s)) << logs();
    EXPECT_EQ(ctl(0, {"health"}).exit_code, 0);
}

// A write the kernel refuses mid-reload: andromeda_vnis filled with entries that are not the
// daemon's, so the reload's peer entry is written, then its VNI refused (E2BIG).
TEST_F(TwoNodesAtCapacity, AMapWriteRefusedMidReloadIsUndoneAndTheDaemonForwardsOn) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    const std::uint64_t running = generation(0);
    PinnedMap vnis(pin_dir(0) + "/vnis");
    PinnedMap peers(pin_dir(0) + "/peers");
    ASSERT_TRUE(vnis.ok() && peers.ok());
    std::vector<__u32> foreign;
    const andromeda_vni nothing{};
    for (__u32 vni = 0x00f00000; foreign.size() < ANDROMEDA_MAX_VNIS; ++vni) {
        const int refused = vnis.insert(vni, nothing);
        if (refused == E2BIG) break;
        ASSERT_EQ(refused, 0) << "filling andromeda_vnis";
        foreign.push_back(vni);
    }
    ASSERT_EQ(foreign.size() + 1, std::size_t{ANDROMEDA_MAX_VNIS}) << "VNI 100 and the foreign ones fill it";
    const __be32 node3_address = htonl(0xc0a80103);
    const std::string red = write_config(0, config_with_red_on_node3(), "-red");

    const auto r = ctl(0, {"reload", red});
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(contains(r.output, "writing the BPF maps failed: writing an entry of andromeda_vnis")) << r.output;
    EXPECT_TRUE(contains(r.output, "put back the 1 map entry already written")) << r.output;
    EXPECT_TRUE(contains(r.output, "fabric not changed")) << r.output;
    EXPECT_FALSE((peers.contains<__be32, andromeda_peer>(node3_address))) << "the peer entry written first was undone";
    EXPECT_EQ(generation(0), running);
    EXPECT_EQ(pings_answered(3), 3) << logs();

    // The same by SIGHUP: refused, logged, the daemon up.
    rewrite_running_config(config_with_red_on_node3());
    kill(nodes_[0].daemon->pid(), SIGHUP);
    EXPECT_TRUE(eventually([&] { return counter(0, "daemon", "reloads_failed") == 2; }, 10s)) << logs();
    EXPECT_TRUE(nodes_[0].daemon->running()) << logs();
    EXPECT_TRUE(contains(nodes_[0].daemon->output(), "writing the BPF maps failed")) << logs();
    EXPECT_FALSE((peers.contains<__be32, andromeda_peer>(node3_address)));
    EXPECT_EQ(pings_answered(3), 3) << logs();

    // Room made, the reload goes through, from the state the refusals left.
    for (const __u32 vni : foreign) vnis.erase(vni);
    const auto again = ctl(0, {"reload", red});
    ASSERT_TRUE(again.ok()) << again.output << logs();
    EXPECT_TRUE(contains(again.output, "peers +1")) << again.output;
    EXPECT_TRUE((peers.contains<__be32, andromeda_peer>(node3_address)));
    EXPECT_TRUE((vnis.contains<__u32, andromeda_vni>(300u)));
    EXPECT_EQ(pings_answered(3), 3) << logs();
}

}  // namespace
}  // namespace andromeda::testing
