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
#include "maps.h"
#include "stats.h"

ANDROMEDA_MAP(andromeda_xsks, BPF_MAP_TYPE_XSKMAP, ANDROMEDA_MAX_PORTS * ANDROMEDA_MAX_QUEUES, __u32, __u32);

/* Steers the packet to the socket of (port slot, RX queue) and counts it under `counter` (a
 * redirect_* field of struct andromeda_xdp_stats); a missing socket is a drop with a reason
 * rather than a pass, so the kernel never answers overlay traffic with port-unreachable. */
static __always_inline int steer_to_socket(struct xdp_md *ctx, const struct andromeda_port *port,
					   struct andromeda_xdp_stats *s, __u64 *counter)
{
	__u32 key = port->slot * ANDROMEDA_MAX_QUEUES + ctx->rx_queue_index;
	int verdict;

	if (ctx->rx_queue_index >= ANDROMEDA_MAX_QUEUES || !bpf_map_lookup_elem(&andromeda_xsks, &key))
		return DROP(s, no_socket);
	verdict = bpf_redirect_map(&andromeda_xsks, key, XDP_DROP);
	if (verdict == XDP_REDIRECT)
		(*counter)++;
	return verdict;
}

#define TO_SOCKET(ctx, port, s, kind) steer_to_socket(ctx, port, s, &(s)->redirect_##kind)

/* The host's own traffic, handed to the kernel untouched. */
#define PASS_HOST(s) (COUNT(s, pass_host), XDP_PASS)

/* One bucket per port, behind a spin lock rather than one per CPU: a port's frames arrive on
 * whichever CPU its sender runs on, and per-CPU buckets would let a tenant that spreads its flood
 * over the CPUs punt `punt_rate` times their number. The lock is held for a few instructions,
 * and contended only by one port's own frames (andromeda_kern_user.h, struct andromeda_punt_limit). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ANDROMEDA_MAX_PORTS);
	__type(key, __u32); /* the port's slot */
	__type(value, struct andromeda_punt_limit);
} andromeda_punt_limits SEC(".maps") __weak;

/* Whether the port's bucket has a token for one more punt (and takes it); counts either way. */
static __always_inline int punt_token(const struct andromeda_port *port)
{
	__u32 slot = port->slot;
	struct andromeda_punt_limit *b = bpf_map_lookup_elem(&andromeda_punt_limits, &slot);
	__u64 now, next;
	int passes;

	if (!b || b->interval_ns == 0)
		return 1;
	now = bpf_ktime_get_ns();
	bpf_spin_lock(&b->lock);
	next = b->next_ns > now ? b->next_ns : now; /* idle long enough: the bucket is full */
	passes = next - now <= b->tolerance_ns;
	if (passes) {
		b->next_ns = next + b->interval_ns;
		b->punted++;
	} else {
		b->rate_limited++;
	}
	bpf_spin_unlock(&b->lock);
	return passes;
}

/* A tenant frame the fast path leaves to the pipeline, counted under its reason (a punt_* field
 * of struct andromeda_fp_stats): out of the tenant port's punt device, when the port's punt bucket
 * has a token; else dropped as punt_rate_limited. */
static __always_inline int punt_to_pipeline(struct __sk_buff *skb, const struct andromeda_port *port,
					    struct andromeda_fp_stats *s, __u64 *reason)
{
	if (!punt_token(port))
		return DROP(s, punt_rate_limited);
	(*reason)++;
	COUNT_BYTES(s, punt, skb->len);
	/* bpf_redirect() with no flags always answers TC_ACT_REDIRECT; saying so as a constant lets
	 * the verifier see that a punt never reads as STAGE_CONTINUE. */
	bpf_redirect(port->link, 0);
	return TC_ACT_REDIRECT;
}

#define PUNT(skb, port, s, reason) punt_to_pipeline(skb, port, s, &(s)->punt_##reason)

#endif /* ANDROMEDA_BPF_LIB_PUNT_H */
