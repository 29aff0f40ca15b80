/* Every map of the object is declared through ANDROMEDA_MAP, in the header of the feature that
 * owns it. Maps carry BTF (typed keys and values), so `bpftool map dump pinned <pin dir>/<name>`
 * prints named fields, and are __weak: each entry file that includes the header defines the same
 * map, and the BPF linker (bpftool gen object) merges them into one. */
#ifndef ANDROMEDA_BPF_LIB_MAPS_H
#define ANDROMEDA_BPF_LIB_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define ANDROMEDA_MAP(name, map_type, entries, key_type, value_type)                                 \
	struct {                                                                                     \
		__uint(type, map_type);                                                              \
		__uint(max_entries, entries);                                                        \
		__type(key, key_type);                                                               \
		__type(value, value_type);                                                           \
	} name SEC(".maps") __weak

#endif /* ANDROMEDA_BPF_LIB_MAPS_H */
