// Ethernet II frames with up to two 802.1Q / 802.1ad VLAN tags: a zero-copy view and a builder.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/parse_result.hpp"

namespace andromeda::wire {

namespace ethertype {
inline constexpr std::uint16_t kIpv4 = 0x0800;
inline constexpr std::uint16_t kArp = 0x0806;
inline constexpr std::uint16_t kVlan = 0x8100;   // 802.1Q customer tag
inline constexpr std::uint16_t kQinQ = 0x88a8;   // 802.1ad service tag
inline constexpr std::uint16_t kIpv6 = 0x86dd;
}  // namespace ethertype

inline constexpr std::size_t kEthernetHeaderLength = 14;
inline constexpr std::size_t kVlanTagLength = 4;
inline constexpr std::size_t kMaxVlanTags = 2;

[[nodiscard]] constexpr bool is_vlan_tpid(std::uint16_t type) noexcept {
    return type == ethertype::kVlan || type == ethertype::kQinQ;
}

struct VlanTag {
    std::uint16_t tpid = ethertype::kVlan;
    std::uint8_t priority = 0;       // PCP, 3 bits
    bool drop_eligible = false;      // DEI
    std::uint16_t vlan_id = 0;       // VID, 12 bits
    friend constexpr bool operator==(const VlanTag&, const VlanTag&) = default;
};

// The decoded fields of an Ethernet header; also the input of write_ethernet_header().
// tags[0] is the outermost tag; entries at or past tag_count are ignored by the builder and
// left default by the view, so two equal headers compare equal.
struct EthernetHeader {
    MacAddress destination;
    MacAddress source;
    std::uint16_t ethertype = 0;     // of the payload, after any tags
    std::array<VlanTag, kMaxVlanTags> tags{};
    std::uint8_t tag_count = 0;

    [[nodiscard]] constexpr std::size_t length() const noexcept {
        return kEthernetHeaderLength + kVlanTagLength * tag_count;
    }
    friend constexpr bool operator==(const EthernetHeader&, const EthernetHeader&) = default;
};

// Writes the header at the start of `out`. Returns the bytes written (14, 18 or 22), or 0 when
// `out` is too small or tag_count > 2.
std::size_t write_ethernet_header(MutableByteSpan out, const EthernetHeader& header) noexcept;

// A view over one frame. Byte is `const std::uint8_t` (EthernetView, read-only) or `std::uint8_t`
// (MutableEthernetView, which adds setters). Like std::span, the view is a handle: setters are
// const because they change the bytes, not the view.
template <class Byte>
class BasicEthernetView {
    static constexpr bool kMutable = !std::is_const_v<Byte>;

public:
    using Span = std::span<Byte>;

    static Parsed<BasicEthernetView> parse(Span frame) noexcept {
        if (frame.size() < kEthernetHeaderLength) return ParseError::Truncated;
        std::size_t tag_count = 0;
        std::uint16_t type = load_be16(&frame[12]);
        while (is_vlan_tpid(type)) {
            if (tag_count == kMaxVlanTags) return ParseError::TooManyVlanTags;
            const std::size_t tag_end = kEthernetHeaderLength + kVlanTagLength * (tag_count + 1);
            if (frame.size() < tag_end) return ParseError::Truncated;
            type = load_be16(&frame[tag_end - 2]);
            ++tag_count;
        }
        return BasicEthernetView(frame, static_cast<std::uint8_t>(tag_count));
    }

    [[nodiscard]] MacAddress destination() const noexcept { return MacAddress::from_bytes(&frame_[0]); }
    [[nodiscard]] MacAddress source() const noexcept { return MacAddress::from_bytes(&frame_[6]); }
    // The ethertype of the payload (the innermost one when tagged).
    [[nodiscard]] std::uint16_t ethertype() const noexcept { return load_be16(&frame_[header_length() - 2]); }
    [[nodiscard]] std::size_t vlan_count() const noexcept { return tag_count_; }
    // Tag 0 is the outermost. nullopt for an index past vlan_count().
    [[nodiscard]] std::optional<VlanTag> tag(std::size_t index) const noexcept {
        if (index >= tag_count_) return std::nullopt;
        const Byte* p = &frame_[12 + kVlanTagLength * index];
        const std::uint16_t tci = load_be16(p + 2);
        return VlanTag{load_be16(p), static_cast<std::uint8_t>(tci >> 13), (tci & 0x1000) != 0,
                       static_cast<std::uint16_t>(tci & 0x0fff)};
    }
    // The VLAN id of tag `index`, or 0 when there is no such tag (0 is "no VLAN" in 802.1Q).
    [[nodiscard]] std::uint16_t vlan_id(std::size_t index = 0) const noexcept {
        const auto t = tag(index);
        return t ? t->vlan_id : 0;
    }
    [[nodiscard]] std::size_t header_length() const noexcept {
        return kEthernetHeaderLength + kVlanTagLength * tag_count_;
    }
    [[nodiscard]] Span frame() const noexcept { return frame_; }
    [[nodiscard]] Span payload() const noexcept { return frame_.subspan(header_length()); }
    [[nodiscard]] EthernetHeader header() const noexcept {
        EthernetHeader h{destination(), source(), ethertype(), {}, tag_count_};
        for (std::size_t i = 0; i < tag_count_; ++i) h.tags[i] = *tag(i);
        return h;
    }

    void set_destination(const MacAddress& mac) const noexcept requires kMutable { mac.copy_to(&frame_[0]); }
    void set_source(const MacAddress& mac) const noexcept requires kMutable { mac.copy_to(&frame_[6]); }
    void set_ethertype(std::uint16_t type) const noexcept requires kMutable {
        store_be16(&frame_[header_length() - 2], type);
    }
    // Changes the VID of tag `index`, keeping PCP and DEI. Returns false when there is no such tag.
    bool set_vlan_id(std::size_t index, std::uint16_t vlan_id) const noexcept requires kMutable {
        if (index >= tag_count_) return false;
        Byte* p = &frame_[12 + kVlanTagLength * index + 2];
        store_be16(p, static_cast<std::uint16_t>((load_be16(p) & 0xf000) | (vlan_id & 0x0fff)));
        return true;
    }

private:
    BasicEthernetView(Span frame, std::uint8_t tag_count) noexcept : frame_(frame), tag_count_(tag_count) {}

    Span frame_;
    std::uint8_t tag_count_ = 0;
};

using EthernetView = BasicEthernetView<const std::uint8_t>;
using MutableEthernetView = BasicEthernetView<std::uint8_t>;

}  // namespace andromeda::wire
