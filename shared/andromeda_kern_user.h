/* Types and constants shared by the XDP programs (bpf/) and the daemon (userspace/).
 * Fixed-width types only: userspace static_asserts every size and offset it relies on. */
#ifndef ANDROMEDA_KERN_USER_H
#define ANDROMEDA_KERN_USER_H

#include <linux/types.h>

#define ANDROMEDA_OVERLAY_PORT 43481
#define ANDROMEDA_VXLAN_PORT 4789
#define ANDROMEDA_OVERLAY_HEADER_LEN 8
/* outer Ethernet 14 + IPv4 20 + UDP 8 + overlay header 8 */
#define ANDROMEDA_ENCAP_OVERHEAD 50

enum andromeda_encap_kind {
	ANDROMEDA_ENCAP_ANDROMEDA = 0,
	ANDROMEDA_ENCAP_VXLAN = 1,
};

/* Per-CPU XDP counters: one named field per verdict and drop reason, so that
 * `bpftool map dump` prints them by name. Every field counts packets. */
struct andromeda_xdp_stats {
	__u64 rx_packets;         /* every packet the program saw */
	__u64 pass_host;          /* handed to the kernel untouched: not ours */
	__u64 overlay_seen;       /* UDP to the configured overlay port */
	__u64 drop_truncated;     /* shorter than the headers it claims */
	__u64 drop_bad_ip_header; /* IPv4 IHL < 5 or total length inconsistent */
};

#endif /* ANDROMEDA_KERN_USER_H */
