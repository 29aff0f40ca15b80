/* IPv4 headers: pulling them through the cursor and the questions the programs ask of them. */
#ifndef ANDROMEDA_BPF_LIB_IPV4_H
#define ANDROMEDA_BPF_LIB_IPV4_H

#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "csum.h"
#include "eth.h"

#define IPV4_DF 0x4000
#define IPV4_MF 0x2000
#define IPV4_OFFSET 0x1fff

/* The fixed 20 bytes of an IPv4 header, or NULL when truncated (the caller checks the rest). */
static __always_inline struct iphdr *ipv4_pull(struct cursor *c)
{
	return cursor_pull(c, sizeof(struct iphdr));
}

/* Skips an IPv4 header's options. 0, or -1 when the header length is below 20 or the packet is
 * shorter than its header claims. The length is checked here, on the value the pull uses, so
 * that the verifier knows the cursor moves by 0 to 40 bytes. */
static __always_inline int ipv4_pull_options(struct cursor *c, const struct iphdr *ip)
{
	__u32 header_len = ip->ihl * 4;

	if (header_len < sizeof(*ip) || !cursor_pull(c, header_len - sizeof(*ip)))
		return -1;
	return 0;
}

/* A well-formed header as the fast path takes it: version 4, no options, a verified checksum. */
static __always_inline int ipv4_is_plain(const struct iphdr *ip)
{
	return ip->version == 4 && ip->ihl == 5 && ipv4_header_sum(ip) == 0xffff;
}

static __always_inline int ipv4_is_fragment(const struct iphdr *ip)
{
	return (ip->frag_off & bpf_htons(IPV4_MF | IPV4_OFFSET)) != 0;
}

/* 224.0.0.0/4 and 255.255.255.255: the fabric carries unicast only. */
static __always_inline int ipv4_is_multicast_or_broadcast(__be32 a)
{
	return (bpf_ntohl(a) >> 28) == 0xe || a == 0xffffffff;
}

#endif /* ANDROMEDA_BPF_LIB_IPV4_H */
