/* Encapsulation in tc: outer headers in front of a frame with bpf_skb_adjust_room's ENCAP flags
 * (a GSO packet stays whole: the kernel segments it later, or never, between veths, with its
 * offloaded checksums), then out of the underlay towards the target's node. A frame whose offload
 * state the kernel will not nest (a tenant's own tunnel, a guest's UFO) is punted instead. */
#ifndef ANDROMEDA_BPF_LIB_ENCAP_H
#define ANDROMEDA_BPF_LIB_ENCAP_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "eth.h"
#include "outer6.h"
#include "overlay.h"
#include "punt.h"
#include "stats.h"

/* Headroom for the receiver's XDP (cfg->encap_headroom, set where the underlay is a veth). XDP on
 * a veth, generic or native, copies every skb with less than XDP_PACKET_HEADROOM in front of its
 * Ethernet header before the program runs, and a tenant's small frame has a few bytes at most:
 * the encap has to reallocate its head anyway. Making room once, here, for the outer headers and
 * the receiver's 256 bytes makes that one reallocation a little larger and spares the receiving
 * node its copy. Only for linear, non-GSO frames: the receiver copies the others whatever their
 * headroom. The room is made and given back at once, so that the frame is as before; 0, or -1
 * when it could not be given back (the frame is then not ours to send). */
static __always_inline int encap_reserve_headroom(struct __sk_buff *skb, const struct andromeda_fp_config *cfg,
						  __u32 len)
{
	if (cfg->encap_headroom && !skb->gso_size && (long)skb->data_end - (long)skb->data == len &&
	    bpf_skb_adjust_room(skb, cfg->encap_headroom, BPF_ADJ_ROOM_MAC, 0) == 0 &&
	    bpf_skb_adjust_room(skb, -(int)cfg->encap_headroom, BPF_ADJ_ROOM_MAC, 0) != 0)
		return -1;
	return 0;
}

/* A CHECKSUM_COMPLETE skb (from a NIC that sums what it receives, the uplink's say) carries in
 * skb->csum the sum of its bytes from the network header on, which bpf_skb_adjust_room kept
 * true over the zeros it put in; the 50 bytes then written over them (outer IPv4, UDP, overlay
 * header, inner Ethernet) are added to it, so that whoever reads it next (a veth peer's stack,
 * BPF_PROG_TEST_RUN's BPF_F_TEST_SKB_CHECKSUM_COMPLETE) does not find it stale. bpf_csum_diff
 * takes whole words: the sum starts 2 bytes early, at the outer ethertype, which `from` takes
 * back out. Other skbs pay one helper call (bpf_csum_update adds 0 or refuses). */
static __always_inline void encap_update_complete_csum(struct __sk_buff *skb, const void *o, __u32 size)
{
	__be32 from = 0;

	if ((long)bpf_csum_update(skb, 0) < 0)
		return;
	__builtin_memcpy(&from, (const __u8 *)o + 12, 2);
	bpf_csum_update(skb, (__wsum)bpf_csum_diff(&from, sizeof(from), (__be32 *)((__u8 *)o + 12), size - 12, 0));
}

/* What bpf_skb_adjust_room answers, having changed nothing, for a frame whose offload state it
 * will not put outer headers around (net/core/filter.c, bpf_skb_net_grow: both checks come before
 * the first byte moves). -EALREADY: the frame carries a tunnel's offload state already
 * (skb->encapsulation, which __sk_buff does not show: a tenant's own VXLAN, Geneve or GRE device
 * with its offloads on sets it on every TCP segment and TSO burst it sends). -ENOTSUPP (the
 * kernel's 524): a GSO type other than TCP and UDP_L4 (a guest's UFO through virtio, SCTP). */
#define ENCAP_REFUSED_TUNNEL (-114)   /* -EALREADY */
#define ENCAP_REFUSED_GSO_TYPE (-524) /* -ENOTSUPP */

/* A frame the kernel would not encapsulate: to the pipeline through `punt_port`'s punt device,
 * whose kernel segments it and finishes its checksums on the way, when the refusal left it as it
 * came and it is still the frame the pipeline expects (`punt_port` set); a drop otherwise. */
static __always_inline int encap_refused(struct __sk_buff *skb, struct andromeda_fp_stats *s,
					 const struct andromeda_port *punt_port, long err)
{
	if (punt_port && err == ENCAP_REFUSED_TUNNEL)
		return PUNT(skb, punt_port, s, tenant_tunnel);
	if (punt_port && err == ENCAP_REFUSED_GSO_TYPE && skb->gso_size)
		return PUNT(skb, punt_port, s, gso);
	return DROP(s, adjust_failed);
}

/* Counts an encapsulated frame (`len` bytes as the tenant sent it, inner ethertype `inner_proto`)
 * and sends it out of `out_ifindex`: the underlay, or the segmenting pair (reseg_ifindex). */
static __always_inline int encap_sent(struct __sk_buff *skb, struct andromeda_fp_stats *s, __u32 out_ifindex,
				      __u32 len, __be16 inner_proto)
{
	COUNT_BYTES(s, encap, len);
	if (inner_proto == bpf_htons(ETH_P_IPV6))
		COUNT(s, ipv6_packets);
	if (skb->gso_size)
		COUNT(s, encap_gso_packets);
	bpf_redirect(out_ifindex, 0);
	return TC_ACT_REDIRECT;
}

/* Makes `overhead` bytes of room at the head of the `len`-byte frame (the outer IP header's family
 * `l3_flag`), writes the `size` bytes at `o` there (the outer headers and the inner Ethernet
 * header the frame leaves with, `inner_proto` its ethertype) and sends it out of `out_ifindex`;
 * what the kernel refuses to encapsulate goes to encap_refused with `punt_port` (NULL: dropped).
 * Written in place: the room was made at the head, in the linear part (which held at least the
 * Ethernet and IP headers the caller read), so the bytes are there; in 8-byte words and a 4-byte
 * tail. */
static __always_inline int encap_write_and_send(struct __sk_buff *skb, struct andromeda_fp_stats *s,
						const struct andromeda_fp_config *cfg, const void *o, __u32 size,
						__u32 overhead, __u64 l3_flag, __be16 inner_proto, __u32 len,
						const struct andromeda_port *punt_port, __u32 out_ifindex)
{
	struct cursor c;
	__u64 *to;
	long err;

	if (encap_reserve_headroom(skb, cfg, len))
		return DROP(s, adjust_failed);
	err = bpf_skb_adjust_room(skb, overhead, BPF_ADJ_ROOM_MAC,
				  BPF_F_ADJ_ROOM_FIXED_GSO | l3_flag | BPF_F_ADJ_ROOM_ENCAP_L4_UDP |
					  BPF_F_ADJ_ROOM_ENCAP_L2_ETH | BPF_F_ADJ_ROOM_ENCAP_L2(ETH_HLEN));
	if (err)
		return encap_refused(skb, s, punt_port, err);
	c = cursor_of_skb(skb);
	to = cursor_pull(&c, size);
	if (!to)
		return DROP(s, adjust_failed);
#pragma unroll
	for (int i = 0; i < (int)(size / 8); i++)
		to[i] = ((const __u64 *)o)[i];
	if (size % 8)
		*(__u32 *)(to + size / 8) = *(const __u32 *)((const __u64 *)o + size / 8);
	encap_update_complete_csum(skb, o, size);
	return encap_sent(skb, s, out_ifindex, len, inner_proto);
}

/* Puts the outer headers `o` (overlay_write_outer's, with the inner Ethernet header the frame
 * leaves with) in front of the `len`-byte frame that starts with its Ethernet header, and sends
 * it out of the underlay; counted as encap_* (and ipv6_packets for inner IPv6). The outer header
 * is IPv4 whatever the inner frame: with ENCAP_L3_IPV4 the kernel sets skb->protocol to match it
 * (bpf_skb_net_grow), so that an inner IPv6 packet leaves as the IPv4 packet it now is. What the
 * kernel refuses to encapsulate goes to encap_refused with `punt_port` (NULL: dropped). */
static __always_inline int encap_and_send(struct __sk_buff *skb, struct andromeda_fp_stats *s,
					  const struct andromeda_fp_config *cfg, const struct outer_headers *o,
					  __u32 len, const struct andromeda_port *punt_port)
{
	return encap_write_and_send(skb, s, cfg, o, sizeof(*o), ANDROMEDA_ENCAP_OVERHEAD, BPF_F_ADJ_ROOM_ENCAP_L3_IPV4,
				    o->inner.h_proto, len, punt_port, cfg->underlay_ifindex);
}

/* Lowers a GSO packet's gso_size by `by` bytes and leaves it otherwise as it was: room is made
 * after the Ethernet header without BPF_F_ADJ_ROOM_FIXED_GSO (which lowers gso_size by as much),
 * then taken back with it. 0: done; 1: the kernel refused the first step, nothing changed; -1:
 * it refused the second, the frame is not the tenant's any more. */
static __always_inline int encap_lower_gso_size(struct __sk_buff *skb, __u32 by)
{
	if (bpf_skb_adjust_room(skb, by, BPF_ADJ_ROOM_MAC, 0))
		return 1;
	if (bpf_skb_adjust_room(skb, -(int)by, BPF_ADJ_ROOM_MAC, BPF_F_ADJ_ROOM_FIXED_GSO))
		return -1;
	return 0;
}

/* encap_and_send over an IPv6 underlay: the outer headers `o` (overlay_write_outer6's, UDP
 * checksum included) are IPv6, 70 bytes (ENCAP_L3_IPV6: skb->protocol becomes IPv6's). Out of
 * `out_ifindex`: the underlay, or the segmenting pair for a GSO packet whose segments need a
 * checksum each (andromeda_fp_config.reseg_ifindex). */
static __always_inline int encap_and_send6(struct __sk_buff *skb, struct andromeda_fp_stats *s,
					   const struct andromeda_fp_config *cfg, const struct outer_headers6 *o,
					   __u32 len, const struct andromeda_port *punt_port, __u32 out_ifindex)
{
	return encap_write_and_send(skb, s, cfg, o, sizeof(*o), ANDROMEDA_ENCAP_OVERHEAD6, BPF_F_ADJ_ROOM_ENCAP_L3_IPV6,
				    o->inner.h_proto, len, punt_port, out_ifindex);
}

#endif /* ANDROMEDA_BPF_LIB_ENCAP_H */
