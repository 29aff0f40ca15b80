// Every validation error, with its exact message: file, line, key, what is wrong, what is valid.
#include <gtest/gtest.h>

#include "andromeda_kern_user.h"

#include "fabric_test_support.hpp"

namespace andromeda::fabric {
namespace {

using testing::kBaseFabric;
using testing::replace_once;

std::vector<std::string> errors_of(const std::string& text) {
    const LoadResult result = load_fabric_string(text, "t.toml");
    EXPECT_EQ(result.ok(), result.errors.empty());
    std::vector<std::string> messages;
    for (const auto& e : result.errors) messages.push_back(e.to_string());
    return messages;
}

void expect_error(const std::string& text, const std::string& expected) {
    EXPECT_EQ(errors_of(text), std::vector<std::string>{expected});
}

const std::string kSecondEndpoint = R"(
[[vpc.endpoint]]
ip = "10.0.0.20"
mac = "02:00:00:00:00:20"
node = "node2"
)";

TEST(FabricValidation, BaseFabricIsValid) { EXPECT_TRUE(errors_of(kBaseFabric + kSecondEndpoint).empty()); }

TEST(FabricValidation, UnknownKeySuggestsTheNearestValidKey) {
    expect_error(replace_once(kBaseFabric, "address = \"192.168.1.2\"", "address = \"192.168.1.2\"\nmca = \"02:00:00:00:a1:02\""),
                 "t.toml:9: nodes[0].mca: unknown key \"mca\"; did you mean \"mac\"? valid keys here: name, address, mac");
}

TEST(FabricValidation, UnknownKeyWithoutCloseMatchListsValidKeys) {
    expect_error(kBaseFabric + "colour = \"red\"\n",
                 "t.toml:21: vpc[0].endpoint[0].colour: unknown key \"colour\"; valid keys here: ip, ipv6, mac, node, "
                 "port, groups, name, port_type, queues");
}

TEST(FabricValidation, UnknownTopLevelSection) {
    expect_error(kBaseFabric + "[[vpcs]]\nname = \"x\"\n",
                 "t.toml:21: vpcs: unknown key \"vpcs\"; did you mean \"vpc\"? valid keys here: node, nodes, vpc, etcd");
}

TEST(FabricValidation, TypoedKeyAlsoReportsTheMissingOne) {
    EXPECT_EQ(
        errors_of(replace_once(kBaseFabric, "underlay =", "underlya =")),
        (std::vector<std::string>{
            "t.toml:1: node.underlay: missing required key; add it, e.g. underlay = \"eth1\"",
            "t.toml:3: node.underlya: unknown key \"underlya\"; did you mean \"underlay\"? valid keys here: "
            "name, underlay, address, encap, vxlan_port, underlay_mtu, underlay_vlan, pin_dir, uplink, worker_cpus, "
            "workers, fastpath, tenant_rps, punt_rate, punt_burst, gateway_rate, gateway_burst, flood_rate, flood_burst, "
            "dns_upstreams"}));
}

TEST(FabricValidation, UnderlayVlanIsAVlanId) {
    const std::string at = "underlay = \"eth1\"";
    const std::string pinned = replace_once(kBaseFabric, "address = \"192.168.1.2\"",
                                            "address = \"192.168.1.2\"\nmac = \"02:00:00:00:a1:02\"");
    for (const int vid : {1, 100, 4094}) {
        const LoadResult r = load_fabric_string(replace_once(pinned, at, at + "\nunderlay_vlan = " + std::to_string(vid)), "t.toml");
        ASSERT_TRUE(r.ok()) << vid;
        EXPECT_EQ(r.snapshot->local().underlay_vlan, vid);
    }
    for (const int vid : {0, 4095, -1})
        expect_error(replace_once(pinned, at, at + "\nunderlay_vlan = " + std::to_string(vid)),
                     "t.toml:4: node.underlay_vlan: " + std::to_string(vid) +
                         " is out of range; an 802.1Q VLAN ID (0 and 4095 are reserved) is 1 to 4094");
    expect_error(replace_once(pinned, at, at + "\nunderlay_vlan = \"100\""),
                 "t.toml:4: node.underlay_vlan: expected an integer, found a string; e.g. underlay_vlan = 100");
}

TEST(FabricValidation, UnderlayVlanNeedsPinnedPeerMacsAndAnAddress) {
    const std::string at = "underlay = \"eth1\"";
    const std::string tagged = replace_once(kBaseFabric, at, at + "\nunderlay_vlan = 100");
    expect_error(tagged,
                 "t.toml:7: nodes[0].mac: node \"node2\" has no pinned next-hop MAC (underlay_vlan = 100: the kernel "
                 "has no device on VLAN 100, so it cannot resolve it by ARP); add mac = \"xx:xx:xx:xx:xx:xx\" (its "
                 "underlay NIC's MAC, or the router's on VLAN 100) to that [[nodes]] entry");
    const std::string pinned = replace_once(tagged, "address = \"192.168.1.2\"",
                                            "address = \"192.168.1.2\"\nmac = \"02:00:00:00:a1:02\"");
    EXPECT_TRUE(errors_of(pinned).empty());
    expect_error(replace_once(pinned, "address = \"192.168.1.1\"\n", ""),
                 "t.toml:4: node.address: this node has no underlay address (underlay_vlan = 100: the kernel has no "
                 "device on VLAN 100, so it cannot supply one from the interface); set [node] address = \"...\" to this "
                 "node's address on VLAN 100");
    // Without a VLAN, neither is needed.
    EXPECT_TRUE(errors_of(replace_once(kBaseFabric, "address = \"192.168.1.1\"\n", "")).empty());
}

TEST(FabricValidation, WorkerCpusMustBeDistinctCpuNumbers) {
    const std::string at = "name = \"node1\"\n";
    const std::string fix = "; e.g. worker_cpus = [0, 1] (one CPU per packet worker, see `lscpu`)";
    expect_error(replace_once(kBaseFabric, at, at + "worker_cpus = 1\n"),
                 "t.toml:3: node.worker_cpus: expected a non-empty array of CPU numbers" + fix);
    expect_error(replace_once(kBaseFabric, at, at + "worker_cpus = []\n"),
                 "t.toml:3: node.worker_cpus: expected a non-empty array of CPU numbers" + fix);
    expect_error(replace_once(kBaseFabric, at, at + "worker_cpus = [0, -1]\n"),
                 "t.toml:3: node.worker_cpus: every entry must be a CPU number from 0 to 1023" + fix);
    expect_error(replace_once(kBaseFabric, at, at + "worker_cpus = [1024]\n"),
                 "t.toml:3: node.worker_cpus: every entry must be a CPU number from 0 to 1023" + fix);
    expect_error(replace_once(kBaseFabric, at, at + "worker_cpus = [\"0\"]\n"),
                 "t.toml:3: node.worker_cpus: every entry must be a CPU number from 0 to 1023" + fix);
    expect_error(replace_once(kBaseFabric, at, at + "worker_cpus = [1, 0, 1]\n"),
                 "t.toml:3: node.worker_cpus: CPU 1 is listed twice; list each CPU once; workers beyond the list's "
                 "length wrap around it");
}

TEST(FabricValidation, PuntRateAndBurstAreBounded) {
    const std::string at = "name = \"node1\"\n";
    for (const auto& [key, value] : {std::pair{"punt_rate", 0}, {"punt_rate", 100000000}, {"punt_burst", 1},
                                     {"punt_burst", 1000000}})
        EXPECT_TRUE(errors_of(replace_once(kBaseFabric, at, at + key + " = " + std::to_string(value) + "\n")).empty())
            << key << " = " << value;
    expect_error(replace_once(kBaseFabric, at, at + "punt_rate = -1\n"),
                 "t.toml:3: node.punt_rate: -1 is out of range; frames per second a tenant port may punt (0: no "
                 "limit) is 0 to 100000000");
    expect_error(replace_once(kBaseFabric, at, at + "punt_burst = 0\n"),
                 "t.toml:3: node.punt_burst: 0 is out of range; frames an idle tenant port may punt at once is 1 to "
                 "1000000");
    expect_error(replace_once(kBaseFabric, at, at + "punt_rate = \"fast\"\n"),
                 "t.toml:3: node.punt_rate: expected an integer, found a string; e.g. punt_rate = 20000");
}

// A [node] rate key and its burst: 1 and 10,000,000 load, 0 and one more are refused with the
// range and what the key means.
void expect_rate_and_burst_bounded(const std::string& rate, const std::string& rate_means, const std::string& burst,
                                   const std::string& burst_means) {
    const std::string at = "name = \"node1\"\n";
    for (const std::string& key : {rate, burst})
        for (const char* value : {"1", "10000000"})
            EXPECT_TRUE(errors_of(replace_once(kBaseFabric, at, at + key + " = " + value + "\n")).empty())
                << key << " = " << value;
    expect_error(replace_once(kBaseFabric, at, at + rate + " = 0\n"),
                 "t.toml:3: node." + rate + ": 0 is out of range; " + rate_means + " is 1 to 10000000");
    expect_error(replace_once(kBaseFabric, at, at + burst + " = 10000001\n"),
                 "t.toml:3: node." + burst + ": 10000001 is out of range; " + burst_means + " is 1 to 10000000");
}

TEST(FabricValidation, GatewayRateAndBurstAreBounded) {
    expect_rate_and_burst_bounded("gateway_rate", "answers per second the gateway gives one tenant", "gateway_burst",
                                  "answers the gateway gives a quiet tenant at once");
}

TEST(FabricValidation, FloodRateAndBurstAreBounded) {
    expect_rate_and_burst_bounded("flood_rate", "broadcast and multicast frames per second one tenant may flood",
                                  "flood_burst", "broadcast and multicast frames a quiet tenant may flood at once");
}

TEST(FabricValidation, WorkersAreBounded) {
    const std::string at = "name = \"node1\"\n";
    for (const int value : {0, 1, 256})
        EXPECT_TRUE(errors_of(replace_once(kBaseFabric, at, at + "workers = " + std::to_string(value) + "\n")).empty())
            << "workers = " << value;
    expect_error(replace_once(kBaseFabric, at, at + "workers = -1\n"),
                 "t.toml:3: node.workers: -1 is out of range; packet workers (0: one per underlay RX queue) is 0 to 256");
    expect_error(replace_once(kBaseFabric, at, at + "workers = 257\n"),
                 "t.toml:3: node.workers: 257 is out of range; packet workers (0: one per underlay RX queue) is 0 to 256");
    expect_error(replace_once(kBaseFabric, at, at + "workers = \"many\"\n"),
                 "t.toml:3: node.workers: expected an integer, found a string; e.g. workers = 2");
}

TEST(FabricValidation, BadIpv4Address) {
    expect_error(replace_once(kBaseFabric, "192.168.1.2", "192.168.1.300"),
                 "t.toml:8: nodes[0].address: \"192.168.1.300\" is not an IPv4 or IPv6 address; expected a dotted quad "
                 "such as \"192.0.2.10\" or an IPv6 address such as \"2001:db8::10\"");
}

// The base fabric with both nodes on an IPv6 underlay.
std::string ipv6_underlay(std::string text) {
    text = replace_once(text, "\"192.168.1.1\"", "\"fd00:1::1\"");
    return replace_once(text, "\"192.168.1.2\"", "\"fd00:1::2\"");
}

TEST(FabricValidation, AnIpv6UnderlayIsValidAndSizesTheVpcMtuForItsLongerHeader) {
    const LoadResult result = load_fabric_string(ipv6_underlay(kBaseFabric), "t.toml");
    ASSERT_TRUE(result.ok()) << (result.errors.empty() ? "" : result.errors.front().to_string());
    const auto& nodes = result.snapshot->nodes();
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_EQ(nodes[0].address, wire::IpAddress(*wire::Ipv6Address::parse("fd00:1::1")));
    EXPECT_EQ(nodes[1].address, wire::IpAddress(*wire::Ipv6Address::parse("fd00:1::2")));
    EXPECT_EQ(result.snapshot->find_node_by_address(*wire::Ipv6Address::parse("fd00:1::2")), &nodes[1]);
    EXPECT_EQ(result.snapshot->find_node_by_address(*wire::Ipv6Address::parse("fd00:1::3")), nullptr);
    EXPECT_EQ(result.snapshot->find_node_by_address(*wire::Ipv4Address::parse("192.168.1.2")), nullptr);
    EXPECT_EQ(result.snapshot->vpcs()[0].mtu, 1500u - 70u);  // IPv4: 1450
    // The VPC MTU's bound is the IPv6 one too.
    const std::string at = "vni = 100\n";
    expect_error(ipv6_underlay(replace_once(kBaseFabric, at, at + "mtu = 1450\n")),
                 "t.toml:13: vpc[0].mtu: mtu 1450 does not fit the overlay: underlay_mtu 1500 minus 70 bytes of "
                 "encapsulation leaves 1430; use at most 1430, or raise [node] underlay_mtu");
}

TEST(FabricValidation, AnUnderlayIsOneFamily) {
    expect_error(replace_once(kBaseFabric, "\"192.168.1.2\"", "\"fd00:1::2\""),
                 "t.toml:8: nodes[0].address: node \"node2\" has an IPv6 underlay address (fd00:1::2) but node "
                 "\"node1\" an IPv4 one (192.168.1.1) (line 4); an underlay is one family: give every node an address "
                 "of the same family");
}

TEST(FabricValidation, AnIpv6UnderlayNamesThisNodesAddressAndCarriesIpv6sMinimumMtu) {
    expect_error(replace_once(ipv6_underlay(kBaseFabric), "address = \"fd00:1::1\"\n", ""),
                 "t.toml:1: node.address: this node has no underlay address, and the underlay is IPv6 (the daemon "
                 "takes only an IPv4 address from the interface); set [node] address = \"...\" to this node's IPv6 "
                 "address on eth1");
    // Its [[nodes]] entry names it as well as [node] does: one peer list fits every host.
    const LoadResult listed = load_fabric_string(
        replace_once(ipv6_underlay(kBaseFabric), "address = \"fd00:1::1\"\n", "") +
            "\n[[nodes]]\nname = \"node1\"\naddress = \"fd00:1::1\"\n",
        "t.toml");
    ASSERT_TRUE(listed.ok()) << (listed.errors.empty() ? "" : listed.errors.front().to_string());
    EXPECT_EQ(listed.snapshot->local_node().address, wire::IpAddress(*wire::Ipv6Address::parse("fd00:1::1")));
    const std::string at = "underlay = \"eth1\"\n";
    expect_error(ipv6_underlay(replace_once(kBaseFabric, at, at + "underlay_mtu = 1279\n")),
                 "t.toml:4: node.underlay_mtu: underlay_mtu 1279 is below IPv6's minimum link MTU; an IPv6 underlay "
                 "carries at least 1280 bytes (RFC 8200 section 5): raise underlay_mtu");
}

TEST(FabricValidation, AnIpv6UnderlayAddressIsUnicastAndNeedsNoZone) {
    for (const auto& [address, what] : std::vector<std::pair<std::string, std::string>>{
             {"fe80::2", "a link-local address (it needs a zone)"},
             {"ff02::2", "a multicast address"},
             {"::", "the unspecified address"},
             {"::ffff:192.168.1.2", "an IPv4-mapped address"}}) {
        expect_error(replace_once(ipv6_underlay(kBaseFabric), "fd00:1::2", address),
                     "t.toml:8: nodes[0].address: \"" + address + "\" is " + what +
                         ", not a unicast underlay address; use the node's global or unique-local IPv6 address, or its "
                         "IPv4 address");
    }
    expect_error(ipv6_underlay(kBaseFabric) + "\n[[nodes]]\nname = \"node3\"\naddress = \"fd00:1:0::2\"\n",
                 "t.toml:24: nodes[1].address: fd00:1::2 is already the address of node \"node2\" (line 8); every "
                 "node needs its own underlay address");
}

// The fast path's 32-bit peer keys of IPv6 node addresses (shared/andromeda_kern_user.h) must
// differ: two addresses found to share one (0xf8e5fc62, a search over random addresses) are
// refused like a duplicate address, with how to fix it.
constexpr __u8 kFd00_1_1[16] = {0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};  // fd00:1::1
static_assert(andromeda_peer_key6(kFd00_1_1) == 0xf916f6c8u);
TEST(FabricValidation, TwoIpv6UnderlayAddressesWithOnePeerKeyAreRefused) {
    const auto a = *wire::Ipv6Address::parse("fd00:1::d4c9:14bc:a109");
    const auto b = *wire::Ipv6Address::parse("fd00:1::9d2d:ae04:1bca");
    ASSERT_EQ(andromeda_peer_key6(a.bytes().data()), andromeda_peer_key6(b.bytes().data()));
    const std::string nodes = "\n[[nodes]]\nname = \"node3\"\naddress = \"" + a.to_string() +
                              "\"\n\n[[nodes]]\nname = \"node4\"\naddress = \"" + b.to_string() + "\"\n";
    expect_error(ipv6_underlay(kBaseFabric) + nodes,
                 "t.toml:28: nodes[2].address: node \"node4\"'s underlay address fd00:1::9d2d:ae04:1bca has the same "
                 "fast-path peer key as node \"node3\"'s fd00:1::d4c9:14bc:a109 (line 24); give one of the two another "
                 "address (any other last digit will do)");
    // Any other address of the pair's: accepted.
    const auto c = *wire::Ipv6Address::parse("fd00:1::9d2d:ae04:1bcb");
    EXPECT_TRUE(errors_of(ipv6_underlay(kBaseFabric) + replace_once(nodes, b.to_string(), c.to_string())).empty());
}

TEST(FabricValidation, BadMacAddress) {
    expect_error(replace_once(kBaseFabric, "02:00:00:00:00:10", "02:00:00:00:00:1g"),
                 "t.toml:18: vpc[0].endpoint[0].mac: \"02:00:00:00:00:1g\" is not a MAC address; expected six hex "
                 "bytes such as \"02:00:00:00:00:0a\"");
}

TEST(FabricValidation, MulticastMacAddress) {
    expect_error(replace_once(kBaseFabric, "02:00:00:00:00:10", "01:00:5e:00:00:10"),
                 "t.toml:18: vpc[0].endpoint[0].mac: \"01:00:5e:00:00:10\" is not a unicast MAC address; the first "
                 "byte must be even and the address not all zeros, e.g. \"02:00:00:00:00:0a\"");
}

TEST(FabricValidation, BadCidr) {
    expect_error(replace_once(kBaseFabric, "10.0.0.0/24", "10.0.0.0/33"),
                 "t.toml:13: vpc[0].cidr: \"10.0.0.0/33\" is not a CIDR prefix; expected a network address and "
                 "prefix length such as \"10.0.0.0/24\"");
}

TEST(FabricValidation, CidrWithHostBitsSuggestsTheNetwork) {
    expect_error(replace_once(kBaseFabric, "10.0.0.0/24", "10.0.0.1/24"),
                 "t.toml:13: vpc[0].cidr: \"10.0.0.1/24\" has host bits set; did you mean \"10.0.0.0/24\"?");
}

TEST(FabricValidation, OverlappingCidrsOfOneVpc) {
    expect_error(replace_once(kBaseFabric, "\"10.0.0.0/24\"", "[\"10.0.0.0/16\", \"10.0.4.0/24\"]"),
                 "t.toml:13: vpc[0].cidr: 10.0.4.0/24 overlaps 10.0.0.0/16 of the same VPC; list prefixes that do "
                 "not overlap");
}

TEST(FabricValidation, EndpointOutsideItsVpcCidr) {
    expect_error(replace_once(kBaseFabric, "\"10.0.0.10\"", "\"10.0.1.10\""),
                 "t.toml:17: vpc[0].endpoint[0].ip: 10.0.1.10 is outside VPC \"blue\" (10.0.0.0/24); pick an "
                 "address inside the VPC's CIDR, or add a CIDR to the VPC");
}

TEST(FabricValidation, DuplicateIpInOneVpc) {
    expect_error(kBaseFabric + replace_once(kSecondEndpoint, "10.0.0.20", "10.0.0.10"),
                 "t.toml:23: vpc[0].endpoint[1].ip: 10.0.0.10 is already an endpoint of VPC \"blue\" (line 16); an IP "
                 "is unique within a VPC (another VPC may reuse it)");
}

TEST(FabricValidation, DuplicateMacInOneVpc) {
    expect_error(kBaseFabric + replace_once(kSecondEndpoint, "00:20", "00:10"),
                 "t.toml:24: vpc[0].endpoint[1].mac: 02:00:00:00:00:10 is already used by endpoint 10.0.0.10 of VPC "
                 "\"blue\" (line 16); a MAC is unique within a VPC");
}

TEST(FabricValidation, EndpointWithTheGatewayMac) {
    expect_error(replace_once(kBaseFabric, "02:00:00:00:00:10", "02:00:00:00:00:ff"),
                 "t.toml:18: vpc[0].endpoint[0].mac: 02:00:00:00:00:ff is the gateway MAC of VPC \"blue\"; choose "
                 "another MAC; the gateway answers for this one");
}

TEST(FabricValidation, VniOutOf24Bits) {
    expect_error(replace_once(kBaseFabric, "vni = 100", "vni = 16777216"),
                 "t.toml:12: vpc[0].vni: 16777216 is out of range; a VNI has 24 bits; valid is 1 to 16777215");
}

TEST(FabricValidation, VniZero) {
    expect_error(replace_once(kBaseFabric, "vni = 100", "vni = 0"),
                 "t.toml:12: vpc[0].vni: 0 is out of range; a VNI has 24 bits; valid is 1 to 16777215");
}

TEST(FabricValidation, VniUsedTwice) {
    expect_error(kBaseFabric + "\n[[vpc]]\nname = \"green\"\nvni = 100\ncidr = \"10.1.0.0/24\"\ngateway = \"10.1.0.1\"\n",
                 "t.toml:24: vpc[1].vni: VNI 100 is already used by VPC \"blue\" (line 12); every VPC needs its own VNI");
}

TEST(FabricValidation, VpcNameUsedTwice) {
    expect_error(kBaseFabric + "\n[[vpc]]\nname = \"blue\"\nvni = 200\ncidr = \"10.1.0.0/24\"\ngateway = \"10.1.0.1\"\n",
                 "t.toml:23: vpc[1].name: VPC \"blue\" is defined twice (first at line 11); VPC names must be unique");
}

TEST(FabricValidation, VniOfTheWrongType) {
    expect_error(replace_once(kBaseFabric, "vni = 100", "vni = \"100\""),
                 "t.toml:12: vpc[0].vni: expected an integer, found a string; e.g. vni = 100");
}

TEST(FabricValidation, EndpointOnUnknownNode) {
    expect_error(kBaseFabric + replace_once(kSecondEndpoint, "node2", "node3"),
                 "t.toml:25: vpc[0].endpoint[1].node: no node named \"node3\"; name [node] or one of [[nodes]]: "
                 "node1, node2");
}

TEST(FabricValidation, LocalEndpointWithoutTenantPort) {
    expect_error(replace_once(kBaseFabric, "port = \"tap1\"\n", ""),
                 "t.toml:16: vpc[0].endpoint[0].port: endpoint 10.0.0.10 is on this node (node1) but has no tenant "
                 "port; add port = \"<interface>\", e.g. port = \"tap-blue\"");
}

TEST(FabricValidation, TwoEndpointsOnOneTenantPort) {
    expect_error(kBaseFabric + replace_once(kSecondEndpoint, "node = \"node2\"", "node = \"node1\"\nport = \"tap1\""),
                 "t.toml:26: vpc[0].endpoint[1].port: port \"tap1\" already carries endpoint 10.0.0.10 of VPC \"blue\" "
                 "(line 16); each tenant port carries one endpoint");
}

TEST(FabricValidation, BadTenantPortName) {
    expect_error(replace_once(kBaseFabric, "\"tap1\"", "\"a-very-long-port-name\""),
                 "t.toml:20: vpc[0].endpoint[0].port: \"a-very-long-port-name\" is not a valid interface name; Linux "
                 "interface names are 1 to 15 characters without '/', ':' or spaces");
}

TEST(FabricValidation, GatewayCollidesWithAnEndpoint) {
    expect_error(replace_once(kBaseFabric, "\"10.0.0.10\"", "\"10.0.0.1\""),
                 "t.toml:17: vpc[0].endpoint[0].ip: 10.0.0.1 is the gateway address of VPC \"blue\" (line 14); give "
                 "the endpoint another address, or move the VPC's gateway");
}

TEST(FabricValidation, GatewayOutsideTheCidr) {
    expect_error(replace_once(kBaseFabric, "gateway = \"10.0.0.1\"", "gateway = \"10.0.1.1\""),
                 "t.toml:14: vpc[0].gateway: 10.0.1.1 is outside the VPC's CIDR 10.0.0.0/24; pick an address inside "
                 "it, conventionally the first host address");
}

TEST(FabricValidation, MtuTheOverlayCannotCarry) {
    expect_error(replace_once(kBaseFabric, "gateway = \"10.0.0.1\"", "gateway = \"10.0.0.1\"\nmtu = 1500"),
                 "t.toml:15: vpc[0].mtu: mtu 1500 does not fit the overlay: underlay_mtu 1500 minus 50 bytes of "
                 "encapsulation leaves 1450; use at most 1450, or raise [node] underlay_mtu");
}

TEST(FabricValidation, MtuTooSmall) {
    expect_error(replace_once(kBaseFabric, "gateway = \"10.0.0.1\"", "gateway = \"10.0.0.1\"\nmtu = 500"),
                 "t.toml:15: vpc[0].mtu: mtu 500 is too small; use 576 to 1450");
}

TEST(FabricValidation, MissingRequiredKey) {
    expect_error(replace_once(kBaseFabric, "gateway = \"10.0.0.1\"\n", ""),
                 "t.toml:10: vpc[0].gateway: missing required key; add it, e.g. gateway = \"10.0.0.10\"");
}

TEST(FabricValidation, MissingNodeSection) {
    EXPECT_EQ(errors_of("[[vpc]]\nname = \"blue\"\nvni = 1\ncidr = \"10.0.0.0/24\"\ngateway = \"10.0.0.1\"\n"),
              std::vector<std::string>{"t.toml:1: node: missing required key; add it, e.g. a [node] section"});
}

TEST(FabricValidation, SingleBracketsWhereSeveralEntriesBelong) {
    expect_error(replace_once(kBaseFabric, "[[nodes]]", "[nodes]"),
                 "t.toml:6: nodes: expected an array of tables, found a table; write each entry under its own "
                 "[[nodes]] header (double brackets)");
}

TEST(FabricValidation, BadEncapsulation) {
    expect_error(replace_once(kBaseFabric, "underlay = \"eth1\"", "underlay = \"eth1\"\nencap = \"geneve\""),
                 "t.toml:4: node.encap: \"geneve\" is not a supported encapsulation; expected \"andromeda\" or \"vxlan\"");
}

TEST(FabricValidation, UnderlayMtuOutOfRange) {
    expect_error(replace_once(kBaseFabric, "underlay = \"eth1\"", "underlay = \"eth1\"\nunderlay_mtu = 100"),
                 "t.toml:4: node.underlay_mtu: 100 is out of range; underlay_mtu is 626 to 9216");
}

TEST(FabricValidation, BadNodeName) {
    expect_error(replace_once(kBaseFabric, "name = \"node2\"", "name = \"node 2\""),
                 "t.toml:7: nodes[0].name: \"node 2\" is not a valid name; use 1 to 64 letters, digits, '-', '_' or '.'");
}

TEST(FabricValidation, DuplicateNodeName) {
    expect_error(kBaseFabric + "\n[[nodes]]\nname = \"node2\"\naddress = \"192.168.1.3\"\n",
                 "t.toml:23: nodes[1].name: node \"node2\" is defined twice (first at line 7); node names must be unique");
}

TEST(FabricValidation, DuplicateNodeAddress) {
    expect_error(kBaseFabric + "\n[[nodes]]\nname = \"node3\"\naddress = \"192.168.1.2\"\n",
                 "t.toml:24: nodes[1].address: 192.168.1.2 is already the address of node \"node2\" (line 8); every "
                 "node needs its own underlay address");
}

TEST(FabricValidation, ThisNodeListedWithAnotherAddress) {
    expect_error(kBaseFabric + "\n[[nodes]]\nname = \"node1\"\naddress = \"192.168.1.9\"\n",
                 "t.toml:24: nodes[1].address: 192.168.1.9 differs from this node's [node] address 192.168.1.1; give "
                 "node \"node1\" one address, or leave it out of [[nodes]]");
}

TEST(FabricValidation, RelativePinDir) {
    expect_error(replace_once(kBaseFabric, "underlay = \"eth1\"", "underlay = \"eth1\"\npin_dir = \"bpf/x\""),
                 "t.toml:4: node.pin_dir: \"bpf/x\" is not an absolute path; e.g. pin_dir = "
                 "\"/sys/fs/bpf/andromeda/node1\"");
}

const std::string kNat = R"(
[vpc.nat]
gateway_node = "node2"
address = "203.0.113.10"

[[vpc.nat.forward]]
protocol = "tcp"
nat_port = 8080
to = "10.0.0.10:80"
)";

std::string with_nat(const std::string& nat) {
    return replace_once(kBaseFabric, "gateway = \"10.0.0.1\"\n", "gateway = \"10.0.0.1\"\n" + nat);
}

TEST(FabricValidation, NatIsValid) { EXPECT_TRUE(errors_of(with_nat(kNat)).empty()); }

TEST(FabricValidation, NatOnUnknownGatewayNode) {
    expect_error(with_nat(replace_once(kNat, "\"node2\"", "\"gw9\"")),
                 "t.toml:17: vpc[0].nat.gateway_node: no node named \"gw9\"; name [node] or one of [[nodes]]: node1, "
                 "node2");
}

TEST(FabricValidation, ThisNodeIsNatGatewayWithoutUplink) {
    expect_error(with_nat(replace_once(kNat, "\"node2\"", "\"node1\"")),
                 "t.toml:17: vpc[0].nat.gateway_node: this node (node1) is the NAT gateway but has no uplink; add a "
                 "[node.uplink] section naming the outside interface");
}

TEST(FabricValidation, NatForwardToSomethingNotAnEndpoint) {
    expect_error(with_nat(replace_once(kNat, "10.0.0.10:80", "10.0.0.99:80")),
                 "t.toml:23: vpc[0].nat.forward[0].to: 10.0.0.99 is not an endpoint of VPC \"blue\"; forward to the ip "
                 "of one of the VPC's [[vpc.endpoint]] entries");
}

TEST(FabricValidation, NatPortForwardedTwice) {
    expect_error(with_nat(kNat + "\n[[vpc.nat.forward]]\nprotocol = \"tcp\"\nnat_port = 8080\nto = \"10.0.0.10:81\"\n"),
                 "t.toml:27: vpc[0].nat.forward[1].nat_port: tcp port 8080 of 203.0.113.10 is already forwarded "
                 "(line 22); each NAT address and port forwards to one endpoint");
}

TEST(FabricValidation, NatForwardBadDestinationAndProtocol) {
    EXPECT_EQ(errors_of(with_nat(replace_once(replace_once(kNat, "10.0.0.10:80", "10.0.0.10"), "\"tcp\"", "\"icmp\""))),
              (std::vector<std::string>{
                  "t.toml:21: vpc[0].nat.forward[0].protocol: \"icmp\" is not a forwardable protocol; expected "
                  "\"tcp\" or \"udp\"",
                  "t.toml:23: vpc[0].nat.forward[0].to: \"10.0.0.10\" is not an endpoint address and port; expected "
                  "\"<endpoint ip>:<port>\" such as \"10.0.0.10:80\""}));
}

TEST(FabricValidation, NatBadPortRange) {
    expect_error(with_nat(replace_once(kNat, "address = \"203.0.113.10\"", "address = \"203.0.113.10\"\nport_range = [2000, 1000]")),
                 "t.toml:19: vpc[0].nat.port_range: expected [first, last] with 1 <= first <= last <= 65535; e.g. "
                 "port_range = [1024, 65535]");
}

TEST(FabricValidation, SyntaxErrorNamesFileAndLine) {
    const auto errors = errors_of(replace_once(kBaseFabric, "vni = 100", "vni = = 100"));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].rfind("t.toml:12: TOML syntax error: ", 0), 0u) << errors[0];
    EXPECT_NE(errors[0].find("; the file must be valid TOML 1.0 (https://toml.io)"), std::string::npos) << errors[0];
}

TEST(FabricValidation, UnterminatedStringIsASyntaxError) {
    const auto errors = errors_of(replace_once(kBaseFabric, "\"node2\"", "\"node2"));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].rfind("t.toml:7: TOML syntax error: ", 0), 0u) << errors[0];
}

TEST(FabricValidation, TableDefinedTwiceIsASyntaxErrorAtTheSecondDefinition) {
    expect_error(kBaseFabric + "[node]\nname = \"x\"\n",
                 "t.toml:21: TOML syntax error: table (\"node\") already exists (first at line 1); the file must be "
                 "valid TOML 1.0 (https://toml.io)");
}

TEST(FabricValidation, AbsurdNestingIsRefusedBeforeParsing) {
    expect_error(kBaseFabric + "x = " + std::string(100, '[') + std::string(100, ']') + "\n",
                 "t.toml: arrays or inline tables nested more than 32 levels deep; node.toml needs at most 2 levels");
}

TEST(FabricValidation, InvalidUtf8IsRefusedBeforeParsing) {
    expect_error(replace_once(kBaseFabric, "name = \"blue\"", "name = 'bl\x80" "e'"),
                 "t.toml:11: invalid UTF-8 (byte 0x80); TOML files must be UTF-8; re-save the file as UTF-8");
}

TEST(FabricValidation, HugeIntegerIsOutOfRangeNotOverflowed) {
    expect_error(replace_once(kBaseFabric, "vni = 100", "vni = 9223372036854775807"),
                 "t.toml:12: vpc[0].vni: 9223372036854775807 is out of range; a VNI has 24 bits; valid is 1 to 16777215");
}

TEST(FabricValidation, ReportsEveryErrorInFileOrder) {
    std::string text = replace_once(kBaseFabric, "192.168.1.2", "192.168.1.256");
    text = replace_once(text, "vni = 100", "vni = 99999999");
    text = replace_once(text, "02:00:00:00:00:10", "zz");
    text += replace_once(kSecondEndpoint, "node2", "nodeX");
    const auto errors = errors_of(text);
    ASSERT_EQ(errors.size(), 4u);
    EXPECT_EQ(errors[0].substr(0, 10), "t.toml:8: ");
    EXPECT_EQ(errors[1].substr(0, 11), "t.toml:12: ");
    EXPECT_EQ(errors[2].substr(0, 11), "t.toml:18: ");
    EXPECT_EQ(errors[3].substr(0, 11), "t.toml:25: ");
}

TEST(FabricValidation, UnreadableFile) {
    const LoadResult result = load_fabric_file("/nonexistent/node.toml");
    ASSERT_EQ(result.errors.size(), 1u);
    EXPECT_EQ(result.errors[0].to_string(),
              "/nonexistent/node.toml: cannot read the file: No such file or directory; check the path and its "
              "permissions");
}

// VM tenants (docs/vm-tenants.md): an endpoint's DNS name, its port type, the node's resolvers.
TEST(FabricValidation, EndpointNamesAndPortTypesAreDecoded) {
    const LoadResult r = load_fabric_string(kBaseFabric + "name = \"Web-1\"\nport_type = \"tap\"\n", "t.toml");
    ASSERT_TRUE(r.ok()) << to_string(r.errors);
    const Endpoint* e = r.snapshot->find_local_endpoint("tap1");
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->name, "Web-1");
    EXPECT_EQ(e->port_type, PortType::tap);
    const LoadResult plain = load_fabric_string(kBaseFabric, "t.toml");
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(plain.snapshot->find_local_endpoint("tap1")->port_type, PortType::veth);
    EXPECT_TRUE(plain.snapshot->find_local_endpoint("tap1")->name.empty());
}

TEST(FabricValidation, EndpointNameMustBeADnsLabel) {
    expect_error(kBaseFabric + "name = \"web_1\"\n",
                 "t.toml:21: vpc[0].endpoint[0].name: \"web_1\" is not a DNS name label; 1 to 63 letters, "
                 "digits or '-', not starting or ending with '-' (it becomes <name>.blue.internal)");
    EXPECT_EQ(errors_of(kBaseFabric + "name = \"-web\"\n").size(), 1u);
    EXPECT_EQ(errors_of(kBaseFabric + "name = \"" + std::string(64, 'a') + "\"\n").size(), 1u);
    EXPECT_TRUE(errors_of(kBaseFabric + "name = \"" + std::string(63, 'a') + "\"\n").empty());
}

TEST(FabricValidation, EndpointNamesAreUniqueInAVpcWithoutRegardToCase) {
    const std::string second = kSecondEndpoint + "name = \"WEB\"\n";
    const auto errors = errors_of(kBaseFabric + "name = \"web\"\n" + second);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find("\"WEB\" is already the name of endpoint 10.0.0.10 of VPC \"blue\""), std::string::npos)
        << errors[0];
}

TEST(FabricValidation, PortTypeIsVethOrTap) {
    expect_error(kBaseFabric + "port_type = \"macvtap\"\n",
                 "t.toml:21: vpc[0].endpoint[0].port_type: \"macvtap\" is not a port type; \"veth\" (the "
                 "default) or \"tap\" (a VM's port, created when missing)");
}

TEST(FabricValidation, QueuesAreATapsAndBounded) {
    const LoadResult r = load_fabric_string(kBaseFabric + "port_type = \"tap\"\nqueues = 4\n", "t.toml");
    ASSERT_TRUE(r.ok()) << to_string(r.errors);
    EXPECT_EQ(r.snapshot->find_local_endpoint("tap1")->queues, 4u);
    EXPECT_EQ(load_fabric_string(kBaseFabric, "t.toml").snapshot->find_local_endpoint("tap1")->queues, 1u);
    EXPECT_TRUE(errors_of(kBaseFabric + "port_type = \"tap\"\nqueues = 256\n").empty());
    EXPECT_TRUE(errors_of(kBaseFabric + "queues = 1\n").empty()) << "one queue is every port's";
    expect_error(kBaseFabric + "queues = 2\n",
                 "t.toml:21: vpc[0].endpoint[0].queues: queues = 2 on a port that is not a tap; queues is a tap's "
                 "(port_type = \"tap\"); a veth's queues are set where it is created");
    expect_error(kBaseFabric + "port_type = \"tap\"\nqueues = 257\n",
                 "t.toml:22: vpc[0].endpoint[0].queues: 257 is out of range; a tap's queues (QEMU's -netdev "
                 "tap,queues=N) is 1 to 256");
}

TEST(FabricValidation, DnsUpstreamsAreAddressesWithOptionalPorts) {
    const std::string with = replace_once(
        kBaseFabric, "underlay = ", "dns_upstreams = [\"192.0.2.53\", \"127.0.0.1:5353\", \"2001:db8::1\", \"[::1]:53\"]\nunderlay = ");
    const LoadResult r = load_fabric_string(with, "t.toml");
    ASSERT_TRUE(r.ok()) << to_string(r.errors);
    const auto& u = r.snapshot->local().dns_upstreams;
    ASSERT_TRUE(u.has_value());
    ASSERT_EQ(u->size(), 4u);
    EXPECT_EQ(std::get<Ipv4Address>((*u)[0].address).to_string(), "192.0.2.53");
    EXPECT_EQ((*u)[0].port, 53);
    EXPECT_EQ((*u)[1].port, 5353);
    EXPECT_EQ((*u)[2].address.index(), 1u);
    EXPECT_EQ((*u)[3].port, 53);
    EXPECT_FALSE(load_fabric_string(kBaseFabric, "t.toml").snapshot->local().dns_upstreams.has_value());
    for (const char* bad : {"\"192.0.2.53:0\"", "\"dns.example\"", "\"[::1\"", "\"1.2.3.4:\"", "53"}) {
        const auto errors =
            errors_of(replace_once(kBaseFabric, "underlay = ", std::string("dns_upstreams = [") + bad + "]\nunderlay = "));
        ASSERT_EQ(errors.size(), 1u) << bad;
        EXPECT_NE(errors[0].find("node.dns_upstreams"), std::string::npos) << errors[0];
    }
}

// Dual stack (issue 30): a VPC's IPv6 /64, and endpoints with an address in it, given or the
// EUI-64 one SLAAC derives from the MAC.
TEST(FabricValidation, AVpcsIpv6PrefixNumbersItsEndpointsGivenOrByEui64) {
    const std::string dual = replace_once(kBaseFabric, "cidr = \"10.0.0.0/24\"",
                                          "cidr = \"10.0.0.0/24\"\nipv6_prefix = \"fd00:0:0:1::/64\"");
    LoadResult r = load_fabric_string(dual + "ipv6 = \"eui64\"\n", "t.toml");
    ASSERT_TRUE(r.ok()) << to_string(r.errors);
    ASSERT_TRUE(r.snapshot->vpcs()[0].ipv6_prefix.has_value());
    EXPECT_EQ(r.snapshot->vpcs()[0].ipv6_prefix->to_string(), "fd00:0:0:1::/64");
    const Endpoint* e = r.snapshot->find_local_endpoint("tap1");
    ASSERT_TRUE(e != nullptr && e->ipv6.has_value());
    EXPECT_EQ(e->ipv6->to_string(), "fd00::1:0:ff:fe00:10")  // fd00:0:0:1:0:ff:fe00:10, as RFC 5952 writes it
        << "02:00:00:00:00:10, its U/L bit flipped, ff:fe inside";

    r = load_fabric_string(dual + "ipv6 = \"fd00:0:0:1::a\"\n", "t.toml");
    ASSERT_TRUE(r.ok()) << to_string(r.errors);
    EXPECT_EQ(r.snapshot->find_local_endpoint("tap1")->ipv6->to_string(), "fd00:0:0:1::a");
    EXPECT_FALSE(load_fabric_string(dual, "t.toml").snapshot->find_local_endpoint("tap1")->ipv6.has_value())
        << "an endpoint without ipv6 stays IPv4-only in a dual-stack VPC";
    EXPECT_FALSE(load_fabric_string(kBaseFabric, "t.toml").snapshot->vpcs()[0].ipv6_prefix.has_value());
}

TEST(FabricValidation, Ipv6PrefixesAndAddressesThatCannotBeAreRefusedWithTheFix) {
    const auto with_prefix = [](const std::string& prefix) {
        return replace_once(kBaseFabric, "cidr = \"10.0.0.0/24\"", "cidr = \"10.0.0.0/24\"\nipv6_prefix = \"" + prefix + "\"");
    };
    const auto one_error_with = [](const std::string& text, const std::string& part) {
        const auto errors = errors_of(text);
        ASSERT_EQ(errors.size(), 1u) << ::testing::PrintToString(errors);
        EXPECT_NE(errors[0].find(part), std::string::npos) << errors[0];
    };
    one_error_with(with_prefix("fd00::/48"), "vpc[0].ipv6_prefix: \"fd00::/48\" is a /48; a VPC's IPv6 prefix is a /64");
    one_error_with(with_prefix("fd00::1/64"), "is not an IPv6 prefix with its host bits clear");
    one_error_with(with_prefix("fe80::/64"), "is not a prefix tenants can be numbered from");
    one_error_with(with_prefix("ff02::/64"), "is not a prefix tenants can be numbered from");
    one_error_with(replace_once(with_prefix("fd00:0:0:1::/64"), "ipv6_prefix", "mtu = 1200\nipv6_prefix"),
                   "its mtu 1200 is below IPv6's minimum link MTU, 1280");
    one_error_with(kBaseFabric + "ipv6 = \"eui64\"\n",
                   "vpc[0].endpoint[0].ipv6: VPC \"blue\" has no ipv6_prefix; give the VPC one");
    const std::string dual = with_prefix("fd00:0:0:1::/64");
    one_error_with(dual + "ipv6 = \"fd00:0:0:2::a\"\n", "fd00:0:0:2::a is outside VPC \"blue\"'s fd00:0:0:1::/64");
    one_error_with(dual + "ipv6 = \"fd00:0:0:1::\"\n", "is the subnet-router anycast address of VPC");
    one_error_with(dual + "ipv6 = \"10.0.0.10\"\n", "\"10.0.0.10\" is not an IPv6 address");
    // Unique in the VPC: a second endpoint with the first's address.
    one_error_with(dual + "ipv6 = \"fd00:0:0:1::a\"\n" + kSecondEndpoint + "ipv6 = \"fd00:0:0:1::a\"\n",
                   "fd00:0:0:1::a is already the IPv6 address of endpoint 10.0.0.10 of VPC \"blue\"");
    // The prefix is the VPC's own: a bad one is reported once, not again for every endpoint.
    one_error_with(with_prefix("nonsense") + "ipv6 = \"eui64\"\n", "\"nonsense\" is not an IPv6 prefix");
}

// The gateway's IPv6 side (issue 30): its global address, the RA's DNS servers and its settings.
TEST(FabricValidation, TheGatewaysIpv6AddressDnsServersAndRaSettingsAreReadAndChecked) {
    const auto vpc_keys = [](const std::string& keys, const std::string& base = kBaseFabric) {
        return replace_once(base, "cidr = \"10.0.0.0/24\"", "cidr = \"10.0.0.0/24\"\n" + keys);
    };
    const auto ra_table = [](const std::string& base, const std::string& keys) {
        return replace_once(base, "[[vpc.endpoint]]", "[vpc.router_advertisements]\n" + keys + "\n\n[[vpc.endpoint]]");
    };
    const std::string dual = vpc_keys("ipv6_prefix = \"fd00:0:0:1::/64\"");
    const std::string full = ra_table(
        vpc_keys("ipv6_prefix = \"fd00:0:0:1::/64\"\nipv6_gateway = \"fd00:0:0:1::1\"\n"
                 "dns6 = [\"fd00:0:0:1::53\", \"2001:db8::53\"]"),
        "max_interval = 30\nrouter_lifetime = 90\nrouter_preference = \"high\"\nmanaged = true\nhop_limit = 32");
    const LoadResult r = load_fabric_string(full, "t.toml");
    ASSERT_TRUE(r.ok()) << to_string(r.errors);
    const Vpc& v = r.snapshot->vpcs()[0];
    ASSERT_TRUE(v.ipv6_gateway.has_value());
    EXPECT_EQ(v.ipv6_gateway->to_string(), "fd00:0:0:1::1");
    ASSERT_EQ(v.dns6.size(), 2u);
    EXPECT_EQ(v.dns6[1].to_string(), "2001:db8::53");
    EXPECT_EQ(v.router_advertisements.max_interval_s, 30u);
    EXPECT_EQ(v.router_advertisements.router_lifetime_s, 90u);
    EXPECT_EQ(v.router_advertisements.router_preference, wire::router_preference::kHigh);
    EXPECT_TRUE(v.router_advertisements.managed);
    EXPECT_EQ(v.router_advertisements.current_hop_limit, 32u);
    EXPECT_TRUE(v.router_advertisements.on_link);  // what is not given keeps RFC 4861's default
    EXPECT_EQ(v.router_advertisements.valid_lifetime_s, 2'592'000u);
    EXPECT_EQ(load_fabric_string(dual, "t.toml").snapshot->vpcs()[0].router_advertisements,
              gateway::RouterAdvertisementConfig{});

    const auto one_error_with = [](const std::string& text, const std::string& part) {
        const auto errors = errors_of(text);
        ASSERT_EQ(errors.size(), 1u) << ::testing::PrintToString(errors);
        EXPECT_NE(errors[0].find(part), std::string::npos) << errors[0];
    };
    one_error_with(vpc_keys("ipv6_gateway = \"fd00:0:0:1::1\""),
                   "vpc[0].ipv6_gateway: VPC \"blue\" has no ipv6_prefix; give the VPC one");
    one_error_with(ra_table(kBaseFabric, "max_interval = 30"), "vpc[0].router_advertisements: VPC \"blue\" has no ipv6_prefix");
    one_error_with(vpc_keys("ipv6_gateway = \"fd00:0:0:2::1\"", dual), "vpc[0].ipv6_gateway: gateway address fd00:0:0:2::1 is outside the prefix");
    one_error_with(vpc_keys("ipv6_gateway = \"fd00:0:0:1::\"", dual), "Subnet-Router anycast address");
    one_error_with(vpc_keys("ipv6_gateway = \"gateway\"", dual), "\"gateway\" is not an IPv6 address");
    one_error_with(vpc_keys("dns6 = [\"ff02::1\"]", dual), "vpc[0].dns6: DNS server ff02::1 is not a unicast address");
    one_error_with(vpc_keys("dns6 = [\"resolver\"]", dual), "vpc[0].dns6: \"resolver\" is not an IPv6 address");
    one_error_with(vpc_keys("dns6 = \"2001:db8::53\"", dual), "vpc[0].dns6: expected an array of IPv6 addresses");
    one_error_with(ra_table(dual, "router_lifetime = 300"),
                   "vpc[0].router_advertisements: router_lifetime 300 s must be 0 (not a default router) or 600 "
                   "(max_interval) to 9000 s");
    one_error_with(ra_table(dual, "max_interval = 2"), "max_interval 2 s is outside 4 to 1800 s");
    one_error_with(ra_table(dual, "preferred_lifetime = 90000\nvalid_lifetime = 80000"),
                   "preferred_lifetime 90000 s is longer than valid_lifetime 80000 s");
    one_error_with(ra_table(dual, "router_preference = \"highest\""),
                   "vpc[0].router_advertisements.router_preference: \"highest\" is not a preference");
    one_error_with(ra_table(dual, "max_intervall = 30"), "max_intervall");
    // An endpoint cannot have the gateway's address.
    one_error_with(vpc_keys("ipv6_gateway = \"fd00:0:0:1::a\"", dual) + "ipv6 = \"fd00:0:0:1::a\"\n",
                   "vpc[0].endpoint[0].ipv6: fd00:0:0:1::a is VPC \"blue\"'s ipv6_gateway");
}

}  // namespace
}  // namespace andromeda::fabric
