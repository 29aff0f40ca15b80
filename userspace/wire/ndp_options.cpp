#include "wire/ndp_options.hpp"

#include <algorithm>
#include <cstring>

namespace andromeda::wire {

std::string_view to_string(NdpError error) noexcept {
    switch (error) {
        case NdpError::None:
            return "none";
        case NdpError::Truncated:
            return "truncated";
        case NdpError::WrongType:
            return "wrong_type";
        case NdpError::BadOptionLength:
            return "bad_option_length";
        case NdpError::NotIcmpv6:
            return "not_icmpv6";
        case NdpError::Fragmented:
            return "fragmented";
        case NdpError::BadHopLimit:
            return "bad_hop_limit";
        case NdpError::BadCode:
            return "bad_code";
        case NdpError::BadChecksum:
            return "bad_checksum";
        case NdpError::BadLinkLayerOption:
            return "bad_link_layer_option";
        case NdpError::MulticastTarget:
            return "multicast_target";
        case NdpError::UnspecifiedSourceWithLinkLayerOption:
            return "unspecified_source_with_link_layer_option";
        case NdpError::UnspecifiedSourceNotToSolicitedNode:
            return "unspecified_source_not_to_solicited_node";
        case NdpError::SolicitedToMulticast:
            return "solicited_to_multicast";
        case NdpError::NotLinkLocalSource:
            return "not_link_local_source";
        case NdpError::MulticastSource:
            return "multicast_source";
    }
    return "unknown";
}

std::optional<MacAddress> decode_link_layer_address(const NdpOption& option) noexcept {
    const bool link_layer =
        option.type == ndp_option::kSourceLinkLayerAddress || option.type == ndp_option::kTargetLinkLayerAddress;
    if (!link_layer || option.bytes.size() != kLinkLayerAddressOptionLength) return std::nullopt;
    return MacAddress::from_bytes(&option.bytes[2]);
}

std::optional<PrefixInformation> decode_prefix_information(const NdpOption& option) noexcept {
    if (option.type != ndp_option::kPrefixInformation || option.bytes.size() != kPrefixInformationOptionLength)
        return std::nullopt;
    const std::uint8_t* p = option.bytes.data();
    PrefixInformation information;
    information.prefix_length = p[2];
    information.on_link = (p[3] & 0x80) != 0;
    information.autonomous = (p[3] & 0x40) != 0;
    information.valid_lifetime = load_be32(p + 4);
    information.preferred_lifetime = load_be32(p + 8);
    information.prefix = Ipv6Address::from_bytes(p + 16);
    return information;
}

std::optional<std::uint32_t> decode_mtu(const NdpOption& option) noexcept {
    if (option.type != ndp_option::kMtu || option.bytes.size() != kMtuOptionLength) return std::nullopt;
    return load_be32(&option.bytes[4]);
}

std::optional<RdnssView> RdnssView::parse(const NdpOption& option) noexcept {
    const std::size_t units = option.bytes.size() / kNdpOptionUnit;
    if (option.type != ndp_option::kRecursiveDnsServer || units < 3 || units % 2 == 0) return std::nullopt;
    return RdnssView(option.bytes);
}

Parsed<NdpOptions, NdpError> NdpOptions::parse(ByteSpan area) noexcept {
    std::size_t at = 0;
    while (at < area.size()) {
        if (area.size() - at < 2) return NdpError::BadOptionLength;
        const std::size_t length = area[at + 1] * kNdpOptionUnit;
        if (length == 0 || length > area.size() - at) return NdpError::BadOptionLength;
        at += length;
    }
    return NdpOptions(area);
}

std::optional<NdpOption> NdpOptions::find(std::uint8_t type) const noexcept {
    for (const NdpOption option : *this)
        if (option.type == type) return option;
    return std::nullopt;
}

std::size_t NdpOptions::count(std::uint8_t type) const noexcept {
    return static_cast<std::size_t>(
        std::count_if(begin(), end(), [type](const NdpOption& o) { return o.type == type; }));
}

std::optional<MacAddress> NdpOptions::source_link_layer_address() const noexcept {
    const auto option = find(ndp_option::kSourceLinkLayerAddress);
    return option ? decode_link_layer_address(*option) : std::nullopt;
}

std::optional<MacAddress> NdpOptions::target_link_layer_address() const noexcept {
    const auto option = find(ndp_option::kTargetLinkLayerAddress);
    return option ? decode_link_layer_address(*option) : std::nullopt;
}

std::optional<std::uint32_t> NdpOptions::mtu() const noexcept {
    const auto option = find(ndp_option::kMtu);
    return option ? decode_mtu(*option) : std::nullopt;
}

bool NdpOptions::link_layer_options_are_ethernet() const noexcept {
    return std::all_of(begin(), end(), [](const NdpOption& o) {
        const bool link_layer =
            o.type == ndp_option::kSourceLinkLayerAddress || o.type == ndp_option::kTargetLinkLayerAddress;
        return !link_layer || o.bytes.size() == kLinkLayerAddressOptionLength;
    });
}

MutableByteSpan NdpOptionWriter::claim(std::uint8_t type, std::size_t length) noexcept {
    if (failed_ || length == 0 || length % kNdpOptionUnit != 0 || length / kNdpOptionUnit > 255 ||
        out_.size() - length_ < length) {
        failed_ = true;
        return {};
    }
    const MutableByteSpan option = out_.subspan(length_, length);
    std::fill(option.begin(), option.end(), std::uint8_t{0});
    option[0] = type;
    option[1] = static_cast<std::uint8_t>(length / kNdpOptionUnit);
    length_ += length;
    return option;
}

bool NdpOptionWriter::link_layer_address(std::uint8_t type, const MacAddress& mac) noexcept {
    const MutableByteSpan option = claim(type, kLinkLayerAddressOptionLength);
    if (option.empty()) return false;
    mac.copy_to(&option[2]);
    return true;
}

bool NdpOptionWriter::prefix_information(const PrefixInformation& information) noexcept {
    if (information.prefix_length > 128) {
        failed_ = true;
        return false;
    }
    const MutableByteSpan option = claim(ndp_option::kPrefixInformation, kPrefixInformationOptionLength);
    if (option.empty()) return false;
    option[2] = information.prefix_length;
    option[3] = static_cast<std::uint8_t>((information.on_link ? 0x80 : 0) | (information.autonomous ? 0x40 : 0));
    store_be32(&option[4], information.valid_lifetime);
    store_be32(&option[8], information.preferred_lifetime);
    information.prefix.copy_to(&option[16]);
    return true;
}

bool NdpOptionWriter::mtu(std::uint32_t mtu) noexcept {
    const MutableByteSpan option = claim(ndp_option::kMtu, kMtuOptionLength);
    if (option.empty()) return false;
    store_be32(&option[4], mtu);
    return true;
}

bool NdpOptionWriter::recursive_dns_servers(std::uint32_t lifetime, std::span<const Ipv6Address> servers) noexcept {
    if (servers.empty() || servers.size() > kMaxRdnssAddresses) {
        failed_ = true;
        return false;
    }
    const MutableByteSpan option = claim(ndp_option::kRecursiveDnsServer, 8 + 16 * servers.size());
    if (option.empty()) return false;
    store_be32(&option[4], lifetime);
    for (std::size_t i = 0; i < servers.size(); ++i) servers[i].copy_to(&option[8 + 16 * i]);
    return true;
}

bool NdpOptionWriter::option(std::uint8_t type, ByteSpan data) noexcept {
    const std::size_t length = (2 + data.size() + kNdpOptionUnit - 1) / kNdpOptionUnit * kNdpOptionUnit;
    const MutableByteSpan option = claim(type, length);
    if (option.empty()) return false;
    if (!data.empty()) std::memcpy(&option[2], data.data(), data.size());
    return true;
}

}  // namespace andromeda::wire
