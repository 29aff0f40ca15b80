#include "gateway/dns_zone.hpp"

#include <algorithm>
#include <array>

namespace andromeda::gateway {

namespace {

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowercase(std::string_view text) {
    std::string s(text);
    std::transform(s.begin(), s.end(), s.begin(), lower);
    return s;
}

}  // namespace

std::optional<DnsZone> DnsZone::for_vpc(std::string_view vpc, std::string& error) {
    if (!wire::is_hostname_label(vpc)) {
        error = "VPC name \"" + std::string(vpc) +
                "\" cannot be a DNS label: use 1-63 letters, digits and '-', not starting or ending with '-'";
        return std::nullopt;
    }
    DnsZone zone;
    zone.apex_text_ = lowercase(vpc) + "." + std::string(kVpcZoneSuffix);
    zone.apex_ = *wire::DnsName::from_text(zone.apex_text_);
    return zone;
}

bool DnsZone::add(std::string_view name, const DnsHostAddresses& addresses, std::string& error) {
    if (!wire::is_hostname_label(name)) {
        error = "endpoint name \"" + std::string(name) +
                "\" is not a DNS label: use 1-63 letters, digits and '-', not starting or ending with '-'";
        return false;
    }
    if (!addresses.ipv4 && !addresses.ipv6) {
        error = "endpoint name \"" + std::string(name) + "\" has no address";
        return false;
    }
    // The whole name must fit DNS's 255 bytes: the label, its length byte, and the apex.
    if (1 + name.size() + apex_.wire_length() > wire::kDnsMaxNameLength) {
        error = "endpoint name \"" + std::string(name) + "." + apex_text_ + "\" is longer than DNS allows (255 bytes)";
        return false;
    }
    const auto [it, inserted] = hosts_.emplace(lowercase(name), addresses);
    if (!inserted) {
        error = "endpoint name \"" + std::string(name) + "\" is used twice in " + apex_text_ +
                " (names are compared without regard to case)";
        return false;
    }
    return true;
}

const DnsHostAddresses* DnsZone::find(wire::ByteSpan label) const noexcept {
    std::array<char, wire::kDnsMaxLabelLength> key;
    if (label.empty() || label.size() > key.size()) return nullptr;
    std::transform(label.begin(), label.end(), key.begin(), [](std::uint8_t c) { return lower(static_cast<char>(c)); });
    const auto it = hosts_.find(std::string_view(key.data(), label.size()));
    return it == hosts_.end() ? nullptr : &it->second;
}

}  // namespace andromeda::gateway
