// Every packet parser at once: the inspect decoder walks all wire views (Ethernet/VLAN, ARP,
// IPv4, IPv6 with extension headers, ICMP, ICMPv6, UDP, TCP) and the overlay headers, and
// decapsulate() validates as the data path does. Any input must decode or be refused, never
// crash or read out of bounds.
#include <cstddef>
#include <cstdint>

#include "inspect/inspect.hpp"
#include "overlay/decap.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const andromeda::wire::ByteSpan bytes(data, size);
    const auto frame = andromeda::inspect::inspect_frame(bytes);
    (void)andromeda::inspect::render_text(frame);
    (void)andromeda::inspect::render_json(frame).dump();
    for (const auto kind : {andromeda::overlay::EncapKind::andromeda, andromeda::overlay::EncapKind::vxlan}) {
        const auto result = andromeda::overlay::decapsulate(bytes, {kind, 0});
        if (result.ok() && (result.packet.inner.data() < data || result.packet.inner.data() + result.packet.inner.size() > data + size))
            __builtin_trap();
    }
    return 0;
}
