#include "playground/fabric_view.hpp"

#include <mutex>
#include <optional>

#include "fabric/loader.hpp"
#include "playground/request.hpp"

namespace andromeda::playground {

namespace {

using nlohmann::json;

// The presets' constants: the README example's ports and payload (what `andromedactl inspect`'s
// built-in example carries), and a host on the Internet (TEST-NET-2, RFC 5737).
constexpr std::uint16_t kExampleSourcePort = 40000;
constexpr std::uint16_t kExampleDestinationPort = 4242;
constexpr const char* kExamplePayload = "hello, vpc!\n";
constexpr const char* kPingPayload = "ping from the playground";
constexpr const char* kInternetHost = "198.51.100.7";
constexpr const char* kBroadcastMac = "ff:ff:ff:ff:ff:ff";

bool serves_nat(const fabric::FabricSnapshot& fabric, std::string_view node) {
    for (const auto& vpc : fabric.vpcs())
        if (vpc.nat && vpc.nat->gateway_node == node) return true;
    return false;
}

json nodes_json(const fabric::FabricSnapshot& fabric) {
    json nodes = json::array();
    for (const auto& node : fabric.nodes())
        nodes.push_back({{"name", node.name},
                         {"address", node.address ? json(node.address->to_string()) : json(nullptr)},
                         {"mac", node.mac ? json(node.mac->to_string()) : json(nullptr)},
                         {"next_hop_mac", stand_in_mac(node).to_string()},
                         {"local", node.is_local},
                         {"nat_gateway", serves_nat(fabric, node.name)}});
    return nodes;
}

json vpcs_json(const fabric::FabricSnapshot& fabric) {
    std::vector<json> endpoints(fabric.vpcs().size(), json::array());
    for (const auto& e : fabric.endpoints())
        endpoints[e.vpc_index].push_back({{"ip", e.ip.to_string()},
                                          {"mac", e.mac.to_string()},
                                          {"node", e.node},
                                          {"port", e.port},
                                          {"local", e.is_local}});
    json vpcs = json::array();
    for (std::size_t i = 0; i < fabric.vpcs().size(); ++i) {
        const fabric::Vpc& vpc = fabric.vpcs()[i];
        json cidrs = json::array();
        for (const auto& cidr : vpc.cidrs) cidrs.push_back(cidr.to_string());
        json nat = nullptr;
        if (vpc.nat) nat = {{"gateway_node", vpc.nat->gateway_node}, {"address", vpc.nat->address.to_string()}};
        vpcs.push_back({{"name", vpc.name},
                        {"vni", vpc.vni},
                        {"cidrs", std::move(cidrs)},
                        {"gateway", vpc.gateway.to_string()},
                        {"gateway_mac", vpc.gateway_mac.to_string()},
                        {"mtu", vpc.mtu},
                        {"nat", std::move(nat)},
                        {"endpoints", std::move(endpoints[i])}});
    }
    return vpcs;
}

// ---- the presets' packets ------------------------------------------------------------------

const fabric::Endpoint* first_local_endpoint(const fabric::FabricSnapshot& fabric, bool nat_vpcs_only) {
    for (const auto& e : fabric.endpoints())
        if (e.is_local && !e.port.empty() && (!nat_vpcs_only || fabric.vpc_of(e).nat)) return &e;
    return nullptr;
}

// Where the README example goes from `source`: an endpoint of its VPC on another node, else
// another endpoint of its VPC, else the VPC's gateway.
wire::Ipv4Address example_destination(const fabric::FabricSnapshot& fabric, const fabric::Endpoint& source) {
    const fabric::Endpoint* other = nullptr;
    for (const auto& e : fabric.endpoints()) {
        if (e.vpc_index != source.vpc_index || e.ip == source.ip) continue;
        if (!e.is_local) return e.ip;
        if (other == nullptr) other = &e;
    }
    return other ? other->ip : fabric.vpc_of(source).gateway;
}

// An address of the source's VPC that no endpoint holds and that is not the gateway: the
// highest free one of its first CIDR (a spoofed source the port's anti-spoofing must catch).
std::optional<wire::Ipv4Address> unused_address(const fabric::FabricSnapshot& fabric, const fabric::Endpoint& source) {
    const fabric::Vpc& vpc = fabric.vpc_of(source);
    const wire::Ipv4Prefix& cidr = vpc.cidrs.front();
    if (cidr.length() > 30) return std::nullopt;  // no host addresses beside the network's own
    const std::uint32_t first = cidr.network().value(), last = first | ~cidr.mask();
    for (std::uint32_t a = last - 1; a > first; --a) {
        const wire::Ipv4Address candidate(a);
        if (candidate != vpc.gateway && fabric.find_endpoint(vpc.vni, candidate) == nullptr) return candidate;
    }
    return std::nullopt;
}

json udp_example(const fabric::FabricSnapshot& fabric, const fabric::Endpoint& source, wire::Ipv4Address destination) {
    return {{"port", source.port},
            {"packet",
             {{"src_mac", source.mac.to_string()},
              {"dst_mac", fabric.vpc_of(source).gateway_mac.to_string()},
              {"src_ip", source.ip.to_string()},
              {"dst_ip", destination.to_string()},
              {"protocol", "udp"},
              {"src_port", kExampleSourcePort},
              {"dst_port", kExampleDestinationPort},
              {"ttl", 64},
              {"df", true},
              {"payload", kExamplePayload}}}};
}

json nat_example(const fabric::FabricSnapshot& fabric) {
    if (const fabric::Endpoint* source = first_local_endpoint(fabric, true))
        return udp_example(fabric, *source, *wire::Ipv4Address::parse(kInternetHost));
    std::string nat_vpcs;
    for (const auto& vpc : fabric.vpcs())
        if (vpc.nat) nat_vpcs += (nat_vpcs.empty() ? "" : ", ") + vpc.name;
    if (nat_vpcs.empty())
        return {{"error", "The fabric has no VPC with [vpc.nat]: nothing here reaches the Internet."}};
    return {{"error", "No endpoint of the NAT VPC (" + nat_vpcs + ") has a port on " + fabric.local().name + "."}};
}

// The presets, each {"port", "packet"} (the "build" request's fields) or {"error"}.
json examples_json(const fabric::FabricSnapshot& fabric) {
    const fabric::Endpoint* source = first_local_endpoint(fabric, false);
    if (source == nullptr) {
        const json none = {{"error", fabric.local().name + " has no tenant port: no endpoint of the fabric is on it."}};
        return {{"readme", none}, {"ping", none}, {"arp", none}, {"spoof", none}, {"nat", nat_example(fabric)}};
    }
    const wire::Ipv4Address destination = example_destination(fabric, *source);
    json readme = udp_example(fabric, *source, destination);
    json ping = readme;
    ping["packet"].update({{"protocol", "icmp"},
                           {"dst_ip", fabric.vpc_of(*source).gateway.to_string()},
                           {"src_port", 1},
                           {"dst_port", 1},
                           {"payload", kPingPayload}});
    json arp = readme;
    arp["packet"].update({{"protocol", "arp"}, {"dst_mac", kBroadcastMac}});
    json spoof = readme;
    if (const auto unused = unused_address(fabric, *source))
        spoof["packet"]["src_ip"] = unused->to_string();
    else
        spoof = {{"error", "VPC " + fabric.vpc_of(*source).name + " has no address left that no endpoint holds."}};
    return {{"readme", std::move(readme)},
            {"ping", std::move(ping)},
            {"arp", std::move(arp)},
            {"spoof", std::move(spoof)},
            {"nat", nat_example(fabric)}};
}

}  // namespace

std::vector<Port> port_table(const fabric::FabricSnapshot& fabric) {
    std::vector<Port> ports = {{kUnderlayPort, "underlay", dataplane::PortRole::underlay}};
    if (fabric.local().uplink) ports.push_back({kUplinkPort, "uplink", dataplane::PortRole::uplink});
    dataplane::PortId next = kFirstTenantPort;
    for (const std::uint32_t p : fabric.local_positions())
        ports.push_back({next++, fabric.endpoints()[p].port, dataplane::PortRole::tenant, &fabric.endpoints()[p]});
    return ports;
}

json ports_json(const std::vector<Port>& ports, const fabric::FabricSnapshot& fabric) {
    json list = json::array();
    for (const auto& p : ports) {
        json j = {{"name", p.name}, {"role", dataplane::to_string(p.role)}};
        if (p.endpoint) {
            const fabric::Vpc& vpc = fabric.vpc_of(*p.endpoint);
            j["endpoint"] = p.endpoint->ip.to_string();
            j["vpc"] = vpc.name;
            j["mac"] = p.endpoint->mac.to_string();
            j["gateway"] = vpc.gateway.to_string();
            j["gateway_mac"] = vpc.gateway_mac.to_string();
        }
        list.push_back(std::move(j));
    }
    return list;
}

wire::MacAddress stand_in_mac(const fabric::Node& node) {
    if (node.mac) return *node.mac;
    const std::uint32_t a = node.address ? static_cast<std::uint32_t>(node.address->hash()) : 0;  // an IPv4 address itself
    return wire::MacAddress{{0x02, 0x00, static_cast<std::uint8_t>(a >> 24), static_cast<std::uint8_t>(a >> 16),
                             static_cast<std::uint8_t>(a >> 8), static_cast<std::uint8_t>(a)}};
}

std::shared_ptr<const fabric::FabricSnapshot> load_fabric(const std::string& text) {
    static std::mutex mutex;
    static std::string last_text;
    static std::shared_ptr<const fabric::FabricSnapshot> last;
    {
        std::lock_guard lock(mutex);
        if (last && text == last_text) return last;
    }
    fabric::LoadResult loaded = fabric::load_fabric_string(text, "node.toml");
    if (!loaded.ok()) throw FabricLoadError(std::move(loaded.errors));
    std::lock_guard lock(mutex);
    last_text = text;
    last = loaded.snapshot;
    return last;
}

json describe_fabric(const fabric::FabricSnapshot& fabric) {
    return {{"ok", true},
            {"node", fabric.local().name},
            {"encap", overlay::to_string(fabric.local().encap)},
            {"underlay_mac", stand_in_mac(fabric.local_node()).to_string()},
            {"nodes", nodes_json(fabric)},
            {"vpcs", vpcs_json(fabric)},
            {"ports", ports_json(port_table(fabric), fabric)},
            {"examples", examples_json(fabric)}};
}

}  // namespace andromeda::playground
