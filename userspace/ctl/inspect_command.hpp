// `andromedactl inspect`: reads frames (hex argument, pcap file, or the built-in example) and
// prints them decoded. Returns the process exit code.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "inspect/inspect.hpp"

namespace andromeda::ctl {

struct InspectRequest {
    std::optional<std::string> hex;   // one frame as hex
    std::optional<std::string> pcap;  // a pcap/pcapng file: every frame
    bool json = false;
    bool print_hex = false;  // each frame's bytes too: "hex <digits>" before its decode, or "hex" in JSON
    inspect::InspectOptions options;
};

// 0 when every frame decoded cleanly; 1 when a frame was malformed (decoded as far as possible,
// the reason printed); 2 when the input could not be read at all (bad hex, unreadable pcap).
int run_inspect(const InspectRequest& request, std::ostream& out, std::ostream& err);

}  // namespace andromeda::ctl
