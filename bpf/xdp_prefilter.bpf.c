// SPDX-License-Identifier: MIT
/* The XDP prefilter, attached to every port the daemon owns. It parses with bounds checks, drops
 * junk early with a named reason, passes the host's own traffic to the kernel untouched (SSH on
 * the underlay must never break), and steers overlay, tenant and NAT traffic into the AF_XDP
 * socket of the packet's RX queue. Overlay packets the kernel fast path delivers are passed on to
 * the underlay's tc program instead (tc_underlay.bpf.c), with XDP's finding (lib/handoff.h). */
#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "lib/config.h"
#include "lib/decap.h"
#include "lib/eth.h"
#include "lib/fabric.h"
#include "lib/handoff.h"
#include "lib/ipv4.h"
#include "lib/ipv6.h"
#include "lib/overlay.h"
#include "lib/peer_mtu.h"
#include "lib/port_security.h"
#include "lib/punt.h"
#include "lib/stats.h"

/* Pulls Ethernet (and its tags) and an IPv4 header with its options. Returns the header, or NULL:
 * for a packet that is not IPv4 with *verdict = STAGE_CONTINUE (the caller decides), for a
 * malformed one with *verdict the counted drop. */
static __always_inline struct iphdr *prefilter_ipv4(struct cursor *c, struct andromeda_xdp_stats *s, int *verdict)
{
	struct iphdr *ip;

	*verdict = STAGE_CONTINUE;
	if (eth_pull_tagged(c) != bpf_htons(ETH_P_IP))
		return NULL;
	ip = ipv4_pull(c);
	if (!ip) {
		*verdict = DROP(s, truncated);
		return NULL;
	}
	if (ip->version != 4 || ip->ihl < 5 || bpf_ntohs(ip->tot_len) < ip->ihl * 4) {
		*verdict = DROP(s, bad_ip_header);
		return NULL;
	}
	if (ipv4_pull_options(c, ip)) {
		*verdict = DROP(s, truncated);
		return NULL;
	}
	return ip;
}

/* An overlay packet the decap fast path takes goes on to tc: for a local endpoint with XDP's
 * finding, for this node's NAT (where the uplink's and the underlay's punt pairs are set up, so
 * that tc can leave what it does not translate to the pipeline) for tc to decide. 0 when it does,
 * -1 when it is the pipeline's. */
static __always_inline int prefilter_fast_decap(struct xdp_md *ctx, const struct andromeda_port *port,
						const struct andromeda_vni *vni)
{
	const struct andromeda_fp_config *cfg = fp_config();
	struct cursor c = cursor_of_xdp(ctx);
	struct overlay_packet p;
	struct decap_target t;

	if (!cfg || (port->flags & ANDROMEDA_PORT_F_PUNTED) || overlay_packet_pull(&c, &p))
		return -1;
	switch (decap_classify_vni(&p, bpf_xdp_get_buff_len(ctx), cfg, vni, &t)) {
	case DECAP_LOCAL:
		handoff_write(ctx, cfg, &t);
		return 0;
	case DECAP_NAT:
		return cfg->uplink_ifindex && port->link ? 0 : -1;
	default:
		return -1;
	}
}

/* ICMP "fragmentation needed" about one of this node's outer packets goes to the daemon, which
 * learns the path MTU towards that peer from it (lib/peer_mtu.h); any other ICMP is the host's.
 * The host does not get a copy (XDP cannot clone): it has no socket on the overlay port to tell,
 * and the outer packets never take its routes, so its own PMTU cache would gain nothing from it.
 * The node's address is read whether or not the fast path is on (the daemon always writes it). */
static __always_inline int prefilter_icmp(struct xdp_md *ctx, const struct andromeda_port *port,
					  struct andromeda_xdp_stats *s, struct cursor *c, const struct iphdr *ip)
{
	__u32 zero = 0;
	const struct andromeda_fp_config *cfg = bpf_map_lookup_elem(&andromeda_fp_config, &zero);

	if (!cfg || !cfg->underlay_ip || ip->daddr != cfg->underlay_ip || ipv4_is_fragment(ip) ||
	    !icmp_about_our_outer_packet(c, cfg->underlay_ip))
		return PASS_HOST(s);
	return TO_SOCKET(ctx, port, s, icmp);
}

/* prefilter_fast_decap over an IPv6 underlay: for a local endpoint only (NAT is the pipeline's). */
static __always_inline int prefilter_fast_decap6(struct xdp_md *ctx, const struct andromeda_port *port)
{
	const struct andromeda_fp_config *cfg = fp_config();
	struct cursor c = cursor_of_xdp(ctx);
	__u64 len = bpf_xdp_get_buff_len(ctx);
	struct overlay_packet p;
	struct decap_target t;

	/* Above the MTU: a GSO packet (checked by whoever built or merged it), or tc checks it. */
	if (!cfg || (port->flags & ANDROMEDA_PORT_F_PUNTED) || overlay_packet_pull6(&c, &p))
		return -1;
	if (decap_classify6_outer(&p, len, cfg, len - ETH_HLEN > cfg->underlay_mtu, &t) != DECAP_LOCAL)
		return -1;
	handoff_write(ctx, cfg, &t);
	return 0;
}

/* An overlay packet over an IPv6 underlay, which the daemon announces with no IPv4 address in
 * the fast path's config (once written: until then the map's entry is all zeros, underlay_mtu
 * included, and nothing is known): what the kernel fast path takes (prefilter_fast_decap6) goes
 * on to tc, the rest to the pipeline, which judges it (its sender among the fabric's nodes, its
 * UDP checksum). So does ICMPv6 Packet Too Big quoting UDP to the overlay port, for the path MTU.
 * Every other IPv6 packet, Neighbor Discovery among them, is the host's; so is all of it on an
 * IPv4 underlay, where the host may have its own tunnels over IPv6. */
static __always_inline int prefilter_underlay_ipv6(struct xdp_md *ctx, const struct andromeda_port *port,
						   struct andromeda_xdp_stats *s)
{
	__u32 zero = 0;
	const struct andromeda_fp_config *cfg = bpf_map_lookup_elem(&andromeda_fp_config, &zero);
	struct cursor c = cursor_of_xdp(ctx);
	struct udphdr *udp;
	struct ipv6hdr *ip;

	if (!cfg || !cfg->underlay_mtu || cfg->underlay_ip || eth_pull_tagged(&c) != bpf_htons(ETH_P_IPV6))
		return PASS_HOST(s);
	ip = ipv6_pull(&c);
	if (!ip)
		return PASS_HOST(s);
	/* Packet Too Big about our outer packets: the daemon learns the path MTU from it. */
	if (ip->nexthdr == IPPROTO_ICMPV6 && !(port->flags & ANDROMEDA_PORT_F_PUNTED))
		return icmp6_about_an_outer_packet(&c) ? TO_SOCKET(ctx, port, s, icmp) : PASS_HOST(s);
	if (ip->nexthdr != IPPROTO_UDP)
		return PASS_HOST(s);
	udp = cursor_pull(&c, sizeof(*udp));
	if (!udp || udp->dest != bpf_htons(overlay_port))
		return PASS_HOST(s);
	if (!cursor_pull(&c, ANDROMEDA_OVERLAY_HEADER_LEN + ETH_HLEN))
		return DROP(s, truncated);
	if (prefilter_fast_decap6(ctx, port) == 0) {
		COUNT(s, pass_fastpath);
		return XDP_PASS;
	}
	return TO_SOCKET(ctx, port, s, overlay);
}

static __always_inline int prefilter_underlay(struct xdp_md *ctx, const struct andromeda_port *port,
					      struct andromeda_xdp_stats *s)
{
	struct cursor c = cursor_of_xdp(ctx);
	const struct andromeda_vni *vni;
	struct udphdr *udp;
	struct iphdr *ip;
	__u8 *overlay;
	int verdict;

	ip = prefilter_ipv4(&c, s, &verdict);
	if (!ip)
		return verdict != STAGE_CONTINUE ? verdict : prefilter_underlay_ipv6(ctx, port, s);
	if (ip->protocol == IPPROTO_ICMP && !(port->flags & ANDROMEDA_PORT_F_PUNTED))
		return prefilter_icmp(ctx, port, s, &c, ip);
	if (ip->protocol != IPPROTO_UDP)
		return PASS_HOST(s);
	udp = cursor_pull(&c, sizeof(*udp));
	/* A first fragment or a runt: only ours if it claims the overlay port, unknowable. */
	if (!udp || udp->dest != bpf_htons(overlay_port))
		return PASS_HOST(s);
	if (ipv4_is_fragment(ip))
		return DROP(s, overlay_fragment);
	if (!peer_lookup(ip->saddr))
		return DROP(s, unknown_peer);
	overlay = cursor_pull(&c, ANDROMEDA_OVERLAY_HEADER_LEN);
	if (!overlay || !cursor_pull(&c, ETH_HLEN))
		return DROP(s, truncated);
	if (!overlay_header_valid(overlay))
		return DROP(s, bad_overlay_header);
	vni = vni_lookup(andromeda_overlay_vni(overlay));
	if (!vni)
		return DROP(s, unknown_vni);
	if (prefilter_fast_decap(ctx, port, vni) == 0) {
		COUNT(s, pass_fastpath);
		return XDP_PASS;
	}
	return TO_SOCKET(ctx, port, s, overlay);
}

static __always_inline int prefilter_tenant(struct xdp_md *ctx, const struct andromeda_port *port,
					    struct andromeda_xdp_stats *s)
{
	struct cursor c = cursor_of_xdp(ctx);
	struct ethhdr *eth = cursor_pull(&c, sizeof(*eth));

	if (!eth)
		return DROP(s, truncated);
	/* The IP and ARP sender checks need the fabric and are the slow path's (the authority); the
	 * tc fast path makes them before anything reaches here from a tenant. */
	if (source_mac_spoofed(eth, port))
		return DROP(s, spoofed_mac);
	return TO_SOCKET(ctx, port, s, tenant);
}

static __always_inline int prefilter_uplink(struct xdp_md *ctx, const struct andromeda_port *port,
					    struct andromeda_xdp_stats *s)
{
	struct cursor c = cursor_of_xdp(ctx);
	struct iphdr *ip;
	int verdict;

	ip = prefilter_ipv4(&c, s, &verdict);
	if (!ip)
		return verdict != STAGE_CONTINUE ? verdict : PASS_HOST(s);
	if (!is_nat_address(ip->daddr))
		return PASS_HOST(s);
	return TO_SOCKET(ctx, port, s, uplink);
}

/* xdp.frags: a GSO packet reaching the underlay in generic mode is seen whole (its headers in the
 * first buffer) instead of being linearised first. */
SEC("xdp.frags")
int andromeda_xdp(struct xdp_md *ctx)
{
	struct andromeda_xdp_stats *s = xdp_stats();
	const struct andromeda_port *port;

	if (!s)
		return XDP_PASS;
	COUNT(s, rx_packets);
	port = port_lookup(ctx->ingress_ifindex);
	if (!port) {
		COUNT(s, pass_unknown_port);
		return XDP_PASS;
	}
	switch (port->role) {
	case ANDROMEDA_PORT_UNDERLAY:
		return prefilter_underlay(ctx, port, s);
	case ANDROMEDA_PORT_TENANT:
		return prefilter_tenant(ctx, port, s);
	case ANDROMEDA_PORT_UPLINK:
		return prefilter_uplink(ctx, port, s);
	default:
		COUNT(s, pass_unknown_port);
		return XDP_PASS;
	}
}
