#include "wire/ethernet.hpp"

namespace andromeda::wire {

std::size_t write_ethernet_header(MutableByteSpan out, const EthernetHeader& header) noexcept {
    if (header.tag_count > kMaxVlanTags) return 0;
    const std::size_t length = header.length();
    if (out.size() < length) return 0;
    header.destination.copy_to(&out[0]);
    header.source.copy_to(&out[6]);
    std::size_t offset = 12;
    for (std::size_t i = 0; i < header.tag_count; ++i) {
        const VlanTag& t = header.tags[i];
        const auto tci = static_cast<std::uint16_t>((t.priority & 0x7) << 13 | (t.drop_eligible ? 0x1000 : 0) |
                                                    (t.vlan_id & 0x0fff));
        store_be16(&out[offset], t.tpid);
        store_be16(&out[offset + 2], tci);
        offset += kVlanTagLength;
    }
    store_be16(&out[offset], header.ethertype);
    return length;
}

}  // namespace andromeda::wire
