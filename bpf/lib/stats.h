/* Counters: per-CPU arrays with one named field per verdict and drop reason (the structs of
 * shared/andromeda_kern_user.h), so `bpftool map dump` prints them by name. A drop is one call
 * that counts its reason and is the verdict: `return DROP(s, spoofed_mac);` in XDP and tc alike. */
#ifndef ANDROMEDA_BPF_LIB_STATS_H
#define ANDROMEDA_BPF_LIB_STATS_H

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "maps.h"

ANDROMEDA_MAP(andromeda_stats, BPF_MAP_TYPE_PERCPU_ARRAY, 1, __u32, struct andromeda_xdp_stats);

ANDROMEDA_MAP(andromeda_fp_stats, BPF_MAP_TYPE_PERCPU_ARRAY, 1, __u32, struct andromeda_fp_stats);

/* The daemon's own counters (written by andromedad, never by a program), beside the programs'
 * so that one `bpftool map dump` shows the whole picture. */
ANDROMEDA_MAP(andromeda_daemon_stats, BPF_MAP_TYPE_ARRAY, 1, __u32, struct andromeda_daemon_stats);

static __always_inline struct andromeda_xdp_stats *xdp_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&andromeda_stats, &zero);
}

static __always_inline struct andromeda_fp_stats *fp_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&andromeda_fp_stats, &zero);
}

#define COUNT(s, field) ((s)->field++)
#define COUNT_BYTES(s, what, len) ((s)->what##_packets++, (s)->what##_bytes += (len))

/* Counts drop reason `reason` (field drop_<reason>, shared/andromeda_drops.h) and is the verdict
 * that drops: XDP_DROP for the XDP counters, TC_ACT_SHOT for the fast path's. */
#define DROP(s, reason)                                                                              \
	((s)->drop_##reason++, _Generic((s), struct andromeda_xdp_stats *: XDP_DROP,                   \
					struct andromeda_fp_stats *: TC_ACT_SHOT))

#endif /* ANDROMEDA_BPF_LIB_STATS_H */
