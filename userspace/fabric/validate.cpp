// Checks across entries: uniqueness, references between sections, containment in CIDRs. Also
// resolves the references into indexes for the snapshot.
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "andromeda_kern_user.h"
#include "fabric/decode.hpp"
#include "fabric/decode_fields.hpp"
#include "wire/dns.hpp"

namespace andromeda::fabric::detail {

namespace {

struct PairHash {
    std::size_t operator()(const std::pair<std::uint32_t, std::uint64_t>& key) const noexcept {
        return std::hash<std::uint64_t>{}(key.second * 0x9E3779B97F4A7C15ull ^ key.first);
    }
};
using PairIndex = std::unordered_map<std::pair<std::uint32_t, std::uint64_t>, std::uint32_t, PairHash>;

std::string line_note(std::uint32_t line) { return line != 0 ? " (line " + std::to_string(line) + ")" : ""; }
std::string first_at(std::uint32_t line) { return line != 0 ? " (first at line " + std::to_string(line) + ")" : ""; }

class FabricValidator {
public:
    explicit FabricValidator(DecodedFabric& fabric)
        : config_(fabric.config), source_(fabric.source),
          fields_(fabric.config.source_name, fabric.errors) {}

    void run() {
        check_local();
        merge_local_node_entries();
        index_nodes();
        check_underlay_family();
        check_underlay_vlan();
        check_vpcs();
        check_endpoints();
        check_nat();
    }

private:
    void check_local() {
        const auto& local = config_.local;
        if (!local.pin_dir.empty() && local.pin_dir.front() != '/')
            fields_.error(source_.local.pin_dir, "node.pin_dir", quoted(local.pin_dir) + " is not an absolute path",
                          "e.g. pin_dir = \"/sys/fs/bpf/andromeda/" + local.name + "\"");
    }

    // [[nodes]] may list this node too (one peer list shared by every node.toml); its entry
    // then only confirms or supplies the address.
    void merge_local_node_entries() {
        Node& self = config_.nodes[0];
        for (std::size_t i = 1; i < config_.nodes.size();) {
            if (self.name.empty() || config_.nodes[i].name != self.name) {
                ++i;
                continue;
            }
            const auto& entry = config_.nodes[i];
            if (!self.address) {
                self.address = entry.address;
            } else if (entry.address && entry.address != self.address) {
                fields_.error(source_.nodes[i].address, source_.nodes[i].path + ".address",
                              entry.address->to_string() + " differs from this node's [node] address " +
                                  self.address->to_string(),
                              "give node " + quoted(self.name) + " one address, or leave it out of [[nodes]]");
            }
            config_.nodes.erase(config_.nodes.begin() + static_cast<std::ptrdiff_t>(i));
            source_.nodes.erase(source_.nodes.begin() + static_cast<std::ptrdiff_t>(i));
        }
    }

    void index_nodes() {
        std::unordered_map<wire::IpAddress, std::uint32_t> by_address;
        for (std::uint32_t i = 0; i < config_.nodes.size(); ++i) {
            const Node& node = config_.nodes[i];
            const NodeSource& src = source_.nodes[i];
            if (node.name.empty()) continue;
            if (auto [it, fresh] = node_by_name_.try_emplace(node.name, i); !fresh) {
                fields_.error(src.name, src.path + ".name",
                              "node " + quoted(node.name) + " is defined twice" +
                                  first_at(source_.nodes[it->second].name),
                              "node names must be unique");
            }
            if (!node.address) continue;
            if (auto [it, fresh] = by_address.try_emplace(*node.address, i); !fresh) {
                fields_.error(src.address, src.path + ".address",
                              node.address->to_string() + " is already the address of node " +
                                  quoted(config_.nodes[it->second].name) + line_note(source_.nodes[it->second].address),
                              "every node needs its own underlay address");
            }
        }
    }

    // One family per underlay: a node reaches a peer only over its own family, and the outer
    // headers (so the VPCs' MTUs) are sized by it. An IPv6 underlay names this node's address, in
    // [node] or in its [[nodes]] entry (the daemon takes only an IPv4 one from the interface), and
    // carries at least IPv6's minimum MTU.
    void check_underlay_family() {
        std::optional<std::size_t> first;  // the first node with an address
        for (std::size_t i = 0; i < config_.nodes.size(); ++i) {
            const Node& node = config_.nodes[i];
            if (!node.address) continue;
            if (!first) {
                first = i;
                continue;
            }
            const Node& other = config_.nodes[*first];
            if (node.address->is_ipv6() == other.address->is_ipv6()) continue;
            const auto family = [](const Node& n) { return n.address->is_ipv6() ? "IPv6" : "IPv4"; };
            fields_.error(source_.nodes[i].address, source_.nodes[i].path + ".address",
                          "node " + quoted(node.name) + " has an " + family(node) + " underlay address (" +
                              node.address->to_string() + ") but node " + quoted(other.name) + " an " + family(other) +
                              " one (" + other.address->to_string() + ")" + line_note(source_.nodes[*first].address),
                          "an underlay is one family: give every node an address of the same family");
        }
        if (!ipv6_underlay(config_.nodes)) return;
        // This node's address: [node]'s, or its [[nodes]] entry's (merged into nodes[0] above).
        if (!config_.nodes[kLocalNodeIndex].address)
            fields_.error(source_.local.table, "node.address",
                          "this node has no underlay address, and the underlay is IPv6 (the daemon takes only an "
                          "IPv4 address from the interface)",
                          "set [node] address = \"...\" to this node's IPv6 address on " +
                              (config_.local.underlay.empty() ? std::string("the underlay") : config_.local.underlay));
        if (config_.local.underlay_mtu < kMinIpv6UnderlayMtu)
            fields_.error(source_.local.underlay_mtu, "node.underlay_mtu",
                          "underlay_mtu " + std::to_string(config_.local.underlay_mtu) + " is below IPv6's minimum link MTU",
                          "an IPv6 underlay carries at least " + std::to_string(kMinIpv6UnderlayMtu) +
                              " bytes (RFC 8200 section 5): raise underlay_mtu");
        check_peer_keys();
    }

    // The kernel fast path names a node of an IPv6 underlay by a 32-bit key of its address
    // (andromeda_peer_key6, shared/andromeda_kern_user.h; docs/fastpath.md, "Over an IPv6
    // underlay"): two addresses with one key (one chance in 2^28 per pair) would be one node to
    // it, so the fabric is refused, as for a duplicate address.
    void check_peer_keys() {
        std::map<std::uint32_t, std::size_t> seen;  // key -> the first node with it
        for (std::size_t i = 0; i < config_.nodes.size(); ++i) {
            const Node& node = config_.nodes[i];
            if (!node.address || !node.address->is_ipv6()) continue;
            const auto [it, fresh] = seen.emplace(andromeda_peer_key6(node.address->ipv6()->bytes().data()), i);
            if (fresh || *config_.nodes[it->second].address == *node.address) continue;
            const Node& other = config_.nodes[it->second];
            fields_.error(source_.nodes[i].address, source_.nodes[i].path + ".address",
                          "node " + quoted(node.name) + "'s underlay address " + node.address->to_string() +
                              " has the same fast-path peer key as node " + quoted(other.name) + "'s " +
                              other.address->to_string() + line_note(source_.nodes[it->second].address),
                          "give one of the two another address (any other last digit will do)");
        }
    }

    // With [node] underlay_vlan andromedad tags its frames itself on the parent interface, where
    // the kernel has no address on the VLAN and cannot ARP on it: this node's address and every
    // peer's next-hop MAC must come from the config.
    void check_underlay_vlan() {
        const std::uint16_t vlan = config_.local.underlay_vlan;
        if (vlan == 0) return;
        const std::string why = " (underlay_vlan = " + std::to_string(vlan) + ": the kernel has no device on VLAN " +
                                std::to_string(vlan) + ", so it cannot ";
        if (!config_.local.address)
            fields_.error(source_.local.underlay_vlan, "node.address",
                          "this node has no underlay address" + why + "supply one from the interface)",
                          "set [node] address = \"...\" to this node's address on VLAN " + std::to_string(vlan));
        for (std::size_t i = 1; i < config_.nodes.size(); ++i) {
            const Node& node = config_.nodes[i];
            if (node.mac || !node.address) continue;
            fields_.error(source_.nodes[i].table, source_.nodes[i].path + ".mac",
                          "node " + quoted(node.name) + " has no pinned next-hop MAC" + why + "resolve it by ARP)",
                          "add mac = \"xx:xx:xx:xx:xx:xx\" (its underlay NIC's MAC, or the router's on VLAN " +
                              std::to_string(vlan) + ") to that [[nodes]] entry");
        }
    }

    std::string known_nodes() const {
        std::string names;
        for (std::size_t i = 0; i < config_.nodes.size() && i < 6; ++i)
            names += (i ? ", " : "") + (i == 5 ? std::string("...") : config_.nodes[i].name);
        return "name [node] or one of [[nodes]]: " + names;
    }

    const std::uint32_t* find_node(const std::string& name) const {
        const auto it = node_by_name_.find(name);
        return it == node_by_name_.end() ? nullptr : &it->second;
    }

    void check_vpcs() {
        std::unordered_map<std::string_view, std::uint32_t> by_name;
        std::unordered_map<std::uint32_t, std::uint32_t> by_vni;
        for (std::uint32_t i = 0; i < config_.vpcs.size(); ++i) {
            const Vpc& vpc = config_.vpcs[i];
            const VpcSource& src = source_.vpcs[i];
            const std::string path = vpc_path(i);
            if (auto [it, fresh] = by_name.try_emplace(vpc.name, i); !vpc.name.empty() && !fresh)
                fields_.error(src.name, path + ".name",
                              "VPC " + quoted(vpc.name) + " is defined twice" +
                                  first_at(source_.vpcs[it->second].name),
                              "VPC names must be unique");
            if (auto [it, fresh] = by_vni.try_emplace(vpc.vni, i); src.vni_ok && !fresh)
                fields_.error(src.vni, path + ".vni",
                              "VNI " + std::to_string(vpc.vni) + " is already used by VPC " +
                                  quoted(config_.vpcs[it->second].name) + line_note(source_.vpcs[it->second].vni),
                              "every VPC needs its own VNI");
            check_vpc_addresses(vpc, src, path);
        }
    }

    void check_vpc_addresses(const Vpc& vpc, const VpcSource& src, const std::string& path) {
        for (std::size_t a = 0; a < vpc.cidrs.size(); ++a)
            for (std::size_t b = a + 1; b < vpc.cidrs.size(); ++b)
                if (vpc.cidrs[a].overlaps(vpc.cidrs[b]))
                    fields_.error(src.cidr, path + ".cidr",
                                  vpc.cidrs[b].to_string() + " overlaps " + vpc.cidrs[a].to_string() + " of the same VPC",
                                  "list prefixes that do not overlap");
        if (src.cidr_ok && src.gateway_ok && !vpc.contains(vpc.gateway))
            fields_.error(src.gateway, path + ".gateway",
                          vpc.gateway.to_string() + " is outside the VPC's CIDR " + cidr_list(vpc),
                          "pick an address inside it, conventionally the first host address");
    }

    static std::string cidr_list(const Vpc& vpc) {
        std::string out;
        for (const auto& cidr : vpc.cidrs) out += (out.empty() ? "" : ", ") + cidr.to_string();
        return out;
    }

    void check_endpoints() {
        endpoint_by_ip_.reserve(config_.endpoints.size());
        PairIndex by_mac;
        by_mac.reserve(config_.endpoints.size());
        std::unordered_map<std::string_view, std::uint32_t> by_port;
        std::map<std::pair<std::uint32_t, std::string>, std::uint32_t> by_name;  // (VPC, lower-case name)
        for (std::uint32_t i = 0; i < config_.endpoints.size(); ++i) {
            Endpoint& endpoint = config_.endpoints[i];
            const std::string path = endpoint_path(config_, source_, i);
            resolve_node(endpoint, i, path);
            check_endpoint_address(endpoint, i, path);
            if (!endpoint.name.empty()) check_endpoint_name(endpoint, i, path, by_name);
            const std::pair<std::uint32_t, std::uint64_t> mac_key{endpoint.vpc_index, endpoint.mac.as_u64()};
            if (auto [it, fresh] = by_mac.try_emplace(mac_key, i); !fresh)
                fields_.error(source_.endpoints[i].mac, path + ".mac",
                              endpoint.mac.to_string() + " is already used by endpoint " + describe_endpoint(it->second),
                              "a MAC is unique within a VPC");
            if (endpoint.is_local && !endpoint.port.empty()) {
                if (auto [it, fresh] = by_port.try_emplace(endpoint.port, i); !fresh)
                    fields_.error(source_.endpoints[i].port, path + ".port",
                                  "port " + quoted(endpoint.port) + " already carries endpoint " +
                                      describe_endpoint(it->second),
                                  "each tenant port carries one endpoint");
            }
        }
    }

    // Names are DNS names, <name>.<vpc>.internal: unique in the VPC without regard to case, and
    // only in a VPC whose own name is a DNS label too.
    void check_endpoint_name(const Endpoint& endpoint, std::uint32_t index, const std::string& path,
                             std::map<std::pair<std::uint32_t, std::string>, std::uint32_t>& by_name) {
        const Vpc& vpc = config_.vpcs[endpoint.vpc_index];
        const std::uint32_t line = source_.endpoints[index].name;
        if (!wire::is_hostname_label(vpc.name)) {
            fields_.error(line, path + ".name",
                          "VPC " + quoted(vpc.name) + " is not a DNS label, so its endpoints cannot have names",
                          "rename the VPC to letters, digits and '-', or remove the endpoint's name");
            return;
        }
        std::string lower = endpoint.name;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
        if (auto [it, fresh] = by_name.try_emplace({endpoint.vpc_index, std::move(lower)}, index); !fresh)
            fields_.error(line, path + ".name",
                          quoted(endpoint.name) + " is already the name of endpoint " + describe_endpoint(it->second),
                          "a name is unique within a VPC, without regard to case");
    }

    std::string describe_endpoint(std::uint32_t index) const {
        const Endpoint& e = config_.endpoints[index];
        return e.ip.to_string() + " of VPC " + quoted(config_.vpcs[e.vpc_index].name) +
               line_note(source_.endpoints[index].table);
    }

    void resolve_node(Endpoint& endpoint, std::uint32_t index, const std::string& path) {
        const EndpointSource& src = source_.endpoints[index];
        const std::uint32_t* node = find_node(endpoint.node);
        if (node == nullptr) {
            fields_.error(src.node, path + ".node", "no node named " + quoted(endpoint.node), known_nodes());
            return;
        }
        endpoint.node_index = *node;
        endpoint.is_local = *node == kLocalNodeIndex;
        if (endpoint.is_local && endpoint.port.empty() && src.port == 0)
            fields_.error(src.table, path + ".port",
                          "endpoint " + endpoint.ip.to_string() + " is on this node (" + endpoint.node +
                              ") but has no tenant port",
                          "add port = \"<interface>\", e.g. port = \"tap-" + config_.vpcs[endpoint.vpc_index].name + "\"");
    }

    void check_endpoint_address(const Endpoint& endpoint, std::uint32_t index, const std::string& path) {
        const Vpc& vpc = config_.vpcs[endpoint.vpc_index];
        const VpcSource& vsrc = source_.vpcs[endpoint.vpc_index];
        const EndpointSource& src = source_.endpoints[index];
        if (vsrc.cidr_ok && !vpc.contains(endpoint.ip))
            fields_.error(src.ip, path + ".ip",
                          endpoint.ip.to_string() + " is outside VPC " + quoted(vpc.name) + " (" + cidr_list(vpc) + ")",
                          "pick an address inside the VPC's CIDR, or add a CIDR to the VPC");
        if (vsrc.gateway_ok && endpoint.ip == vpc.gateway)
            fields_.error(src.ip, path + ".ip",
                          endpoint.ip.to_string() + " is the gateway address of VPC " + quoted(vpc.name) +
                              line_note(vsrc.gateway),
                          "give the endpoint another address, or move the VPC's gateway");
        if (endpoint.mac == vpc.gateway_mac)
            fields_.error(src.mac, path + ".mac", endpoint.mac.to_string() + " is the gateway MAC of VPC " + quoted(vpc.name),
                          "choose another MAC; the gateway answers for this one");
        const std::pair<std::uint32_t, std::uint64_t> ip_key{endpoint.vpc_index, endpoint.ip.value()};
        if (auto [it, fresh] = endpoint_by_ip_.try_emplace(ip_key, index); !fresh)
            fields_.error(src.ip, path + ".ip",
                          endpoint.ip.to_string() + " is already an endpoint of VPC " + quoted(vpc.name) +
                              line_note(source_.endpoints[it->second].table),
                          "an IP is unique within a VPC (another VPC may reuse it)");
        if (endpoint.ipv6) {
            // Unique in the VPC too: a derived (EUI-64) address repeats only with a repeated MAC,
            // which is reported above, so this names the endpoint whose given address it is.
            const std::string key = std::to_string(endpoint.vpc_index) + "/" + endpoint.ipv6->to_string();
            if (vpc.ipv6_gateway && *vpc.ipv6_gateway == *endpoint.ipv6)
                fields_.error(src.ipv6, path + ".ipv6",
                              endpoint.ipv6->to_string() + " is VPC " + quoted(vpc.name) + "'s ipv6_gateway",
                              "give the endpoint another address (or the gateway another ipv6_gateway)");
            else if (auto [it, fresh] = endpoint_by_ipv6_.try_emplace(key, index); !fresh)
                fields_.error(src.ipv6, path + ".ipv6",
                              endpoint.ipv6->to_string() + " is already the IPv6 address of endpoint " +
                                  describe_endpoint(it->second),
                              "an IPv6 address is unique within a VPC (another VPC may reuse it)");
        }
    }

    void check_nat() {
        PairIndex forwarded;  // (protocol, nat address << 16 | port) -> line
        for (std::uint32_t v = 0; v < config_.vpcs.size(); ++v) {
            auto& nat = config_.vpcs[v].nat;
            if (!nat) continue;
            const VpcSource& src = source_.vpcs[v];
            const std::string path = vpc_path(v) + ".nat";
            if (const std::uint32_t* node = find_node(nat->gateway_node)) {
                nat->gateway_node_index = *node;
                if (*node == 0 && !config_.local.uplink)
                    fields_.error(src.nat_gateway_node, path + ".gateway_node",
                                  "this node (" + nat->gateway_node + ") is the NAT gateway but has no uplink",
                                  "add a [node.uplink] section naming the outside interface");
            } else if (!nat->gateway_node.empty()) {
                fields_.error(src.nat_gateway_node, path + ".gateway_node",
                              "no node named " + quoted(nat->gateway_node), known_nodes());
            }
            for (std::size_t f = 0; f < nat->forwards.size(); ++f)
                check_forward(v, *nat, f, forwarded, path + ".forward[" + std::to_string(f) + "]");
        }
    }

    void check_forward(std::uint32_t vpc_index, const NatConfig& nat, std::size_t f, PairIndex& forwarded,
                       const std::string& path) {
        const NatForward& forward = nat.forwards[f];
        const ForwardSource& fsrc = source_.vpcs[vpc_index].forwards[f];
        if (!endpoint_by_ip_.contains({vpc_index, forward.endpoint_ip.value()}))
            fields_.error(fsrc.to, path + ".to",
                          forward.endpoint_ip.to_string() + " is not an endpoint of VPC " +
                              quoted(config_.vpcs[vpc_index].name),
                          "forward to the ip of one of the VPC's [[vpc.endpoint]] entries");
        const std::pair<std::uint32_t, std::uint64_t> key{static_cast<std::uint32_t>(forward.protocol),
                                                          std::uint64_t{nat.address.value()} << 16 | forward.nat_port};
        if (auto [it, fresh] = forwarded.try_emplace(key, fsrc.nat_port); !fresh)
            fields_.error(fsrc.nat_port, path + ".nat_port",
                          std::string(to_string(forward.protocol)) + " port " + std::to_string(forward.nat_port) +
                              " of " + nat.address.to_string() + " is already forwarded" + line_note(it->second),
                          "each NAT address and port forwards to one endpoint");
    }

    FabricConfig& config_;
    SourceMap& source_;
    FieldReader fields_;
    std::unordered_map<std::string_view, std::uint32_t> node_by_name_;
    PairIndex endpoint_by_ip_;
    std::unordered_map<std::string, std::uint32_t> endpoint_by_ipv6_;  // "vpc index/address" -> endpoint
};

}  // namespace

void validate_fabric(DecodedFabric& fabric) { FabricValidator(fabric).run(); }

}  // namespace andromeda::fabric::detail
