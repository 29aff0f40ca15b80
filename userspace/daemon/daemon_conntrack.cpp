// `andromedactl conntrack`: the NAT engine's flows, filtered and paged here (conntrack_query.hpp).
#include "daemon/conntrack_query.hpp"
#include "daemon/daemon.hpp"

namespace andromeda::daemon {

std::variant<control::ConntrackReply, std::string> Daemon::conntrack(const control::ConntrackQuery& query) const {
    std::variant<control::ConntrackReply, std::string> out;
    if (!nat_) {
        control::ConntrackReply none;
        none.offset = query.offset;
        none.limit = query.limit;
        out = none;
    } else {
        // The whole table is copied out (it is bounded by [vpc.nat]'s limits) so the filters see
        // every flow and the total is exact; only the page goes back.
        out = select_flows(nat_->flows(nat::Clock::now()), query);
    }
    // The firewall's flows beside NAT's (security groups): the first `limit` of them.
    if (auto* reply = std::get_if<control::ConntrackReply>(&out)) {
        reply->firewall_flows = firewall_flows(query.limit);
        reply->firewall_in_table = firewall_->counters().flows;
    }
    return out;
}

}  // namespace andromeda::daemon
