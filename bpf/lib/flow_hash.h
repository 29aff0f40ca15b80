/* The overlay flow hash of an inner IPv4 packet: shared/andromeda_overlay.h's rule (the
 * pipeline's too), with the ports read from the packet when it holds them. */
#ifndef ANDROMEDA_BPF_LIB_FLOW_HASH_H
#define ANDROMEDA_BPF_LIB_FLOW_HASH_H

#include <linux/bpf.h>
#include <linux/ip.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_overlay.h"
#include "ipv4.h"

/* `ip` is a header without options whose 20 bytes the caller has checked against `end`; the
 * ports are the 4 bytes after it, counted when they lie before `end` and inside the packet's
 * total length. */
static __always_inline __u16 ipv4_flow_hash(const struct iphdr *ip, const void *end)
{
	const __u8 *l4 = (const __u8 *)(ip + 1);
	int ports_present = (const void *)(l4 + 4) <= end && bpf_ntohs(ip->tot_len) >= sizeof(*ip) + 4;
	__u32 ports = 0;

	if ((const void *)(l4 + 4) <= end)
		__builtin_memcpy(&ports, l4, 4);
	return andromeda_ipv4_flow_hash(bpf_ntohl(ip->saddr), bpf_ntohl(ip->daddr), ip->protocol,
					bpf_ntohs(ip->frag_off) & IPV4_OFFSET, bpf_ntohl(ports), ports_present);
}

#endif /* ANDROMEDA_BPF_LIB_FLOW_HASH_H */
