// A two-node fabric with NAT for the NatPipeline tests, fuzz target and benchmark (no GoogleTest):
//
//   node1 192.168.1.1   blue 10.0.0.10 (port 10), blue 10.0.0.11 (port 11), green 10.0.0.10 (port 20)
//   node2 192.168.1.2   blue 10.0.0.20 (port 12); the NAT gateway, uplink port 2 (198.51.100.254)
//   blue  VNI 100 10.0.0.0/24 -> NAT 198.51.100.1, forwards udp 5353 -> 10.0.0.20:53 and
//                                tcp 8080 -> 10.0.0.11:80
//   green VNI 200 10.0.0.0/24 -> NAT 198.51.100.2 (same private addresses as blue)
//
// Outside hosts talk to node2's uplink: frames from kRouterMac to kUplinkMac.
#pragma once

#include <cstring>
#include <memory>
#include <string>

#include "dataplane/nat_pipeline.hpp"
#include "unit/dataplane/pipeline_world.hpp"

namespace andromeda::testing::natworld {

inline constexpr PortId kUnderlay = 1;
inline constexpr PortId kUplink = 2;
inline constexpr PortId kBlue10 = 10;
inline constexpr PortId kBlue11 = 11;
inline constexpr PortId kBlue20 = 12;  // on node2
inline constexpr PortId kGreen10 = 20;

inline const wire::MacAddress kUplinkMac = mac("02:00:00:00:b2:02");
inline const wire::MacAddress kRouterMac = mac("02:00:00:00:b2:01");
inline const wire::MacAddress kBlue11Mac = mac("02:00:00:00:00:11");
inline const wire::MacAddress kBlue20Mac = mac("02:00:00:00:00:20");
inline const wire::MacAddress kGreen10Mac = mac("02:00:00:c8:00:0a");

// `port_range` is blue's [vpc.nat] port_range; `drop_blue10` leaves blue 10.0.0.10 out (a reload).
inline std::string nat_fabric_text(const std::string& local, const std::string& port_range = "[1024, 65535]",
                                   bool drop_blue10 = false) {
    std::string text = "[node]\nname = \"" + local + "\"\nunderlay = \"eth1\"\naddress = \"" +
                       (local == "node1" ? "192.168.1.1" : "192.168.1.2") + "\"\n";
    if (local == "node2")
        text += "[node.uplink]\ninterface = \"eth2\"\naddress = \"198.51.100.254\"\nnext_hop = \"198.51.100.129\"\n";
    text += R"(
[[nodes]]
name = "node1"
address = "192.168.1.1"
mac = "02:00:00:00:a1:01"
[[nodes]]
name = "node2"
address = "192.168.1.2"
mac = "02:00:00:00:a1:02"

[[vpc]]
name = "blue"
vni = 100
cidr = "10.0.0.0/24"
gateway = "10.0.0.1"
[vpc.nat]
gateway_node = "node2"
address = "198.51.100.1"
port_range = )" + port_range + R"(
[[vpc.nat.forward]]
protocol = "udp"
nat_port = 5353
to = "10.0.0.20:53"
[[vpc.nat.forward]]
protocol = "tcp"
nat_port = 8080
to = "10.0.0.11:80"
)";
    if (!drop_blue10) text += R"(
[[vpc.endpoint]]
ip = "10.0.0.10"
mac = "02:00:00:00:00:10"
node = "node1"
port = "tap-blue-10"
)";
    text += R"(
[[vpc.endpoint]]
ip = "10.0.0.11"
mac = "02:00:00:00:00:11"
node = "node1"
port = "tap-blue-11"
[[vpc.endpoint]]
ip = "10.0.0.20"
mac = "02:00:00:00:00:20"
node = "node2"
port = "tap-blue-20"

[[vpc]]
name = "green"
vni = 200
cidr = "10.0.0.0/24"
gateway = "10.0.0.1"
[vpc.nat]
gateway_node = "node2"
address = "198.51.100.2"
[[vpc.endpoint]]
ip = "10.0.0.10"
mac = "02:00:00:c8:00:0a"
node = "node1"
port = "tap-green-10"
)";
    return text;
}

inline dataplane::PipelineConfig nat_node_config(const std::string& local) {
    dataplane::PipelineConfig c;
    c.underlay_mac = local == "node1" ? kNode1Mac : kNode2Mac;
    using dataplane::PortRole;
    c.ports = {{kUnderlay, PortRole::underlay, ""}};
    if (local == "node1") {
        c.ports.push_back({kBlue10, PortRole::tenant, "tap-blue-10"});
        c.ports.push_back({kBlue11, PortRole::tenant, "tap-blue-11"});
        c.ports.push_back({kGreen10, PortRole::tenant, "tap-green-10"});
    } else {
        c.ports.push_back({kUplink, PortRole::uplink, ""});
        c.ports.push_back({kBlue20, PortRole::tenant, "tap-blue-20"});
    }
    return c;
}

inline dataplane::UplinkConfig uplink_config() {
    dataplane::UplinkConfig u;
    u.mac = kUplinkMac;
    u.next_hop_mac = kRouterMac;
    return u;
}

inline nat::NatSettings small_nat_settings(std::size_t max_flows = 4096) {
    nat::NatSettings s;
    s.max_flows = max_flows;
    s.shards = 1;
    s.hash_seed = 0x5eed;
    return s;
}

// One node: its fabric, pipeline, NAT stage (the engine only on node2) and output buffers.
struct NatNode {
    NatNode(std::shared_ptr<const fabric::FabricSnapshot> snapshot, const std::string& name, nat::NatEngine* engine)
        : fabric(std::move(snapshot)), pipeline(nat_node_config(name)), stage(pipeline, engine, uplink_config()) {}
    NatNode(const NatNode&) = delete;
    NatNode& operator=(const NatNode&) = delete;

    std::shared_ptr<const fabric::FabricSnapshot> fabric;
    dataplane::Pipeline pipeline;
    dataplane::NatPipeline stage;
    SinkStorage out;
};

// An IPv4 packet behind an untagged Ethernet header.
inline Bytes ethernet_around(const wire::MacAddress& destination, const wire::MacAddress& source, const Bytes& ipv4) {
    Bytes frame(14 + ipv4.size());
    destination.copy_to(frame.data());
    source.copy_to(frame.data() + 6);
    wire::store_be16(frame.data() + 12, wire::ethertype::kIpv4);
    std::copy(ipv4.begin(), ipv4.end(), frame.begin() + 14);
    return frame;
}

}  // namespace andromeda::testing::natworld
