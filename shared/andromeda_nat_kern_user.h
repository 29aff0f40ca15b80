/* The NAT flows the kernel fast path translates (andromeda_nat_flows), shared by the BPF programs
 * (bpf/lib/nat.h) and the daemon, which installs each flow once the user-space NAT has decided it
 * (userspace/nat: the authority) and removes it when the flow ends. Fixed-width types only;
 * userspace asserts the layout. Addresses and ports are in network byte order. */
#ifndef ANDROMEDA_NAT_KERN_USER_H
#define ANDROMEDA_NAT_KERN_USER_H

#include "andromeda_kern_user.h"

/* Two entries per flow, one per direction: the default size (andromedad sizes the map from
 * [node.uplink] kernel_flows before loading it). Full: the daemon's install fails and the flow
 * stays with the pipeline (counted as nat_offload.install_full), which translates it as before. */
#define ANDROMEDA_MAX_NAT_FLOWS 262144

enum andromeda_nat_direction {
	ANDROMEDA_NAT_OUTBOUND = 1, /* from a tenant of VPC `vni`: SNAT to the NAT address */
	ANDROMEDA_NAT_INBOUND = 2,  /* from the outside to a NAT address: back to the tenant */
};

/* A packet's tuple as it arrives (the NAT engine's own keys, userspace/nat/offload.hpp). Outbound:
 * tenant -> remote, with the tenant's VNI (tenants of two VPCs may share addresses). Inbound:
 * remote -> NAT address, VNI 0. ICMP echo (requests outbound, replies inbound): the identifier in
 * the port field of the NAT's side (sport outbound, dport inbound), 0 in the other. */
struct andromeda_nat_key {
	__be32 src;
	__be32 dst;
	__be16 sport;
	__be16 dport;
	__u32 vni;
	__u8 protocol;  /* IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP */
	__u8 direction; /* enum andromeda_nat_direction */
	__u16 pad;
};

/* andromeda_nat_entry.flags */
#define ANDROMEDA_NAT_F_PORT_FORWARD 0x1 /* opened through a DNAT port forward */
#define ANDROMEDA_NAT_F_INBOUND_ORIGIN 0x2 /* opened from the outside (port forward, full-cone UDP) */

/* The flow a key belongs to, whichever direction: outbound rewrites (src, sport) from the tenant's
 * to the NAT's, inbound rewrites (dst, dport) from the NAT's to the tenant's. Both entries of a
 * flow hold the same flow; either one is enough to rebuild it after a restart. */
struct andromeda_nat_entry {
	__u32 vni;
	__be32 tenant_ip;
	__be32 nat_ip;
	__be32 remote_ip;
	__be16 tenant_port; /* ICMP echo: the tenant's identifier */
	__be16 nat_port;    /* ICMP echo: the identifier on the outside */
	__be16 remote_port; /* ICMP echo: 0 */
	__u8 protocol;
	__u8 flags;         /* ANDROMEDA_NAT_F_* */
	/* Written by the kernel, read by the daemon's sync (every second): */
	__u64 last_used_ns; /* bpf_ktime_get_ns() of the last packet translated in this direction */
	__u64 packets;
	__u64 bytes;
};

#endif /* ANDROMEDA_NAT_KERN_USER_H */
