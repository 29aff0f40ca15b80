#include "dataplane/ipv4_fragmenter.hpp"

#include <algorithm>
#include <cstring>

namespace andromeda::dataplane {

namespace {

constexpr std::uint8_t kOptionEnd = 0;
constexpr std::uint8_t kOptionNop = 1;
constexpr std::uint8_t kOptionCopiedFlag = 0x80;

// Collects the options with the copied flag into `out`; returns their length padded to a
// multiple of 4 with End-of-Options. A malformed option list stops the walk: what was collected
// so far is still a valid list.
std::size_t copied_options(wire::ByteSpan options, std::array<std::uint8_t, 40>& out) noexcept {
    std::size_t length = 0;
    for (std::size_t i = 0; i < options.size();) {
        const std::uint8_t type = options[i];
        if (type == kOptionEnd) break;
        if (type == kOptionNop) {
            ++i;
            continue;
        }
        if (i + 1 >= options.size()) break;
        const std::size_t option_length = options[i + 1];
        if (option_length < 2 || i + option_length > options.size()) break;
        if ((type & kOptionCopiedFlag) != 0) {
            std::memcpy(out.data() + length, options.data() + i, option_length);
            length += option_length;
        }
        i += option_length;
    }
    const std::size_t padded = (length + 3) / 4 * 4;
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(length), out.begin() + static_cast<std::ptrdiff_t>(padded),
              kOptionEnd);
    return padded;
}

}  // namespace

Ipv4Fragmenter::Ipv4Fragmenter(wire::ByteSpan frame, std::size_t ethernet_length, const wire::Ipv4View& ip,
                               std::size_t mtu) noexcept
    : ethernet_(frame.first(ethernet_length)),
      header_(ip.header_bytes()),
      payload_(ip.payload()),
      original_offset_(ip.fragment_offset()),
      original_more_fragments_(ip.more_fragments()),
      first_header_length_(ip.header_length()) {
    later_header_length_ = wire::kIpv4MinHeaderLength + copied_options(ip.options(), later_options_);
    if (mtu < first_header_length_ + 8) return;
    // A fragment reaching past 65535 bytes of datagram has no valid offset to split into.
    if (std::size_t{original_offset_} * 8 + payload_.size() > 0xffff) return;
    first_data_ = (mtu - first_header_length_) / 8 * 8;
    later_data_ = (mtu - later_header_length_) / 8 * 8;
    if (payload_.size() <= first_data_) {
        count_ = 1;
        return;
    }
    count_ = 1 + (payload_.size() - first_data_ + later_data_ - 1) / later_data_;
}

std::size_t Ipv4Fragmenter::data_offset(std::size_t index) const noexcept {
    return index == 0 ? 0 : first_data_ + (index - 1) * later_data_;
}

std::size_t Ipv4Fragmenter::data_length(std::size_t index) const noexcept {
    const std::size_t per_fragment = index == 0 ? first_data_ : later_data_;
    return std::min(per_fragment, payload_.size() - data_offset(index));
}

std::size_t Ipv4Fragmenter::frame_length(std::size_t index) const noexcept {
    return ethernet_.size() + header_length(index) + data_length(index);
}

std::size_t Ipv4Fragmenter::write(std::size_t index, wire::MutableByteSpan out) const noexcept {
    if (index >= count_) return 0;
    const std::size_t length = frame_length(index);
    if (out.size() < length) return 0;
    std::uint8_t* p = out.data();
    std::memcpy(p, ethernet_.data(), ethernet_.size());
    std::uint8_t* ip = p + ethernet_.size();
    const std::size_t header_length = this->header_length(index);
    if (index == 0) {
        std::memcpy(ip, header_.data(), header_.size());
    } else {
        std::memcpy(ip, header_.data(), wire::kIpv4MinHeaderLength);
        std::memcpy(ip + wire::kIpv4MinHeaderLength, later_options_.data(),
                    header_length - wire::kIpv4MinHeaderLength);
        ip[0] = static_cast<std::uint8_t>(0x40 | header_length / 4);
    }
    const std::size_t data_offset = this->data_offset(index);
    const std::size_t data_length = this->data_length(index);
    std::memcpy(ip + header_length, payload_.data() + data_offset, data_length);

    const bool last = index + 1 == count_;
    const bool more = !last || original_more_fragments_;
    const auto offset_units = static_cast<std::uint16_t>(original_offset_ + data_offset / 8);
    wire::store_be16(ip + 2, static_cast<std::uint16_t>(header_length + data_length));
    // DF is clear (a DF packet is never fragmented), so flags carry MF alone.
    wire::store_be16(ip + 6, static_cast<std::uint16_t>((more ? 0x2000 : 0) | (offset_units & 0x1fff)));
    wire::MutableIpv4View::parse(wire::MutableByteSpan(ip, header_length + data_length))->update_checksum();
    return length;
}

}  // namespace andromeda::dataplane
