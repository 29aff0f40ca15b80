#include "inspect/inspect.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "overlay/andromeda_header.hpp"
#include "overlay/flow_hash.hpp"
#include "overlay/outer_template.hpp"
#include "overlay/vxlan_header.hpp"
#include "wire/arp.hpp"
#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ipv4.hpp"
#include "wire/ipv6.hpp"
#include "wire/tcp.hpp"
#include "wire/udp.hpp"

namespace andromeda::inspect {

namespace {

using nlohmann::json;
using wire::ByteSpan;

// Overlays may nest (an overlay packet carried inside another); past this depth the decoder
// stops rather than recurse on crafted input.
constexpr int kMaxEthernetNesting = 4;

std::string_view ethertype_name(std::uint16_t type) {
    switch (type) {
        case wire::ethertype::kIpv4: return "IPv4";
        case wire::ethertype::kArp: return "ARP";
        case wire::ethertype::kIpv6: return "IPv6";
        case wire::ethertype::kVlan: return "802.1Q";
        case wire::ethertype::kQinQ: return "802.1ad";
        case 0x88cc: return "LLDP";
        default: return "unknown";
    }
}

std::string_view ip_protocol_name(std::uint8_t protocol) {
    switch (protocol) {
        case 1: return "ICMP";
        case 6: return "TCP";
        case 17: return "UDP";
        case 58: return "ICMPv6";
        case 0: return "hop-by-hop";
        case 43: return "routing";
        case 44: return "fragment";
        case 59: return "none";
        case 60: return "dest-opts";
        default: return "other";
    }
}

std::string_view icmpv4_type_name(std::uint8_t type) {
    switch (type) {
        case wire::icmpv4_type::kEchoReply: return "echo reply";
        case wire::icmpv4_type::kDestinationUnreachable: return "destination unreachable";
        case wire::icmpv4_type::kSourceQuench: return "source quench";
        case wire::icmpv4_type::kRedirect: return "redirect";
        case wire::icmpv4_type::kEchoRequest: return "echo request";
        case wire::icmpv4_type::kTimeExceeded: return "time exceeded";
        case wire::icmpv4_type::kParameterProblem: return "parameter problem";
        default: return "type";
    }
}

std::string_view icmpv6_type_name(std::uint8_t type) {
    switch (type) {
        case wire::icmpv6_type::kDestinationUnreachable: return "destination unreachable";
        case wire::icmpv6_type::kPacketTooBig: return "packet too big";
        case wire::icmpv6_type::kTimeExceeded: return "time exceeded";
        case wire::icmpv6_type::kParameterProblem: return "parameter problem";
        case wire::icmpv6_type::kEchoRequest: return "echo request";
        case wire::icmpv6_type::kEchoReply: return "echo reply";
        case 133: return "router solicitation";
        case 134: return "router advertisement";
        case 135: return "neighbor solicitation";
        case 136: return "neighbor advertisement";
        case 143: return "MLDv2 report";
        default: return "type";
    }
}

std::string tcp_flags_text(std::uint8_t flags) {
    static constexpr std::pair<std::uint8_t, char> kNames[] = {
        {wire::tcp_flag::kSyn, 'S'}, {wire::tcp_flag::kFin, 'F'}, {wire::tcp_flag::kRst, 'R'},
        {wire::tcp_flag::kPsh, 'P'}, {wire::tcp_flag::kAck, '.'}, {wire::tcp_flag::kUrg, 'U'},
        {wire::tcp_flag::kEce, 'E'}, {wire::tcp_flag::kCwr, 'W'}};
    std::string s;
    for (const auto& [bit, name] : kNames)
        if (flags & bit) s += name;
    return s.empty() ? "none" : s;
}

std::string_view ok_or_bad(bool ok) { return ok ? "ok" : "BAD"; }

// A header's length: from its first byte to its payload's (which a view may end early, before
// padding, so not the bytes' size less the payload's).
std::size_t header_length(ByteSpan bytes, ByteSpan payload) {
    return static_cast<std::size_t>(payload.data() - bytes.data());
}

class Decoder {
public:
    Decoder(const InspectOptions& options, DecodedFrame& out, ByteSpan whole)
        : options_(options), out_(out), whole_(whole) {}

    void ethernet(ByteSpan frame, int depth, int nesting);

private:
    // A field of the layer being added: `at` bytes into its header, `length` bytes long.
    struct Field {
        const char* name;
        std::size_t at;
        std::size_t length;
    };
    // Adds a layer covering `bytes`, its fields placed inside them (clipped to them, so a span
    // never points past what was decoded).
    void add(int depth, std::string text, json fields, ByteSpan bytes, std::initializer_list<Field> spans = {}) {
        DecodedLayer layer{depth, std::move(text), std::move(fields), offset_of(bytes), bytes.size(), {}};
        for (const auto& f : spans) add_span(layer, f);
        out_.layers.push_back(std::move(layer));
    }
    static void add_span(DecodedLayer& layer, const Field& f) {
        if (f.length == 0 || f.at >= layer.length) return;
        layer.spans.push_back({f.name, layer.offset + f.at, std::min(f.length, layer.length - f.at)});
    }
    void fail(std::string_view what, ByteSpan at, wire::ParseError error) {
        if (!out_.error)
            out_.error = fmt::format("{} at offset {}: {} ({} bytes left)", what, offset_of(at), wire::to_string(error),
                                     at.size());
    }
    std::size_t offset_of(ByteSpan s) const { return static_cast<std::size_t>(s.data() - whole_.data()); }

    void arp(ByteSpan bytes, int depth);
    void ipv4(ByteSpan bytes, int depth, int nesting);
    void ipv6(ByteSpan bytes, int depth);
    void udp(ByteSpan bytes, const wire::Ipv4View* ip4, const wire::Ipv6View* ip6, int depth, int nesting);
    void tcp(ByteSpan bytes, const wire::Ipv4View* ip4, const wire::Ipv6View* ip6, int depth);
    void icmpv4(ByteSpan bytes, int depth);
    void icmpv6(ByteSpan bytes, const wire::Ipv6View& ip, int depth);
    void overlay(ByteSpan payload, bool vxlan, int depth, int nesting);
    void raw(ByteSpan bytes, int depth, std::string_view what);

    const InspectOptions& options_;
    DecodedFrame& out_;
    ByteSpan whole_;
};

void Decoder::ethernet(ByteSpan frame, int depth, int nesting) {
    const auto eth = wire::EthernetView::parse(frame);
    if (!eth) return fail("Ethernet", frame, eth.error());
    const auto h = eth->header();
    const ByteSpan header = frame.first(frame.size() - eth->payload().size());
    std::string text = fmt::format("Ethernet  {} -> {}", h.source.to_string(), h.destination.to_string());
    json fields = {{"layer", "ethernet"}, {"src", h.source.to_string()}, {"dst", h.destination.to_string()},
                   {"ethertype", h.ethertype}};
    if (h.tag_count > 0) {
        json tags = json::array();
        for (std::size_t i = 0; i < h.tag_count; ++i) {
            text += fmt::format("  vlan {}", h.tags[i].vlan_id);
            tags.push_back({{"tpid", h.tags[i].tpid}, {"vid", h.tags[i].vlan_id}, {"pcp", h.tags[i].priority}});
        }
        fields["vlan"] = std::move(tags);
    }
    text += fmt::format("  ethertype 0x{:04x} ({})", h.ethertype, ethertype_name(h.ethertype));
    add(depth, std::move(text), std::move(fields), header, {{"dst", 0, 6}, {"src", 6, 6}});
    for (std::size_t i = 0; i < h.tag_count; ++i) add_span(out_.layers.back(), {"vlan", 12 + 4 * i, 4});
    add_span(out_.layers.back(), {"ethertype", 12 + 4 * std::size_t{h.tag_count}, 2});
    const ByteSpan payload = eth->payload();
    switch (h.ethertype) {
        case wire::ethertype::kIpv4: return ipv4(payload, depth + 1, nesting);
        case wire::ethertype::kIpv6: return ipv6(payload, depth + 1);
        case wire::ethertype::kArp: return arp(payload, depth + 1);
        default: return raw(payload, depth + 1, "payload");
    }
}

void Decoder::arp(ByteSpan bytes, int depth) {
    const auto a = wire::ArpView::parse(bytes);
    if (!a) return fail("ARP", bytes, a.error());
    json fields = {{"layer", "arp"},
                   {"op", a->operation()},
                   {"sender_mac", a->sender_mac().to_string()},
                   {"sender_ip", a->sender_ip().to_string()},
                   {"target_mac", a->target_mac().to_string()},
                   {"target_ip", a->target_ip().to_string()}};
    std::string text;
    if (a->is_request())
        text = fmt::format("ARP  request who-has {} tell {} ({})", a->target_ip().to_string(),
                           a->sender_ip().to_string(), a->sender_mac().to_string());
    else if (a->is_reply())
        text = fmt::format("ARP  reply {} is-at {} (to {})", a->sender_ip().to_string(), a->sender_mac().to_string(),
                           a->target_ip().to_string());
    else
        text = fmt::format("ARP  op {}", a->operation());
    add(depth, std::move(text), std::move(fields), bytes.first(std::min<std::size_t>(bytes.size(), 28)),
        {{"htype", 0, 2}, {"ptype", 2, 2}, {"hlen", 4, 1}, {"plen", 5, 1}, {"op", 6, 2}, {"sender_mac", 8, 6},
         {"sender_ip", 14, 4}, {"target_mac", 18, 6}, {"target_ip", 24, 4}});
}

void Decoder::ipv4(ByteSpan bytes, int depth, int nesting) {
    const auto ip = wire::Ipv4View::parse(bytes);
    if (!ip) return fail("IPv4", bytes, ip.error());
    const bool cksum_ok = ip->checksum_valid();
    std::string text = fmt::format("IPv4  {} -> {}  proto {} ({})  ttl {}  len {}", ip->source().to_string(),
                                   ip->destination().to_string(), ip->protocol(), ip_protocol_name(ip->protocol()),
                                   ip->ttl(), ip->total_length());
    if (ip->dont_fragment()) text += "  DF";
    if (ip->is_fragment()) text += fmt::format("  frag off {}{}", ip->fragment_offset() * 8, ip->more_fragments() ? " MF" : "");
    if (!ip->options().empty()) text += fmt::format("  options {} bytes", ip->options().size());
    text += fmt::format("  cksum {}", ok_or_bad(cksum_ok));
    add(depth, std::move(text),
        {{"layer", "ipv4"}, {"src", ip->source().to_string()}, {"dst", ip->destination().to_string()},
         {"protocol", ip->protocol()}, {"ttl", ip->ttl()}, {"total_length", ip->total_length()},
         {"id", ip->identification()}, {"df", ip->dont_fragment()}, {"mf", ip->more_fragments()},
         {"fragment_offset", ip->fragment_offset() * 8}, {"options_length", ip->options().size()},
         {"checksum", ip->checksum()}, {"checksum_ok", cksum_ok}},
        bytes.first(20 + ip->options().size()),
        {{"version_ihl", 0, 1}, {"tos", 1, 1}, {"total_length", 2, 2}, {"id", 4, 2}, {"flags_fragment", 6, 2},
         {"ttl", 8, 1}, {"protocol", 9, 1}, {"checksum", 10, 2}, {"src", 12, 4}, {"dst", 16, 4},
         {"options", 20, ip->options().size()}});
    const ByteSpan payload = ip->payload();
    if (ip->fragment_offset() != 0) return raw(payload, depth + 1, "fragment data");
    switch (ip->protocol()) {
        case 17: return udp(payload, &*ip, nullptr, depth + 1, nesting);
        case 6: return tcp(payload, &*ip, nullptr, depth + 1);
        case 1: return icmpv4(payload, depth + 1);
        default: return raw(payload, depth + 1, "payload");
    }
}

void Decoder::ipv6(ByteSpan bytes, int depth) {
    const auto ip = wire::Ipv6View::parse(bytes);
    if (!ip) return fail("IPv6", bytes, ip.error());
    const std::uint8_t upper = ip->upper_layer_protocol();
    std::string text = fmt::format("IPv6  {} -> {}  next {} ({})  hop {}  len {}", ip->source().to_string(),
                                   ip->destination().to_string(), upper, ip_protocol_name(upper), ip->hop_limit(),
                                   ip->payload_length());
    json ext = json::array();
    for (std::size_t i = 0; i < ip->extension_header_count(); ++i)
        if (const auto e = ip->extension_header(i)) ext.push_back(ip_protocol_name(e->type));
    if (!ext.empty()) text += fmt::format("  ext {}", ip->extension_header_count());
    add(depth, std::move(text),
        {{"layer", "ipv6"}, {"src", ip->source().to_string()}, {"dst", ip->destination().to_string()},
         {"next_header", upper}, {"hop_limit", ip->hop_limit()}, {"payload_length", ip->payload_length()},
         {"flow_label", ip->flow_label()}, {"extension_headers", std::move(ext)}},
        bytes.first(header_length(bytes, ip->upper_layer_payload())),
        {{"version_class_flow", 0, 4}, {"payload_length", 4, 2}, {"next_header", 6, 1}, {"hop_limit", 7, 1},
         {"src", 8, 16}, {"dst", 24, 16}, {"extension_headers", 40, header_length(bytes, ip->upper_layer_payload()) - 40}});
    const ByteSpan payload = ip->upper_layer_payload();
    if (ip->fragment_offset() != 0) return raw(payload, depth + 1, "fragment data");
    switch (upper) {
        case 17: return udp(payload, nullptr, &*ip, depth + 1, kMaxEthernetNesting);
        case 6: return tcp(payload, nullptr, &*ip, depth + 1);
        case 58: return icmpv6(payload, *ip, depth + 1);
        default: return raw(payload, depth + 1, "payload");
    }
}

void Decoder::udp(ByteSpan bytes, const wire::Ipv4View* ip4, const wire::Ipv6View* ip6, int depth, int nesting) {
    const auto u = wire::UdpView::parse(bytes);
    if (!u) return fail("UDP", bytes, u.error());
    std::string text = fmt::format("UDP  {} -> {}  len {}", u->source_port(), u->destination_port(), u->length());
    json fields = {{"layer", "udp"}, {"src_port", u->source_port()}, {"dst_port", u->destination_port()},
                   {"length", u->length()}, {"checksum", u->checksum()}};
    // Over IPv4 a zero checksum means "none" (legal for tunnels); over IPv6 it is always required.
    if (u->checksum() != 0 || ip6 != nullptr) {
        const bool ok = ip4 ? u->checksum_valid(ip4->source(), ip4->destination())
                            : u->checksum_valid(ip6->source(), ip6->destination());
        text += fmt::format("  cksum {}", ok_or_bad(ok));
        fields["checksum_ok"] = ok;
    }
    add(depth, std::move(text), std::move(fields), bytes.first(8),
        {{"src_port", 0, 2}, {"dst_port", 2, 2}, {"length", 4, 2}, {"checksum", 6, 2}});
    const std::uint16_t port = u->destination_port();
    const bool is_vxlan = std::find(options_.vxlan_ports.begin(), options_.vxlan_ports.end(), port) !=
                          options_.vxlan_ports.end();
    if (nesting < kMaxEthernetNesting && (port == options_.andromeda_port || is_vxlan))
        return overlay(u->payload(), is_vxlan, depth + 1, nesting);
    raw(u->payload(), depth + 1, "payload");
}

void Decoder::overlay(ByteSpan payload, bool vxlan, int depth, int nesting) {
    if (payload.size() < overlay::kOverlayHeaderSize)
        return fail(vxlan ? "VXLAN header" : "Andromeda header", payload, wire::ParseError::Truncated);
    if (vxlan) {
        const bool vni_valid = (payload[0] & overlay::kVxlanFlagVniValid) != 0;
        const std::uint32_t vni = wire::load_be24(&payload[4]);
        add(depth, fmt::format("VXLAN  flags 0x{:02x}  VNI {}{}", payload[0], vni, vni_valid ? "" : "  (I flag clear: VNI invalid)"),
            {{"layer", "vxlan"}, {"flags", payload[0]}, {"vni", vni}, {"vni_valid", vni_valid}},
            payload.first(overlay::kOverlayHeaderSize),
            {{"flags", 0, 1}, {"reserved", 1, 3}, {"vni", 4, 3}, {"reserved", 7, 1}});
        if (!vni_valid) return;
    } else {
        const auto h = overlay::AndromedaHeader::decode(payload);
        if (!h) {
            add(depth, fmt::format("Andromeda  unsupported version {}", payload[0] >> 4),
                {{"layer", "andromeda"}, {"version", payload[0] >> 4}}, payload.first(overlay::kOverlayHeaderSize),
                {{"version", 0, 1}});
            if (!out_.error) out_.error = fmt::format("Andromeda header at offset {}: version {} (expected 1)",
                                                      offset_of(payload), payload[0] >> 4);
            return;
        }
        std::string text = fmt::format("Andromeda  v{}  VNI {}  flow 0x{:04x}  hop {}", overlay::kAndromedaVersion,
                                       h->vni, h->flow_hash, h->hop_limit);
        if (h->is_control()) text += "  control";
        if (h->is_oam()) text += "  oam";
        if (h->inner_protocol != overlay::kInnerProtocolEthernet) text += fmt::format("  inner proto {}", h->inner_protocol);
        add(depth, std::move(text),
            {{"layer", "andromeda"}, {"version", overlay::kAndromedaVersion}, {"flags", h->flags},
             {"inner_protocol", h->inner_protocol}, {"vni", h->vni}, {"flow_hash", h->flow_hash},
             {"hop_limit", h->hop_limit}},
            payload.first(overlay::kOverlayHeaderSize),
            {{"version_flags", 0, 1}, {"inner_protocol", 1, 1}, {"flow_hash", 2, 2}, {"vni", 4, 3}, {"hop_limit", 7, 1}});
        if (h->inner_protocol != overlay::kInnerProtocolEthernet) return;
    }
    add(depth, "-- inner frame --", {{"layer", "inner_frame"}}, payload.subspan(overlay::kOverlayHeaderSize));
    ethernet(payload.subspan(overlay::kOverlayHeaderSize), depth + 1, nesting + 1);
}

void Decoder::tcp(ByteSpan bytes, const wire::Ipv4View* ip4, const wire::Ipv6View* ip6, int depth) {
    const auto t = wire::TcpView::parse(bytes);
    if (!t) return fail("TCP", bytes, t.error());
    const bool ok = ip4 ? t->checksum_valid(ip4->source(), ip4->destination())
                        : t->checksum_valid(ip6->source(), ip6->destination());
    add(depth,
        fmt::format("TCP  {} -> {}  [{}]  seq {}  ack {}  win {}  len {}  cksum {}", t->source_port(),
                    t->destination_port(), tcp_flags_text(t->flags()), t->sequence(), t->acknowledgment(),
                    t->window(), t->payload().size(), ok_or_bad(ok)),
        {{"layer", "tcp"}, {"src_port", t->source_port()}, {"dst_port", t->destination_port()},
         {"flags", tcp_flags_text(t->flags())}, {"seq", t->sequence()}, {"ack", t->acknowledgment()},
         {"window", t->window()}, {"payload_length", t->payload().size()}, {"checksum", t->checksum()},
         {"checksum_ok", ok}},
        bytes.first(header_length(bytes, t->payload())),
        {{"src_port", 0, 2}, {"dst_port", 2, 2}, {"seq", 4, 4}, {"ack", 8, 4}, {"offset_flags", 12, 2},
         {"window", 14, 2}, {"checksum", 16, 2}, {"urgent", 18, 2}, {"options", 20, header_length(bytes, t->payload()) - 20}});
}

void Decoder::icmpv4(ByteSpan bytes, int depth) {
    const auto m = wire::Icmpv4View::parse(bytes);
    if (!m) return fail("ICMP", bytes, m.error());
    const bool ok = m->checksum_valid();
    std::string text = fmt::format("ICMP  {} (type {} code {})", icmpv4_type_name(m->type()), m->type(), m->code());
    json fields = {{"layer", "icmp"}, {"type", m->type()}, {"code", m->code()}, {"checksum_ok", ok}};
    if (m->is_echo()) {
        text += fmt::format("  id 0x{:04x}  seq {}", m->identifier(), m->sequence());
        fields["id"] = m->identifier();
        fields["seq"] = m->sequence();
    }
    if (m->is_fragmentation_needed()) {
        text += fmt::format("  frag needed, mtu {}", m->next_hop_mtu());
        fields["mtu"] = m->next_hop_mtu();
    }
    text += fmt::format("  cksum {}", ok_or_bad(ok));
    add(depth, std::move(text), std::move(fields), bytes.first(std::min<std::size_t>(bytes.size(), 8)),
        {{"type", 0, 1}, {"code", 1, 1}, {"checksum", 2, 2}});
    if (m->is_echo()) add_span(out_.layers.back(), {"id", 4, 2}), add_span(out_.layers.back(), {"seq", 6, 2});
    if (m->is_fragmentation_needed()) add_span(out_.layers.back(), {"mtu", 6, 2});
    if (m->is_error() && !m->original_datagram().empty()) {
        add(depth, "-- original datagram --", {{"layer", "original_datagram"}}, m->original_datagram());
        // The quoted datagram is usually cut after 8 bytes of transport header: decode its IPv4
        // header only, so a short quote is not reported as a malformed frame.
        const auto inner = wire::Ipv4View::parse(m->original_datagram());
        if (inner)
            add(depth + 1,
                fmt::format("IPv4  {} -> {}  proto {} ({})  len {}", inner->source().to_string(),
                            inner->destination().to_string(), inner->protocol(), ip_protocol_name(inner->protocol()),
                            inner->total_length()),
                {{"layer", "ipv4"}, {"src", inner->source().to_string()}, {"dst", inner->destination().to_string()},
                 {"protocol", inner->protocol()}, {"total_length", inner->total_length()}},
                m->original_datagram().first(20 + inner->options().size()),
                {{"total_length", 2, 2}, {"protocol", 9, 1}, {"src", 12, 4}, {"dst", 16, 4}});
        else
            raw(m->original_datagram(), depth + 1, "quoted bytes");
    }
}

void Decoder::icmpv6(ByteSpan bytes, const wire::Ipv6View& ip, int depth) {
    const auto m = wire::Icmpv6View::parse(bytes);
    if (!m) return fail("ICMPv6", bytes, m.error());
    const bool ok = m->checksum_valid(ip.source(), ip.destination());
    std::string text = fmt::format("ICMPv6  {} (type {} code {})", icmpv6_type_name(m->type()), m->type(), m->code());
    json fields = {{"layer", "icmpv6"}, {"type", m->type()}, {"code", m->code()}, {"checksum_ok", ok}};
    if (m->is_echo()) {
        text += fmt::format("  id 0x{:04x}  seq {}", m->identifier(), m->sequence());
        fields["id"] = m->identifier();
        fields["seq"] = m->sequence();
    }
    if (m->type() == wire::icmpv6_type::kPacketTooBig) {
        text += fmt::format("  mtu {}", m->mtu());
        fields["mtu"] = m->mtu();
    }
    text += fmt::format("  cksum {}", ok_or_bad(ok));
    add(depth, std::move(text), std::move(fields), bytes.first(std::min<std::size_t>(bytes.size(), 8)),
        {{"type", 0, 1}, {"code", 1, 1}, {"checksum", 2, 2}});
    if (m->is_echo()) add_span(out_.layers.back(), {"id", 4, 2}), add_span(out_.layers.back(), {"seq", 6, 2});
    if (m->type() == wire::icmpv6_type::kPacketTooBig) add_span(out_.layers.back(), {"mtu", 4, 4});
}

void Decoder::raw(ByteSpan bytes, int depth, std::string_view what) {
    if (bytes.empty()) return;
    add(depth, fmt::format("{} {} bytes", what, bytes.size()), {{"layer", "data"}, {"length", bytes.size()}}, bytes);
}

}  // namespace

DecodedFrame inspect_frame(ByteSpan frame, const InspectOptions& options) {
    DecodedFrame out;
    out.length = frame.size();
    Decoder(options, out, frame).ethernet(frame, 0, 0);
    return out;
}

std::string render_text(const DecodedFrame& frame) {
    std::string s;
    for (const auto& layer : frame.layers) {
        s.append(static_cast<std::size_t>(layer.depth) * 2, ' ');
        s += layer.text;
        s += '\n';
    }
    if (frame.error) s += "! " + *frame.error + '\n';
    return s;
}

nlohmann::json render_json(const DecodedFrame& frame) {
    json layers = json::array();
    for (const auto& layer : frame.layers) {
        json l = layer.fields;
        l["depth"] = layer.depth;
        layers.push_back(std::move(l));
    }
    json j = {{"length", frame.length}, {"layers", std::move(layers)}};
    if (frame.error) j["error"] = *frame.error;
    return j;
}

std::optional<std::vector<std::uint8_t>> parse_hex(std::string_view text, std::string& error) {
    if (text.starts_with("0x") || text.starts_with("0X")) text.remove_prefix(2);
    std::vector<std::uint8_t> bytes;
    int pending = -1;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':' || c == '-') continue;
        int v;
        if (c >= '0' && c <= '9') v = c - '0';
        else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
        else {
            error = fmt::format("not a hex digit: '{}' at position {}", c, i);
            return std::nullopt;
        }
        if (pending < 0) {
            pending = v;
        } else {
            bytes.push_back(static_cast<std::uint8_t>(pending << 4 | v));
            pending = -1;
        }
    }
    if (pending >= 0) {
        error = "odd number of hex digits: every byte needs two";
        return std::nullopt;
    }
    if (bytes.empty()) {
        error = "no bytes given";
        return std::nullopt;
    }
    return bytes;
}

std::string to_hex(ByteSpan bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string s(bytes.size() * 2, '0');
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        s[2 * i] = kDigits[bytes[i] >> 4];
        s[2 * i + 1] = kDigits[bytes[i] & 0x0f];
    }
    return s;
}

std::vector<std::uint8_t> example_overlay_packet() {
    // Inner: 02:..:0a -> 02:..:0b, 10.0.0.10:40000 -> 10.0.0.20:4242, 12 bytes of payload.
    std::vector<std::uint8_t> inner(14 + 20 + 8 + 12, 0);
    wire::EthernetHeader eth;
    eth.source = *wire::MacAddress::parse("02:00:00:00:00:0a");
    eth.destination = *wire::MacAddress::parse("02:00:00:00:00:0b");
    eth.ethertype = wire::ethertype::kIpv4;
    (void)wire::write_ethernet_header(inner, eth);
    wire::Ipv4Header ip;
    ip.total_length = 20 + 8 + 12;
    ip.dont_fragment = true;
    ip.protocol = 17;
    ip.source = wire::Ipv4Address(0x0a00000a);
    ip.destination = wire::Ipv4Address(0x0a000014);
    (void)wire::write_ipv4_header(wire::MutableByteSpan(inner).subspan(14), ip);
    const char msg[] = "hello, vpc!\n";
    std::copy(msg, msg + 12, inner.begin() + 42);
    wire::UdpHeader udp;
    udp.source_port = 40000;
    udp.destination_port = 4242;
    udp.length = 8 + 12;
    (void)wire::write_udp_header(wire::MutableByteSpan(inner).subspan(34), udp);
    auto udp_view = wire::MutableUdpView::parse(wire::MutableByteSpan(inner).subspan(34));
    if (udp_view) udp_view->update_checksum(ip.source, ip.destination);

    overlay::OuterTemplateConfig config;
    config.src_mac = *wire::MacAddress::parse("02:00:00:00:a1:01");
    config.dst_mac = *wire::MacAddress::parse("02:00:00:00:a1:02");
    config.src_ip = wire::Ipv4Address(0xc0a80101);
    config.dst_ip = wire::Ipv4Address(0xc0a80102);
    overlay::OuterTemplate outer(config);
    std::vector<std::uint8_t> packet(inner.size() + overlay::kOuterHeadersSize);
    overlay::OverlayFields fields;
    fields.vni = 100;
    fields.flow_hash = overlay::flow_hash_of_frame(inner);
    packet.resize(outer.encapsulate(inner, packet, fields));
    return packet;
}

}  // namespace andromeda::inspect
