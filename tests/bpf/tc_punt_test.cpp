// andromeda_tc_punt (the ingress of a punt pair's visible end, where the pipeline's frames for a
// tenant arrive): a frame on a punt device goes, unchanged and counted, into the tenant
// (bpf_redirect_peer to the port's link); on any other device it is dropped as arriving on no
// punt port. A table of {description, device, frame, verdict, counter}.
#include <gtest/gtest.h>
#include <linux/pkt_cls.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "differential_check.hpp"
#include "support/root.hpp"

namespace andromeda::fast_path_test {
namespace {

enum class Device { punt, punt_steering_end, tenant, underlay, loopback };

const char* to_string(Device d) {
    switch (d) {
        case Device::punt:
            return "the punt device";
        case Device::punt_steering_end:
            return "the punt pair's steering end";
        case Device::tenant:
            return "the tenant port";
        case Device::underlay:
            return "the underlay";
        case Device::loopback:
            return "lo (no port)";
    }
    return "?";
}

struct PuntCase {
    std::string description;
    Device device;
    Bytes frame;
    int verdict;
    const char* counter;  // the one packet counter that moves
};

std::vector<PuntCase> punt_cases() {
    const EndpointDef& b10 = endpoint("blue", 10);
    const std::uint32_t gateway = vpc_named("blue").gateway;
    const Bytes to_b10 = ipv4(frame_spec(kDefaultGatewayMac, gateway, b10.mac, b10.ip, 84, kIcmp));
    const Bytes arp_reply = arp(kDefaultGatewayMac, b10.mac, 2, kDefaultGatewayMac, gateway, b10.ip);
    const Bytes full_size = ipv4(frame_spec(kDefaultGatewayMac, gateway, b10.mac, b10.ip, 1500));
    const Bytes bare = ethertype_frame(kDefaultGatewayMac, b10.mac, 0x88b5, 0, 0);
    return {
        {"an ICMP message from the gateway", Device::punt, to_b10, TC_ACT_REDIRECT, "return_packets"},
        {"an ARP reply for the tenant", Device::punt, arp_reply, TC_ACT_REDIRECT, "return_packets"},
        {"a 1514-byte frame for the tenant", Device::punt, full_size, TC_ACT_REDIRECT, "return_packets"},
        {"an Ethernet header alone", Device::punt, bare, TC_ACT_REDIRECT, "return_packets"},
        {"on the steering end (a tenant port's entry)", Device::punt_steering_end, to_b10, TC_ACT_SHOT, "drop_no_port"},
        {"on the tenant port", Device::tenant, to_b10, TC_ACT_SHOT, "drop_no_port"},
        {"on the underlay", Device::underlay, to_b10, TC_ACT_SHOT, "drop_no_port"},
        {"on a device that is no port", Device::loopback, to_b10, TC_ACT_SHOT, "drop_no_port"},
    };
}

class TcPunt : public ::testing::Test {
protected:
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        world_ = std::make_unique<World>(Encap::andromeda, fabric_toml(Encap::andromeda));
        ASSERT_TRUE(world_->error().empty()) << world_->error();
    }

    std::uint32_t ifindex(Device d) const {
        const std::uint32_t tenant = world_->tenant("tap-b10");
        switch (d) {
            case Device::punt:
                return world_->punt_pair(tenant).visible_ifindex;
            case Device::punt_steering_end:
                return world_->punt_pair(tenant).steering_ifindex;
            case Device::tenant:
                return tenant;
            case Device::underlay:
                return world_->underlay();
            case Device::loopback:
                return 1;
        }
        return 0;
    }

    std::unique_ptr<World> world_;
};

TEST_F(TcPunt, EveryCaseReachesItsVerdictAndCounter) {
    for (const PuntCase& c : punt_cases()) {
        const std::string context = c.description + ", on " + to_string(c.device);
        const PuntBpf b = world_->run_punt(ifindex(c.device), c.frame);
        ASSERT_EQ(b.run.error, 0) << context << ": " << std::strerror(b.run.error);
        EXPECT_EQ(b.run.retval, static_cast<std::uint32_t>(c.verdict)) << context;
        EXPECT_EQ(moved(b.delta), std::vector<std::string>{c.counter}) << context;
        if (c.verdict == TC_ACT_REDIRECT) {
            EXPECT_EQ(b.delta.return_bytes, c.frame.size()) << context;
            EXPECT_EQ(b.run.out, c.frame) << context << ": the frame was changed";
        }
    }
}

}  // namespace
}  // namespace andromeda::fast_path_test
