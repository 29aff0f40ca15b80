// SPDX-License-Identifier: MIT
/* The Andromeda XDP prefilter, attached to every port the daemon owns. It parses with bounds
 * checks, drops junk early with a named reason, passes the host's own traffic to the kernel
 * untouched (SSH on the underlay must never break), and steers overlay, tenant and NAT traffic
 * into the AF_XDP socket of the packet's RX queue. Overlay packets the kernel fast path delivers
 * are passed on to the underlay's tc program instead (fast_path.h); the tc programs of the fast
 * path are at the end of this file, so that every program shares one set of maps. */
#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "andromeda_kern_user.h"

/* Set by the loader before the object is loaded (rodata). */
const volatile __u16 overlay_port = ANDROMEDA_OVERLAY_PORT;
const volatile __u32 encap_kind = ANDROMEDA_ENCAP_ANDROMEDA;

#include "parsing.h"
#include "maps.h"
#include "fast_path.h"

#define COUNT(s, field) ((s)->field++)
/* A drop is one call: it counts its reason and is the verdict (`return DROP(s, drop_truncated);`). */
#define DROP(s, reason) ((s)->reason++, XDP_DROP)

#define IP_MF 0x2000
#define IP_OFFSET 0x1fff

/* Steers the packet to the socket of (port slot, RX queue); a missing socket is a drop with a
 * reason rather than a pass, so the kernel never answers overlay traffic with port-unreachable. */
static __always_inline int to_socket(struct xdp_md *ctx, const struct andromeda_port *port,
				     struct andromeda_xdp_stats *s)
{
	__u32 key = port->slot * ANDROMEDA_MAX_QUEUES + ctx->rx_queue_index;

	if (ctx->rx_queue_index >= ANDROMEDA_MAX_QUEUES || !bpf_map_lookup_elem(&andromeda_xsks, &key)) {
		return DROP(s, drop_no_socket);
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
		*verdict = DROP(s, drop_truncated);
		return NULL;
	}
	ihl = ip->ihl * 4;
	if (ip->version != 4 || ihl < sizeof(*ip) || bpf_ntohs(ip->tot_len) < ihl) {
		*verdict = DROP(s, drop_bad_ip_header);
		return NULL;
	}
	/* Skip IPv4 options; ihl <= 60 keeps this bounded for the verifier. */
	if (!cursor_pull(c, ihl - sizeof(*ip))) {
		*verdict = DROP(s, drop_truncated);
		return NULL;
	}
	return ip;
}

static __always_inline int valid_overlay_header(const __u8 *h)
{
	if (encap_kind == ANDROMEDA_ENCAP_VXLAN)
		return (h[0] & ANDROMEDA_VXLAN_FLAG_I) != 0;
	return (h[0] >> 4) == ANDROMEDA_HEADER_VERSION && h[1] == 0;
}

/* Hands tc the fast path's finding for this packet as XDP metadata (struct andromeda_fp_handoff). A driver
 * without metadata support refuses the room; tc then checks the packet itself. */
static __always_inline void hand_over(struct xdp_md *ctx, const struct andromeda_fp_config *cfg,
				      const struct fp_decap *fast)
{
	struct andromeda_fp_handoff *h;

	if (cfg->handoff_cookie == 0 || bpf_xdp_adjust_meta(ctx, -(int)sizeof(*h)))
		return;
	h = (void *)(long)ctx->data_meta;
	if ((void *)(h + 1) > (void *)(long)ctx->data)
		return;
	h->cookie = cfg->handoff_cookie;
	h->ifindex = fast->target->ifindex;
	__builtin_memcpy(h->mac, fast->target->mac, ETH_ALEN);
	__builtin_memcpy(h->gateway_mac, fast->vni->gateway_mac, ETH_ALEN);
	h->dev = ctx->ingress_ifindex;
}

static __always_inline int handle_underlay(struct xdp_md *ctx, const struct andromeda_port *port,
					   struct andromeda_xdp_stats *s)
{
	struct cursor c = { .pos = (void *)(long)ctx->data, .end = (void *)(long)ctx->data_end };
	const struct andromeda_fp_config *cfg;
	const struct andromeda_vni *vni_rec;
	struct fp_decap fast;
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
		return DROP(s, drop_overlay_fragment);
	}
	if (!bpf_map_lookup_elem(&andromeda_peers, &ip->saddr)) {
		return DROP(s, drop_unknown_peer);
	}
	overlay = cursor_pull(&c, ANDROMEDA_OVERLAY_HEADER_LEN);
	if (!overlay || !cursor_pull(&c, ETH_HLEN)) {
		return DROP(s, drop_truncated);
	}
	if (!valid_overlay_header(overlay)) {
		return DROP(s, drop_bad_overlay_header);
	}
	vni = (__u32)overlay[4] << 16 | (__u32)overlay[5] << 8 | overlay[6];
	vni_rec = bpf_map_lookup_elem(&andromeda_vnis, &vni);
	if (!vni_rec) {
		return DROP(s, drop_unknown_vni);
	}
	cfg = fp_config();
	if (cfg && fp_decap_check_vni((void *)(long)ctx->data, (void *)(long)ctx->data_end, bpf_xdp_get_buff_len(ctx),
				      overlay_port, cfg, vni_rec, &fast) == 0) {
		hand_over(ctx, cfg, &fast);
		COUNT(s, pass_fastpath);
		return XDP_PASS;
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
		return DROP(s, drop_truncated);
	}
	/* Port security starts here; the IP and ARP sender checks need the fabric and are the
	 * slow path's (it is authoritative). */
	if (!mac_equal(eth->h_source, port->mac)) {
		return DROP(s, drop_spoofed_mac);
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

/* xdp.frags: a GSO packet reaching the underlay in generic mode is seen whole (its headers in the
 * first buffer) instead of being linearised first. */
SEC("xdp.frags")
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

/* ---- tc programs of the kernel fast path ---- */

static __always_inline int fp_punt(struct __sk_buff *skb, const struct andromeda_port *port,
				   struct andromeda_fp_stats *s, __u64 *reason)
{
	(*reason)++;
	s->punt_packets++;
	s->punt_bytes += skb->len;
	return bpf_redirect(port->link, 0);
}

/* Port security for ARP: the sender must be the endpoint (or 0.0.0.0, a probe). Returns 1 for a
 * spoofed sender; a malformed or non-Ethernet/IPv4 ARP is the pipeline's to refuse. */
static __always_inline int fp_arp_spoofed(void *data, void *data_end, const struct andromeda_port *port)
{
	__u8 *arp = data + ETH_HLEN;
	__be32 spa;

	if ((void *)(arp + 28) > data_end)
		return 0;
	if (arp[0] != 0 || arp[1] != 1 || arp[2] != 0x08 || arp[3] != 0 || arp[4] != 6 || arp[5] != 4)
		return 0;
	__builtin_memcpy(&spa, arp + 14, 4);
	return !fp_mac_equal(arp + 8, port->mac) || (spa != port->ip && spa != 0);
}

/* The largest IPv4 packet a segment may be on the overlay: the VPC's MTU, and the underlay's
 * less the outer headers and the inner Ethernet header (the pipeline's inner_ip_mtu). */
static __always_inline __u32 fp_path_mtu(const struct andromeda_fp_config *cfg, const struct andromeda_vni *vni)
{
	__u32 underlay = cfg->underlay_mtu > ANDROMEDA_ENCAP_OVERHEAD ? cfg->underlay_mtu - ANDROMEDA_ENCAP_OVERHEAD : 0;

	return vni->mtu < underlay ? vni->mtu : underlay;
}

/* Ingress of a tenant port: port security, then local delivery or encapsulation towards the
 * endpoint's node; everything else to the punt device, which hands it to the AF_XDP pipeline
 * with finished checksums and GSO packets segmented. */
SEC("tc")
int andromeda_tc_tenant(struct __sk_buff *skb)
{
	struct andromeda_fp_stats *s = fp_stats();
	const struct andromeda_fp_config *cfg;
	const struct andromeda_fabric_entry *target;
	const struct andromeda_peer *peer;
	const struct andromeda_vni *vni;
	const struct andromeda_port *port;
	struct andromeda_fabric_key key;
	__u32 ifindex = skb->ifindex, len = skb->len, tot, mtu, ports = 0;
	void *data, *data_end;
	struct ethhdr *eth;
	struct iphdr *ip;
	struct fp_outer o __attribute__((aligned(8))); /* copied out in 8-byte words */
	__u16 hash;

	if (!s)
		return TC_ACT_SHOT;
	port = bpf_map_lookup_elem(&andromeda_ports, &ifindex);
	if (!port || port->role != ANDROMEDA_PORT_TENANT) {
		return FP_DROP(s, drop_no_port);
	}
	if (skb->vlan_present) {
		return FP_DROP(s, drop_tagged);
	}
	bpf_skb_pull_data(skb, len < ETH_HLEN + 40 ? len : ETH_HLEN + 40);
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	eth = data;
	if ((void *)(eth + 1) > data_end)
		return fp_punt(skb, port, s, &s->punt_not_ipv4);
	if (!fp_mac_equal(eth->h_source, port->mac)) {
		return FP_DROP(s, drop_spoofed_mac);
	}
	if (eth->h_proto == bpf_htons(ETH_P_ARP)) {
		if (fp_arp_spoofed(data, data_end, port)) {
			return FP_DROP(s, drop_spoofed_arp);
		}
		return fp_punt(skb, port, s, &s->punt_not_ipv4);
	}
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return fp_punt(skb, port, s, &s->punt_not_ipv4);
	ip = data + ETH_HLEN;
	if ((void *)(ip + 1) > data_end || ip->version != 4 || ip->ihl != 5 || fp_ipv4_header_sum(ip) != 0xffff)
		return fp_punt(skb, port, s, &s->punt_ip_header);
	if (ip->saddr != port->ip) {
		return FP_DROP(s, drop_spoofed_ip);
	}
	cfg = fp_config();
	if (!cfg || !(port->flags & ANDROMEDA_PORT_F_FASTPATH))
		return fp_punt(skb, port, s, &s->punt_fastpath_off);
	vni = bpf_map_lookup_elem(&andromeda_vnis, &port->vni);
	if (!vni || !(vni->flags & ANDROMEDA_VNI_F_FASTPATH))
		return fp_punt(skb, port, s, &s->punt_fastpath_off);
	if (!fp_mac_equal(eth->h_dest, vni->gateway_mac))
		return fp_punt(skb, port, s, &s->punt_not_to_gateway);
	tot = bpf_ntohs(ip->tot_len);
	if (tot < sizeof(*ip) || (!skb->gso_size && tot != len - ETH_HLEN))
		return fp_punt(skb, port, s, &s->punt_ip_header);
	if ((bpf_ntohl(ip->daddr) >> 28) == 0xe || ip->daddr == 0xffffffff || ip->daddr == vni->gateway)
		return fp_punt(skb, port, s, &s->punt_to_gateway);
	key.vni = port->vni;
	key.ip = ip->daddr;
	target = bpf_map_lookup_elem(&andromeda_fabric, &key);
	if (!target || (target->local && target->ifindex == 0))
		return fp_punt(skb, port, s, &s->punt_no_route);
	if (target->local) {
		__builtin_memcpy(eth->h_dest, target->mac, ETH_ALEN);
		__builtin_memcpy(eth->h_source, vni->gateway_mac, ETH_ALEN);
		s->local_packets++;
		s->local_bytes += len;
		return bpf_redirect_peer(target->ifindex, 0);
	}
	peer = bpf_map_lookup_elem(&andromeda_peers, &target->node_ip);
	if (!peer || !peer->mac_known)
		return fp_punt(skb, port, s, &s->punt_no_next_hop);
	mtu = fp_path_mtu(cfg, vni);
	if (skb->gso_size) {
		__u32 l4 = 0;

		if (ip->protocol == IPPROTO_TCP) {
			__u8 *tcp = (void *)(ip + 1);

			if ((void *)(tcp + 13) > data_end)
				return fp_punt(skb, port, s, &s->punt_gso);
			l4 = (tcp[12] >> 4) * 4;
		} else if (ip->protocol == IPPROTO_UDP) {
			l4 = sizeof(struct udphdr);
		} else {
			return fp_punt(skb, port, s, &s->punt_gso);
		}
		if (sizeof(*ip) + l4 + skb->gso_size > mtu)
			return fp_punt(skb, port, s, &s->punt_too_big);
	} else if (tot > mtu) {
		return fp_punt(skb, port, s, &s->punt_too_big);
	}
	if ((void *)(ip + 1) + 4 <= data_end)
		__builtin_memcpy(&ports, (void *)(ip + 1), 4);
	hash = fp_flow_hash(ip, ports, (void *)(ip + 1) + 4 <= data_end);
	__builtin_memcpy(o.inner.h_dest, target->mac, ETH_ALEN);
	__builtin_memcpy(o.inner.h_source, eth->h_source, ETH_ALEN);
	o.inner.h_proto = bpf_htons(ETH_P_IP);
	fp_write_outer(&o, cfg, peer, target->node_ip, port->vni, hash, len);
	/* Headroom for the receiver's XDP (cfg->encap_headroom, set where the underlay is a veth).
	 * XDP on a veth, generic or native, copies every skb with less than XDP_PACKET_HEADROOM in
	 * front of its Ethernet header before the program runs, and a tenant's small frame has a few
	 * bytes at most: the encap below has to reallocate its head anyway. Making room once, here,
	 * for the outer headers and the receiver's 256 bytes makes that one reallocation a little
	 * larger and spares the receiving node its copy (a new page, a new skb). Only for linear,
	 * non-GSO frames: the receiver copies the others whatever their headroom. The room is made
	 * and given back at once, so that the frame is as before; if it cannot be given back, the
	 * frame is not ours to send. */
	if (cfg->encap_headroom && !skb->gso_size && (long)skb->data_end - (long)skb->data == len &&
	    bpf_skb_adjust_room(skb, cfg->encap_headroom, BPF_ADJ_ROOM_MAC, 0) == 0 &&
	    bpf_skb_adjust_room(skb, -(int)cfg->encap_headroom, BPF_ADJ_ROOM_MAC, 0) != 0)
		return FP_DROP(s, drop_adjust_failed);
	if (bpf_skb_adjust_room(skb, ANDROMEDA_ENCAP_OVERHEAD, BPF_ADJ_ROOM_MAC,
				BPF_F_ADJ_ROOM_FIXED_GSO | BPF_F_ADJ_ROOM_ENCAP_L3_IPV4 | BPF_F_ADJ_ROOM_ENCAP_L4_UDP |
					BPF_F_ADJ_ROOM_ENCAP_L2_ETH | BPF_F_ADJ_ROOM_ENCAP_L2(ETH_HLEN)))
		return FP_DROP(s, drop_adjust_failed);
	/* The new headers are written in place: the room was made at the head, in the linear part
	 * (which held at least the 34 bytes of Ethernet and IPv4 header read above), so the first
	 * 64 bytes are there to write without bpf_skb_store_bytes. */
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	if (data + sizeof(o) > data_end)
		return FP_DROP(s, drop_adjust_failed);
	{
		const __u64 *from = (const __u64 *)&o;
		__u64 *to = data;

#pragma unroll
		for (int i = 0; i < (int)(sizeof(o) / 8); i++)
			to[i] = from[i];
	}
	s->encap_packets++;
	s->encap_bytes += len;
	if (skb->gso_size)
		s->encap_gso_packets++;
	return bpf_redirect(cfg->underlay_ifindex, 0);
}

/* Ingress of a punt device: what the pipeline sent to the tenant on its peer goes into the
 * tenant. */
SEC("tc")
int andromeda_tc_punt(struct __sk_buff *skb)
{
	struct andromeda_fp_stats *s = fp_stats();
	const struct andromeda_port *port;
	__u32 ifindex = skb->ifindex;

	if (!s)
		return TC_ACT_SHOT;
	port = bpf_map_lookup_elem(&andromeda_ports, &ifindex);
	if (!port || port->role != ANDROMEDA_PORT_PUNT) {
		return FP_DROP(s, drop_no_port);
	}
	s->return_packets++;
	s->return_bytes += skb->len;
	return bpf_redirect_peer(port->link, 0);
}

/* Generic XDP runs a program on a copy when it cannot run it on the skb in place (a cloned or
 * non-linear skb, one with less than XDP_PACKET_HEADROOM in front: every GSO packet), and for an
 * xdp.frags program that copy (skb_pp_cow_data) leaves mac_len at 0. tc then shows the packet
 * from its network header rather than its Ethernet header. Such a packet is put right here: the
 * Ethernet header is pushed back (bpf_skb_change_head sets mac_len again) and its bytes, still
 * where the MAC header offset says, copied into it. Only packets to this node's own unicast MAC
 * are considered, and that MAC's first byte is even while an IPv4 header without options starts
 * with 0x45, so the first byte at skb->data tells the two layouts apart. 0: the packet starts
 * at its Ethernet header (as it was or as restored, and then *restored is set: a packet generic
 * XDP had copied); -1: not for this node, or it could not be restored (the caller passes it on
 * untouched). */
static __always_inline int fp_restore_mac(struct __sk_buff *skb, const struct andromeda_fp_config *cfg,
					  int *restored)
{
	struct ethhdr eth;
	__u8 first;

	if (bpf_skb_load_bytes_relative(skb, 0, &eth, sizeof(eth), BPF_HDR_START_MAC))
		return -1;
	if (!fp_mac_equal(eth.h_dest, cfg->underlay_mac))
		return -1;
	if (bpf_skb_load_bytes(skb, 0, &first, 1))
		return -1;
	if (first != 0x45)
		return 0;
	if (bpf_skb_change_head(skb, ETH_HLEN, 0) || bpf_skb_store_bytes(skb, 0, &eth, sizeof(eth), 0))
		return -1;
	*restored = 1;
	return 0;
}

/* Ingress of the underlay: the overlay packets the XDP program handed over (fp_decap_check, its
 * finding in the packet's metadata) are decapsulated and go straight into their endpoint's
 * tenant; everything else is the host's (and any other tc program's on the device). */
SEC("tc")
int andromeda_tc_underlay(struct __sk_buff *skb)
{
	const struct andromeda_fp_config *cfg = fp_config();
	const struct andromeda_fp_handoff *h;
	struct andromeda_fp_stats *s;
	struct fp_decap d;
	struct ethhdr eth;
	void *data, *data_end;
	struct iphdr *ip;
	struct udphdr *udp;
	__u32 len = skb->len, ifindex;
	int copied = 0;

	/* What is not the fast path's goes on as TC_ACT_UNSPEC: the next tc program on the device,
	 * if any, has its say (tcx runs ours first of all), and at the end the host stack gets it. */
	if (!cfg || skb->vlan_present || skb->protocol != bpf_htons(ETH_P_IP) || fp_restore_mac(skb, cfg, &copied) != 0)
		return TC_ACT_UNSPEC;
	len = skb->len;
	bpf_skb_pull_data(skb, len < FP_INNER_OFFSET + ETH_HLEN + 20 ? len : FP_INNER_OFFSET + ETH_HLEN + 20);
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	ip = data + ETH_HLEN;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP || udp->dest != bpf_htons(overlay_port))
		return TC_ACT_UNSPEC;
	s = fp_stats();
	if (!s)
		return TC_ACT_SHOT;
	/* One overlay packet, as the XDP program saw it: its outer length is the skb's (0xffff for a
	 * GSO packet of over 64 KiB). This also refuses what GRO might have merged since XDP ran
	 * (UDP GRO forwarding on a NIC), which the metadata of the first packet would not describe. */
	if (len - ETH_HLEN > 0xffff ? !skb->gso_size || ip->tot_len != bpf_htons(0xffff)
				    : ip->tot_len != bpf_htons(len - ETH_HLEN))
		return FP_DROP(s, drop_decap_mismatch);
	h = (void *)(long)skb->data_meta;
	if ((void *)(h + 1) <= data && cfg->handoff_cookie != 0 && h->cookie == cfg->handoff_cookie &&
	    h->dev == skb->ifindex && h->ifindex != 0) {
		/* Checked by the XDP program moments ago (fp_decap_check_vni). */
		__builtin_memcpy(eth.h_dest, h->mac, ETH_ALEN);
		__builtin_memcpy(eth.h_source, h->gateway_mac, ETH_ALEN);
		ifindex = h->ifindex;
		s->decap_handed_over++;
	} else {
		if (fp_decap_check(data, data_end, len, overlay_port, cfg, &d) != 0)
			return FP_DROP(s, drop_decap_mismatch);
		__builtin_memcpy(eth.h_dest, d.target->mac, ETH_ALEN);
		__builtin_memcpy(eth.h_source, d.vni->gateway_mac, ETH_ALEN);
		ifindex = d.target->ifindex;
	}
	eth.h_proto = bpf_htons(ETH_P_IP);
	if (bpf_skb_adjust_room(skb, -ANDROMEDA_ENCAP_OVERHEAD, BPF_ADJ_ROOM_MAC,
				BPF_F_ADJ_ROOM_FIXED_GSO | BPF_F_ADJ_ROOM_DECAP_L3_IPV4))
		return FP_DROP(s, drop_adjust_failed);
	/* The Ethernet header in place: the pull above made it linear. */
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	if (data + sizeof(eth) > data_end)
		return FP_DROP(s, drop_adjust_failed);
	__builtin_memcpy(data, &eth, sizeof(eth));
	s->decap_packets++;
	s->decap_bytes += len - ANDROMEDA_ENCAP_OVERHEAD;
	if (copied)
		s->decap_xdp_copied++;
	return bpf_redirect_peer(ifindex, 0);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
