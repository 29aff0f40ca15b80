// The end-to-end harness's ceiling datapath (andromeda-forward, the harness's "ceiling" and
// "ceiling-xdp"): each frame is handed on as a Linux host can hand it on with the least work,
// through the same hops as Andromeda's fast path (a tc program on the tenant port redirecting to
// the underlay; a tc program on the underlay redirecting into the tenant with
// bpf_redirect_peer), with no encapsulation, no lookups and no checks. It is not a datapath
// anyone should run (it bridges everything it sees); it measures what the topology allows.
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

const volatile __u32 to_ifindex = 0;  // where the tc program sends every frame; set before load
const volatile __u32 to_peer = 0;     // 1: into the veth's other end (bpf_redirect_peer); 0: out of it
// Headroom to leave in front of linear, non-GSO frames for the receiving veth's XDP, which runs on
// a copy of any skb with less than 256 bytes there (Andromeda's encap does the same, within the
// reallocation it makes for the outer headers; here it is a reallocation of its own).
const volatile __u32 room = 0;

SEC("tc")
int fwd(struct __sk_buff* skb) {
    if (room && !skb->gso_size && (long)skb->data_end - (long)skb->data == skb->len &&
        bpf_skb_adjust_room(skb, (__s32)room, BPF_ADJ_ROOM_MAC, 0) == 0 &&
        bpf_skb_adjust_room(skb, -(__s32)room, BPF_ADJ_ROOM_MAC, 0) != 0)
        return TC_ACT_SHOT;
    return to_peer ? bpf_redirect_peer(to_ifindex, 0) : bpf_redirect(to_ifindex, 0);
}

// The least an XDP prefilter can be: issue 14 keeps one on every underlay.
SEC("xdp.frags")
int xdp_pass(struct xdp_md* ctx) {
    (void)ctx;
    return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
