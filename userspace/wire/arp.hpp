// ARP (RFC 826) for Ethernet/IPv4 only: the only kind the gateway answers (proxy-ARP), so other
// hardware/protocol types are refused at parse time rather than half-understood.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/parse_result.hpp"

namespace andromeda::wire {

inline constexpr std::size_t kArpLength = 28;
inline constexpr std::uint16_t kArpHardwareEthernet = 1;
inline constexpr std::uint16_t kArpProtocolIpv4 = 0x0800;

namespace arp_op {
inline constexpr std::uint16_t kRequest = 1;
inline constexpr std::uint16_t kReply = 2;
}  // namespace arp_op

struct ArpPacket {
    std::uint16_t operation = arp_op::kRequest;
    MacAddress sender_mac;
    Ipv4Address sender_ip;
    MacAddress target_mac;
    Ipv4Address target_ip;
    friend constexpr bool operator==(const ArpPacket&, const ArpPacket&) = default;
};

// "Who has target_ip? Tell sender_ip": the target MAC is zero, as RFC 826 leaves it unknown.
[[nodiscard]] ArpPacket make_arp_request(const MacAddress& sender_mac, Ipv4Address sender_ip,
                                         Ipv4Address target_ip) noexcept;
// The reply to `request` saying that `answer_mac` has request.target_ip.
[[nodiscard]] ArpPacket make_arp_reply(const ArpPacket& request, const MacAddress& answer_mac) noexcept;

// Writes the 28-byte Ethernet/IPv4 ARP body at the start of `out`; returns 28, or 0 when too small.
std::size_t write_arp(MutableByteSpan out, const ArpPacket& packet) noexcept;

// A view over an ARP body (the Ethernet payload). Byte is `const std::uint8_t` (ArpView) or
// `std::uint8_t` (MutableArpView, which can turn a request into a reply in place).
template <class Byte>
class BasicArpView {
    static constexpr bool kMutable = !std::is_const_v<Byte>;

public:
    using Span = std::span<Byte>;

    static Parsed<BasicArpView> parse(Span bytes) noexcept {
        if (bytes.size() < kArpLength) return ParseError::Truncated;
        if (load_be16(&bytes[0]) != kArpHardwareEthernet || load_be16(&bytes[2]) != kArpProtocolIpv4)
            return ParseError::BadHardwareType;
        if (bytes[4] != 6 || bytes[5] != 4) return ParseError::BadAddressLength;
        return BasicArpView(bytes.first(kArpLength));
    }

    [[nodiscard]] std::uint16_t operation() const noexcept { return load_be16(&bytes_[6]); }
    [[nodiscard]] bool is_request() const noexcept { return operation() == arp_op::kRequest; }
    [[nodiscard]] bool is_reply() const noexcept { return operation() == arp_op::kReply; }
    [[nodiscard]] MacAddress sender_mac() const noexcept { return MacAddress::from_bytes(&bytes_[8]); }
    [[nodiscard]] Ipv4Address sender_ip() const noexcept { return Ipv4Address::from_bytes(&bytes_[14]); }
    [[nodiscard]] MacAddress target_mac() const noexcept { return MacAddress::from_bytes(&bytes_[18]); }
    [[nodiscard]] Ipv4Address target_ip() const noexcept { return Ipv4Address::from_bytes(&bytes_[24]); }
    // Gratuitous ARP announces the sender's own address: sender and target IP are equal.
    [[nodiscard]] bool is_gratuitous() const noexcept { return sender_ip() == target_ip(); }
    [[nodiscard]] Span bytes() const noexcept { return bytes_; }
    [[nodiscard]] ArpPacket packet() const noexcept {
        return ArpPacket{operation(), sender_mac(), sender_ip(), target_mac(), target_ip()};
    }

    void set_operation(std::uint16_t op) const noexcept requires kMutable { store_be16(&bytes_[6], op); }
    void set_sender(const MacAddress& mac, Ipv4Address ip) const noexcept requires kMutable {
        mac.copy_to(&bytes_[8]);
        ip.copy_to(&bytes_[14]);
    }
    void set_target(const MacAddress& mac, Ipv4Address ip) const noexcept requires kMutable {
        mac.copy_to(&bytes_[18]);
        ip.copy_to(&bytes_[24]);
    }

private:
    explicit BasicArpView(Span bytes) noexcept : bytes_(bytes) {}

    Span bytes_;
};

using ArpView = BasicArpView<const std::uint8_t>;
using MutableArpView = BasicArpView<std::uint8_t>;

}  // namespace andromeda::wire
