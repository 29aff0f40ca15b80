// Capture files as bytes: the frames of a classic pcap file (either byte order, micro- or
// nanosecond timestamps) or of a pcapng file (section header, interface descriptions, enhanced and
// simple packet blocks; other blocks skipped). No I/O and no libpcap, so the WebAssembly
// playground reads what a user drops on the page with the same code the tests check against
// libpcap. Every length is checked against the bytes given: any input is safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "wire/bytes.hpp"

namespace andromeda::playground {

inline constexpr std::uint32_t kLinkTypeEthernet = 1;

struct CapturedFrame {
    std::size_t offset = 0;  // into the file
    std::size_t length = 0;  // captured bytes
    std::uint32_t link_type = 0;
};

struct CaptureFile {
    std::vector<CapturedFrame> frames;
    // Set when the file is not a capture or is damaged: what and at which byte. Frames read
    // before the damage are kept.
    std::string error;
};

[[nodiscard]] CaptureFile read_capture(wire::ByteSpan file);

}  // namespace andromeda::playground
