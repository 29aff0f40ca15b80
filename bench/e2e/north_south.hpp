// The end-to-end harness's north-south scenario (issue 28): a tenant behind node1 reaching an
// "outside" namespace through its VPC's NAT gateway on another node, the same namespaces for
// every datapath:
//
//   t10 ns: eth0 10.0.0.10 ── host1 ns [node1]: tap-blue-10, eth1 192.168.1.1 ─┐ bridge (underlay ns)
//                             host2 ns [gw]:    eth1 192.168.1.2 ──────────────┘
//                                               eth2 203.0.113.2 (+ .10) ── outside ns: eth0 203.0.113.1
//
//   ns-kernel           the kernel: a bridge + `vxlan` device per host (VNI 100, static FDB, as
//                       kernel-vxlan), gw's bridge holds the VPC's gateway 10.0.0.1, gw routes and
//                       masquerades with nftables (`snat to 203.0.113.10` out of eth2)
//   ns-andromeda        two andromedad, gw the VPC's NAT gateway ([vpc.nat], [node.uplink] eth2 with
//                       the outside as next hop), the fast path on: established flows in tc
//   ns-andromeda-slow   the same with `fastpath = false`: every packet through the AF_XDP pipeline
//
// Underlay MTU 1550, tenant, uplink and outside 1500, every veth at the kernel's default offloads.
// Measured from the tenant to the outside: TCP throughput (iperf3), ping RTT, UDP request/response
// (andromeda-udprr) and new TCP connections per second (andromeda-tcpcrr).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e_common.hpp"
#include "netns_topology.hpp"

namespace andromeda::e2e {

// Whether `impl` names a north-south datapath (ns-kernel, ns-andromeda, ns-andromeda-slow).
bool is_north_south(const std::string& impl);

class NorthSouthBed {
public:
    NorthSouthBed(const std::string& impl, const Settings& settings);
    ~NorthSouthBed();
    NorthSouthBed(const NorthSouthBed&) = delete;
    NorthSouthBed& operator=(const NorthSouthBed&) = delete;

    // The namespaces, for a developer poking at a held testbed.
    [[nodiscard]] std::string describe() const;

    json measure_tcp(int streams);
    json measure_ping();
    json measure_udp_rr();
    json measure_connections();

private:
    void build_kernel();
    void start_andromeda(bool fast_path);
    // The gateway's `andromedactl stats` (an empty object for the kernel's datapath).
    [[nodiscard]] json gateway_stats() const;
    [[nodiscard]] std::vector<pid_t> pids() const;

    std::string impl_;
    const Settings& settings_;
    andromeda::testing::Topology topo_;
    andromeda::testing::Netns* host1_ = nullptr;
    andromeda::testing::Netns* gw_ = nullptr;
    andromeda::testing::Netns* outside_ = nullptr;
    andromeda::testing::Netns* tenant_ = nullptr;
    std::string names_[2];  // the daemons' node names
    std::vector<andromeda::testing::Process*> daemons_;
    std::vector<std::string> files_;
};

// Ping RTT from `from` to `to` (IPv4 or IPv6): 200 per measured second at 5 ms intervals, at
// least 100; percentiles, mean and losses, as a row for `impl`. North-south and east-west share it.
json measure_ping_rtt(const andromeda::testing::Netns& from, const std::string& to, const std::string& impl,
                      const Settings& settings);

// The results of every north-south run (rows as the measurements return them) as the JSON
// report's "north_south" object: medians over runs, and ratios of each Andromeda datapath over
// the kernel's.
json north_south_report(const std::vector<json>& tcp, const std::vector<json>& ping, const std::vector<json>& udp_rr,
                        const std::vector<json>& connections);

// What --check finds wrong in a report (never timing): a connection that failed, pings lost beyond
// one in ten, and, with the fast path on, TCP whose bytes the gateway's kernel did not translate
// for the most part. Empty when all is well.
std::vector<std::string> north_south_problems(const json& report);

}  // namespace andromeda::e2e
