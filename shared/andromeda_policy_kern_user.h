/* The security groups' flow cache in the kernel (andromeda_policy_flows for IPv4,
 * andromeda_policy_flows6 for IPv6), shared by the BPF
 * programs (bpf/lib/policy.h) and the daemon. The pipeline's firewall (userspace/policy) is the
 * authority: it judges every new flow by the rules and, for each TCP or UDP flow it allowed,
 * installs two entries here (the flow's own direction and its replies', each at the endpoint whose
 * policy allowed it). In a VPC with security groups (ANDROMEDA_VNI_F_POLICY) the fast path carries
 * a packet only when its entry is here with the VPC's current policy generation; everything else
 * (first packets, SYN/FIN/RST, ICMP, fragments, a flow of a policy since changed) goes to the
 * pipeline, which judges it and installs the flow again where it is still allowed. Fixed-width
 * types only; addresses and ports in network byte order. */
#ifndef ANDROMEDA_POLICY_KERN_USER_H
#define ANDROMEDA_POLICY_KERN_USER_H

#include "andromeda_kern_user.h"

/* An LRU map: an entry evicted under pressure costs its flow one trip through the pipeline, which
 * installs it again. Two entries per flow, at each endpoint of this node it concerns. */
#define ANDROMEDA_MAX_POLICY_FLOWS 262144

enum andromeda_policy_direction {
	ANDROMEDA_POLICY_INGRESS = 1, /* into the endpoint at daddr */
	ANDROMEDA_POLICY_EGRESS = 2,  /* out of the endpoint at saddr */
};

/* A packet's tuple as the endpoint it concerns sees it: egress at its sender (saddr is the
 * endpoint), ingress at its receiver (daddr is). The addresses are the tenants' own (before SNAT,
 * after the reverse translation), as the rules see them. */
struct andromeda_policy_flow_key {
	__u32 vni;
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 protocol;  /* IPPROTO_TCP, IPPROTO_UDP */
	__u8 direction; /* enum andromeda_policy_direction */
	__u16 pad;
};

/* The same for IPv6 (andromeda_policy_flows6, whose values are andromeda_policy_flow too): the
 * upper layer right after the fixed header (the fast path carries no extension headers). */
struct andromeda_policy_flow6_key {
	__u32 vni;
	__u8 saddr[16];
	__u8 daddr[16];
	__be16 sport;
	__be16 dport;
	__u8 protocol;  /* IPPROTO_TCP, IPPROTO_UDP */
	__u8 direction; /* enum andromeda_policy_direction */
	__u16 pad;
};

/* andromeda_policy_flow.flags */
#define ANDROMEDA_POLICY_FLOW_F_REPLY 0x1 /* the reply direction of the flow the rule opened */

struct andromeda_policy_flow {
	__u32 generation; /* the VPC's policy generation (andromeda_vni.policy_generation) that allowed it */
	__u32 rule;       /* the rule that opened the flow (andromedactl policy shows it) */
	__u32 flags;      /* ANDROMEDA_POLICY_FLOW_F_* */
	__u32 pad;
	/* Written by the kernel, at most every 100 ms, read by the daemon every second (so that a
	 * flow busy in the kernel never expires in the pipeline's firewall). No per-packet counts:
	 * the fast path's packet rate is the point, and the flow's rule counted its opening. */
	__u64 last_seen_ns; /* bpf_ktime_get_coarse_ns() (CLOCK_MONOTONIC to a tick) of a recent packet */
};

#endif /* ANDROMEDA_POLICY_KERN_USER_H */
