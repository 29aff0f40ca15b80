/* Bounds-checked header parsing for the XDP programs. Every accessor proves to the verifier that
 * the bytes it returns lie between data and data_end. */
#ifndef ANDROMEDA_BPF_PARSING_H
#define ANDROMEDA_BPF_PARSING_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct vlan_hdr {
	__be16 tci;
	__be16 encapsulated_proto;
};

struct cursor {
	void *pos;
	void *end;
};

/* Returns the next header of `len` bytes and advances, or NULL when the packet is too short. */
static __always_inline void *cursor_pull(struct cursor *c, __u32 len)
{
	void *start = c->pos;

	if (start + len > c->end)
		return NULL;
	c->pos = start + len;
	return start;
}

/* Parses Ethernet and up to two 802.1Q/802.1ad tags. Returns the ethertype in network order,
 * or 0 when truncated. */
static __always_inline __be16 parse_ethernet(struct cursor *c)
{
	struct ethhdr *eth = cursor_pull(c, sizeof(*eth));
	__be16 proto;

	if (!eth)
		return 0;
	proto = eth->h_proto;
#pragma unroll
	for (int i = 0; i < 2; i++) {
		struct vlan_hdr *vlan;

		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		vlan = cursor_pull(c, sizeof(*vlan));
		if (!vlan)
			return 0;
		proto = vlan->encapsulated_proto;
	}
	return proto;
}

#endif /* ANDROMEDA_BPF_PARSING_H */
