// The frame decoder (`andromedactl inspect`, the playground's layer view): decodes one frame layer by layer (outer
// Ethernet, IPv4/IPv6/ARP, UDP/TCP/ICMP, the Andromeda or VXLAN header, then the inner frame)
// into lines for people and a JSON document for programs. It only reads the bytes it is given,
// through the bounds-checked wire views, so any input is safe to hand it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wire/bytes.hpp"

namespace andromeda::inspect {

struct InspectOptions {
    std::uint16_t andromeda_port = 43481;
    std::vector<std::uint16_t> vxlan_ports = {4789, 8472};
};

// Where a field of a header lies in the decoded bytes (offsets from the frame's first byte).
struct FieldSpan {
    std::string name;
    std::size_t offset = 0;
    std::size_t length = 0;

    friend bool operator==(const FieldSpan&, const FieldSpan&) = default;
};

// One decoded header. `depth` is the indentation level; `fields` holds the same facts as `text`
// with typed values, keyed by name, plus "layer". [offset, offset + length) are the bytes the
// layer covers: a header's own bytes, or for "inner_frame", "original_datagram" and "data" the
// whole region; `spans` place the header's fields inside it (the playground lights them up).
struct DecodedLayer {
    int depth = 0;
    std::string text;
    nlohmann::json fields;
    std::size_t offset = 0;
    std::size_t length = 0;
    std::vector<FieldSpan> spans;
};

struct DecodedFrame {
    std::size_t length = 0;
    std::vector<DecodedLayer> layers;
    // Set when a header the decoder knows was malformed or cut short: what and where.
    std::optional<std::string> error;
};

[[nodiscard]] DecodedFrame inspect_frame(wire::ByteSpan frame, const InspectOptions& options = {});

// Two spaces per depth level, one layer per line, then the error (if any) as "! ...".
[[nodiscard]] std::string render_text(const DecodedFrame& frame);
[[nodiscard]] nlohmann::json render_json(const DecodedFrame& frame);

// Hex text to bytes: whitespace, ':' and '-' separators and a leading "0x" are allowed.
// On failure returns nullopt and says why in `error` (odd digit count, a non-hex character and
// its position).
[[nodiscard]] std::optional<std::vector<std::uint8_t>> parse_hex(std::string_view text, std::string& error);

// Bytes as lowercase hex digits, no separators (what parse_hex reads back).
[[nodiscard]] std::string to_hex(wire::ByteSpan bytes);

// A synthesised example: 10.0.0.10 -> 10.0.0.20 UDP 40000 -> 4242 in VNI 100, encapsulated by
// Andromeda from 192.168.1.1 to 192.168.1.2 (flow hash 0x60d1, source port 57553).
[[nodiscard]] std::vector<std::uint8_t> example_overlay_packet();

}  // namespace andromeda::inspect
