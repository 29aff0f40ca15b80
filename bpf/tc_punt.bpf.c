// SPDX-License-Identifier: MIT
/* Ingress of a punt device (tc): what the pipeline sent on the far end of the pair goes into the
 * tenant (a veth tenant port's pair), or out of `link` (ANDROMEDA_PORT_F_EGRESS: the uplink's
 * pair, and a tap's, whose VM reads what leaves the tap). */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "lib/fabric.h"
#include "lib/stats.h"

SEC("tc")
int andromeda_tc_punt(struct __sk_buff *skb)
{
	struct andromeda_fp_stats *s = fp_stats();
	const struct andromeda_port *port;

	if (!s)
		return TC_ACT_SHOT;
	port = port_with_role(skb->ifindex, ANDROMEDA_PORT_PUNT);
	if (!port)
		return DROP(s, no_port);
	COUNT_BYTES(s, return, skb->len);
	if (port->flags & ANDROMEDA_PORT_F_EGRESS)
		return bpf_redirect(port->link, 0);
	return bpf_redirect_peer(port->link, 0);
}
