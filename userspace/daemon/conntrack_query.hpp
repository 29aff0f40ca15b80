// `andromedactl conntrack`'s query, answered in the daemon: the flows that match its filters, in
// a stable order, one page of them, and how many there are in all, so a reply stays bounded and
// never hides that it was cut.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "control/messages.hpp"
#include "control/protocol.hpp"
#include "nat/flow_info.hpp"

namespace andromeda::daemon {

// The page of `flows` the query asks for; or, for a filter that cannot match anything as written
// (an address that is not IPv4, an unknown state or protocol), what is wrong with it.
[[nodiscard]] std::variant<control::ConntrackReply, std::string> select_flows(std::vector<nat::FlowInfo> flows,
                                                                              const control::ConntrackQuery& query);

}  // namespace andromeda::daemon
