/* Checksums (RFC 1071). */
#ifndef ANDROMEDA_BPF_LIB_CSUM_H
#define ANDROMEDA_BPF_LIB_CSUM_H

#include <linux/bpf.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>

/* The one's-complement sum of a 20-byte IPv4 header (no options), folded: 0xffff when its
 * checksum verifies, and ~sum is the checksum to write into a header whose check field is 0. */
static __always_inline __u32 ipv4_header_sum(const struct iphdr *ip)
{
	const __u16 *w = (const __u16 *)ip;
	__u32 sum = 0;

#pragma unroll
	for (int i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

#endif /* ANDROMEDA_BPF_LIB_CSUM_H */
