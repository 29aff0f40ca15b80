// The world the pipeline tests, the fuzz target and the benchmark share, without GoogleTest: a
// fabric of three nodes and four VPCs as node.toml text, each node's port table, and owned
// buffers behind a FrameSink.
//
//   blue   VNI 100 10.0.0.0/24    .10 .11 .12 on node1 (.12's port is not in the table), .20 node2,
//                                 .30 node3 (no next-hop MAC known)
//   green  VNI 200 10.0.0.0/24    .10 on node1, .20 on node2: same addresses as blue, other tenant
//   red    VNI 300 172.16.0.0/24  NAT at node2; .10 on node1, .20 on node2
//   orange VNI 400 192.168.50.0/24 NAT at node1 (which has an uplink); .10 node1, .20 node2
// dual_stack_fabric() adds fd00:0:0:1::/64 to blue and green (issue 30); with_ipv6_underlay() moves
// any of these fabrics onto an IPv6 underlay (the nodes at fd00:1::1, ::2, ::3).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/pipeline.hpp"
#include "fabric/loader.hpp"
#include "unit/dataplane/test_frames.hpp"

namespace andromeda::testing {

using dataplane::PortId;

inline constexpr PortId kUnderlayPort = 1;
inline constexpr PortId kUplinkPort = 2;
inline constexpr PortId kBlue10Port = 10;
inline constexpr PortId kBlue11Port = 11;
inline constexpr PortId kBlue20Port = 12;  // node2's tenant port for blue .20
inline constexpr PortId kGreen10Port = 20;
inline constexpr PortId kRed10Port = 30;
inline constexpr PortId kOrange10Port = 40;
inline constexpr PortId kUnboundPort = 99;   // a tenant port no endpoint names
inline constexpr PortId kUnknownPort = 1234;  // not in the table at all

inline const wire::MacAddress kGatewayMac = mac("02:00:00:00:00:ff");
inline const wire::MacAddress kNode1Mac = mac("02:00:00:00:a1:01");
inline const wire::MacAddress kNode2Mac = mac("02:00:00:00:a1:02");
inline const wire::MacAddress kBlue10Mac = mac("02:00:00:00:00:10");
inline const wire::MacAddress kBlue11Mac = mac("02:00:00:00:00:11");
inline const wire::MacAddress kBlue20Mac = mac("02:00:00:00:00:20");
inline const wire::MacAddress kGreen10Mac = mac("02:00:00:c8:00:0a");
inline const wire::MacAddress kGreen20Mac = mac("02:00:00:c8:00:14");
inline const wire::MacAddress kRed10Mac = mac("02:00:00:2c:00:0a");
inline const wire::MacAddress kOrange10Mac = mac("02:00:00:32:00:0a");
inline const wire::Ipv4Address kNode1Ip = ipv4("192.168.1.1");
inline const wire::Ipv4Address kNode2Ip = ipv4("192.168.1.2");
inline const wire::Ipv4Address kNode3Ip = ipv4("192.168.1.3");
inline const wire::Ipv6Address kNode1Ip6 = ipv6("fd00:1::1");
inline const wire::Ipv6Address kNode2Ip6 = ipv6("fd00:1::2");
inline const wire::Ipv6Address kNode3Ip6 = ipv6("fd00:1::3");

// `local` becomes [node]; `extra_node` is appended to the [node] table (e.g. encap = "vxlan").
inline std::string fabric_text(const std::string& local, const std::string& extra_node = "") {
    const std::string address = local == "node1" ? "192.168.1.1" : local == "node2" ? "192.168.1.2" : "192.168.1.3";
    return "[node]\nname = \"" + local + "\"\nunderlay = \"eth1\"\naddress = \"" + address + "\"\n" + extra_node +
           R"(
[node.uplink]
interface = "eth2"

[[nodes]]
name = "node1"
address = "192.168.1.1"
[[nodes]]
name = "node2"
address = "192.168.1.2"
[[nodes]]
name = "node3"
address = "192.168.1.3"

[[vpc]]
name = "blue"
vni = 100
cidr = "10.0.0.0/24"
gateway = "10.0.0.1"
[[vpc.endpoint]]
ip = "10.0.0.10"
mac = "02:00:00:00:00:10"
node = "node1"
port = "tap-blue-10"
[[vpc.endpoint]]
ip = "10.0.0.11"
mac = "02:00:00:00:00:11"
node = "node1"
port = "tap-blue-11"
[[vpc.endpoint]]
ip = "10.0.0.12"
mac = "02:00:00:00:00:12"
node = "node1"
port = "tap-blue-12"
[[vpc.endpoint]]
ip = "10.0.0.20"
mac = "02:00:00:00:00:20"
node = "node2"
port = "tap-blue-20"
[[vpc.endpoint]]
ip = "10.0.0.30"
mac = "02:00:00:00:00:30"
node = "node3"
port = "tap-blue-30"

[[vpc]]
name = "green"
vni = 200
cidr = "10.0.0.0/24"
gateway = "10.0.0.1"
[[vpc.endpoint]]
ip = "10.0.0.10"
mac = "02:00:00:c8:00:0a"
node = "node1"
port = "tap-green-10"
[[vpc.endpoint]]
ip = "10.0.0.20"
mac = "02:00:00:c8:00:14"
node = "node2"
port = "tap-green-20"

[[vpc]]
name = "red"
vni = 300
cidr = "172.16.0.0/24"
gateway = "172.16.0.1"
[vpc.nat]
gateway_node = "node2"
address = "203.0.113.20"
[[vpc.endpoint]]
ip = "172.16.0.10"
mac = "02:00:00:2c:00:0a"
node = "node1"
port = "tap-red-10"
[[vpc.endpoint]]
ip = "172.16.0.20"
mac = "02:00:00:2c:00:14"
node = "node2"
port = "tap-red-20"

[[vpc]]
name = "orange"
vni = 400
cidr = "192.168.50.0/24"
gateway = "192.168.50.1"
[vpc.nat]
gateway_node = "node1"
address = "203.0.113.10"
[[vpc.endpoint]]
ip = "192.168.50.10"
mac = "02:00:00:32:00:0a"
node = "node1"
port = "tap-orange-10"
[[vpc.endpoint]]
ip = "192.168.50.20"
mac = "02:00:00:32:00:14"
node = "node2"
port = "tap-orange-20"
)";
}

// The shared world with blue dual-stack (fd00:0:0:1::/64: .10 and .20 by EUI-64, .11 given) and
// green on the very same prefix (.10 by EUI-64 of its own MAC); red and orange stay IPv4 only.
inline std::string dual_stack_fabric(const std::string& local) {
    std::string text = fabric_text(local);
    auto after = [&](const std::string& anchor, const std::string& line, std::size_t from = 0) {
        const std::size_t at = text.find(anchor, from);
        if (at == std::string::npos) return at;  // fabric_text changed: the tests using this fail
        text.insert(at + anchor.size(), "\n" + line);
        return at;
    };
    const std::size_t blue = after("name = \"blue\"\nvni = 100\ncidr = \"10.0.0.0/24\"\ngateway = \"10.0.0.1\"",
                                   "ipv6_prefix = \"fd00:0:0:1::/64\"");
    after("mac = \"02:00:00:00:00:10\"", "ipv6 = \"eui64\"", blue);
    after("mac = \"02:00:00:00:00:11\"", "ipv6 = \"fd00:0:0:1::11\"", blue);
    after("mac = \"02:00:00:00:00:20\"", "ipv6 = \"eui64\"", blue);
    after("mac = \"02:00:00:00:00:30\"", "ipv6 = \"eui64\"", blue);
    const std::size_t green = after("name = \"green\"\nvni = 200\ncidr = \"10.0.0.0/24\"\ngateway = \"10.0.0.1\"",
                                    "ipv6_prefix = \"fd00:0:0:1::/64\"");
    after("mac = \"02:00:00:c8:00:0a\"", "ipv6 = \"eui64\"", green);
    after("mac = \"02:00:00:c8:00:14\"", "ipv6 = \"eui64\"", green);
    return text;
}

// dual_stack_fabric with VXLAN as the encapsulation (a fabric with kernel VXLAN peers).
inline std::string dual_stack_vxlan_fabric(const std::string& local) {
    std::string text = dual_stack_fabric(local);
    const std::string node_address = "\naddress = \"";
    const std::size_t line_end = text.find('\n', text.find(node_address) + 1);
    if (line_end != std::string::npos) text.insert(line_end + 1, "encap = \"vxlan\"\n");
    return text;
}

// `text` (fabric_text or a variant of it) over an IPv6 underlay: every node's address, in [node]
// and [[nodes]], replaced by its IPv6 one. The VPCs' MTUs then default to underlay_mtu - 70.
inline std::string with_ipv6_underlay(std::string text) {
    for (const auto& [v4, v6] : {std::pair{"\"192.168.1.1\"", "\"fd00:1::1\""}, std::pair{"\"192.168.1.2\"", "\"fd00:1::2\""},
                                 std::pair{"\"192.168.1.3\"", "\"fd00:1::3\""}}) {
        const std::string from = v4;
        for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + 1))
            text.replace(at, from.size(), v6);
    }
    return text;
}

inline dataplane::PipelineConfig node_config(const std::string& local) {
    dataplane::PipelineConfig c;
    const bool node1 = local == "node1";
    c.underlay_mac = node1 ? kNode1Mac : kNode2Mac;
    c.next_hops = {{node1 ? kNode2Ip : kNode1Ip, node1 ? kNode2Mac : kNode1Mac}};
    using dataplane::PortRole;
    c.ports = {{kUnderlayPort, PortRole::underlay, ""},
               {kUplinkPort, PortRole::uplink, ""},
               {kBlue10Port, PortRole::tenant, "tap-blue-10"},
               {kBlue11Port, PortRole::tenant, "tap-blue-11"},
               {kBlue20Port, PortRole::tenant, "tap-blue-20"},
               {kGreen10Port, PortRole::tenant, node1 ? "tap-green-10" : "tap-green-20"},
               {kRed10Port, PortRole::tenant, node1 ? "tap-red-10" : "tap-red-20"},
               {kOrange10Port, PortRole::tenant, node1 ? "tap-orange-10" : "tap-orange-20"},
               {kUnboundPort, PortRole::tenant, "tap-nobody"}};
    return c;
}

// node_config for an IPv6 underlay: the peer's next hop by its IPv6 address.
inline dataplane::PipelineConfig ipv6_node_config(const std::string& local) {
    dataplane::PipelineConfig c = node_config(local);
    const bool node1 = local == "node1";
    c.next_hops = {{node1 ? kNode2Ip6 : kNode1Ip6, node1 ? kNode2Mac : kNode1Mac}};
    return c;
}

// Owned storage behind a FrameSink: `spare_count` chunks of `chunk_size` bytes, frames placed
// `headroom` bytes in (as an AF_XDP UMEM does).
class SinkStorage {
public:
    explicit SinkStorage(std::size_t spare_count = 128, std::size_t chunk_size = 4096, std::size_t headroom = 256)
        : chunks_(spare_count, Bytes(chunk_size)), slots_(spare_count + dataplane::kMaxBatch) {
        for (auto& chunk : chunks_)
            spares_.push_back({chunk.data(), static_cast<std::uint32_t>(chunk_size),
                               static_cast<std::uint32_t>(headroom), 0});
        sink_ = dataplane::FrameSink(slots_, spares_);
    }
    dataplane::FrameSink& sink() { return sink_; }
    dataplane::FrameSink& fresh() {
        sink_.reset();
        return sink_;
    }
    std::span<const dataplane::Emission> emissions() const { return sink_.emissions(); }
    // A view of emission i, valid until the next fresh() (or while an in-place input lives).
    wire::ByteSpan view(std::size_t i) const {
        const auto& e = sink_.emissions()[i];
        return {e.frame.data(), e.frame.length};
    }
    Bytes frame(std::size_t i) const {
        const auto& e = sink_.emissions()[i];
        return Bytes(e.frame.data(), e.frame.data() + e.frame.length);
    }

private:
    std::vector<Bytes> chunks_;
    std::vector<dataplane::PacketBuffer> spares_;
    std::vector<dataplane::Emission> slots_;
    dataplane::FrameSink sink_;
};

// A frame copied into its own chunk behind `headroom` bytes, for the in-place variants.
struct ChunkFrame {
    ChunkFrame(const Bytes& frame, std::size_t headroom = 256, std::size_t chunk_size = 4096)
        : chunk(std::max(chunk_size, headroom + frame.size())) {
        std::copy(frame.begin(), frame.end(), chunk.begin() + static_cast<std::ptrdiff_t>(headroom));
        buffer = {chunk.data(), static_cast<std::uint32_t>(chunk.size()), static_cast<std::uint32_t>(headroom),
                  static_cast<std::uint32_t>(frame.size())};
    }
    // The buffer points into `chunk`: a copy would alias the original's bytes.
    ChunkFrame(const ChunkFrame&) = delete;
    ChunkFrame& operator=(const ChunkFrame&) = delete;
    ChunkFrame(ChunkFrame&&) = default;

    Bytes chunk;
    dataplane::PacketBuffer buffer;
};

// Loads `text`; null with the validation errors in `errors` when it does not load.
inline std::shared_ptr<const fabric::FabricSnapshot> try_load_fabric(const std::string& text, std::uint64_t generation,
                                                                     std::string& errors) {
    fabric::LoadOptions options;
    options.generation = generation;
    auto result = fabric::load_fabric_string(text, "test.toml", options);
    for (const auto& e : result.errors) errors += e.to_string() + "\n";
    return result.snapshot;
}

}  // namespace andromeda::testing
