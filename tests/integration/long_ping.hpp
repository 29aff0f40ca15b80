// A ping that runs for as long as a test's checks take: the tests that prove "a ping loses
// nothing while X happens" (a reload, a kill -9 and restart, a flood) start one before X and stop
// it after, whatever the machine's load made X take. A fixed `ping -c N` would end on a loaded
// machine (the sanitizer builds, tests run side by side) before X was done, and prove less.
//
//   Process& ping = start_long_ping(topo_, *t10_, "10.0.0.20");
//   ... X ...
//   const PingTally tally = stop_long_ping(ping);
//   EXPECT_GT(tally.answered_through, 100u);
//   EXPECT_EQ(tally.first_lost, 0u) << tally.output;
#pragma once

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "netns_topology.hpp"

namespace andromeda::testing {

// ping -i `interval` (seconds, as ping takes it) to `to` from `ns`, for up to 120 s (until
// stopped), every reply printed (its icmp_seq is what stop_long_ping reads).
inline Process& start_long_ping(Topology& topo, const Netns& ns, const std::string& to,
                                const std::string& interval = "0.01") {
    return topo.spawn(ns, {"ping", "-i", interval, "-w", "120", "-W", "1", to});
}

struct PingTally {
    std::size_t answered_through = 0;  // the highest sequence number answered
    std::size_t first_lost = 0;        // the first one below it never answered; 0: none
    bool stopped = false;              // it was still running when stopped (not ended on its own)
    std::string output;
};

// Stops the ping with ^C and reads which echoes were answered. The echo in flight at ^C is not
// below the last answer, so it never counts as lost (ping's own summary would count it).
inline PingTally stop_long_ping(Process& ping) {
    PingTally tally;
    tally.stopped = ping.running();
    if (tally.stopped) kill(ping.pid(), SIGINT);  // not once reaped: the pid may be another's
    ping.wait(std::chrono::seconds(10));
    tally.output = ping.output();
    std::vector<bool> answered;
    for (auto at = tally.output.find("icmp_seq="); at != std::string::npos;
         at = tally.output.find("icmp_seq=", at + 1)) {
        // Only replies ("64 bytes from ..."): "From ... icmp_seq=N Destination Host Unreachable" is not one.
        const auto line = tally.output.rfind('\n', at);
        const std::string_view head(tally.output.data() + (line == std::string::npos ? 0 : line + 1),
                                    at - (line == std::string::npos ? 0 : line + 1));
        if (head.find(" bytes from ") == std::string_view::npos) continue;
        const unsigned long seq = std::strtoul(tally.output.c_str() + at + 9, nullptr, 10);
        if (seq >= answered.size()) answered.resize(seq + 1, false);
        answered[seq] = true;
    }
    if (answered.size() > 1) {
        tally.answered_through = answered.size() - 1;
        const auto lost = std::find(answered.begin() + 1, answered.end(), false);
        if (lost != answered.end()) tally.first_lost = static_cast<std::size_t>(lost - answered.begin());
    }
    return tally;
}

}  // namespace andromeda::testing
