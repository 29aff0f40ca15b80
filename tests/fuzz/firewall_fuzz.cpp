// The security groups' stateful firewall on untrusted bytes: arbitrary IPv4 and IPv6 packets judged
// at the endpoints of a dual-stack fabric with groups (tests/unit/policy/policy_fabric.hpp). Never a crash or an
// out-of-bounds read (ASan), and a verdict is stable: the same packet judged again at once, at
// the same endpoint and in the same direction, is allowed exactly when it was the first time
// (an allowed one opened or continued its flow; a denied one changed nothing). The same bytes go
// through wire::finish_offloaded_checksum, whose finished checksums must verify.
//
// Input: byte 0 picks the endpoint (low 2 bits) and the direction (bit 2); the rest is the packet.
// Seeds: tests/fuzz/corpus/firewall (make_seeds.py there).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <vector>

#include "policy/firewall.hpp"
#include "unit/policy/policy_fabric.hpp"
#include "wire/checksum.hpp"

namespace {

using namespace andromeda;

const std::string kGroups = R"([[vpc.security_group]]
name = "web"
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "tcp"
ports = [80, "8000-8099"]
remote_groups = ["app"]
priority = 100
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "icmp"
icmp_type = 8
priority = 110
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "icmpv6"
icmp_type = 128
remote_cidrs = ["fd00:0:0:100::/120"]
priority = 111
[[vpc.security_group.rule]]
direction = "egress"
action = "deny"
protocol = "udp"
ports = [53]
remote_cidrs = ["10.0.0.0/25", "fd00:0:0:100::/121"]
priority = 50
[[vpc.security_group]]
name = "app"
)";

struct World {
    std::shared_ptr<const fabric::FabricSnapshot> snapshot =
        policy::testing::load(policy::testing::blue_fabric(kGroups, {R"(["web"])", R"(["app"])", R"(["web", "app"])"}));
    policy::Firewall firewall;
    std::shared_ptr<const policy::CompiledPolicy> compiled = firewall.policy_for(*snapshot);
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static World world;
    if (size < 1) return 0;
    const auto endpoints = world.snapshot->endpoints();
    const fabric::Endpoint& e = endpoints[data[0] & 3];
    const auto direction = (data[0] & 4) != 0 ? policy::PolicyDirection::egress : policy::PolicyDirection::ingress;
    const wire::ByteSpan packet(data + 1, size - 1);
    const policy::CheckResult first = world.firewall.check(*world.compiled, e, direction, packet);
    const policy::CheckResult again = world.firewall.check(*world.compiled, e, direction, packet);
    if (first.allowed != again.allowed) {
        std::fprintf(stderr, "firewall_fuzz: %s then %s for the same packet\n", policy::to_string(first.outcome),
                     policy::to_string(again.outcome));
        std::abort();
    }
    if (first.rule >= world.compiled->rules().size() && (first.outcome == policy::Outcome::opened ||
                                                         first.outcome == policy::Outcome::denied)) {
        std::fprintf(stderr, "firewall_fuzz: rule %u of %zu\n", first.rule, world.compiled->rules().size());
        std::abort();
    }
    // The pipeline's completion of an offloaded checksum (wire::finish_offloaded_checksum), on the
    // same bytes: in bounds, and what it finishes verifies.
    std::vector<std::uint8_t> copy(packet.begin(), packet.end());
    if (wire::finish_offloaded_checksum(copy) && (copy[0] >> 4) == 6) {
        const std::size_t payload = wire::load_be16(copy.data() + 4);
        const std::uint64_t pseudo = wire::pseudo_header_sum(wire::Ipv6Address::from_bytes(copy.data() + 8),
                                                             wire::Ipv6Address::from_bytes(copy.data() + 24), copy[6],
                                                             static_cast<std::uint32_t>(payload));
        if (!wire::checksum_verifies(wire::ByteSpan(copy.data() + 40, payload), pseudo)) {
            std::fprintf(stderr, "firewall_fuzz: a finished IPv6 checksum does not verify\n");
            std::abort();
        }
    } else if ((copy.empty() || (copy[0] >> 4) != 6) && wire::finish_offloaded_checksum(copy)) {
        const std::size_t ihl = static_cast<std::size_t>(copy[0] & 0x0f) * 4;
        const std::size_t total = wire::load_be16(copy.data() + 2);
        const wire::ByteSpan l4(copy.data() + ihl, total - ihl);
        const std::uint64_t pseudo = wire::pseudo_header_sum(wire::Ipv4Address(wire::load_be32(copy.data() + 12)),
                                                             wire::Ipv4Address(wire::load_be32(copy.data() + 16)),
                                                             copy[9], static_cast<std::uint32_t>(l4.size()));
        if (!wire::checksum_verifies(l4, pseudo)) {
            std::fprintf(stderr, "firewall_fuzz: a finished checksum does not verify\n");
            std::abort();
        }
    }
    return 0;
}
