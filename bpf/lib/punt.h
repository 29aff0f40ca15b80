/* Handing frames to the AF_XDP pipeline: the XDP prefilter redirects into the socket of the
 * port's RX queue; the tc fast path redirects a tenant frame it does not take into the port's
 * punt pair (whose far end's XDP steers it to the socket, with checksums finished and GSO
 * packets segmented by the kernel on the way). */
#ifndef ANDROMEDA_BPF_LIB_PUNT_H
#define ANDROMEDA_BPF_LIB_PUNT_H

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "stats.h"

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, ANDROMEDA_MAX_PORTS * ANDROMEDA_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} andromeda_xsks SEC(".maps") __weak;

/* Steers the packet to the socket of (port slot, RX queue); a missing socket is a drop with a
 * reason rather than a pass, so the kernel never answers overlay traffic with port-unreachable. */
static __always_inline int to_socket(struct xdp_md *ctx, const struct andromeda_port *port,
				     struct andromeda_xdp_stats *s)
{
	__u32 key = port->slot * ANDROMEDA_MAX_QUEUES + ctx->rx_queue_index;

	if (ctx->rx_queue_index >= ANDROMEDA_MAX_QUEUES || !bpf_map_lookup_elem(&andromeda_xsks, &key))
		return DROP(s, no_socket);
	return bpf_redirect_map(&andromeda_xsks, key, XDP_DROP);
}

/* A tenant frame the fast path leaves to the pipeline, counted under its reason (a punt_* field
 * of struct andromeda_fp_stats): out of the tenant port's punt device. */
static __always_inline int punt_to_pipeline(struct __sk_buff *skb, const struct andromeda_port *port,
					    struct andromeda_fp_stats *s, __u64 *reason)
{
	(*reason)++;
	COUNT_BYTES(s, punt, skb->len);
	/* bpf_redirect() with no flags always answers TC_ACT_REDIRECT; saying so as a constant lets
	 * the verifier see that a punt never reads as STAGE_CONTINUE. */
	bpf_redirect(port->link, 0);
	return TC_ACT_REDIRECT;
}

#define PUNT(skb, port, s, reason) punt_to_pipeline(skb, port, s, &(s)->punt_##reason)

#endif /* ANDROMEDA_BPF_LIB_PUNT_H */
