// SPDX-License-Identifier: MIT
/* The object's load-time constants, defined once (lib/config.h declares them for every entry
 * file); the loader sets them before the object is loaded. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"

const volatile __u16 overlay_port = ANDROMEDA_OVERLAY_PORT;
const volatile __u32 encap_kind = ANDROMEDA_ENCAP_ANDROMEDA;
const volatile __u8 decap_l4_udp = 0;
const volatile __u8 xdp_metadata = 0;

char LICENSE[] SEC("license") = "Dual MIT/GPL";
