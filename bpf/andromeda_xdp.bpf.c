// SPDX-License-Identifier: MIT
/* The Andromeda XDP prefilter, attached to every port the daemon owns. It parses with bounds
 * checks, drops junk early with a named reason, passes the host's own traffic to the kernel
 * untouched (SSH on the underlay must never break), and steers overlay, tenant and NAT traffic
 * into the AF_XDP socket of the packet's RX queue. */
#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "parsing.h"
#include "maps.h"

/* Set by the loader before the object is loaded (rodata). */
const volatile __u16 overlay_port = ANDROMEDA_OVERLAY_PORT;
const volatile __u32 encap_kind = ANDROMEDA_ENCAP_ANDROMEDA;

#define COUNT(s, field) ((s)->field++)

#define IP_MF 0x2000
#define IP_OFFSET 0x1fff

/* Steers the packet to the socket of (port slot, RX queue); a missing socket is a drop with a
 * reason rather than a pass, so the kernel never answers overlay traffic with port-unreachable. */
static __always_inline int to_socket(struct xdp_md *ctx, const struct andromeda_port *port,
				     struct andromeda_xdp_stats *s)
{
	__u32 key = port->slot * ANDROMEDA_MAX_QUEUES + ctx->rx_queue_index;

	if (ctx->rx_queue_index >= ANDROMEDA_MAX_QUEUES || !bpf_map_lookup_elem(&andromeda_xsks, &key)) {
		COUNT(s, drop_no_socket);
		return XDP_DROP;
	}
	return bpf_redirect_map(&andromeda_xsks, key, XDP_DROP);
}

/* Parses up to and including the IPv4 header. Returns NULL for non-IPv4 (*verdict = -1: let the
 * caller decide) or for malformed IPv4 (*verdict = XDP_DROP, counted). */
static __always_inline struct iphdr *parse_ipv4(struct cursor *c, struct andromeda_xdp_stats *s, int *verdict)
{
	struct iphdr *ip;
	__u32 ihl;

	*verdict = -1;
	if (parse_ethernet(c) != bpf_htons(ETH_P_IP))
		return NULL;
	ip = cursor_pull(c, sizeof(*ip));
	if (!ip) {
		COUNT(s, drop_truncated);
		*verdict = XDP_DROP;
		return NULL;
	}
	ihl = ip->ihl * 4;
	if (ip->version != 4 || ihl < sizeof(*ip) || bpf_ntohs(ip->tot_len) < ihl) {
		COUNT(s, drop_bad_ip_header);
		*verdict = XDP_DROP;
		return NULL;
	}
	/* Skip IPv4 options; ihl <= 60 keeps this bounded for the verifier. */
	if (!cursor_pull(c, ihl - sizeof(*ip))) {
		COUNT(s, drop_truncated);
		*verdict = XDP_DROP;
		return NULL;
	}
	return ip;
}

static __always_inline int valid_overlay_header(const __u8 *h)
{
	if (encap_kind == ANDROMEDA_ENCAP_VXLAN)
		return (h[0] & 0x08) != 0;
	return (h[0] >> 4) == 1 && h[1] == 0;
}

static __always_inline int handle_underlay(struct xdp_md *ctx, const struct andromeda_port *port,
					   struct andromeda_xdp_stats *s)
{
	struct cursor c = { .pos = (void *)(long)ctx->data, .end = (void *)(long)ctx->data_end };
	struct iphdr *ip;
	struct udphdr *udp;
	__u8 *overlay;
	__u32 vni;
	int verdict;

	ip = parse_ipv4(&c, s, &verdict);
	if (!ip)
		goto not_ours;
	if (ip->protocol != IPPROTO_UDP)
		goto pass;
	udp = cursor_pull(&c, sizeof(*udp));
	if (!udp) {
		/* A first fragment or a runt: only ours if it claims the overlay port, unknowable. */
		goto pass;
	}
	if (udp->dest != bpf_htons(overlay_port))
		goto pass;
	if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)) {
		COUNT(s, drop_overlay_fragment);
		return XDP_DROP;
	}
	if (!bpf_map_lookup_elem(&andromeda_peers, &ip->saddr)) {
		COUNT(s, drop_unknown_peer);
		return XDP_DROP;
	}
	overlay = cursor_pull(&c, ANDROMEDA_OVERLAY_HEADER_LEN);
	if (!overlay || !cursor_pull(&c, ETH_HLEN)) {
		COUNT(s, drop_truncated);
		return XDP_DROP;
	}
	if (!valid_overlay_header(overlay)) {
		COUNT(s, drop_bad_overlay_header);
		return XDP_DROP;
	}
	vni = (__u32)overlay[4] << 16 | (__u32)overlay[5] << 8 | overlay[6];
	if (!bpf_map_lookup_elem(&andromeda_vnis, &vni)) {
		COUNT(s, drop_unknown_vni);
		return XDP_DROP;
	}
	verdict = to_socket(ctx, port, s);
	if (verdict == XDP_REDIRECT)
		COUNT(s, redirect_overlay);
	return verdict;
not_ours:
	if (verdict >= 0)
		return verdict;
pass:
	COUNT(s, pass_host);
	return XDP_PASS;
}

static __always_inline int mac_equal(const __u8 *a, const __u8 *b)
{
	return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4]) | (a[5] ^ b[5])) == 0;
}

static __always_inline int handle_tenant(struct xdp_md *ctx, const struct andromeda_port *port,
					 struct andromeda_xdp_stats *s)
{
	struct cursor c = { .pos = (void *)(long)ctx->data, .end = (void *)(long)ctx->data_end };
	struct ethhdr *eth = cursor_pull(&c, sizeof(*eth));
	int verdict;

	if (!eth) {
		COUNT(s, drop_truncated);
		return XDP_DROP;
	}
	/* Port security starts here; the IP and ARP sender checks need the fabric and are the
	 * slow path's (it is authoritative). */
	if (!mac_equal(eth->h_source, port->mac)) {
		COUNT(s, drop_spoofed_mac);
		return XDP_DROP;
	}
	verdict = to_socket(ctx, port, s);
	if (verdict == XDP_REDIRECT)
		COUNT(s, redirect_tenant);
	return verdict;
}

static __always_inline int handle_uplink(struct xdp_md *ctx, const struct andromeda_port *port,
					 struct andromeda_xdp_stats *s)
{
	struct cursor c = { .pos = (void *)(long)ctx->data, .end = (void *)(long)ctx->data_end };
	struct iphdr *ip;
	int verdict;

	ip = parse_ipv4(&c, s, &verdict);
	if (!ip) {
		if (verdict >= 0)
			return verdict;
		goto pass;
	}
	if (!bpf_map_lookup_elem(&andromeda_nat_addrs, &ip->daddr))
		goto pass;
	verdict = to_socket(ctx, port, s);
	if (verdict == XDP_REDIRECT)
		COUNT(s, redirect_uplink);
	return verdict;
pass:
	COUNT(s, pass_host);
	return XDP_PASS;
}

SEC("xdp")
int andromeda_xdp(struct xdp_md *ctx)
{
	__u32 zero = 0, ifindex = ctx->ingress_ifindex;
	struct andromeda_xdp_stats *s = bpf_map_lookup_elem(&andromeda_stats, &zero);
	struct andromeda_port *port;

	if (!s)
		return XDP_PASS;
	COUNT(s, rx_packets);
	port = bpf_map_lookup_elem(&andromeda_ports, &ifindex);
	if (!port) {
		COUNT(s, pass_unknown_port);
		return XDP_PASS;
	}
	switch (port->role) {
	case ANDROMEDA_PORT_UNDERLAY:
		return handle_underlay(ctx, port, s);
	case ANDROMEDA_PORT_TENANT:
		return handle_tenant(ctx, port, s);
	case ANDROMEDA_PORT_UPLINK:
		return handle_uplink(ctx, port, s);
	default:
		COUNT(s, pass_unknown_port);
		return XDP_PASS;
	}
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
