// The layout of every struct BPF and C++ share (shared/andromeda_kern_user.h), pinned down: the
// XDP and tc programs and the daemon read the same map bytes, so a field that moves, grows or
// gains padding must break this build rather than the maps. Nothing here runs.
#include <cstddef>

#include "andromeda_kern_user.h"
#include "andromeda_nat_kern_user.h"
#include "andromeda_policy_kern_user.h"

namespace andromeda::io {
namespace {

static_assert(sizeof(andromeda_port) == 44);
static_assert(offsetof(andromeda_port, role) == 0 && offsetof(andromeda_port, slot) == 4 &&
              offsetof(andromeda_port, vni) == 8 && offsetof(andromeda_port, ip) == 12 &&
              offsetof(andromeda_port, mac) == 16 && offsetof(andromeda_port, flags) == 22 &&
              offsetof(andromeda_port, link) == 24 && offsetof(andromeda_port, ip6) == 28);

static_assert(sizeof(andromeda_peer) == 28);
static_assert(sizeof(andromeda_peer_mtu) == 16);
static_assert(offsetof(andromeda_peer_mtu, mtu) == 0 && offsetof(andromeda_peer_mtu, expires_ns) == 8);
static_assert(offsetof(andromeda_peer, node_id) == 0 && offsetof(andromeda_peer, mac) == 4 &&
              offsetof(andromeda_peer, mac_known) == 10 && offsetof(andromeda_peer, ip6) == 12);

static_assert(sizeof(andromeda_vni) == 28);
static_assert(offsetof(andromeda_vni, vpc_id) == 0 && offsetof(andromeda_vni, mtu) == 4 &&
              offsetof(andromeda_vni, gateway) == 8 && offsetof(andromeda_vni, gateway_mac) == 12 &&
              offsetof(andromeda_vni, flags) == 18 && offsetof(andromeda_vni, nat_node_ip) == 20 &&
              offsetof(andromeda_vni, policy_generation) == 24);

static_assert(sizeof(andromeda_policy_flow_key) == 20);
static_assert(offsetof(andromeda_policy_flow_key, vni) == 0 && offsetof(andromeda_policy_flow_key, saddr) == 4 &&
              offsetof(andromeda_policy_flow_key, daddr) == 8 && offsetof(andromeda_policy_flow_key, sport) == 12 &&
              offsetof(andromeda_policy_flow_key, dport) == 14 && offsetof(andromeda_policy_flow_key, protocol) == 16 &&
              offsetof(andromeda_policy_flow_key, direction) == 17);
static_assert(sizeof(andromeda_policy_flow6_key) == 44);
static_assert(offsetof(andromeda_policy_flow6_key, vni) == 0 && offsetof(andromeda_policy_flow6_key, saddr) == 4 &&
              offsetof(andromeda_policy_flow6_key, daddr) == 20 && offsetof(andromeda_policy_flow6_key, sport) == 36 &&
              offsetof(andromeda_policy_flow6_key, dport) == 38 && offsetof(andromeda_policy_flow6_key, protocol) == 40 &&
              offsetof(andromeda_policy_flow6_key, direction) == 41);
static_assert(sizeof(andromeda_policy_flow) == 24);
static_assert(offsetof(andromeda_policy_flow, generation) == 0 && offsetof(andromeda_policy_flow, rule) == 4 &&
              offsetof(andromeda_policy_flow, flags) == 8 && offsetof(andromeda_policy_flow, last_seen_ns) == 16);

static_assert(sizeof(andromeda_vpc_cidr_key) == 12);
static_assert(offsetof(andromeda_vpc_cidr_key, prefixlen) == 0 && offsetof(andromeda_vpc_cidr_key, vni) == 4 &&
              offsetof(andromeda_vpc_cidr_key, ip) == 8);

static_assert(sizeof(andromeda_nat_key) == 20);
static_assert(offsetof(andromeda_nat_key, src) == 0 && offsetof(andromeda_nat_key, dst) == 4 &&
              offsetof(andromeda_nat_key, sport) == 8 && offsetof(andromeda_nat_key, dport) == 10 &&
              offsetof(andromeda_nat_key, vni) == 12 && offsetof(andromeda_nat_key, protocol) == 16 &&
              offsetof(andromeda_nat_key, direction) == 17);
static_assert(sizeof(andromeda_nat_entry) == 48);
static_assert(offsetof(andromeda_nat_entry, vni) == 0 && offsetof(andromeda_nat_entry, tenant_ip) == 4 &&
              offsetof(andromeda_nat_entry, nat_ip) == 8 && offsetof(andromeda_nat_entry, remote_ip) == 12 &&
              offsetof(andromeda_nat_entry, tenant_port) == 16 && offsetof(andromeda_nat_entry, nat_port) == 18 &&
              offsetof(andromeda_nat_entry, remote_port) == 20 && offsetof(andromeda_nat_entry, protocol) == 22 &&
              offsetof(andromeda_nat_entry, flags) == 23 && offsetof(andromeda_nat_entry, last_used_ns) == 24 &&
              offsetof(andromeda_nat_entry, packets) == 32 && offsetof(andromeda_nat_entry, bytes) == 40);

static_assert(sizeof(andromeda_fabric_key) == 8);
static_assert(offsetof(andromeda_fabric_key, vni) == 0 && offsetof(andromeda_fabric_key, ip) == 4);
static_assert(sizeof(andromeda_fabric6_key) == 20);
static_assert(offsetof(andromeda_fabric6_key, vni) == 0 && offsetof(andromeda_fabric6_key, ip) == 4);

static_assert(sizeof(andromeda_fabric_entry) == 16);
static_assert(offsetof(andromeda_fabric_entry, node_ip) == 0 && offsetof(andromeda_fabric_entry, mac) == 4 &&
              offsetof(andromeda_fabric_entry, local) == 10 && offsetof(andromeda_fabric_entry, flags) == 11 &&
              offsetof(andromeda_fabric_entry, ifindex) == 12);

static_assert(sizeof(andromeda_fp_config) == 72);
static_assert(sizeof(andromeda_fp_handoff) == 28);
static_assert(offsetof(andromeda_fp_handoff, cookie) == 0 && offsetof(andromeda_fp_handoff, ifindex) == 4 &&
              offsetof(andromeda_fp_handoff, mac) == 8 && offsetof(andromeda_fp_handoff, gateway_mac) == 14 &&
              offsetof(andromeda_fp_handoff, dev) == 20 && offsetof(andromeda_fp_handoff, flags) == 24);
static_assert(offsetof(andromeda_fp_config, enabled) == 0 && offsetof(andromeda_fp_config, underlay_ifindex) == 4 &&
              offsetof(andromeda_fp_config, underlay_ip) == 8 && offsetof(andromeda_fp_config, underlay_mtu) == 12 &&
              offsetof(andromeda_fp_config, underlay_mac) == 16 && offsetof(andromeda_fp_config, encap_headroom) == 22 &&
              offsetof(andromeda_fp_config, handoff_cookie) == 24 &&
              offsetof(andromeda_fp_config, uplink_ifindex) == 28 && offsetof(andromeda_fp_config, uplink_mac) == 32 &&
              offsetof(andromeda_fp_config, uplink_next_hop_mac) == 38 &&
              offsetof(andromeda_fp_config, uplink_next_hop_known) == 44 &&
              offsetof(andromeda_fp_config, underlay_ip6) == 48 && offsetof(andromeda_fp_config, reseg_ifindex) == 64);

static_assert(sizeof(andromeda_punt_limit) == 48);
static_assert(offsetof(andromeda_punt_limit, ifindex) == 4 && offsetof(andromeda_punt_limit, interval_ns) == 8 &&
              offsetof(andromeda_punt_limit, tolerance_ns) == 16 && offsetof(andromeda_punt_limit, next_ns) == 24 &&
              offsetof(andromeda_punt_limit, punted) == 32 && offsetof(andromeda_punt_limit, rate_limited) == 40);

// Counter structs: nothing but __u64 fields, no padding (the per-CPU sums walk them field by field).
#define ANDROMEDA_ONE(field) +1
#define ANDROMEDA_ONE_DROP(name, id, description) +1
static_assert(sizeof(andromeda_xdp_stats) == (0 ANDROMEDA_XDP_STATS(ANDROMEDA_ONE, ANDROMEDA_ONE_DROP)) * sizeof(__u64));
static_assert(sizeof(andromeda_fp_stats) == (0 ANDROMEDA_FP_STATS(ANDROMEDA_ONE, ANDROMEDA_ONE_DROP)) * sizeof(__u64));
#undef ANDROMEDA_ONE_DROP
#undef ANDROMEDA_ONE
static_assert(sizeof(andromeda_daemon_stats) == 22 * sizeof(__u64));

}  // namespace
}  // namespace andromeda::io
