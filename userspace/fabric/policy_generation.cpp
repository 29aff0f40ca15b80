#include "fabric/policy_generation.hpp"

#include <algorithm>
#include <array>
#include <tuple>
#include <string>
#include <utility>
#include <vector>

namespace andromeda::fabric {

namespace {

// FNV-1a, 64 bits, over the fields one by one (each with its length, so that no two different
// sequences of fields feed the same bytes).
class Fingerprint {
public:
    void add(std::uint64_t v) noexcept {
        for (int i = 0; i < 8; ++i) byte(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    void add(const std::array<std::uint8_t, 16>& address) noexcept {
        for (const std::uint8_t b : address) byte(b);
    }
    void add(const std::string& s) noexcept {
        add(s.size());
        for (const char c : s) byte(static_cast<std::uint8_t>(c));
    }
    [[nodiscard]] std::uint32_t value() const noexcept {
        const auto folded = static_cast<std::uint32_t>(h_ ^ (h_ >> 32));
        return folded == 0 ? 1 : folded;
    }

private:
    void byte(std::uint8_t b) noexcept { h_ = (h_ ^ b) * 0x100000001B3ull; }
    std::uint64_t h_ = 0xCBF29CE484222325ull;
};

void add_rules(Fingerprint& f, const Vpc& vpc) {
    for (const auto d : {PolicyDirection::ingress, PolicyDirection::egress})
        f.add(static_cast<std::uint64_t>(vpc.default_action(d)));
    f.add(vpc.security_groups.size());
    for (const SecurityGroup& g : vpc.security_groups) {
        f.add(g.name);
        f.add(g.rules.size());
        for (const SecurityRule& r : g.rules) {
            f.add((std::uint64_t{static_cast<std::uint8_t>(r.direction)} << 8) | static_cast<std::uint8_t>(r.action));
            f.add((std::uint64_t{r.priority} << 8) | static_cast<std::uint8_t>(r.protocol));
            f.add((std::uint64_t{static_cast<std::uint16_t>(r.icmp_type)} << 16) | static_cast<std::uint16_t>(r.icmp_code));
            f.add(r.ports.size());
            for (const PortRange& p : r.ports) f.add((std::uint64_t{p.first} << 16) | p.last);
            f.add(r.remote_cidrs.size());
            for (const auto& c : r.remote_cidrs) f.add((std::uint64_t{c.network().value()} << 8) | c.length());
            f.add(r.remote_cidrs6.size());
            for (const auto& c : r.remote_cidrs6) {
                f.add(c.network().bytes());
                f.add(c.length());
            }
            f.add(r.remote_groups.size());
            for (const std::string& name : r.remote_groups) f.add(name);
        }
    }
}

}  // namespace

std::unordered_map<std::uint32_t, std::uint32_t> policy_generations(const FabricSnapshot& snapshot) {
    // The members of each firewall VPC's groups: (address, groups), sorted, so that the order the
    // fabric lists its endpoints in does not matter.
    struct Member {
        std::uint32_t ip = 0;
        std::array<std::uint8_t, 16> ip6{};  // all zero: none
        const std::vector<std::string>* groups = nullptr;
    };
    std::unordered_map<std::uint32_t, std::vector<Member>> members;
    for (const Vpc& vpc : snapshot.vpcs())
        if (vpc.firewall()) members[vpc.vni];
    if (members.empty()) return {};
    for (const Endpoint& e : snapshot.endpoints()) {
        if (e.groups.empty()) continue;
        const auto it = members.find(e.vni);
        if (it != members.end()) it->second.push_back({e.ip.value(), e.ipv6 ? e.ipv6->bytes() : std::array<std::uint8_t, 16>{}, &e.groups});
    }
    std::unordered_map<std::uint32_t, std::uint32_t> generations;
    for (const Vpc& vpc : snapshot.vpcs()) {
        if (!vpc.firewall()) continue;
        Fingerprint f;
        add_rules(f, vpc);
        auto& list = members[vpc.vni];
        std::sort(list.begin(), list.end(), [](const Member& a, const Member& b) {
            return std::tie(a.ip, a.ip6, *a.groups) < std::tie(b.ip, b.ip6, *b.groups);
        });
        f.add(list.size());
        for (const Member& m : list) {
            f.add(m.ip);
            f.add(m.ip6);
            std::vector<std::string> sorted = *m.groups;
            std::sort(sorted.begin(), sorted.end());
            f.add(sorted.size());
            for (const std::string& g : sorted) f.add(g);
        }
        generations[vpc.vni] = f.value();
    }
    return generations;
}

}  // namespace andromeda::fabric
