// The end-to-end harness's receiver: counts IPv4/UDP frames to one destination port (0: any)
// and drops them, in XDP or at tc ingress, so the receiving tenant's stack does no work for them
// and sends no ICMP back; everything else passes. The tc variant also sees what is delivered
// into the interface with bpf_redirect_peer (Andromeda's fast path and punt return), which
// enters at tc ingress and never meets XDP.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

const volatile __u16 sink_port = 0;  // host byte order; set before load

struct sink_count {
    __u64 packets;
    __u64 bytes;
};

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct sink_count);
} sink_counts SEC(".maps");

// 1: counted (drop it), 0: not ours.
static __always_inline int count(void* data, void* end, __u64 length) {
    struct ethhdr* eth = data;
    if ((void*)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP)) return 0;
    struct iphdr* ip = (void*)(eth + 1);
    if ((void*)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP) return 0;
    struct udphdr* udp = (void*)(ip + 1);
    if ((void*)(udp + 1) > end) return 0;
    if (sink_port != 0 && udp->dest != bpf_htons(sink_port)) return 0;
    __u32 key = 0;
    struct sink_count* c = bpf_map_lookup_elem(&sink_counts, &key);
    if (c) {
        c->packets++;
        c->bytes += length;
    }
    return 1;
}

SEC("xdp")
int xdp_sink(struct xdp_md* ctx) {
    void* data = (void*)(long)ctx->data;
    void* end = (void*)(long)ctx->data_end;
    return count(data, end, (__u64)(end - data)) ? XDP_DROP : XDP_PASS;
}

SEC("tc")
int tc_sink(struct __sk_buff* skb) {
    if (skb->len > skb->data_end - skb->data) bpf_skb_pull_data(skb, 14 + 20 + 8);
    return count((void*)(long)skb->data, (void*)(long)skb->data_end, skb->len) ? 2 /* TC_ACT_SHOT */ : 0 /* TC_ACT_OK */;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
