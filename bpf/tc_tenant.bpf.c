// SPDX-License-Identifier: MIT
/* Ingress of a tenant port (tc): what a tenant sends. Stages, in order:
 *   port security -> classify -> MTU -> deliver locally / encapsulate / punt
 * Each returns STAGE_CONTINUE or the verdict. East-west traffic of a VPC with the fast path on is
 * delivered to another local tenant or encapsulated towards the endpoint's node, GSO packets
 * whole (bpf_skb_adjust_room's ENCAP flags let the kernel segment them later, or never, between
 * veths, with their offloaded checksums); everything else goes to the punt device, which hands
 * it to the AF_XDP pipeline with finished checksums and GSO packets segmented. */
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "lib/config.h"
#include "lib/eth.h"
#include "lib/fabric.h"
#include "lib/flow_hash.h"
#include "lib/ipv4.h"
#include "lib/overlay.h"
#include "lib/port_security.h"
#include "lib/punt.h"
#include "lib/stats.h"

/* The bytes the stages read: Ethernet, IPv4 without options and the TCP data offset. */
#define TENANT_HEADER_BYTES (ETH_HLEN + 40)

/* One tenant frame on its way through the stages. */
struct tenant_frame {
	struct __sk_buff *skb;
	struct andromeda_fp_stats *s;
	const struct andromeda_port *port;
	__u32 len; /* the frame's length as it came (a GSO packet's whole length) */
	struct cursor c;
	struct ethhdr *eth;
	struct iphdr *ip;
};

/* Where classify sends the frame: a local endpoint, or a remote one through its node's peer. */
struct tenant_route {
	const struct andromeda_fp_config *cfg;
	const struct andromeda_vni *vni;
	const struct andromeda_fabric_entry *target;
	const struct andromeda_peer *peer; /* remote targets only */
};

#define TENANT_PUNT(f, reason) PUNT((f)->skb, (f)->port, (f)->s, reason)

/* The source MAC, the ARP sender and the IPv4 source must be the endpoint's. Leaves f->ip set for
 * an IPv4 packet with a plain header; what port security cannot judge (ARP, other ethertypes, IPv4
 * with options or a bad header checksum) goes to the pipeline, which checks it again. */
static __always_inline int tenant_port_security(struct tenant_frame *f)
{
	f->eth = cursor_pull(&f->c, sizeof(*f->eth));
	if (!f->eth)
		return TENANT_PUNT(f, not_ipv4);
	if (source_mac_spoofed(f->eth, f->port))
		return DROP(f->s, spoofed_mac);
	if (f->eth->h_proto == bpf_htons(ETH_P_ARP)) {
		if (arp_sender_spoofed(&f->c, f->port))
			return DROP(f->s, spoofed_arp);
		return TENANT_PUNT(f, not_ipv4);
	}
	if (f->eth->h_proto != bpf_htons(ETH_P_IP))
		return TENANT_PUNT(f, not_ipv4);
	f->ip = ipv4_pull(&f->c);
	if (!f->ip || !ipv4_is_plain(f->ip))
		return TENANT_PUNT(f, ip_header);
	if (source_ip_spoofed(f->ip, f->port))
		return DROP(f->s, spoofed_ip);
	return STAGE_CONTINUE;
}

/* East-west inside the VPC, with the fast path on for this node, port and VPC, sent to the
 * gateway MAC, with a consistent length, to a unicast address other than the gateway's that an
 * endpoint of the VPC has (and, for a remote one, whose node's next hop is known). */
static __always_inline int tenant_classify(struct tenant_frame *f, struct tenant_route *r)
{
	__u32 tot;

	r->cfg = fp_config();
	if (!r->cfg || !(f->port->flags & ANDROMEDA_PORT_F_FASTPATH))
		return TENANT_PUNT(f, fastpath_off);
	r->vni = vni_lookup(f->port->vni);
	if (!r->vni || !(r->vni->flags & ANDROMEDA_VNI_F_FASTPATH))
		return TENANT_PUNT(f, fastpath_off);
	if (!mac_equal(f->eth->h_dest, r->vni->gateway_mac))
		return TENANT_PUNT(f, not_to_gateway);
	tot = bpf_ntohs(f->ip->tot_len);
	if (tot < sizeof(struct iphdr) || (!f->skb->gso_size && tot != f->len - ETH_HLEN))
		return TENANT_PUNT(f, ip_header);
	if (ipv4_is_multicast_or_broadcast(f->ip->daddr) || f->ip->daddr == r->vni->gateway)
		return TENANT_PUNT(f, to_gateway);
	r->target = endpoint_lookup(f->port->vni, f->ip->daddr);
	if (!r->target || (r->target->local && r->target->ifindex == 0))
		return TENANT_PUNT(f, no_route);
	if (r->target->local)
		return STAGE_CONTINUE;
	r->peer = peer_lookup(r->target->node_ip);
	if (!r->peer || !r->peer->mac_known)
		return TENANT_PUNT(f, no_next_hop);
	return STAGE_CONTINUE;
}

/* Whether the packet, or each segment of a GSO packet, fits the overlay's path MTU; what does not
 * is the pipeline's (ICMP fragmentation needed, or fragmentation). A GSO packet the fast path
 * cannot size (neither TCP nor UDP) is punted to be segmented. */
static __always_inline int tenant_check_mtu(struct tenant_frame *f, const struct tenant_route *r)
{
	__u32 mtu = overlay_path_mtu(r->cfg, r->vni), l4;

	if (!f->skb->gso_size)
		return bpf_ntohs(f->ip->tot_len) > mtu ? TENANT_PUNT(f, too_big) : STAGE_CONTINUE;
	if (f->ip->protocol == IPPROTO_TCP) {
		__u8 *tcp = cursor_pull(&f->c, 13);

		if (!tcp)
			return TENANT_PUNT(f, gso);
		l4 = (tcp[12] >> 4) * 4;
	} else if (f->ip->protocol == IPPROTO_UDP) {
		l4 = sizeof(struct udphdr);
	} else {
		return TENANT_PUNT(f, gso);
	}
	return sizeof(struct iphdr) + l4 + f->skb->gso_size > mtu ? TENANT_PUNT(f, too_big) : STAGE_CONTINUE;
}

/* Into another tenant of this node, as if routed by the gateway. */
static __always_inline int tenant_deliver_local(struct tenant_frame *f, const struct tenant_route *r)
{
	__builtin_memcpy(f->eth->h_dest, r->target->mac, ETH_ALEN);
	__builtin_memcpy(f->eth->h_source, r->vni->gateway_mac, ETH_ALEN);
	COUNT_BYTES(f->s, local, f->len);
	return bpf_redirect_peer(r->target->ifindex, 0);
}

/* Headroom for the receiver's XDP (cfg->encap_headroom, set where the underlay is a veth). XDP on
 * a veth, generic or native, copies every skb with less than XDP_PACKET_HEADROOM in front of its
 * Ethernet header before the program runs, and a tenant's small frame has a few bytes at most:
 * the encap has to reallocate its head anyway. Making room once, here, for the outer headers and
 * the receiver's 256 bytes makes that one reallocation a little larger and spares the receiving
 * node its copy. Only for linear, non-GSO frames: the receiver copies the others whatever their
 * headroom. The room is made and given back at once, so that the frame is as before; 0, or -1
 * when it could not be given back (the frame is then not ours to send). */
static __always_inline int tenant_reserve_headroom(struct tenant_frame *f, const struct andromeda_fp_config *cfg)
{
	struct __sk_buff *skb = f->skb;

	if (cfg->encap_headroom && !skb->gso_size && (long)skb->data_end - (long)skb->data == f->len &&
	    bpf_skb_adjust_room(skb, cfg->encap_headroom, BPF_ADJ_ROOM_MAC, 0) == 0 &&
	    bpf_skb_adjust_room(skb, -(int)cfg->encap_headroom, BPF_ADJ_ROOM_MAC, 0) != 0)
		return -1;
	return 0;
}

/* Outer headers in front of the frame, then out of the underlay towards the target's node. */
static __always_inline int tenant_encap(struct tenant_frame *f, const struct tenant_route *r)
{
	struct outer_headers o __attribute__((aligned(8))); /* copied out in 8-byte words */
	struct cursor c;
	__u64 *to;

	__builtin_memcpy(o.inner.h_dest, r->target->mac, ETH_ALEN);
	__builtin_memcpy(o.inner.h_source, f->eth->h_source, ETH_ALEN);
	o.inner.h_proto = bpf_htons(ETH_P_IP);
	overlay_write_outer(&o, r->cfg, r->peer, r->target->node_ip, f->port->vni, ipv4_flow_hash(f->ip, f->c.end),
			    f->len);
	if (tenant_reserve_headroom(f, r->cfg))
		return DROP(f->s, adjust_failed);
	if (bpf_skb_adjust_room(f->skb, ANDROMEDA_ENCAP_OVERHEAD, BPF_ADJ_ROOM_MAC,
				BPF_F_ADJ_ROOM_FIXED_GSO | BPF_F_ADJ_ROOM_ENCAP_L3_IPV4 | BPF_F_ADJ_ROOM_ENCAP_L4_UDP |
					BPF_F_ADJ_ROOM_ENCAP_L2_ETH | BPF_F_ADJ_ROOM_ENCAP_L2(ETH_HLEN)))
		return DROP(f->s, adjust_failed);
	/* Written in place: the room was made at the head, in the linear part (which held at least
	 * the 34 bytes of Ethernet and IPv4 header read above), so the first 64 bytes are there. */
	c = cursor_of_skb(f->skb);
	to = cursor_pull(&c, sizeof(o));
	if (!to)
		return DROP(f->s, adjust_failed);
#pragma unroll
	for (int i = 0; i < (int)(sizeof(o) / 8); i++)
		to[i] = ((const __u64 *)&o)[i];
	COUNT_BYTES(f->s, encap, f->len);
	if (f->skb->gso_size)
		COUNT(f->s, encap_gso_packets);
	return bpf_redirect(r->cfg->underlay_ifindex, 0);
}

SEC("tc")
int andromeda_tc_tenant(struct __sk_buff *skb)
{
	struct tenant_frame f = { .skb = skb, .len = skb->len };
	struct tenant_route r = {};
	int verdict;

	f.s = fp_stats();
	if (!f.s)
		return TC_ACT_SHOT;
	f.port = port_with_role(skb->ifindex, ANDROMEDA_PORT_TENANT);
	if (!f.port)
		return DROP(f.s, no_port);
	if (skb->vlan_present)
		return DROP(f.s, tagged);
	bpf_skb_pull_data(skb, f.len < TENANT_HEADER_BYTES ? f.len : TENANT_HEADER_BYTES);
	f.c = cursor_of_skb(skb);

	verdict = tenant_port_security(&f);
	if (verdict != STAGE_CONTINUE)
		return verdict;
	verdict = tenant_classify(&f, &r);
	if (verdict != STAGE_CONTINUE)
		return verdict;
	if (r.target->local)
		return tenant_deliver_local(&f, &r);
	verdict = tenant_check_mtu(&f, &r);
	if (verdict != STAGE_CONTINUE)
		return verdict;
	return tenant_encap(&f, &r);
}
