// `andromedactl conntrack`: the NAT engine's flows, filtered and paged here (conntrack_query.hpp).
#include "daemon/conntrack_query.hpp"
#include "daemon/daemon.hpp"

namespace andromeda::daemon {

std::variant<control::ConntrackReply, std::string> Daemon::conntrack(const control::ConntrackQuery& query) const {
    if (!nat_) {
        control::ConntrackReply none;
        none.offset = query.offset;
        none.limit = query.limit;
        return none;
    }
    // The whole table is copied out (it is bounded by [vpc.nat]'s limits) so the filters see
    // every flow and the total is exact; only the page goes back.
    return select_flows(nat_->flows(nat::Clock::now()), query);
}

}  // namespace andromeda::daemon
