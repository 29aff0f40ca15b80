/* Port security: a tenant may only send as its own endpoint (source MAC, IPv4 source, ARP
 * sender), on the XDP prefilter (MAC) and the tc fast path (all three) alike; the AF_XDP
 * pipeline checks the same again, as the authority. */
#ifndef ANDROMEDA_BPF_LIB_PORT_SECURITY_H
#define ANDROMEDA_BPF_LIB_PORT_SECURITY_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"
#include "eth.h"

static __always_inline int source_mac_spoofed(const struct ethhdr *eth, const struct andromeda_port *port)
{
	return !mac_equal(eth->h_source, port->mac);
}

static __always_inline int source_ip_spoofed(const struct iphdr *ip, const struct andromeda_port *port)
{
	return ip->saddr != port->ip;
}

/* A DHCP client that has no address yet (source 0.0.0.0, UDP to port 67): not a spoof, but the
 * gateway's DHCP server's, in the pipeline, which answers only the port's own endpoint. `c` is at
 * the IPv4 payload of a plain header. */
static __always_inline int dhcp_client_without_address(struct cursor *c, const struct iphdr *ip)
{
	const struct udphdr *udp;

	if (ip->saddr != 0 || ip->protocol != IPPROTO_UDP)
		return 0;
	udp = cursor_pull(c, sizeof(*udp));
	return udp && udp->dest == bpf_htons(67);
}

/* An Ethernet/IPv4 ARP packet whose sender is not the endpoint (a sender address of 0.0.0.0 is
 * a probe, and allowed). A malformed or non-Ethernet/IPv4 ARP is not judged here: it is the
 * pipeline's to refuse. */
static __always_inline int arp_sender_spoofed(struct cursor *c, const struct andromeda_port *port)
{
	__u8 *arp = cursor_pull(c, 28);
	__be32 spa;

	if (!arp)
		return 0;
	if (arp[0] != 0 || arp[1] != 1 || arp[2] != 0x08 || arp[3] != 0 || arp[4] != 6 || arp[5] != 4)
		return 0;
	__builtin_memcpy(&spa, arp + 14, 4);
	return !mac_equal(arp + 8, port->mac) || (spa != port->ip && spa != 0);
}

#endif /* ANDROMEDA_BPF_LIB_PORT_SECURITY_H */
