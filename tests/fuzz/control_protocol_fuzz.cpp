// The control socket's request parser sees whatever a local client sends: any bytes must parse
// or be refused with a reason, and an accepted request must survive a render/parse round trip.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "control/protocol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view line(reinterpret_cast<const char*>(data), size);
    const auto parsed = andromeda::control::parse_request(line);
    if (const auto* request = std::get_if<andromeda::control::ControlRequest>(&parsed)) {
        const auto again = andromeda::control::parse_request(andromeda::control::render_request(*request));
        const auto* round = std::get_if<andromeda::control::ControlRequest>(&again);
        if (round == nullptr || !(*round == *request)) __builtin_trap();
    }
    (void)andromeda::control::parse_response(line);
    return 0;
}
