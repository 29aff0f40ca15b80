#include "playground/pcap_reader.hpp"

#include <algorithm>
#include <string_view>

namespace andromeda::playground {

namespace {

constexpr std::uint32_t kPcapMagicMicro = 0xa1b2c3d4;
constexpr std::uint32_t kPcapMagicNano = 0xa1b23c4d;
constexpr std::uint32_t kPcapngSectionHeader = 0x0a0d0d0a;
constexpr std::uint32_t kPcapngByteOrderMagic = 0x1a2b3c4d;
constexpr std::uint32_t kBlockInterfaceDescription = 1;
constexpr std::uint32_t kBlockSimplePacket = 3;
constexpr std::uint32_t kBlockEnhancedPacket = 6;
constexpr std::size_t kPcapHeaderSize = 24;
constexpr std::size_t kPcapRecordHeaderSize = 16;
// A frame larger than this is not a frame: a damaged length field.
constexpr std::size_t kMaxCapturedLength = 262144;

std::uint32_t load32(const std::uint8_t* p, bool swapped) noexcept {
    const std::uint32_t little = std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
                                 std::uint32_t{p[3]} << 24;
    return swapped ? __builtin_bswap32(little) : little;
}
std::uint16_t load16(const std::uint8_t* p, bool swapped) noexcept {
    const auto little = static_cast<std::uint16_t>(p[0] | p[1] << 8);
    return swapped ? __builtin_bswap16(little) : little;
}

std::string at_byte(std::string_view what, std::size_t offset) {
    return std::string(what) + " at byte " + std::to_string(offset);
}

// Classic pcap: a 24-byte file header, then records of a 16-byte header and the captured bytes.
void read_pcap(wire::ByteSpan file, bool swapped, CaptureFile& out) {
    const std::uint32_t link_type = load32(file.data() + 20, swapped) & 0x0fffffff;
    for (std::size_t at = kPcapHeaderSize; at < file.size();) {
        if (file.size() - at < kPcapRecordHeaderSize) {
            out.error = at_byte("pcap: a record header is cut short", at);
            return;
        }
        const std::size_t captured = load32(file.data() + at + 8, swapped);
        if (captured > kMaxCapturedLength) {
            out.error = at_byte("pcap: a record claims " + std::to_string(captured) + " captured bytes", at);
            return;
        }
        if (file.size() - at - kPcapRecordHeaderSize < captured) {
            out.error = at_byte("pcap: a record's bytes are cut short", at);
            return;
        }
        out.frames.push_back({at + kPcapRecordHeaderSize, captured, link_type});
        at += kPcapRecordHeaderSize + captured;
    }
}

// pcapng: blocks of [type][total length][body][total length], each 4-byte aligned; a section
// header block sets the byte order of the blocks after it and resets the interface list.
void read_pcapng(wire::ByteSpan file, CaptureFile& out) {
    bool swapped = false;
    std::vector<std::uint32_t> interfaces;  // link type per interface of the current section
    for (std::size_t at = 0; at < file.size();) {
        if (file.size() - at < 12) {
            out.error = at_byte("pcapng: a block header is cut short", at);
            return;
        }
        const std::uint8_t* block = file.data() + at;
        if (load32(block, false) == kPcapngSectionHeader) {
            if (file.size() - at < 28) {
                out.error = at_byte("pcapng: a section header is cut short", at);
                return;
            }
            const std::uint32_t bom = load32(block + 8, false);
            if (bom != kPcapngByteOrderMagic && bom != __builtin_bswap32(kPcapngByteOrderMagic)) {
                out.error = at_byte("pcapng: a section header has no byte-order magic", at);
                return;
            }
            swapped = bom != kPcapngByteOrderMagic;
            interfaces.clear();
        }
        const std::uint32_t type = load32(block, swapped);
        const std::size_t length = load32(block + 4, swapped);
        if (length < 12 || length % 4 != 0 || length > file.size() - at) {
            out.error = at_byte("pcapng: a block's length (" + std::to_string(length) + ") is impossible", at);
            return;
        }
        const std::size_t body = length - 12;  // without type, length and the trailing length
        const std::uint8_t* p = block + 8;
        if (type == kBlockInterfaceDescription) {
            if (body < 8) {
                out.error = at_byte("pcapng: an interface description is cut short", at);
                return;
            }
            interfaces.push_back(load16(p, swapped));
        } else if (type == kBlockEnhancedPacket) {
            if (body < 20) {
                out.error = at_byte("pcapng: an enhanced packet block is cut short", at);
                return;
            }
            const std::uint32_t interface = load32(p, swapped);
            const std::size_t captured = load32(p + 12, swapped);
            if (interface >= interfaces.size()) {
                out.error = at_byte("pcapng: a packet names interface " + std::to_string(interface) +
                                        ", which no interface description declared",
                                    at);
                return;
            }
            if (captured > body - 20) {
                out.error = at_byte("pcapng: a packet's captured length runs past its block", at);
                return;
            }
            out.frames.push_back({at + 28, captured, interfaces[interface]});
        } else if (type == kBlockSimplePacket) {
            if (body < 4 || interfaces.empty()) {
                out.error = at_byte("pcapng: a simple packet block is cut short or has no interface", at);
                return;
            }
            // The captured length is the original length clipped to the block (and the snap length).
            const std::size_t original = load32(p, swapped);
            out.frames.push_back({at + 12, std::min(original, body - 4), interfaces[0]});
        }
        at += length;
    }
}

}  // namespace

CaptureFile read_capture(wire::ByteSpan file) {
    CaptureFile out;
    if (file.size() >= 4 && load32(file.data(), false) == kPcapngSectionHeader) {
        read_pcapng(file, out);
        return out;
    }
    if (file.size() < kPcapHeaderSize) {
        out.error = "not a capture file: " + std::to_string(file.size()) +
                    " bytes, shorter than a pcap header (24) and no pcapng section header";
        return out;
    }
    const std::uint32_t magic = load32(file.data(), false);
    for (const std::uint32_t known : {kPcapMagicMicro, kPcapMagicNano}) {
        if (magic == known || magic == __builtin_bswap32(known)) {
            read_pcap(file, magic != known, out);
            return out;
        }
    }
    out.error = "not a capture file: it starts with neither a pcap magic number (a1b2c3d4, a1b23c4d) "
                "nor a pcapng section header (0a0d0d0a)";
    return out;
}

}  // namespace andromeda::playground
