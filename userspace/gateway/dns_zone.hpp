// One VPC's names for the gateway's DNS: `<name>.<vpc>.internal` -> the endpoint's addresses
// (A, and AAAA once it has an IPv6 address), the internal DNS GCP gives its VMs. Built when the
// fabric changes; looked up per query without allocating.
//
// Names are hostname labels (RFC 1123 2.1: letters, digits and '-', not at either end, 1-63
// bytes), kept and matched in lowercase: DNS compares names without regard to case (RFC 4343).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "wire/addresses.hpp"
#include "wire/bytes.hpp"
#include "wire/dns.hpp"

namespace andromeda::gateway {

inline constexpr std::string_view kVpcZoneSuffix = "internal";

struct DnsHostAddresses {
    std::optional<wire::Ipv4Address> ipv4;
    std::optional<wire::Ipv6Address> ipv6;
};

class DnsZone {
public:
    // The zone `<vpc>.internal`; nullopt, and why in `error`, when `vpc` is not a hostname label.
    static std::optional<DnsZone> for_vpc(std::string_view vpc, std::string& error);

    // Adds `<name>.<vpc>.internal`. False, and why in `error`, when `name` is not a hostname
    // label, is already in the zone, or has no address.
    bool add(std::string_view name, const DnsHostAddresses& addresses, std::string& error);

    [[nodiscard]] const wire::DnsName& apex() const noexcept { return apex_; }
    [[nodiscard]] const std::string& apex_text() const noexcept { return apex_text_; }
    // The host whose name is `label` (any case); null when there is none.
    [[nodiscard]] const DnsHostAddresses* find(wire::ByteSpan label) const noexcept;
    [[nodiscard]] std::size_t size() const noexcept { return hosts_.size(); }

private:
    DnsZone() = default;

    wire::DnsName apex_;
    std::string apex_text_;
    std::map<std::string, DnsHostAddresses, std::less<>> hosts_;  // lowercase label -> addresses
};

}  // namespace andromeda::gateway
