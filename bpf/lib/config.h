/* This node's configuration as the programs see it: the load-time constants (rodata, set by the
 * loader before the object is loaded and defined once, in config.bpf.c) and the fast path's
 * run-time view of the node (andromeda_fp_config, written by the daemon). */
#ifndef ANDROMEDA_BPF_LIB_CONFIG_H
#define ANDROMEDA_BPF_LIB_CONFIG_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "maps.h"

extern const volatile __u16 overlay_port; /* UDP destination port of the overlay */
extern const volatile __u32 encap_kind;   /* enum andromeda_encap_kind */
/* 1: bpf_skb_adjust_room takes BPF_F_ADJ_ROOM_DECAP_L4_UDP (the loader probed the kernel,
 * userspace/io/bpf/kernel_probe.hpp); 0: it does not, and asking would fail every decap. */
extern const volatile __u8 decap_l4_udp;
/* 1: XDP programs may call bpf_xdp_adjust_meta (probed); 0: this kernel refuses the helper to
 * them, and the underlay's XDP hands tc nothing (tc then checks each packet itself). The branch
 * on it is decided at load time: the verifier never walks a call the kernel would refuse. */
extern const volatile __u8 xdp_metadata;

/* The fast path's view of this node (one entry). */
ANDROMEDA_MAP(andromeda_fp_config, BPF_MAP_TYPE_ARRAY, 1, __u32, struct andromeda_fp_config);

/* The node's fast-path configuration, or NULL while the fast path is off (the default of a fresh
 * map): everything then goes to the AF_XDP pipeline. */
static __always_inline const struct andromeda_fp_config *fp_config(void)
{
	__u32 zero = 0;
	const struct andromeda_fp_config *c = bpf_map_lookup_elem(&andromeda_fp_config, &zero);

	return c && c->enabled ? c : NULL;
}

/* Whether the fast path's underlay is IPv6 (the daemon writes no IPv4 address then). */
static __always_inline int underlay_is_ipv6(const struct andromeda_fp_config *cfg)
{
	return cfg->underlay_ip == 0;
}

/* What a stage returns to say "not decided yet, go on to the next stage"; any other value is the
 * program's verdict. No XDP or tc verdict is negative but TC_ACT_UNSPEC (-1). */
#define STAGE_CONTINUE (-2)

#endif /* ANDROMEDA_BPF_LIB_CONFIG_H */
