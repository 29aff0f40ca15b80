// Fabric -> BPF map planning and writing, against an in-memory map writer: the first sync
// writes everything, a reload writes exactly what changed, and the diff-driven path always ends
// where a from-scratch reconcile would.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "fabric/fabric.hpp"
#include "fake_map_writer.hpp"
#include "io/plan/map_plan.hpp"
#include "io/plan/map_sync.hpp"
#include "random_fabric.hpp"
#include "support/fabric_builder.hpp"

namespace andromeda::io {
namespace {

using fabric::FabricSnapshot;
using testing::FakeMapWriter;

const LocalContext kLocal{wire::Ipv4Address(0xc0a80101), {}};  // 192.168.1.1

const std::string kHead = test_support::FabricBuilder("node1", "192.168.1.1")
                              .uplink("eth2")
                              .peer("node2", "192.168.1.2")
                              .peer("node3", "192.168.1.3")
                              .toml();

const std::string kBlue = R"(
[[vpc]]
name = "blue"
vni = 100
cidr = "10.0.0.0/24"
gateway = "10.0.0.1"

[vpc.nat]
gateway_node = "node1"
address = "203.0.113.10"

[[vpc.endpoint]]
ip = "10.0.0.10"
mac = "02:00:00:00:00:10"
node = "node1"
port = "tap1"

[[vpc.endpoint]]
ip = "10.0.0.20"
mac = "02:00:00:00:00:20"
node = "node2"

[[vpc.endpoint]]
ip = "10.0.0.30"
mac = "02:00:00:00:00:30"
node = "node3"
)";

const std::string kGreen = R"(
[[vpc]]
name = "green"
vni = 200
cidr = "10.0.0.0/24"
gateway = "10.0.0.1"

[[vpc.endpoint]]
ip = "10.0.0.20"
mac = "02:00:00:00:01:20"
node = "node2"
)";

std::shared_ptr<const FabricSnapshot> load(const std::string& text) {
    auto result = fabric::load_fabric_string(text, "t.toml");
    EXPECT_TRUE(result.ok()) << fabric::to_string(result.errors);
    return result.snapshot;
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
}

andromeda_fabric_key fkey(std::uint32_t vni, std::uint32_t ip) { return {vni, htonl(ip)}; }

struct Synced {
    FakeMapWriter writer;
    FabricMapSync sync{writer};
    std::shared_ptr<const FabricSnapshot> current;

    SyncCounts start(const std::string& text) {
        current = load(text);
        return sync.reconcile(plan_full(*current, kLocal));
    }
    SyncCounts reload(const std::string& text) {
        auto next = load(text);
        const auto diff = fabric::diff_fabrics(current.get(), *next);
        current = next;
        return sync.apply(plan_diff(*current, diff, kLocal));
    }
};

TEST(FabricMapSync, FirstSyncWritesEveryEntryWithItsValue) {
    Synced s;
    const auto counts = s.start(kHead + kBlue + kGreen);
    EXPECT_EQ(counts[MapId::peers].upserts, 2u);
    EXPECT_EQ(counts[MapId::vnis].upserts, 2u);
    EXPECT_EQ(counts[MapId::fabric].upserts, 4u);
    EXPECT_EQ(counts[MapId::nat_addrs].upserts, 1u);
    EXPECT_EQ(counts[MapId::vpc_cidrs].upserts, 2u);
    EXPECT_EQ(counts.total().erases, 0u);
    EXPECT_EQ(s.writer.calls(), 11u);

    const auto* local = s.writer.find<andromeda_fabric_key, andromeda_fabric_entry>(MapId::fabric, fkey(100, 0x0a00000a));
    ASSERT_NE(local, nullptr);
    EXPECT_EQ(local->local, 1);
    EXPECT_EQ(ntohl(local->node_ip), 0xc0a80101u);
    EXPECT_EQ(local->mac[5], 0x10);
    const auto* remote = s.writer.find<andromeda_fabric_key, andromeda_fabric_entry>(MapId::fabric, fkey(200, 0x0a000014));
    ASSERT_NE(remote, nullptr);
    EXPECT_EQ(remote->local, 0);
    EXPECT_EQ(ntohl(remote->node_ip), 0xc0a80102u);
    EXPECT_EQ(remote->mac[4], 0x01);
    const auto* vni = s.writer.find<__u32, andromeda_vni>(MapId::vnis, 100u);
    ASSERT_NE(vni, nullptr);
    EXPECT_EQ(vni->mtu, 1450u);
    EXPECT_EQ(vni->vpc_id, stable_id("blue"));
    const __be32 nat = htonl(0xcb00710a);
    ASSERT_NE((s.writer.find<__be32, __u32>(MapId::nat_addrs, nat)), nullptr);
    const __be32 peer = htonl(0xc0a80102);
    const auto* p = s.writer.find<__be32, andromeda_peer>(MapId::peers, peer);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->node_id, stable_id("node2"));
    EXPECT_EQ(s.sync.size(MapId::fabric), 4u);
}

TEST(FabricMapSync, UnchangedReloadWritesNothing) {
    Synced s;
    s.start(kHead + kBlue + kGreen);
    const auto before = s.writer.calls();
    EXPECT_EQ(s.reload(kHead + kBlue + kGreen).total().writes(), 0u);
    const auto again = s.sync.reconcile(plan_full(*s.current, kLocal));
    EXPECT_EQ(again.total().writes(), 0u);
    EXPECT_EQ(again.total().unchanged, 11u);
    EXPECT_EQ(s.writer.calls(), before);
}

TEST(FabricMapSync, AddingOneEndpointWritesOneEntry) {
    Synced s;
    s.start(kHead + kBlue + kGreen);
    const auto before = s.writer.calls();
    const auto counts = s.reload(kHead + kBlue + kGreen + R"(
[[vpc.endpoint]]
ip = "10.0.0.40"
mac = "02:00:00:00:01:40"
node = "node3"
)");
    EXPECT_EQ(counts.total().writes(), 1u) << counts.summary();
    EXPECT_EQ(counts[MapId::fabric].upserts, 1u);
    EXPECT_EQ(s.writer.calls(), before + 1);
    EXPECT_NE((s.writer.find<andromeda_fabric_key, andromeda_fabric_entry>(MapId::fabric, fkey(200, 0x0a000028))), nullptr);
}

TEST(FabricMapSync, RemovingAnEndpointErasesOnlyIt) {
    Synced s;
    s.start(kHead + kBlue + kGreen);
    const auto counts = s.reload(kHead + replace_once(kBlue, R"(
[[vpc.endpoint]]
ip = "10.0.0.30"
mac = "02:00:00:00:00:30"
node = "node3"
)", "") + kGreen);
    EXPECT_EQ(counts.total().writes(), 1u) << counts.summary();
    EXPECT_EQ(counts[MapId::fabric].erases, 1u);
    EXPECT_EQ((s.writer.find<andromeda_fabric_key, andromeda_fabric_entry>(MapId::fabric, fkey(100, 0x0a00001e))), nullptr);
}

andromeda_fabric6_key f6key(std::uint32_t vni, std::uint8_t last) {
    andromeda_fabric6_key k{};
    k.vni = vni;
    const std::uint8_t prefix[] = {0xfd, 0, 0, 0, 0, 0, 0, 1};
    std::copy(std::begin(prefix), std::end(prefix), k.ip);
    k.ip[15] = last;
    return k;
}

// A dual-stack VPC: each endpoint with an IPv6 address has an andromeda_fabric6 entry with the
// value of its IPv4 one; a readdressed endpoint moves its entry, a removed one takes it along,
// and an endpoint that loses its address loses its entry.
TEST(FabricMapSync, EndpointsIpv6AddressesAreWrittenMovedAndErasedInTheirOwnMap) {
    const std::string dual = replace_once(replace_once(replace_once(kBlue, "gateway = \"10.0.0.1\"\n",
                                                                    "gateway = \"10.0.0.1\"\nipv6_prefix = \"fd00:0:0:1::/64\"\n"),
                                                       "mac = \"02:00:00:00:00:10\"\n",
                                                       "mac = \"02:00:00:00:00:10\"\nipv6 = \"fd00:0:0:1::10\"\n"),
                                          "mac = \"02:00:00:00:00:20\"\n",
                                          "mac = \"02:00:00:00:00:20\"\nipv6 = \"fd00:0:0:1::20\"\n");
    Synced s;
    const auto first = s.start(kHead + dual + kGreen);
    EXPECT_EQ(first[MapId::fabric6].upserts, 2u) << first.summary();
    const auto* local = s.writer.find<andromeda_fabric6_key, andromeda_fabric_entry>(MapId::fabric6, f6key(100, 0x10));
    ASSERT_NE(local, nullptr);
    EXPECT_EQ(local->local, 1);
    const auto* v4 = s.writer.find<andromeda_fabric_key, andromeda_fabric_entry>(MapId::fabric, fkey(100, 0x0a00000a));
    ASSERT_NE(v4, nullptr);
    EXPECT_EQ(std::memcmp(local, v4, sizeof *v4), 0);
    const auto* remote = s.writer.find<andromeda_fabric6_key, andromeda_fabric_entry>(MapId::fabric6, f6key(100, 0x20));
    ASSERT_NE(remote, nullptr);
    EXPECT_EQ(ntohl(remote->node_ip), 0xc0a80102u);
    EXPECT_EQ((s.writer.find<andromeda_fabric6_key, andromeda_fabric_entry>(MapId::fabric6, f6key(100, 0x30))), nullptr);

    // node2's endpoint readdressed: its old entry goes, the new one comes; nothing else is written.
    const std::string readdressed = replace_once(dual, "fd00:0:0:1::20", "fd00:0:0:1::21");
    const auto moved = s.reload(kHead + readdressed + kGreen);
    EXPECT_EQ(moved[MapId::fabric6].erases, 1u) << moved.summary();
    EXPECT_EQ(moved[MapId::fabric6].upserts, 1u) << moved.summary();
    EXPECT_EQ(moved.total().writes(), 2u) << moved.summary();
    EXPECT_EQ((s.writer.find<andromeda_fabric6_key, andromeda_fabric_entry>(MapId::fabric6, f6key(100, 0x20))), nullptr);
    EXPECT_NE((s.writer.find<andromeda_fabric6_key, andromeda_fabric_entry>(MapId::fabric6, f6key(100, 0x21))), nullptr);

    // ... then without an IPv6 address, and node1's endpoint removed: both entries gone.
    std::string fewer = replace_once(readdressed, "ipv6 = \"fd00:0:0:1::21\"\n", "");
    fewer = replace_once(fewer, "[[vpc.endpoint]]\nip = \"10.0.0.10\"\nmac = \"02:00:00:00:00:10\"\nipv6 = \"fd00:0:0:1::10\"\nnode = \"node1\"\nport = \"tap1\"\n", "");
    const auto gone = s.reload(kHead + fewer + kGreen);
    EXPECT_EQ(gone[MapId::fabric6].erases, 2u) << gone.summary();
    EXPECT_EQ(s.sync.size(MapId::fabric6), 0u);
    // A from-scratch reconcile agrees with where the diffs led.
    EXPECT_EQ(s.sync.reconcile(plan_full(*s.current, kLocal)).total().writes(), 0u);
}

// etcd's in-place path writes an endpoint change's entries before the snapshot exists, valued
// from the endpoints and the node list alone: exactly the fabric entries plan_diff() plans from
// the snapshot, so the write that follows it finds nothing left to do.
TEST(FabricMapSync, EndpointChangesPlannedWithoutTheSnapshotWriteWhatTheDiffWould) {
    const std::string added = R"(
[[vpc.endpoint]]
ip = "10.0.0.40"
mac = "02:00:00:00:01:40"
node = "node3"
)";
    const std::string before = kHead + kBlue + kGreen;
    const std::string after = kHead +
                              replace_once(replace_once(kBlue, "mac = \"02:00:00:00:00:30\"", "mac = \"02:00:00:00:00:31\""),
                                           "node = \"node3\"", "node = \"node2\"") +
                              replace_once(kGreen, "ip = \"10.0.0.20\"", "ip = \"10.0.0.21\"") + added;
    Synced ahead, diffed;
    ahead.start(before);
    diffed.start(before);
    const auto next = load(after);
    const auto diff = fabric::diff_fabrics(ahead.current.get(), *next);
    ASSERT_EQ(diff.endpoints_added.size(), 2u);
    ASSERT_EQ(diff.endpoints_removed.size(), 1u);
    ASSERT_EQ(diff.endpoints_changed.size(), 1u);
    const auto early = ahead.sync.apply(plan_endpoint_changes(next->nodes(), diff, kLocal));
    EXPECT_EQ(early[MapId::fabric].writes(), 4u) << early.summary();
    EXPECT_EQ(ahead.sync.apply(plan_diff(*next, diff, kLocal)).total().writes(), 0u) << "all of it was written ahead";
    diffed.reload(after);
    EXPECT_EQ(ahead.writer.table(MapId::fabric), diffed.writer.table(MapId::fabric));
}

TEST(FabricMapSync, MovingANodeRewritesItsPeerEntryAndItsEndpointsOnly) {
    Synced s;
    s.start(kHead + kBlue + kGreen);
    const auto counts =
        s.reload(replace_once(kHead, "address = \"192.168.1.2\"", "address = \"192.168.1.22\"") + kBlue + kGreen);
    EXPECT_EQ(counts[MapId::peers].erases, 1u);
    EXPECT_EQ(counts[MapId::peers].upserts, 1u);
    EXPECT_EQ(counts[MapId::fabric].upserts, 2u);  // node2 carries 10.0.0.20 in blue and in green
    EXPECT_EQ(counts.total().writes(), 4u) << counts.summary();
    const auto* moved = s.writer.find<andromeda_fabric_key, andromeda_fabric_entry>(MapId::fabric, fkey(100, 0x0a000014));
    ASSERT_NE(moved, nullptr);
    EXPECT_EQ(ntohl(moved->node_ip), 0xc0a80116u);
}

TEST(FabricMapSync, VpcAndNatChangesTouchTheirEntries) {
    Synced s;
    s.start(kHead + kBlue + kGreen);
    auto counts = s.reload(kHead + replace_once(kBlue, "address = \"203.0.113.10\"", "address = \"203.0.113.11\"") +
                           replace_once(kGreen, "gateway = \"10.0.0.1\"", "gateway = \"10.0.0.1\"\nmtu = 1400"));
    EXPECT_EQ(counts[MapId::nat_addrs].erases, 1u);
    EXPECT_EQ(counts[MapId::nat_addrs].upserts, 1u);
    EXPECT_EQ(counts[MapId::vnis].upserts, 1u);  // green's MTU; blue's entry is unchanged
    EXPECT_EQ(counts.total().writes(), 3u) << counts.summary();
    EXPECT_EQ((s.writer.find<__u32, andromeda_vni>(MapId::vnis, 200u))->mtu, 1400u);

    counts = s.reload(kHead + kBlue);  // green goes, with its endpoint; blue's NAT back to .10
    EXPECT_EQ(counts[MapId::vnis].erases, 1u);
    EXPECT_EQ(counts[MapId::fabric].erases, 1u);
    EXPECT_EQ(counts[MapId::nat_addrs].writes(), 2u);
    EXPECT_EQ(counts[MapId::vpc_cidrs].erases, 1u);  // green's prefix
    EXPECT_EQ(counts.total().writes(), 5u) << counts.summary();
}

// Random fabrics, one after another: each diff-driven reload must write exactly the entries
// whose value differs between the two states (no more, no less), and leave the maps equal to
// a fresh reconcile of the new state.
std::size_t expected_writes(const FakeMapWriter::Table& a, const FakeMapWriter::Table& b) {
    std::size_t n = 0;
    for (const auto& [k, v] : b) n += (a.count(k) == 0 || a.at(k) != v) ? 1 : 0;
    for (const auto& [k, v] : a) n += b.count(k) == 0 ? 1 : 0;
    return n;
}

TEST(FabricMapSync, RandomReloadsWriteExactlyTheDifference) {
    testing::RandomFabric fabrics(7);
    Synced s;
    s.start(fabrics.next());
    int reloads = 0;
    for (int i = 0; i < 300; ++i) {
        const std::string text = fabrics.next();
        auto next = fabric::load_fabric_string(text, "t.toml");
        ASSERT_TRUE(next.ok()) << fabric::to_string(next.errors) << text;
        // What a from-scratch sync of the new state holds.
        FakeMapWriter fresh_writer;
        FabricMapSync fresh(fresh_writer);
        fresh.reconcile(plan_full(*next.snapshot, kLocal));

        const auto before = s.writer.tables;
        const auto counts = s.reload(text);
        ++reloads;
        std::size_t expected = 0;
        for (const MapId id : {MapId::peers, MapId::vnis, MapId::fabric, MapId::nat_addrs, MapId::vpc_cidrs}) {
            EXPECT_EQ(s.writer.table(id), fresh_writer.table(id)) << "map " << pin_name(id) << " after reload " << i;
            expected += expected_writes(before[static_cast<std::size_t>(id)], fresh_writer.table(id));
        }
        ASSERT_EQ(counts.total().writes(), expected) << counts.summary() << "\n" << text;
    }
    EXPECT_EQ(reloads, 300);
}

}  // namespace
}  // namespace andromeda::io
