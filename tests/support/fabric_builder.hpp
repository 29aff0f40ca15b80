// node.toml text for tests and benchmarks, built from calls instead of being typed out in every
// file. Sections come out in node.toml's usual order ([node], [node.uplink], [[nodes]], then each
// [[vpc]] with its [vpc.nat] and [[vpc.endpoint]]s), one blank line between tables, so error
// messages' line numbers are predictable.
//
//   const std::string toml = test_support::two_node_blue("node1").endpoint("10.0.0.11", "02:00:00:00:00:11",
//                                                                           "node1", "tap-b").toml();
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace andromeda::test_support {

class FabricBuilder {
public:
    // [node]: this host's name, underlay interface and underlay address.
    FabricBuilder(std::string name, std::string address, std::string underlay = "eth1") {
        node_ = "[node]\nname = " + quote(name) + "\nunderlay = " + quote(underlay) + "\naddress = " + quote(address) + "\n";
    }

    // A key of [node] as TOML, e.g. `encap = "vxlan"` or `mac = "02:..."`; several lines, or none, too.
    FabricBuilder& node_key(const std::string& lines) {
        node_ += as_lines(lines);
        return *this;
    }

    // [node.uplink]; address and next hop are optional.
    // [node.uplink]; `extra`: more of its keys, as TOML lines ("kernel_flows = 1").
    FabricBuilder& uplink(const std::string& interface, const std::string& address = "", const std::string& next_hop = "",
                          const std::string& extra = "") {
        uplink_ = "[node.uplink]\ninterface = " + quote(interface) + "\n" + optional_key("address", address) +
                  optional_key("next_hop", next_hop) + (extra.empty() ? "" : extra + "\n");
        return *this;
    }

    // A [[nodes]] entry (this node may list itself too); mac is optional.
    FabricBuilder& peer(const std::string& name, const std::string& address, const std::string& mac = "") {
        nodes_.push_back("[[nodes]]\nname = " + quote(name) + "\naddress = " + quote(address) + "\n" + optional_key("mac", mac));
        return *this;
    }

    // A [[vpc]]; the endpoints, NAT and keys that follow belong to it until the next vpc().
    FabricBuilder& vpc(const std::string& name, std::uint32_t vni, const std::string& cidr, const std::string& gateway) {
        vpcs_.push_back({"[[vpc]]\nname = " + quote(name) + "\nvni = " + std::to_string(vni) + "\ncidr = " + quote(cidr) +
                             "\ngateway = " + quote(gateway) + "\n",
                         "", {}});
        return *this;
    }

    // A key of the current [[vpc]] as TOML, e.g. `fastpath = false` or `mtu = 1400`; several lines, or none, too.
    FabricBuilder& vpc_key(const std::string& lines) {
        current().head += as_lines(lines);
        return *this;
    }

    // The current VPC's [vpc.nat]; `more` holds further keys, one per line.
    FabricBuilder& nat(const std::string& gateway_node, const std::string& address, const std::string& more = "") {
        current().nat = "[vpc.nat]\ngateway_node = " + quote(gateway_node) + "\naddress = " + quote(address) + "\n" + more;
        return *this;
    }

    // A [[vpc.endpoint]] of the current VPC; `port` only for endpoints on this node.
    // `more`: further keys, verbatim lines (e.g. "groups = [\"web\"]\n").
    FabricBuilder& endpoint(const std::string& ip, const std::string& mac, const std::string& node, const std::string& port = "",
                            const std::string& more = "") {
        current().endpoints.push_back("[[vpc.endpoint]]\nip = " + quote(ip) + "\nmac = " + quote(mac) + "\nnode = " + quote(node) +
                                      "\n" + optional_key("port", port) + more);
        return *this;
    }

    [[nodiscard]] std::string toml() const {
        std::string text = node_;
        auto table = [&text](const std::string& t) {
            if (!t.empty()) text += "\n" + t;
        };
        table(uplink_);
        for (const auto& n : nodes_) table(n);
        for (const auto& v : vpcs_) {
            table(v.head);
            table(v.nat);
            for (const auto& e : v.endpoints) table(e);
        }
        return text;
    }

private:
    struct Vpc {
        std::string head;
        std::string nat;
        std::vector<std::string> endpoints;
    };

    static std::string quote(const std::string& s) { return "\"" + s + "\""; }
    static std::string as_lines(const std::string& text) {
        return text.empty() || text.back() == '\n' ? text : text + "\n";
    }
    static std::string optional_key(const std::string& key, const std::string& value) {
        return value.empty() ? "" : key + " = " + quote(value) + "\n";
    }
    Vpc& current() {
        if (vpcs_.empty()) vpcs_.push_back({"", "", {}});  // keys before any vpc(): a test of the error
        return vpcs_.back();
    }

    std::string node_;
    std::string uplink_;
    std::vector<std::string> nodes_;
    std::vector<Vpc> vpcs_;
};

inline const char* node_address(const std::string& node) {
    return node == "node1" ? "192.168.1.1" : node == "node2" ? "192.168.1.2" : "192.168.1.3";
}

// The fabric most tests start from, seen from `local`: node1 (192.168.1.1) and node2
// (192.168.1.2) on underlay eth1; VPC blue, VNI 100, 10.0.0.0/24, gateway 10.0.0.1. No endpoints:
// add them with endpoint(), e.g. 10.0.0.10 (02:00:00:00:00:10) on node1, 10.0.0.20 on node2.
// `peer_mac`: the other node's underlay MAC, when the test must not depend on resolving it.
inline FabricBuilder two_node_blue(const std::string& local = "node1", const std::string& peer_mac = "") {
    FabricBuilder b(local, node_address(local));
    if (local != "node1") b.peer("node1", "192.168.1.1", peer_mac);
    if (local != "node2") b.peer("node2", "192.168.1.2", peer_mac);
    return std::move(b.vpc("blue", 100, "10.0.0.0/24", "10.0.0.1"));
}

}  // namespace andromeda::test_support
