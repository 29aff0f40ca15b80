/* The hand-over from the underlay's XDP program to its tc program: an overlay packet XDP found
 * fit for the decap fast path carries the finding (struct andromeda_fp_handoff) in its XDP
 * metadata, so tc delivers it without looking the fabric up a second time. */
#ifndef ANDROMEDA_BPF_LIB_HANDOFF_H
#define ANDROMEDA_BPF_LIB_HANDOFF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "decap.h"

_Static_assert(sizeof(struct andromeda_fp_handoff) % 4 == 0, "XDP metadata comes in 4-byte units");

/* XDP side. A driver without metadata support refuses the room; tc then checks the packet itself. */
static __always_inline void handoff_write(struct xdp_md *ctx, const struct andromeda_fp_config *cfg,
					  const struct decap_target *t)
{
	struct andromeda_fp_handoff *h;

	if (!xdp_metadata || cfg->handoff_cookie == 0 || bpf_xdp_adjust_meta(ctx, -(int)sizeof(*h)))
		return;
	h = (void *)(long)ctx->data_meta;
	if ((void *)(h + 1) > (void *)(long)ctx->data)
		return;
	h->cookie = cfg->handoff_cookie;
	h->ifindex = t->endpoint->ifindex;
	__builtin_memcpy(h->mac, t->endpoint->mac, ETH_ALEN);
	__builtin_memcpy(h->gateway_mac, t->vni->gateway_mac, ETH_ALEN);
	h->dev = ctx->ingress_ifindex;
	h->flags = t->endpoint->flags;
}

/* tc side: this node's finding for the packet, or NULL. Metadata another node's program wrote
 * (several nodes share a kernel in a test bed) or from another device is not this node's. */
static __always_inline const struct andromeda_fp_handoff *handoff_read(const struct __sk_buff *skb,
									const struct andromeda_fp_config *cfg)
{
	const struct andromeda_fp_handoff *h = (void *)(long)skb->data_meta;

	if ((void *)(h + 1) > (void *)(long)skb->data || cfg->handoff_cookie == 0 || h->cookie != cfg->handoff_cookie ||
	    h->dev != skb->ifindex || h->ifindex == 0)
		return NULL;
	return h;
}

#endif /* ANDROMEDA_BPF_LIB_HANDOFF_H */
