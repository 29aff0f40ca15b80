/* The maps of the Andromeda XDP programs. All carry BTF (typed key/value) so that
 * `bpftool map dump pinned <pin dir>/<name>` prints named fields; the daemon pins them under
 * its instance's own directory. */
#ifndef ANDROMEDA_BPF_MAPS_H
#define ANDROMEDA_BPF_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "andromeda_kern_user.h"

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, ANDROMEDA_MAX_PORTS * ANDROMEDA_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} andromeda_xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ANDROMEDA_MAX_PORTS);
	__type(key, __u32); /* ifindex */
	__type(value, struct andromeda_port);
} andromeda_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ANDROMEDA_MAX_PEERS);
	__type(key, __be32); /* underlay IPv4 */
	__type(value, struct andromeda_peer);
} andromeda_peers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ANDROMEDA_MAX_VNIS);
	__type(key, __u32);
	__type(value, struct andromeda_vni);
} andromeda_vnis SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ANDROMEDA_MAX_FABRIC_ENTRIES);
	__type(key, struct andromeda_fabric_key);
	__type(value, struct andromeda_fabric_entry);
} andromeda_fabric SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ANDROMEDA_MAX_NAT_ADDRESSES);
	__type(key, __be32);
	__type(value, __u32); /* VNI of the VPC it serves */
} andromeda_nat_addrs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct andromeda_xdp_stats);
} andromeda_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct andromeda_daemon_stats);
} andromeda_daemon_stats SEC(".maps");

/* The kernel fast path's view of this node (one entry), its counters, and its IPv4 ID counter. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct andromeda_fp_config);
} andromeda_fp_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct andromeda_fp_stats);
} andromeda_fp_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} andromeda_fp_ip_id SEC(".maps");

#endif /* ANDROMEDA_BPF_MAPS_H */
