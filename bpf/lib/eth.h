/* Parsing, one style for XDP and tc: a cursor over [data, data_end) that hands out each header
 * only once the verifier has seen it lies inside the packet. Every helper has one contract:
 * it returns the header (or the next protocol) and advances, or NULL / 0 when the packet is
 * too short. Ethernet and its 802.1Q tags are here. */
#ifndef ANDROMEDA_BPF_LIB_ETH_H
#define ANDROMEDA_BPF_LIB_ETH_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct cursor {
	void *pos;
	void *end;
};

struct vlan_hdr {
	__be16 tci;
	__be16 encapsulated_proto;
};

static __always_inline struct cursor cursor_of_xdp(const struct xdp_md *ctx)
{
	struct cursor c = { .pos = (void *)(long)ctx->data, .end = (void *)(long)ctx->data_end };

	return c;
}

/* The skb's linear part: a tc program pulls the bytes it needs into it first. */
static __always_inline struct cursor cursor_of_skb(const struct __sk_buff *skb)
{
	struct cursor c = { .pos = (void *)(long)skb->data, .end = (void *)(long)skb->data_end };

	return c;
}

/* Returns the next header of `len` bytes and advances, or NULL when the packet is too short. */
static __always_inline void *cursor_pull(struct cursor *c, __u32 len)
{
	void *start = c->pos;

	if (start + len > c->end)
		return NULL;
	c->pos = start + len;
	return start;
}

static __always_inline int mac_equal(const __u8 *a, const __u8 *b)
{
	return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4]) | (a[5] ^ b[5])) == 0;
}

/* Pulls the Ethernet header and up to two 802.1Q/802.1ad tags. Returns the ethertype in network
 * order, or 0 when truncated. */
static __always_inline __be16 eth_pull_tagged(struct cursor *c)
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

#endif /* ANDROMEDA_BPF_LIB_ETH_H */
