// The node.toml schema (docs/configuration.md describes it for people).
#include "fabric/decode.hpp"

#include <algorithm>

#include "fabric/decode_fields.hpp"
#include "wire/dns.hpp"
#include "fabric/decode_policy.hpp"

namespace andromeda::fabric::detail {

namespace {

using Kind = TomlNode::Kind;

// Linux interface names: 1 to 15 bytes, no '/', ':' or whitespace.
bool is_valid_interface_name(std::string_view name) {
    return !name.empty() && name.size() <= 15 && std::all_of(name.begin(), name.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u > 0x20 && u < 0x7f && c != '/' && c != ':';
    });
}

class FabricDecoder {
public:
    explicit FabricDecoder(DecodedFabric& out) : out_(out), fields_(out.config.source_name, out.errors) {}

    void decode(const TomlNode& root) {
        fields_.reject_unknown_keys(root, "", {"node", "nodes", "vpc", "etcd"});
        decode_local(fields_.table(root, "", "node", true));
        if (const TomlNode* etcd = fields_.table(root, "", "etcd", false)) decode_etcd(*etcd, root);
        if (const TomlNode* peers = fields_.table_array(root, "", "nodes")) {
            for (std::size_t i = 0; i < peers->items.size(); ++i)
                decode_peer(peers->items[i], "nodes[" + std::to_string(i) + "]");
        }
        if (const TomlNode* vpcs = fields_.table_array(root, "", "vpc")) {
            // Every endpoint's room at once: at 100k endpoints, growing by doubling copied them
            // all several times over and held two buffers at the peak.
            std::size_t endpoints = 0;
            for (const TomlNode& vpc : vpcs->items)
                if (const TomlNode* list = vpc.find("endpoint"); list != nullptr && list->kind == TomlNode::Kind::array)
                    endpoints += list->items.size();
            out_.config.endpoints.reserve(endpoints);
            out_.source.endpoints.reserve(endpoints);
            for (std::size_t i = 0; i < vpcs->items.size(); ++i) decode_vpc(vpcs->items[i], i);
        }
    }

private:
    std::optional<std::string> name(const TomlNode& table, const std::string& path, std::string_view key,
                                    std::string_view example, std::uint32_t* line) {
        auto text = fields_.string(table, path, key, true, example, line);
        if (text && !is_valid_name(*text)) {
            fields_.error(*line, join_path(path, key), quoted(*text) + " is not a valid name",
                          "use 1 to 64 letters, digits, '-', '_' or '.'");
            return std::nullopt;
        }
        return text;
    }

    std::optional<std::string> interface(const TomlNode& table, const std::string& path, std::string_view key,
                                         bool required) {
        std::uint32_t line = 0;
        auto text = fields_.string(table, path, key, required, std::string(key) + " = \"eth1\"", &line);
        if (text && !is_valid_interface_name(*text)) {
            fields_.error(line, join_path(path, key), quoted(*text) + " is not a valid interface name",
                          "Linux interface names are 1 to 15 characters without '/', ':' or spaces");
            return std::nullopt;
        }
        return text;
    }

    void decode_local(const TomlNode* table) {
        auto& local = out_.config.local;
        auto& src = out_.source.local;
        out_.source.nodes.push_back({0, 0, 0, "node"});
        Node self;
        self.is_local = true;
        if (table != nullptr) {
            fields_.reject_unknown_keys(*table, "node",
                                        {"name", "underlay", "address", "encap", "vxlan_port", "underlay_mtu",
                                         "underlay_vlan", "pin_dir", "uplink", "worker_cpus", "workers", "fastpath",
                                         "tenant_rps", "punt_rate", "punt_burst", "gateway_rate", "gateway_burst", "flood_rate",
                                         "flood_burst", "dns_upstreams"});
            src.table = table->line;
            local.name = name(*table, "node", "name", "name = \"node1\"", &src.name).value_or("");
            local.underlay = interface(*table, "node", "underlay", true).value_or("");
            local.address = fields_.underlay_address(*table, "node", "address", false, &src.address);
            decode_encap(*table);
            local.vxlan_port = static_cast<std::uint16_t>(
                fields_.integer(*table, "node", "vxlan_port", false, {1, 65535, kDefaultVxlanPort, "a UDP port"}).value_or(kDefaultVxlanPort));
            local.underlay_mtu = static_cast<std::uint32_t>(
                fields_.integer(*table, "node", "underlay_mtu", false,
                                {kMinUnderlayMtu, kMaxUnderlayMtu, kDefaultUnderlayMtu, "underlay_mtu"}, &src.underlay_mtu)
                    .value_or(kDefaultUnderlayMtu));
            local.underlay_vlan = static_cast<std::uint16_t>(
                fields_.integer(*table, "node", "underlay_vlan", false,
                                {kMinUnderlayVlan, kMaxUnderlayVlan, 100, "an 802.1Q VLAN ID (0 and 4095 are reserved)"}, &src.underlay_vlan)
                    .value_or(0));
            local.pin_dir = fields_.string(*table, "node", "pin_dir", false, "pin_dir = \"/sys/fs/bpf/andromeda/node1\"",
                                           &src.pin_dir)
                                .value_or("");
            local.fastpath = fields_.boolean(*table, "node", "fastpath", true);
            local.tenant_rps = fields_.boolean(*table, "node", "tenant_rps", false);
            local.punt_rate = static_cast<std::uint32_t>(
                fields_.integer(*table, "node", "punt_rate", false,
                                {0, kMaxPuntRate, kDefaultPuntRate, "frames per second a tenant port may punt (0: no limit)"})
                    .value_or(kDefaultPuntRate));
            local.punt_burst = static_cast<std::uint32_t>(
                fields_.integer(*table, "node", "punt_burst", false,
                                {1, kMaxPuntBurst, kDefaultPuntBurst, "frames an idle tenant port may punt at once"})
                    .value_or(kDefaultPuntBurst));
            const IntegerRange rate{1, kMaxGatewayRate, kDefaultGatewayRate,
                                    "answers per second the gateway gives one tenant"};
            const IntegerRange burst{1, kMaxGatewayRate, kDefaultGatewayBurst,
                                     "answers the gateway gives a quiet tenant at once"};
            local.gateway_rate = static_cast<std::uint32_t>(
                fields_.integer(*table, "node", "gateway_rate", false, rate).value_or(kDefaultGatewayRate));
            local.gateway_burst = static_cast<std::uint32_t>(
                fields_.integer(*table, "node", "gateway_burst", false, burst).value_or(kDefaultGatewayBurst));
            local.flood_rate = static_cast<std::uint32_t>(
                fields_.integer(*table, "node", "flood_rate", false,
                                {1, kMaxGatewayRate, kDefaultFloodRate,
                                 "broadcast and multicast frames per second one tenant may flood"})
                    .value_or(kDefaultFloodRate));
            local.flood_burst = static_cast<std::uint32_t>(
                fields_.integer(*table, "node", "flood_burst", false,
                                {1, kMaxGatewayRate, kDefaultFloodBurst,
                                 "broadcast and multicast frames a quiet tenant may flood at once"})
                    .value_or(kDefaultFloodBurst));
            decode_uplink(*table);
            decode_worker_cpus(*table);
            decode_dns_upstreams(*table);
            local.workers = static_cast<std::uint32_t>(
                fields_.integer(*table, "node", "workers", false,
                                {0, kMaxWorkers, 2, "packet workers (0: one per underlay RX queue)"})
                    .value_or(0));
        } else {
            local.underlay_mtu = kDefaultUnderlayMtu;
        }
        if (local.pin_dir.empty() && !local.name.empty()) local.pin_dir = "/sys/fs/bpf/andromeda/" + local.name;
        self.name = local.name;
        self.address = local.address;
        out_.source.nodes[0].table = src.table;
        out_.source.nodes[0].name = src.name;
        out_.source.nodes[0].address = src.address;
        out_.config.nodes.push_back(std::move(self));
    }

    // [etcd]: where the fabric lives. node.toml then describes this node only.
    void decode_etcd(const TomlNode& table, const TomlNode& root) {
        fields_.reject_unknown_keys(table, "etcd", {"endpoints", "prefix", "ca_file", "cert_file", "key_file", "username",
                                                    "password_file", "lease_ttl"});
        EtcdSettings etcd;
        const char* endpoints_fix = "e.g. endpoints = [\"http://10.0.0.5:2379\"] (etcd's client URLs, http:// or https://)";
        const TomlNode* endpoints = table.find("endpoints");
        if (endpoints == nullptr) {
            fields_.error(table.line, "etcd.endpoints", "is missing", endpoints_fix);
        } else if (endpoints->kind != Kind::array || endpoints->items.empty()) {
            fields_.error(endpoints->line, "etcd.endpoints", "expected a non-empty array of URLs", endpoints_fix);
        } else {
            for (const TomlNode& item : endpoints->items) {
                const bool url = item.kind == Kind::string &&
                                 (item.text.rfind("http://", 0) == 0 || item.text.rfind("https://", 0) == 0) &&
                                 item.text.size() > 8 && item.text.back() != '/';
                if (!url) {
                    fields_.error(endpoints->line, "etcd.endpoints",
                                  (item.kind == Kind::string ? quoted(item.text) : std::string("an entry")) + " is not an etcd URL",
                                  endpoints_fix);
                    continue;
                }
                etcd.endpoints.push_back(item.text);
            }
        }
        std::uint32_t line = 0;
        if (auto prefix = fields_.string(table, "etcd", "prefix", false, "prefix = \"/andromeda\"", &line)) {
            if (prefix->empty() || prefix->front() != '/' || prefix->back() == '/')
                fields_.error(line, "etcd.prefix", quoted(*prefix) + " is not a key prefix",
                              "start it with '/' and do not end it with one, e.g. \"/andromeda\" or \"/clusters/east\"");
            else
                etcd.prefix = *prefix;
        }
        etcd.ca_file = fields_.string(table, "etcd", "ca_file", false, "ca_file = \"/etc/andromeda/etcd-ca.pem\"").value_or("");
        etcd.cert_file = fields_.string(table, "etcd", "cert_file", false, "cert_file = \"/etc/andromeda/etcd.pem\"").value_or("");
        etcd.key_file = fields_.string(table, "etcd", "key_file", false, "key_file = \"/etc/andromeda/etcd-key.pem\"").value_or("");
        if (etcd.cert_file.empty() != etcd.key_file.empty())
            fields_.error(table.line, "etcd", "cert_file and key_file go together", "give both (a client certificate and its key), or neither");
        etcd.username = fields_.string(table, "etcd", "username", false, "username = \"andromeda\"").value_or("");
        etcd.password_file =
            fields_.string(table, "etcd", "password_file", false, "password_file = \"/etc/andromeda/etcd-password\"").value_or("");
        if (etcd.username.empty() != etcd.password_file.empty())
            fields_.error(table.line, "etcd", "username and password_file go together",
                          "give both (the password is read from the file), or neither");
        etcd.lease_ttl = static_cast<std::uint32_t>(
            fields_.integer(table, "etcd", "lease_ttl", false, {2, 3600, kDefaultEtcdLeaseTtl, "seconds"}).value_or(kDefaultEtcdLeaseTtl));
        for (const char* fabric_key : {"nodes", "vpc"}) {
            if (const TomlNode* n = root.find(fabric_key))
                fields_.error(n->line, fabric_key, "with [etcd] the fabric lives in etcd, not in node.toml",
                              "move it there with `andromedactl fabric import FILE`, and keep only [node] and [etcd] here");
        }
        out_.config.local.etcd = std::move(etcd);
    }

    // worker_cpus = [0, 1]: distinct CPU numbers; whether they exist is the daemon's check.
    // "192.0.2.53", "192.0.2.53:5353", "2001:db8::53", "[2001:db8::53]:5353".
    static std::optional<DnsUpstreamAddress> parse_dns_upstream(std::string_view text) {
        DnsUpstreamAddress u;
        std::string_view host = text;
        std::string_view port;
        if (!text.empty() && text.front() == '[') {
            const auto close = text.find(']');
            if (close == std::string_view::npos) return std::nullopt;
            host = text.substr(1, close - 1);
            const std::string_view rest = text.substr(close + 1);
            if (!rest.empty()) {
                if (rest.front() != ':') return std::nullopt;
                port = rest.substr(1);
                if (port.empty()) return std::nullopt;
            }
        } else if (const auto colon = text.find(':'); colon != std::string_view::npos && text.find(':', colon + 1) == std::string_view::npos) {
            host = text.substr(0, colon);
            port = text.substr(colon + 1);
            if (port.empty()) return std::nullopt;
        }
        if (!port.empty()) {
            if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
                return std::nullopt;
            const int value = std::stoi(std::string(port));
            if (value < 1 || value > 65535) return std::nullopt;
            u.port = static_cast<std::uint16_t>(value);
        }
        if (const auto v4 = Ipv4Address::parse(host)) u.address = *v4;
        else if (const auto v6 = wire::Ipv6Address::parse(host)) u.address = *v6;
        else return std::nullopt;
        return u;
    }

    void decode_dns_upstreams(const TomlNode& table) {
        const TomlNode* list = table.find("dns_upstreams");
        if (list == nullptr) return;
        const char* fix = "e.g. dns_upstreams = [\"192.0.2.53\", \"[2001:db8::53]:5353\"] (address, or address:port)";
        if (list->kind != Kind::array || list->items.empty() || list->items.size() > 32) {
            fields_.error(list->line, "node.dns_upstreams", "expected an array of 1 to 32 resolver addresses", fix);
            return;
        }
        std::vector<DnsUpstreamAddress> upstreams;
        for (const TomlNode& item : list->items) {
            const auto u = item.kind == Kind::string ? parse_dns_upstream(item.text) : std::nullopt;
            if (!u) {
                fields_.error(list->line, "node.dns_upstreams",
                              (item.kind == Kind::string ? quoted(item.text) : std::string("an entry")) +
                                  " is not a resolver address",
                              fix);
                return;
            }
            upstreams.push_back(*u);
        }
        out_.config.local.dns_upstreams = std::move(upstreams);
    }

    void decode_worker_cpus(const TomlNode& table) {
        const TomlNode* cpus = table.find("worker_cpus");
        if (cpus == nullptr) return;
        const char* fix = "e.g. worker_cpus = [0, 1] (one CPU per packet worker, see `lscpu`)";
        if (cpus->kind != Kind::array || cpus->items.empty()) {
            fields_.error(cpus->line, "node.worker_cpus", "expected a non-empty array of CPU numbers", fix);
            return;
        }
        std::vector<std::uint32_t> list;
        for (const TomlNode& item : cpus->items) {
            if (item.kind != Kind::integer || item.integer < 0 || item.integer >= kMaxWorkerCpu) {
                fields_.error(cpus->line, "node.worker_cpus",
                              "every entry must be a CPU number from 0 to " + std::to_string(kMaxWorkerCpu - 1), fix);
                return;
            }
            const auto cpu = static_cast<std::uint32_t>(item.integer);
            if (std::find(list.begin(), list.end(), cpu) != list.end()) {
                fields_.error(cpus->line, "node.worker_cpus", "CPU " + std::to_string(cpu) + " is listed twice",
                              "list each CPU once; workers beyond the list's length wrap around it");
                return;
            }
            list.push_back(cpu);
        }
        out_.config.local.worker_cpus = std::move(list);
    }

    void decode_encap(const TomlNode& table) {
        std::uint32_t line = 0;
        auto encap = fields_.string(table, "node", "encap", false, "encap = \"andromeda\"", &line);
        if (!encap || *encap == "andromeda") return;
        if (*encap == "vxlan") {
            out_.config.local.encap = Encap::vxlan;
            return;
        }
        fields_.error(line, "node.encap", quoted(*encap) + " is not a supported encapsulation",
                      "expected \"andromeda\" or \"vxlan\"");
    }

    void decode_uplink(const TomlNode& node_table) {
        const TomlNode* table = fields_.table(node_table, "node", "uplink", false);
        if (table == nullptr) return;
        out_.source.local.uplink = table->line;
        fields_.reject_unknown_keys(*table, "node.uplink", {"interface", "address", "next_hop", "kernel_flows",
                                                               "new_flows_per_tenant", "new_flows_burst"});
        Uplink uplink;
        uplink.interface = interface(*table, "node.uplink", "interface", true).value_or("");
        uplink.address = fields_.ipv4(*table, "node.uplink", "address", false);
        uplink.next_hop = fields_.ipv4(*table, "node.uplink", "next_hop", false);
        uplink.kernel_flows = static_cast<std::uint32_t>(
            fields_
                .integer(*table, "node.uplink", "kernel_flows", false,
                         {1, kMaxKernelNatFlows, kDefaultKernelNatFlows, "NAT flows the kernel translates at most"})
                .value_or(kDefaultKernelNatFlows));
        uplink.new_flows_per_tenant = static_cast<std::uint32_t>(
            fields_
                .integer(*table, "node.uplink", "new_flows_per_tenant", false,
                         {0, kMaxNewFlowsPerTenant, kDefaultNewFlowsPerTenant,
                          "new NAT flows per second each tenant may open (0: no limit)"})
                .value_or(kDefaultNewFlowsPerTenant));
        uplink.new_flows_burst = static_cast<std::uint32_t>(
            fields_
                .integer(*table, "node.uplink", "new_flows_burst", false,
                         {1, kMaxNewFlowsPerTenant, kDefaultNewFlowsBurst, "new NAT flows a tenant may open at once"})
                .value_or(kDefaultNewFlowsBurst));
        out_.config.local.uplink = std::move(uplink);
    }

    void decode_peer(const TomlNode& table, const std::string& path) {
        fields_.reject_unknown_keys(table, path, {"name", "address", "mac"});
        NodeSource src{table.line, 0, 0, path};
        auto peer_name = name(table, path, "name", "name = \"node2\"", &src.name);
        auto address = fields_.underlay_address(table, path, "address", true, &src.address);
        auto mac = fields_.mac(table, path, "mac", false);
        if (!peer_name) return;  // nothing can refer to it; its own errors are reported
        out_.config.nodes.push_back({*peer_name, address, mac, false});
        out_.source.nodes.push_back(std::move(src));
    }

    void decode_vpc(const TomlNode& table, std::size_t index) {
        const std::string path = vpc_path(index);
        fields_.reject_unknown_keys(table, path,
                                    {"name", "vni", "cidr", "ipv6_prefix", "ipv6_gateway", "dns6", "router_advertisements",
                                     "gateway", "gateway_mac", "mtu", "fastpath", "nat", "endpoint", "security_group",
                                     "default_ingress", "default_egress"});
        Vpc vpc;
        VpcSource src;
        src.table = table.line;
        vpc.name = name(table, path, "name", "name = \"blue\"", &src.name).value_or("");
        auto vni = fields_.integer(table, path, "vni", true, {1, kMaxVni, 100, "a VNI has 24 bits; valid"}, &src.vni);
        src.vni_ok = vni.has_value();
        vpc.vni = static_cast<std::uint32_t>(vni.value_or(0));
        decode_cidrs(table, path, vpc, src);
        decode_ipv6_prefix(table, path, vpc, src);
        auto gateway = fields_.ipv4(table, path, "gateway", true, &src.gateway);
        src.gateway_ok = gateway.has_value();
        vpc.gateway = gateway.value_or(Ipv4Address{});
        vpc.gateway_mac = fields_.mac(table, path, "gateway_mac", false, &src.gateway_mac).value_or(kDefaultGatewayMac);
        decode_mtu(table, path, vpc, src);
        if (vpc.ipv6_prefix && vpc.mtu < 1280)
            fields_.error(src.ipv6_prefix, join_path(path, "ipv6_prefix"),
                          "VPC " + quoted(vpc.name) + " has IPv6 but its mtu " + std::to_string(vpc.mtu) +
                              " is below IPv6's minimum link MTU, 1280 (RFC 8200 5)",
                          "raise mtu to at least 1280, or leave the VPC IPv4-only");
        decode_ipv6_gateway(table, path, vpc, src);
        vpc.fastpath = fields_.boolean(table, path, "fastpath", true);
        if (const TomlNode* nat = fields_.table(table, path, "nat", false)) decode_nat(*nat, path + ".nat", vpc, src);
        decode_security_groups(fields_, table, path, vpc);
        out_.config.vpcs.push_back(std::move(vpc));
        out_.source.vpcs.push_back(std::move(src));
        if (const TomlNode* endpoints = fields_.table_array(table, path, "endpoint")) {
            for (std::size_t i = 0; i < endpoints->items.size(); ++i)
                decode_endpoint(endpoints->items[i], path + ".endpoint[" + std::to_string(i) + "]", index, i);
        }
    }

    // A /64, as SLAAC needs (RFC 4862 5.5.3: a 64-bit interface identifier), and one a tenant
    // can have: not link-local, multicast or the unspecified prefix.
    void decode_ipv6_prefix(const TomlNode& table, const std::string& path, Vpc& vpc, VpcSource& src) {
        const auto text = fields_.string(table, path, "ipv6_prefix", false, "ipv6_prefix = \"fd00:0:0:1::/64\"",
                                         &src.ipv6_prefix);
        if (!text) return;
        const std::string key = join_path(path, "ipv6_prefix");
        const auto prefix = wire::Ipv6Prefix::parse(*text);
        if (!prefix) {
            fields_.error(src.ipv6_prefix, key, quoted(*text) + " is not an IPv6 prefix with its host bits clear",
                          "e.g. ipv6_prefix = \"fd00:0:0:1::/64\" (a ULA) or a global /64");
        } else if (prefix->length() != 64) {
            fields_.error(src.ipv6_prefix, key, quoted(*text) + " is a /" + std::to_string(prefix->length()),
                          "a VPC's IPv6 prefix is a /64: SLAAC derives 64-bit interface identifiers");
        } else if (wire::is_link_local(prefix->network()) || wire::is_multicast(prefix->network()) ||
                   wire::is_unspecified(prefix->network())) {
            fields_.error(src.ipv6_prefix, key, quoted(*text) + " is not a prefix tenants can be numbered from",
                          "use a ULA (fd00::/8) or a global /64; link-local addresses every tenant has already");
        } else {
            vpc.ipv6_prefix = *prefix;
        }
    }

    // The gateway's IPv6 side (issue 30): its global address `ipv6_gateway`, the RDNSS servers
    // `dns6` and [vpc.router_advertisements], each checked as the gateway will use it
    // (gateway::check_ipv6_gateway_config) and its problems reported at its own key.
    void decode_ipv6_gateway(const TomlNode& table, const std::string& path, Vpc& vpc, VpcSource& src) {
        const auto address_text = fields_.string(table, path, "ipv6_gateway", false,
                                                 "ipv6_gateway = \"fd00:0:0:1::1\"", &src.ipv6_gateway);
        const TomlNode* dns = table.find("dns6");
        const TomlNode* ra = fields_.table(table, path, "router_advertisements", false);
        if (!vpc.ipv6_prefix) {
            const char* key = address_text ? "ipv6_gateway" : dns != nullptr ? "dns6" : "router_advertisements";
            if ((address_text || dns != nullptr || ra != nullptr) && src.ipv6_prefix == 0)  // a bad one is reported
                fields_.error(address_text ? src.ipv6_gateway : dns != nullptr ? dns->line : ra->line,
                              join_path(path, key), "VPC " + quoted(vpc.name) + " has no ipv6_prefix",
                              std::string("give the VPC one, e.g. ipv6_prefix = \"fd00:0:0:1::/64\", or remove ") + key);
            return;
        }
        // A config the checker passes, for judging one part at a time.
        gateway::Ipv6GatewayConfig base;
        base.mac = MacAddress::parse("02:00:00:00:00:01").value();
        base.prefix = *vpc.ipv6_prefix;
        if (address_text) {
            const std::string key = join_path(path, "ipv6_gateway");
            gateway::Ipv6GatewayConfig check = base;
            check.global_address = wire::Ipv6Address::parse(*address_text);
            if (!check.global_address) {
                fields_.error(src.ipv6_gateway, key, quoted(*address_text) + " is not an IPv6 address",
                              "e.g. ipv6_gateway = \"" + vpc.ipv6_prefix->network().to_string() + "1\"");
            } else if (const auto problems = gateway::check_ipv6_gateway_config(check); !problems.empty()) {
                fields_.error(src.ipv6_gateway, key, problems.front(), "an address of " + vpc.ipv6_prefix->to_string());
            } else {
                vpc.ipv6_gateway = check.global_address;
            }
        }
        if (dns != nullptr) decode_dns6(*dns, join_path(path, "dns6"), base, vpc);
        if (ra != nullptr) {
            const std::string ra_path = path + ".router_advertisements";
            gateway::Ipv6GatewayConfig check = base;
            check.router_advertisements = decode_router_advertisements(*ra, ra_path);
            for (const std::string& problem : gateway::check_ipv6_gateway_config(check))
                fields_.error(ra->line, ra_path, problem, "see docs/configuration.md, [vpc.router_advertisements]");
            vpc.router_advertisements = check.router_advertisements;
        }
    }

    void decode_dns6(const TomlNode& list, const std::string& key, const gateway::Ipv6GatewayConfig& base, Vpc& vpc) {
        const std::string fix = "e.g. dns6 = [\"2001:db8::53\"] (at most " + std::to_string(gateway::kMaxDnsServers) +
                                " unicast IPv6 addresses)";
        if (list.kind != Kind::array) return fields_.error(list.line, key, "expected an array of IPv6 addresses", fix);
        gateway::Ipv6GatewayConfig check = base;
        for (const TomlNode& item : list.items) {
            const auto address = item.kind == Kind::string ? wire::Ipv6Address::parse(item.text) : std::nullopt;
            if (!address)
                return fields_.error(list.line, key,
                                     (item.kind == Kind::string ? quoted(item.text) : std::string("an entry")) +
                                         " is not an IPv6 address",
                                     fix);
            check.dns_servers.push_back(*address);
        }
        if (const auto problems = gateway::check_ipv6_gateway_config(check); !problems.empty())
            return fields_.error(list.line, key, problems.front(), fix);
        vpc.dns6 = std::move(check.dns_servers);
    }

    gateway::RouterAdvertisementConfig decode_router_advertisements(const TomlNode& table, const std::string& path) {
        fields_.reject_unknown_keys(table, path,
                                    {"max_interval", "min_interval", "router_lifetime", "valid_lifetime",
                                     "preferred_lifetime", "on_link", "autonomous", "managed", "other_config",
                                     "router_preference", "hop_limit", "reachable_time", "retrans_timer",
                                     "dns_lifetime"});
        gateway::RouterAdvertisementConfig ra;
        const auto seconds = [&](std::string_view key, std::int64_t max, std::int64_t typical, std::uint32_t fallback) {
            return static_cast<std::uint32_t>(
                fields_.integer(table, path, key, false, {0, max, typical, "in seconds; valid"}).value_or(fallback));
        };
        ra.max_interval_s = seconds("max_interval", 1800, 600, ra.max_interval_s);
        ra.min_interval_s = seconds("min_interval", 1350, 200, ra.min_interval_s);
        ra.router_lifetime_s = static_cast<std::uint16_t>(seconds("router_lifetime", 9000, 1800, ra.router_lifetime_s));
        ra.valid_lifetime_s = seconds("valid_lifetime", 0xffffffff, 2'592'000, ra.valid_lifetime_s);
        ra.preferred_lifetime_s = seconds("preferred_lifetime", 0xffffffff, 604'800, ra.preferred_lifetime_s);
        ra.dns_lifetime_s = seconds("dns_lifetime", 0xffffffff, 1800, ra.dns_lifetime_s);
        ra.on_link = fields_.boolean(table, path, "on_link", ra.on_link);
        ra.autonomous = fields_.boolean(table, path, "autonomous", ra.autonomous);
        ra.managed = fields_.boolean(table, path, "managed", ra.managed);
        ra.other_configuration = fields_.boolean(table, path, "other_config", ra.other_configuration);
        ra.current_hop_limit = static_cast<std::uint8_t>(
            fields_.integer(table, path, "hop_limit", false, {0, 255, 64, "valid"}).value_or(ra.current_hop_limit));
        ra.reachable_time_ms = static_cast<std::uint32_t>(
            fields_.integer(table, path, "reachable_time", false, {0, 3'600'000, 30'000, "in milliseconds; valid"})
                .value_or(ra.reachable_time_ms));
        ra.retrans_timer_ms = static_cast<std::uint32_t>(
            fields_.integer(table, path, "retrans_timer", false, {0, 0xffffffff, 1000, "in milliseconds; valid"})
                .value_or(ra.retrans_timer_ms));
        std::uint32_t line = 0;
        if (const auto preference = fields_.string(table, path, "router_preference", false,
                                                   "router_preference = \"medium\"", &line)) {
            if (*preference == "low")
                ra.router_preference = wire::router_preference::kLow;
            else if (*preference == "high")
                ra.router_preference = wire::router_preference::kHigh;
            else if (*preference != "medium")
                fields_.error(line, join_path(path, "router_preference"), quoted(*preference) + " is not a preference",
                              "\"low\", \"medium\" or \"high\" (RFC 4191)");
        }
        return ra;
    }

    // `ipv6 = "eui64"` or an address, in the VPC's ipv6_prefix (checked once the MAC is known).
    std::optional<wire::Ipv6Address> decode_endpoint_ipv6(const TomlNode& table, const std::string& path,
                                                          std::size_t vpc_index, const std::optional<MacAddress>& mac,
                                                          EndpointSource& src) {
        const auto text = fields_.string(table, path, "ipv6", false, "ipv6 = \"eui64\"", &src.ipv6);
        if (!text) return std::nullopt;
        const std::string key = join_path(path, "ipv6");
        const Vpc& vpc = out_.config.vpcs[vpc_index];
        if (!vpc.ipv6_prefix) {
            if (out_.source.vpcs[vpc_index].ipv6_prefix == 0)  // a bad prefix is reported already
                fields_.error(src.ipv6, key, "VPC " + quoted(vpc.name) + " has no ipv6_prefix",
                              "give the VPC one, e.g. ipv6_prefix = \"fd00:0:0:1::/64\", or remove ipv6");
            return std::nullopt;
        }
        if (*text == "eui64") {
            if (!mac) return std::nullopt;  // its own error
            return wire::eui64_address(*vpc.ipv6_prefix, *mac);
        }
        const auto address = wire::Ipv6Address::parse(*text);
        if (!address) {
            fields_.error(src.ipv6, key, quoted(*text) + " is not an IPv6 address",
                          "an address in " + vpc.ipv6_prefix->to_string() + ", or \"eui64\" to derive it from the MAC");
            return std::nullopt;
        }
        if (!vpc.ipv6_prefix->contains(*address) || *address == vpc.ipv6_prefix->network()) {
            fields_.error(src.ipv6, key,
                          address->to_string() + (*address == vpc.ipv6_prefix->network() ? " is the subnet-router anycast address of "
                                                                                          : " is outside ") +
                              "VPC " + quoted(vpc.name) + "'s " + vpc.ipv6_prefix->to_string(),
                          "pick a host address inside the prefix, or \"eui64\"");
            return std::nullopt;
        }
        return address;
    }

    void decode_cidrs(const TomlNode& table, const std::string& path, Vpc& vpc, VpcSource& src) {
        const std::string key = path + ".cidr";
        const TomlNode* cidr = table.find("cidr");
        if (cidr == nullptr) {
            fields_.error(table.line, key, "missing required key", "add it, e.g. cidr = \"10.0.0.0/24\"");
            return;
        }
        src.cidr = cidr->line;
        std::vector<const TomlNode*> items;
        if (cidr->kind == Kind::string) items.push_back(cidr);
        for (const auto& item : cidr->items) items.push_back(&item);
        const bool strings = std::all_of(items.begin(), items.end(), [](auto* n) { return n->kind == Kind::string; });
        if (items.empty() || !strings) {
            fields_.error(cidr->line, key, "expected a CIDR string or a non-empty array of them",
                          "e.g. cidr = \"10.0.0.0/24\" or cidr = [\"10.0.0.0/24\", \"10.0.1.0/24\"]");
            return;
        }
        bool all_ok = true;
        for (const TomlNode* item : items) {
            auto prefix = fields_.prefix(*item, key);
            all_ok = all_ok && prefix.has_value();
            if (prefix) vpc.cidrs.push_back(*prefix);
        }
        src.cidr_ok = all_ok;
    }

    void decode_mtu(const TomlNode& table, const std::string& path, Vpc& vpc, VpcSource& src) {
        // [node] and [[nodes]] come first, so the underlay's family is known here.
        const std::uint32_t overhead = overlay_overhead(ipv6_underlay(out_.config.nodes));
        const std::uint32_t usable = out_.config.local.underlay_mtu - overhead;
        vpc.mtu = usable;
        auto mtu = fields_.integer(table, path, "mtu", false, {0, 65535, usable, "an MTU"}, &src.mtu);
        if (!mtu) return;
        src.mtu_set = true;
        if (*mtu > static_cast<std::int64_t>(usable)) {
            fields_.error(src.mtu, path + ".mtu",
                          "mtu " + std::to_string(*mtu) + " does not fit the overlay: underlay_mtu " +
                              std::to_string(out_.config.local.underlay_mtu) + " minus " +
                              std::to_string(overhead) + " bytes of encapsulation leaves " +
                              std::to_string(usable),
                          "use at most " + std::to_string(usable) + ", or raise [node] underlay_mtu");
        } else if (*mtu < static_cast<std::int64_t>(kMinVpcMtu)) {
            fields_.error(src.mtu, path + ".mtu", "mtu " + std::to_string(*mtu) + " is too small",
                          "use " + std::to_string(kMinVpcMtu) + " to " + std::to_string(usable));
        } else {
            vpc.mtu = static_cast<std::uint32_t>(*mtu);
        }
    }

    void decode_nat(const TomlNode& table, const std::string& path, Vpc& vpc, VpcSource& src) {
        fields_.reject_unknown_keys(table, path, {"gateway_node", "address", "port_range", "forward"});
        NatConfig nat;
        nat.gateway_node = fields_.string(table, path, "gateway_node", true, "gateway_node = \"gw1\"",
                                          &src.nat_gateway_node)
                               .value_or("");
        nat.address = fields_.ipv4(table, path, "address", true, &src.nat_address).value_or(Ipv4Address{});
        decode_port_range(table, path, nat);
        if (const TomlNode* forwards = fields_.table_array(table, path, "forward")) {
            for (std::size_t i = 0; i < forwards->items.size(); ++i)
                decode_forward(forwards->items[i], path + ".forward[" + std::to_string(i) + "]", nat, src);
        }
        vpc.nat = std::move(nat);
    }

    void decode_port_range(const TomlNode& table, const std::string& path, NatConfig& nat) {
        const TomlNode* range = table.find("port_range");
        if (range == nullptr) return;
        const bool two_ints = range->kind == Kind::array && range->items.size() == 2 &&
                              range->items[0].kind == Kind::integer && range->items[1].kind == Kind::integer;
        const std::int64_t low = two_ints ? range->items[0].integer : 0;
        const std::int64_t high = two_ints ? range->items[1].integer : 0;
        if (!two_ints || low < 1 || high > 65535 || low > high) {
            fields_.error(range->line, path + ".port_range", "expected [first, last] with 1 <= first <= last <= 65535",
                          "e.g. port_range = [1024, 65535]");
            return;
        }
        nat.port_min = static_cast<std::uint16_t>(low);
        nat.port_max = static_cast<std::uint16_t>(high);
    }

    void decode_forward(const TomlNode& table, const std::string& path, NatConfig& nat, VpcSource& src) {
        fields_.reject_unknown_keys(table, path, {"protocol", "nat_port", "to"});
        ForwardSource fsrc{table.line, 0, 0};
        NatForward forward;
        std::uint32_t protocol_line = 0;
        auto protocol = fields_.string(table, path, "protocol", true, "protocol = \"tcp\"", &protocol_line);
        bool ok = protocol.has_value();
        if (protocol && *protocol != "tcp" && *protocol != "udp") {
            fields_.error(protocol_line, path + ".protocol", quoted(*protocol) + " is not a forwardable protocol",
                          "expected \"tcp\" or \"udp\"");
            ok = false;
        }
        forward.protocol = protocol == "udp" ? NatProtocol::udp : NatProtocol::tcp;
        auto nat_port = fields_.integer(table, path, "nat_port", true, {1, 65535, 8080, "a port"}, &fsrc.nat_port);
        forward.nat_port = static_cast<std::uint16_t>(nat_port.value_or(0));
        auto to = fields_.string(table, path, "to", true, "to = \"10.0.0.10:80\"", &fsrc.to);
        const bool destination_ok = to && parse_destination(*to, forward, fsrc.to, path + ".to");
        if (!ok || !nat_port || !destination_ok) return;
        nat.forwards.push_back(forward);
        src.forwards.push_back(fsrc);
    }

    bool parse_destination(const std::string& text, NatForward& forward, std::uint32_t line, const std::string& key) {
        const auto colon = text.find(':');
        const auto ip = Ipv4Address::parse(std::string_view(text).substr(0, colon));
        const std::string port = colon == std::string::npos ? "" : text.substr(colon + 1);
        const bool digits = !port.empty() && port.size() <= 5 &&
                            std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!ip || !digits || std::stoi(port) < 1 || std::stoi(port) > 65535) {
            fields_.error(line, key, quoted(text) + " is not an endpoint address and port",
                          "expected \"<endpoint ip>:<port>\" such as \"10.0.0.10:80\"");
            return false;
        }
        forward.endpoint_ip = *ip;
        forward.endpoint_port = static_cast<std::uint16_t>(std::stoi(port));
        return true;
    }

    void decode_endpoint(const TomlNode& table, const std::string& path, std::size_t vpc_index, std::size_t index) {
        fields_.reject_unknown_keys(table, path,
                                    {"ip", "ipv6", "mac", "node", "port", "groups", "name", "port_type", "queues"});
        EndpointSource src;
        src.table = table.line;
        src.index_in_vpc = static_cast<std::uint32_t>(index);
        auto ip = fields_.ipv4(table, path, "ip", true, &src.ip);
        auto mac = fields_.mac(table, path, "mac", true, &src.mac);
        auto node = fields_.string(table, path, "node", true, "node = \"node1\"", &src.node);
        std::optional<std::string> port;
        if (table.find("port") != nullptr) {
            port = interface(table, path, "port", false);
            src.port = table.find("port")->line;
            if (!port) return;
        }
        std::vector<std::string> groups;
        const bool groups_ok = decode_endpoint_groups(fields_, table, path, out_.config.vpcs[vpc_index], groups);
        auto name = fields_.string(table, path, "name", false, "name = \"web\"", &src.name);
        if (name && !wire::is_hostname_label(*name)) {
            fields_.error(src.name, join_path(path, "name"), quoted(*name) + " is not a DNS name label",
                          "1 to 63 letters, digits or '-', not starting or ending with '-' (it becomes <name>." +
                              out_.config.vpcs[vpc_index].name + ".internal)");
            name.reset();
        }
        auto port_type = fields_.string(table, path, "port_type", false, "port_type = \"tap\"", &src.port_type);
        if (port_type && *port_type != "veth" && *port_type != "tap") {
            fields_.error(src.port_type, join_path(path, "port_type"), quoted(*port_type) + " is not a port type",
                          "\"veth\" (the default) or \"tap\" (a VM's port, created when missing)");
            port_type.reset();
        }
        std::uint16_t queues = 1;
        if (const auto n =
                fields_.integer(table, path, "queues", false,
                                {1, kMaxTapQueues, 4, "a tap's queues (QEMU's -netdev tap,queues=N)"}, &src.queues)) {
            if (*n > 1 && port_type != "tap")
                fields_.error(src.queues, join_path(path, "queues"),
                              "queues = " + std::to_string(*n) + " on a port that is not a tap",
                              "queues is a tap's (port_type = \"tap\"); a veth's queues are set where it is created");
            else
                queues = static_cast<std::uint16_t>(*n);
        }
        const auto ipv6 = decode_endpoint_ipv6(table, path, vpc_index, mac, src);
        if (!ip || !mac || !node || !groups_ok) return;  // reported; checks across endpoints need all three
        Endpoint endpoint;
        endpoint.groups = std::move(groups);
        endpoint.name = name.value_or("");
        endpoint.port_type = port_type == "tap" ? PortType::tap : PortType::veth;
        endpoint.queues = queues;
        endpoint.ipv6 = ipv6;
        endpoint.vni = out_.config.vpcs[vpc_index].vni;
        endpoint.ip = *ip;
        endpoint.mac = *mac;
        endpoint.node = std::move(*node);
        endpoint.port = port.value_or("");
        endpoint.vpc_index = static_cast<std::uint32_t>(vpc_index);
        out_.config.endpoints.push_back(std::move(endpoint));
        out_.source.endpoints.push_back(src);
    }

    DecodedFabric& out_;
    FieldReader fields_;
};

}  // namespace

std::string vpc_path(std::size_t index) { return "vpc[" + std::to_string(index) + "]"; }

std::string endpoint_path(const FabricConfig& config, const SourceMap& source, std::size_t index) {
    return vpc_path(config.endpoints[index].vpc_index) + ".endpoint[" +
           std::to_string(source.endpoints[index].index_in_vpc) + "]";
}

DecodedFabric decode_fabric(const TomlNode& root, const std::string& file_name) {
    DecodedFabric out;
    out.config.source_name = file_name;
    FabricDecoder(out).decode(root);
    return out;
}

}  // namespace andromeda::fabric::detail
