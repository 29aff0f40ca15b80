// Every packet parser at once: the inspect decoder walks all wire views (Ethernet/VLAN, ARP,
// IPv4, IPv6 with extension headers, ICMP, ICMPv6, UDP, TCP) and the overlay headers, and
// decapsulate() validates as the data path does, over an IPv4 or an IPv6 underlay. Any input must
// decode or be refused, never crash or read out of bounds; and what decap accepts, a template with
// the outer fields it found encapsulates again into a packet decap accepts with the same inner
// frame and fields.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "inspect/inspect.hpp"
#include "overlay/decap.hpp"
#include "overlay/outer_template.hpp"

namespace {

using namespace andromeda;

void check_reencapsulation(overlay::EncapKind kind, const overlay::Decapsulated& p) {
    // IPv6's payload length allows an inner frame 20 bytes longer than a template sends.
    if (p.inner.size() > overlay::kMaxInnerFrameSize) return;
    overlay::OuterTemplateConfig c;
    c.kind = kind;
    c.src_mac = p.outer_src_mac;
    c.dst_mac = p.outer_dst_mac;
    c.src_ip = p.outer_src_ip;
    c.dst_ip = p.outer_dst_ip;
    c.ipv6 = p.outer_ipv6;
    c.src_ip6 = p.outer_src_ip6;
    c.dst_ip6 = p.outer_dst_ip6;
    c.ttl = p.outer_ttl;
    c.vlan_id = p.outer_vlan_id;  // decap reads the outermost tag of up to two
    overlay::OuterTemplate t(c);
    // VXLAN has no hash field: decap reports the source port, whose low 14 bits are the hash.
    const overlay::OverlayFields fields{p.vni, p.flow_hash, p.hop_limit, p.flags};
    std::vector<std::uint8_t> out(p.inner.size() + t.header_size());
    if (t.encapsulate(p.inner, out, fields) != out.size()) __builtin_trap();
    const auto again = overlay::decapsulate(out, {kind, 0});
    if (!again.ok() || again.packet.outer_ipv6 != p.outer_ipv6 || again.packet.vni != p.vni ||
        again.packet.inner.size() != p.inner.size() ||
        !std::equal(p.inner.begin(), p.inner.end(), again.packet.inner.begin()))
        __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const andromeda::wire::ByteSpan bytes(data, size);
    const auto frame = andromeda::inspect::inspect_frame(bytes);
    (void)andromeda::inspect::render_text(frame);
    (void)andromeda::inspect::render_json(frame).dump();
    for (const auto kind : {andromeda::overlay::EncapKind::andromeda, andromeda::overlay::EncapKind::vxlan}) {
        const auto result = andromeda::overlay::decapsulate(bytes, {kind, 0});
        if (!result.ok()) continue;
        if (result.packet.inner.data() < data || result.packet.inner.data() + result.packet.inner.size() > data + size ||
            result.packet.inner.data() != data + result.packet.inner_offset)
            __builtin_trap();
        check_reencapsulation(kind, result.packet);
    }
    return 0;
}
