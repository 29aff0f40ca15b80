// The control socket's request parser sees whatever a local client sends: any bytes must parse
// or be refused with a reason, and an accepted request must survive a render/parse round trip.
// Requests include conntrack's filters and paging and log-level's level.
// andromedactl decodes whatever a daemon answers: every reply type decodes or is refused, and a
// decoded reply encodes to JSON that decodes to the same JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "control/messages.hpp"
#include "control/protocol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view line(reinterpret_cast<const char*>(data), size);
    const auto parsed = andromeda::control::parse_request(line);
    if (const auto* request = std::get_if<andromeda::control::ControlRequest>(&parsed)) {
        const auto again = andromeda::control::parse_request(andromeda::control::render_request(*request));
        const auto* round = std::get_if<andromeda::control::ControlRequest>(&again);
        if (round == nullptr || !(*round == *request)) __builtin_trap();
        // What the parser lets through is within the protocol's bounds (the daemon pages by it).
        const auto& q = request->conntrack;
        if (q.limit < 1 || q.limit > andromeda::control::kConntrackMaxLimit) __builtin_trap();
        if (request->level && request->command != andromeda::control::Command::log_level) __builtin_trap();
    }
    const auto response = andromeda::control::parse_response(line);
    if (const auto* r = std::get_if<andromeda::control::ControlResponse>(&response)) {
        auto round_trip = [&](auto reply_type) {
            using Reply = decltype(reply_type);
            const auto decoded = andromeda::control::decode<Reply>(r->result);
            if (const auto* reply = std::get_if<Reply>(&decoded)) {
                const nlohmann::json encoded = *reply;
                const auto again = andromeda::control::decode<Reply>(encoded);
                const auto* second = std::get_if<Reply>(&again);
                if (second == nullptr || nlohmann::json(*second) != encoded) __builtin_trap();
            }
        };
        round_trip(andromeda::control::StatusReply{});
        round_trip(andromeda::control::StatsReply{});
        round_trip(andromeda::control::FabricReply{});
        round_trip(andromeda::control::ConntrackReply{});
        round_trip(andromeda::control::ReloadReply{});
        round_trip(andromeda::control::HealthReply{});
        round_trip(andromeda::control::LogLevelReply{});
    }
    return 0;
}
