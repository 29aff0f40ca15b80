// The differential check: the kernel fast path's outcome for a frame against the pipeline's
// (the NatPipeline: the pipeline with its NAT stage).
//
//   tenant frames    andromeda_tc_tenant on the tenant port's ifindex
//   overlay packets  andromeda_xdp on the underlay (pass_fastpath, or steered to AF_XDP, or
//                    dropped), then andromeda_tc_underlay for what XDP passes
//   the outside      andromeda_tc_uplink on the uplink
//
// and the two must agree:
//   - a frame the fast path forwards (encapsulated, delivered locally, decapsulated, translated by
//     NAT out of the uplink or back to its tenant) is forwarded by the pipeline to the same place,
//     byte for byte; the only field normalised is the outer IPv4 ID (the kernel counts per CPU,
//     the pipeline per template; docs/fastpath.md), whose change the outer header checksum
//     follows (RFC 1624): a wrong checksum stays wrong;
//   - a NAT translation is counted on the flow entry the packet's tuple finds (one packet, its
//     bytes, its time), and nothing else touches an entry;
//   - a port-security drop (drop_spoofed_mac/ip/arp) is a pipeline drop, and a spoofed source
//     MAC the pipeline drops is one the fast path drops;
//   - everything else the fast path punts (redirected, unchanged, to the punt device, with one
//     punt_* reason counted) or steers to AF_XDP: always acceptable;
//   - what the underlay's XDP drops the pipeline drops, and what it or the uplink's tc passes to
//     the host the pipeline does not deliver.
//
// The fast path's outcome is named by the counters that moved, and a case table's expected
// outcome is that name: "encap" (encap_packets, encap_bytes the frame's length), "local"
// (local_packets), a punt reason ("punt_no_route": punt_packets and that reason), a drop
// ("drop_spoofed_ip": that counter alone), "nat_out" (nat_out_packets: translated, out of the
// uplink); on the underlay XDP's: "fastpath" (pass_fastpath, and tc then decap_packets, nat_out
// or a punt_nat_* reason), "host" (pass_host), "socket" (steered to AF_XDP: drop_no_socket, none
// being bound here) or a drop; on the uplink: "nat_local" (nat_in_packets: translated into a
// local tenant), "nat_encap" (and encap_packets: to its node), "pass" (the host's), a punt reason
// or a drop. "untestable": a frame BPF_PROG_TEST_RUN refuses.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bpf_world.hpp"
#include "differential_fabric.hpp"

namespace andromeda::fast_path_test {

// ---- outcomes ----------------------------------------------------------------------------------

// The fast path's outcome named by its counters; `problem` when the counters and the return code
// do not tell one consistent story.
struct Outcome {
    std::string name;
    std::string problem;
};

Outcome tenant_outcome(const TenantBpf& b, const Bytes& input);
Outcome xdp_outcome(const UnderlayBpf& b);
Outcome tc_underlay_outcome(const UnderlayBpf& b, const Bytes& input);
Outcome uplink_outcome(const UplinkBpf& b, const Bytes& input);

// The packet counters of `delta` that moved (not the *_bytes ones), in struct order, "name" or
// "name xN"; `skip` is left out.
std::vector<std::string> moved(const andromeda_fp_stats& delta);
std::vector<std::string> moved(const andromeda_xdp_stats& delta, const char* skip);
std::string joined(const std::vector<std::string>& names);

std::string describe(const PipelineOut& p);
inline PipelineOut pipeline_drop(dataplane::DropReason reason) {
    PipelineOut p;
    p.reason = reason;
    return p;
}

// ---- the comparison ----------------------------------------------------------------------------

// Every way a tenant frame's two outcomes disagree; empty when they agree.
std::vector<std::string> check_tenant(const Bytes& input, const TenantBpf& b, const PipelineOut& p,
                                      dataplane::PortId underlay, dataplane::PortId uplink = dataplane::kNoPort);
// The same for an overlay packet, including what XDP hands tc in the packet's metadata.
std::vector<std::string> check_underlay(const Bytes& input, const UnderlayBpf& b, const PipelineOut& p,
                                        dataplane::PortId uplink = dataplane::kNoPort);
// The same for a packet from the outside on the uplink.
std::vector<std::string> check_uplink(const Bytes& input, const UplinkBpf& b, const PipelineOut& p,
                                      dataplane::PortId underlay);
// What a run did to the flow entry of the packet's tuple: "" when it counted exactly this packet
// (`translated`) or left the entry alone (not translated), else what is wrong.
std::string check_nat_use(const NatUse& use, bool translated);

// Over an IPv6 underlay: the outer UDP checksum the fast path derives for the overlay packet
// `packet` (bpf/lib/outer6.h), computed here by summing the whole datagram once its inner TCP,
// UDP, ICMP or ICMPv6 checksum is made right; nullopt when the inner packet has none to make
// right (another transport, a fragment, IPv4 UDP without a checksum, options or extension
// headers, a length that is not the frame's).
std::optional<std::uint16_t> derived_outer6_checksum(Bytes packet);
// How many encapsulations the comparison accepted with an outer checksum that differs from the
// pipeline's as the derivation says it must (a wrong inner checksum), since the process started.
extern int derived_checksum_count;
// Whether the overlay packet over IPv6 `packet` has an outer checksum that verifies from its
// headers (it is the derived one) but not over its bytes: corrupted below the headers, where only
// the inner checksum can tell. The fast path decapsulates such a packet and the tenant drops it;
// the pipeline drops it. Also true for any wrong checksum on a packet larger than the underlay's
// MTU, which the fast path takes for a GSO packet and does not check. header_verified_count: how
// many the comparison accepted.
bool verifies_from_headers_only(const Bytes& packet);
extern int header_verified_count;

// Gives the IPv4 header at `ip` the ID `id`, updating its checksum for that change only
// (RFC 1624, HC' = ~(~HC + ~m + m')): a checksum that was wrong stays exactly as wrong.
void set_ipv4_id(Bytes& f, std::size_t ip, std::uint16_t id);

// One thing broken about real outputs of both sides (the fast path's, the pipeline's), and what
// the comparison must then report: `problem` is part of its one message, or empty where nothing
// is wrong.
template <class Bpf>
struct Mutation {
    std::string what;
    std::function<void(Bpf&, PipelineOut&)> apply;
    std::string problem;
};

// Each mutation on a copy of `bpf` and `pipeline`, checked with `check(bpf, pipeline)`.
template <class Bpf, class Check>
void expect_mutations_reported(const Bpf& bpf, const PipelineOut& pipeline, const std::vector<Mutation<Bpf>>& mutations,
                               Check check) {
    for (const Mutation<Bpf>& m : mutations) {
        Bpf b = bpf;
        PipelineOut p = pipeline;
        m.apply(b, p);
        const std::vector<std::string> problems = check(b, p);
        if (m.problem.empty()) {
            EXPECT_EQ(problems, std::vector<std::string>{}) << m.what;
        } else if (problems.size() != 1) {
            ADD_FAILURE() << m.what << ": " << problems.size() << " problems reported, not 1: " << joined(problems);
        } else {
            EXPECT_NE(problems[0].find(m.problem), std::string::npos) << m.what << ": " << problems[0];
        }
    }
}

// ---- cases and their runs ----------------------------------------------------------------------

inline const std::string kUnderlay;                 // a case's port: the frame arrives on the underlay
inline const std::string kUplink = "(the uplink)";  // ... on the uplink, from the outside

struct Case {
    std::string name;
    std::string port;  // the tenant port it arrives on, or kUnderlay, or kUplink
    Bytes frame;
    std::string expect;  // the fast path's expected outcome; empty: whatever it is, as long as both agree
};

// Outcomes of a run of cases, "fast path -> pipeline", for the coverage report and its checks.
struct Tally {
    std::map<std::string, int> pairs;
    std::map<std::string, int> fast_path;
    int cases = 0;
    int failures = 0;

    void add(const std::string& bpf, const PipelineOut& p);
    [[nodiscard]] int count(const std::string& outcome) const;
    [[nodiscard]] int count_prefix(const std::string& prefix) const;
    [[nodiscard]] std::string report() const;
};

// Runs one case through both sides and reports any disagreement (and an unexpected outcome) as
// a test failure naming `context`, the case and the bytes; the first few in full, the rest counted.
// An overlay packet XDP hands tc for NAT is named by tc's outcome ("nat_out", "punt_nat_no_flow").
// Returns the pipeline's outcome.
PipelineOut run_case(World& w, const Case& c, Tally& tally, const std::string& context);

// ANDROMEDA_FAST_PATH_SEED=<n> in place of the fixed seed, to repeat a failure's frames.
std::uint32_t seed_for(std::uint32_t fixed);

// A test of one program over both encapsulations: the world of that encapsulation's fabric.
class DifferentialTest : public ::testing::TestWithParam<Encap> {
protected:
    void SetUp() override;

    // Every case of the table, with no disagreement and each with its expected outcome.
    Tally run_table(const std::vector<Case>& cases, const std::string& context);
    // `n` cases from `next` (seeded with `seed`), with no disagreement; prints the tally.
    Tally run_random(const char* what, std::uint32_t seed, int n, const std::function<Case(int i)>& next);

    std::unique_ptr<World> world_;
};

std::string encapsulation_name(const ::testing::TestParamInfo<Encap>& param);
#define ANDROMEDA_FOR_BOTH_ENCAPSULATIONS(suite)                                                       \
    INSTANTIATE_TEST_SUITE_P(Encapsulations, suite, ::testing::Values(Encap::andromeda, Encap::vxlan), \
                             encapsulation_name)

// A stale map entry, then a reload that removes endpoints, seen by one program: cases while a
// fabric entry is already erased but the pipeline still has the endpoint, cases after the reload
// (plan_diff into the maps, the port table re-synced, the pipeline on the new snapshot), then
// random frames after it.
struct StaleEntries {
    andromeda_fabric_key erased;
    std::vector<Case> while_erased;
    std::set<EndpointKey> removed_by_reload;
    std::vector<Case> after_reload;
    std::function<Case()> random_after_reload;
    int random_frames = 0;
};
void run_stale_entries(World& w, const StaleEntries& s);

}  // namespace andromeda::fast_path_test
