// The policy generation of a VPC with security groups: a fingerprint of everything its rules'
// decisions depend on (its groups and rules, its defaults, and which addresses are members of
// which group). The kernel's flow cache keeps, with each flow the pipeline's firewall allowed, the
// generation it was allowed under, and the VPC's entry in andromeda_vnis holds the current one:
// a reload that changes any of it makes every cached flow of that VPC a miss at once (judged
// again by the pipeline, which installs it anew where it is still allowed); a reload that changes
// none of it keeps them. A function of the fabric alone, so a restarted daemon computes the same.
// Members count by both their addresses: the kernel caches IPv4 and IPv6 flows.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "fabric/snapshot.hpp"

namespace andromeda::fabric {

// VNI -> generation (never 0), for each VPC with a firewall (Vpc::firewall()).
[[nodiscard]] std::unordered_map<std::uint32_t, std::uint32_t> policy_generations(const FabricSnapshot& snapshot);

}  // namespace andromeda::fabric
