// SPDX-License-Identifier: MIT
/* The Andromeda XDP prefilter. This first version classifies and counts: host traffic passes
 * untouched, overlay traffic is recognised, malformed IPv4 is dropped with a named reason. */
#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "parsing.h"
#include "andromeda_kern_user.h"

/* Set by the loader before the object is loaded (rodata). */
const volatile __u16 overlay_port = ANDROMEDA_OVERLAY_PORT;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct andromeda_xdp_stats);
} andromeda_stats SEC(".maps");

static __always_inline struct andromeda_xdp_stats *stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&andromeda_stats, &zero);
}

#define COUNT(s, field) do { if (s) (s)->field++; } while (0)

SEC("xdp")
int andromeda_xdp(struct xdp_md *ctx)
{
	struct cursor c = { .pos = (void *)(long)ctx->data, .end = (void *)(long)ctx->data_end };
	struct andromeda_xdp_stats *s = stats();
	struct iphdr *ip;
	struct udphdr *udp;
	__be16 proto;
	__u32 ihl;

	COUNT(s, rx_packets);
	proto = parse_ethernet(&c);
	if (proto != bpf_htons(ETH_P_IP))
		goto pass; /* ARP, IPv6, LLDP, truncated L2: the kernel decides */

	ip = cursor_pull(&c, sizeof(*ip));
	if (!ip) {
		COUNT(s, drop_truncated);
		return XDP_DROP;
	}
	ihl = ip->ihl * 4;
	if (ip->version != 4 || ihl < sizeof(*ip) || bpf_ntohs(ip->tot_len) < ihl) {
		COUNT(s, drop_bad_ip_header);
		return XDP_DROP;
	}
	if (ip->protocol != IPPROTO_UDP)
		goto pass;
	/* Skip IPv4 options: ihl is at most 60, so this stays bounded for the verifier. */
	if (!cursor_pull(&c, ihl - sizeof(*ip))) {
		COUNT(s, drop_truncated);
		return XDP_DROP;
	}
	udp = cursor_pull(&c, sizeof(*udp));
	if (!udp) {
		COUNT(s, drop_truncated);
		return XDP_DROP;
	}
	if (udp->dest == bpf_htons(overlay_port)) {
		COUNT(s, overlay_seen);
		/* Steering into AF_XDP arrives with the daemon; until then the kernel keeps it. */
	}
pass:
	COUNT(s, pass_host);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
