/* A narrower underlay than [node] underlay_mtu: the path MTU towards each peer node that the daemon
 * learned from ICMP "fragmentation needed" about this node's own outer packets (the XDP prefilter
 * steers those to it, prefilter_icmp in xdp_prefilter.bpf.c), in andromeda_peer_mtu; the encap
 * paths size tenant packets by it (overlay_path_mtu), so a tenant gets its PMTUD answer from the
 * pipeline instead of the packet vanishing on the way. */
#ifndef ANDROMEDA_BPF_LIB_PEER_MTU_H
#define ANDROMEDA_BPF_LIB_PEER_MTU_H

#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "config.h"
#include "eth.h"
#include "maps.h"

/* ICMPv4 Destination Unreachable, code Fragmentation Needed (RFC 792, RFC 1191); linux/icmp.h
 * pulls in libc's socket headers, which a BPF target does not have. */
#define ICMP_TYPE_DEST_UNREACH 3
#define ICMP_CODE_FRAG_NEEDED 4
#define ICMP_HEADER_LEN 8

ANDROMEDA_MAP(andromeda_peer_mtu, BPF_MAP_TYPE_HASH, ANDROMEDA_MAX_PEERS, __be32 /* peer key */,
	      struct andromeda_peer_mtu);

/* The outer MTU towards peer `node_ip`: the learned one while it lasts and is lower, else
 * underlay_mtu. */
static __always_inline __u32 peer_underlay_mtu(const struct andromeda_fp_config *cfg, __be32 node_ip)
{
	const struct andromeda_peer_mtu *learned = bpf_map_lookup_elem(&andromeda_peer_mtu, &node_ip);

	if (learned && learned->mtu && learned->mtu < cfg->underlay_mtu && bpf_ktime_get_ns() < learned->expires_ns)
		return learned->mtu;
	return cfg->underlay_mtu;
}

/* Whether the ICMPv4 message behind `ip` (cursor `c` at its payload) is "fragmentation needed"
 * about one of this node's outer packets: the quoted IPv4 header's source is `local_ip` and its
 * UDP destination the overlay port. Only the quote's first 8 bytes past its IPv4 header are read
 * (RFC 792 guarantees no more). Which peer and whether the MTU is believable is the daemon's to
 * judge (dataplane/underlay_pmtu.hpp); this only keeps the host's own ICMP with the host. */
static __always_inline int icmp_about_our_outer_packet(struct cursor *c, __be32 local_ip)
{
	__u8 *icmp = cursor_pull(c, ICMP_HEADER_LEN);
	struct iphdr *quoted;
	struct udphdr *udp;

	if (!icmp || icmp[0] != ICMP_TYPE_DEST_UNREACH || icmp[1] != ICMP_CODE_FRAG_NEEDED)
		return 0;
	quoted = cursor_pull(c, sizeof(*quoted));
	if (!quoted || quoted->version != 4 || quoted->ihl != 5 || quoted->protocol != IPPROTO_UDP ||
	    quoted->saddr != local_ip)
		return 0;
	udp = cursor_pull(c, sizeof(*udp));
	return udp && udp->dest == bpf_htons(overlay_port);
}

/* ICMPv6 Packet Too Big (RFC 4443 section 3.2), what routers on an IPv6 underlay send instead. */
#define ICMPV6_TYPE_PACKET_TOO_BIG 2

/* Whether the ICMPv6 message at cursor `c` (right after a fixed IPv6 header) is a Packet Too Big
 * about an outer packet to the overlay port: the quoted IPv6 header is followed at once by UDP to
 * that port. Over an IPv6 underlay the fast path's config holds no address of this node, so
 * which source the quote has, like which peer and whether the MTU is believable, is the daemon's
 * to judge (dataplane/underlay_pmtu.hpp); a host of its own sends no UDP to the overlay port. */
static __always_inline int icmp6_about_an_outer_packet(struct cursor *c)
{
	__u8 *icmp = cursor_pull(c, ICMP_HEADER_LEN);
	struct ipv6hdr *quoted;
	struct udphdr *udp;

	if (!icmp || icmp[0] != ICMPV6_TYPE_PACKET_TOO_BIG || icmp[1] != 0)
		return 0;
	quoted = cursor_pull(c, sizeof(*quoted));
	if (!quoted || quoted->version != 6 || quoted->nexthdr != IPPROTO_UDP)
		return 0;
	udp = cursor_pull(c, sizeof(*udp));
	return udp && udp->dest == bpf_htons(overlay_port);
}

#endif /* ANDROMEDA_BPF_LIB_PEER_MTU_H */
