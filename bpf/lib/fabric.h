/* The fabric as the daemon writes it into the maps (io/map_sync): this node's ports, the peer
 * nodes, the VNIs of the VPCs and where every endpoint lives; and the lookups the programs make
 * in them. Addresses are in network byte order, as they sit in packets. */
#ifndef ANDROMEDA_BPF_LIB_FABRIC_H
#define ANDROMEDA_BPF_LIB_FABRIC_H

#include <linux/bpf.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "maps.h"

ANDROMEDA_MAP(andromeda_ports, BPF_MAP_TYPE_HASH, ANDROMEDA_MAX_PORTS, __u32 /* ifindex */, struct andromeda_port);

ANDROMEDA_MAP(andromeda_peers, BPF_MAP_TYPE_HASH, ANDROMEDA_MAX_PEERS, __be32 /* peer key */, struct andromeda_peer);

ANDROMEDA_MAP(andromeda_vnis, BPF_MAP_TYPE_HASH, ANDROMEDA_MAX_VNIS, __u32, struct andromeda_vni);

ANDROMEDA_MAP(andromeda_fabric, BPF_MAP_TYPE_HASH, ANDROMEDA_MAX_FABRIC_ENTRIES, struct andromeda_fabric_key,
	      struct andromeda_fabric_entry);

/* NAT address -> the VNI of the VPC it serves */
ANDROMEDA_MAP(andromeda_nat_addrs, BPF_MAP_TYPE_HASH, ANDROMEDA_MAX_NAT_ADDRESSES, __be32, __u32);

/* The VPCs' CIDRs, to tell an address outside a VPC (NAT's) from one inside without an endpoint. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, ANDROMEDA_MAX_VPC_CIDRS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct andromeda_vpc_cidr_key);
	__type(value, __u32);
} andromeda_vpc_cidrs SEC(".maps") __weak;

static __always_inline const struct andromeda_port *port_lookup(__u32 ifindex)
{
	return bpf_map_lookup_elem(&andromeda_ports, &ifindex);
}

/* The port `ifindex` if it has role `role` (enum andromeda_port_role), else NULL. */
static __always_inline const struct andromeda_port *port_with_role(__u32 ifindex, __u32 role)
{
	const struct andromeda_port *port = port_lookup(ifindex);

	return port && port->role == role ? port : NULL;
}

static __always_inline const struct andromeda_peer *peer_lookup(__be32 node_ip)
{
	return bpf_map_lookup_elem(&andromeda_peers, &node_ip);
}

static __always_inline const struct andromeda_vni *vni_lookup(__u32 vni)
{
	return bpf_map_lookup_elem(&andromeda_vnis, &vni);
}

/* Where endpoint `ip` of VNI `vni` lives, or NULL when the VPC has no such endpoint. */
static __always_inline const struct andromeda_fabric_entry *endpoint_lookup(__u32 vni, __be32 ip)
{
	struct andromeda_fabric_key key = { .vni = vni, .ip = ip };

	return bpf_map_lookup_elem(&andromeda_fabric, &key);
}

/* Whether `ip` lies in one of the CIDRs of VPC `vni`. */
static __always_inline int vpc_contains(__u32 vni, __be32 ip)
{
	struct andromeda_vpc_cidr_key key = { .prefixlen = 64, .vni = bpf_htonl(vni), .ip = ip };

	return bpf_map_lookup_elem(&andromeda_vpc_cidrs, &key) != NULL;
}

static __always_inline int is_nat_address(__be32 ip)
{
	return bpf_map_lookup_elem(&andromeda_nat_addrs, &ip) != NULL;
}

/* Into a local tenant's port: a veth's peer in the tenant's namespace (bpf_redirect_peer: its
 * ingress, in this softirq), or out of a tap (bpf_redirect to its egress: the VM reads it there,
 * with GSO packets kept whole when the guest took the offloads, segmented by the kernel when not).
 * `flags` are the endpoint's andromeda_fabric_entry.flags. */
static __always_inline int redirect_to_tenant(__u32 ifindex, __u32 flags)
{
	if (flags & ANDROMEDA_FABRIC_F_TAP)
		return bpf_redirect(ifindex, 0);
	return bpf_redirect_peer(ifindex, 0);
}

#endif /* ANDROMEDA_BPF_LIB_FABRIC_H */
