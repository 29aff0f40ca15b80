#include "gateway/resolv_conf.hpp"

#include <optional>

namespace andromeda::gateway {

namespace {

bool is_blank(char c) noexcept { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view next_word(std::string_view& line) noexcept {
    while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
    std::size_t n = 0;
    while (n < line.size() && !is_blank(line[n])) ++n;
    const std::string_view word = line.substr(0, n);
    line.remove_prefix(n);
    return word;
}

std::optional<DnsUpstream> parse_address(std::string_view text) {
    if (const auto v4 = wire::Ipv4Address::parse(text)) return DnsUpstream{*v4, 53};
    if (text.find(':') != std::string_view::npos) {
        if (const auto v6 = wire::Ipv6Address::parse(text)) return DnsUpstream{*v6, 53};
    }
    return std::nullopt;
}

}  // namespace

bool DnsUpstream::is_loopback() const noexcept {
    if (const auto* v4 = std::get_if<wire::Ipv4Address>(&address)) return v4->value() >> 24 == 127;
    const auto& b = std::get<wire::Ipv6Address>(address).bytes();
    for (std::size_t i = 0; i < 15; ++i)
        if (b[i] != 0) return false;
    return b[15] == 1;
}

std::string DnsUpstream::to_string() const {
    if (const auto* v4 = std::get_if<wire::Ipv4Address>(&address)) return v4->to_string() + ":" + std::to_string(port);
    return "[" + std::get<wire::Ipv6Address>(address).to_string() + "]:" + std::to_string(port);
}

ResolvConf parse_resolv_conf(std::string_view text) {
    ResolvConf conf;
    std::size_t number = 0;
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        ++number;
        const std::string where = "line " + std::to_string(number) + ": ";
        if (const std::size_t comment = line.find_first_of("#;"); comment != std::string_view::npos)
            line = line.substr(0, comment);
        if (next_word(line) != "nameserver") continue;
        const std::string_view value = next_word(line);
        if (value.empty()) {
            conf.warnings.push_back(where + "nameserver without an address, skipped");
            continue;
        }
        if (value.find('%') != std::string_view::npos) {
            conf.warnings.push_back(where + "nameserver " + std::string(value) +
                                    " has a zone index (link-local), which the forwarder cannot use: skipped; "
                                    "configure the node's upstreams instead");
            continue;
        }
        const auto upstream = parse_address(value);
        if (!upstream) {
            conf.warnings.push_back(where + "nameserver " + std::string(value) + " is not an IPv4 or IPv6 address, skipped");
            continue;
        }
        if (conf.nameservers.size() == kMaxResolvConfNameservers) {
            conf.warnings.push_back(where + "nameserver " + std::string(value) + " ignored: only the first " +
                                    std::to_string(kMaxResolvConfNameservers) + " are used, as by glibc");
            continue;
        }
        conf.nameservers.push_back(*upstream);
    }
    if (conf.nameservers.empty()) {
        conf.nameservers.push_back(DnsUpstream{wire::Ipv4Address(0x7f000001), 53});
        conf.warnings.push_back("no usable nameserver line: using 127.0.0.1, as glibc does");
    }
    return conf;
}

}  // namespace andromeda::gateway
