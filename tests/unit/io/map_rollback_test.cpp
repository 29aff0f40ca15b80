// A write the kernel refuses in the middle of a reload (a full map, no memory, a map changed
// behind the daemon's back) must not leave the maps half written: FabricMapSync undoes the writes
// made before it, so the maps hold the running fabric's entries, and the next reload works from
// there. Against a map writer that refuses the Nth write, for every N.
#include <arpa/inet.h>
#include <gtest/gtest.h>

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

const LocalContext kLocal{wire::Ipv4Address(0xc0a80101), {}};
constexpr MapId kFabricMaps[] = {MapId::peers, MapId::vnis, MapId::fabric, MapId::nat_addrs, MapId::vpc_cidrs};

std::shared_ptr<const FabricSnapshot> load(const std::string& text) {
    auto result = fabric::load_fabric_string(text, "t.toml");
    EXPECT_TRUE(result.ok()) << fabric::to_string(result.errors);
    return result.snapshot;
}

// The fabric maps a fresh reconcile of `snapshot` writes.
std::array<FakeMapWriter::Table, kMapCount> fresh_tables(const FabricSnapshot& snapshot) {
    FakeMapWriter writer;
    FabricMapSync sync(writer);
    sync.reconcile(plan_full(snapshot, kLocal));
    return writer.tables;
}

std::size_t differing_entries(const FakeMapWriter::Table& a, const FakeMapWriter::Table& b) {
    std::size_t n = 0;
    for (const auto& [k, v] : b) n += (a.count(k) == 0 || a.at(k) != v) ? 1 : 0;
    for (const auto& [k, v] : a) n += b.count(k) == 0 ? 1 : 0;
    return n;
}

// The writes a sync from `from` to `to` makes (a diff-driven reload writes exactly these:
// FabricMapSync.RandomReloadsWriteExactlyTheDifference).
std::size_t writes_between(const std::array<FakeMapWriter::Table, kMapCount>& from,
                           const std::array<FakeMapWriter::Table, kMapCount>& to) {
    std::size_t n = 0;
    for (const MapId id : kFabricMaps)
        n += differing_entries(from[static_cast<std::size_t>(id)], to[static_cast<std::size_t>(id)]);
    return n;
}

const std::string kTwoNodes = test_support::two_node_blue("node1")
                                  .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap1")
                                  .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2")
                                  .toml();

// The same fabric with a third node and a VPC on it: a peer entry, a VNI, a CIDR, an endpoint.
std::string with_red_on_node3() {
    return test_support::two_node_blue("node1")
        .peer("node3", "192.168.1.3")
        .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap1")
        .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2")
        .vpc("red", 300, "10.3.0.0/24", "10.3.0.1")
        .endpoint("10.3.0.30", "02:00:00:00:03:30", "node3")
        .toml();
}

TEST(FabricMapSyncRollback, ARefusedWriteIsReportedWithWhatWasPutBack) {
    FakeMapWriter writer;
    FabricMapSync sync(writer);
    const auto running = load(kTwoNodes);
    sync.reconcile(plan_full(*running, kLocal));
    const auto before = writer.tables;
    const auto next = load(with_red_on_node3());
    const auto plan = plan_diff(*next, fabric::diff_fabrics(running.get(), *next), kLocal);

    writer.refuse_after(1);  // the peer entry is written, the VNI refused
    try {
        (void)sync.apply(plan);
        FAIL() << "the refused write must throw";
    } catch (const MapSyncError& e) {
        EXPECT_STREQ(e.what(),
                     "writing an entry of andromeda_vnis: Argument list too long (the map is full); put back the 1 map "
                     "entry already written");
        EXPECT_EQ(e.error_number(), E2BIG);
        EXPECT_EQ(e.rollback().undone, 1u);
        EXPECT_TRUE(e.rollback().complete());
    }
    EXPECT_EQ(writer.tables, before);
    EXPECT_FALSE(sync.diverged());
    EXPECT_FALSE(sync.in_transaction());

    // The shadow followed the undo: the same reload, once the kernel takes it, writes all of it.
    const auto counts = sync.apply(plan);
    EXPECT_EQ(counts.total().writes(), 4u) << counts.summary();
    EXPECT_EQ(writer.tables, fresh_tables(*next));
}

// Random reloads, each refused at a random write (or at none): a refused one leaves every map
// as it was, and the next reload, refused or not, goes on from there and ends where a fresh sync
// of its fabric would.
TEST(FabricMapSyncRollback, AReloadRefusedAtAnyWriteLeavesEveryMapAsItWas) {
    testing::RandomFabric fabrics(11);
    std::mt19937 rng(12);
    FakeMapWriter writer;
    FabricMapSync sync(writer);
    auto running = load(fabrics.next());
    sync.reconcile(plan_full(*running, kLocal));
    std::size_t refused = 0, applied = 0, longest = 0;
    for (int i = 0; i < 400; ++i) {
        const auto next = load(fabrics.next());
        ASSERT_TRUE(next);
        const auto want = fresh_tables(*next);
        const std::size_t writes = writes_between(writer.tables, want);
        const auto plan = plan_diff(*next, fabric::diff_fabrics(running.get(), *next), kLocal);
        if (writes == 0 || rng() % 4 == 0) {
            sync.apply(plan);
            EXPECT_EQ(writer.tables, want) << "reload " << i;
            running = next;
            ++applied;
            continue;
        }
        const std::size_t n = rng() % writes;  // the (n+1)th write is refused
        longest = std::max(longest, n);
        const auto before = writer.tables;
        const std::size_t calls = writer.calls();
        writer.refuse_after(n);
        try {
            (void)sync.apply(plan);
            ADD_FAILURE() << "reload " << i << ": write " << n << " of " << writes
                          << " was refused, yet apply returned";
        } catch (const MapSyncError& e) {
            EXPECT_EQ(e.rollback().undone, n) << "reload " << i;
            EXPECT_TRUE(e.rollback().complete()) << "reload " << i;
        }
        EXPECT_EQ(writer.tables, before) << "reload " << i << ": refused at write " << n << " of " << writes;
        EXPECT_EQ(writer.calls(), calls + 2 * n) << "each write made, then undone";
        ++refused;
    }
    EXPECT_GT(refused, 200u);
    EXPECT_GT(applied, 50u);
    EXPECT_GT(longest, 5u) << "refusals late in a reload too";
}

TEST(FabricMapSyncRollback, ARefusedReconcileOrPortSyncLeavesTheMapAsItWas) {
    testing::RandomFabric fabrics(5);
    std::mt19937 rng(6);
    FakeMapWriter writer;
    FabricMapSync sync(writer);
    sync.reconcile(plan_full(*load(fabrics.next()), kLocal));
    for (int i = 0; i < 100; ++i) {
        const auto next = load(fabrics.next());
        const std::size_t writes = writes_between(writer.tables, fresh_tables(*next));
        if (writes == 0) continue;
        const auto before = writer.tables;
        writer.refuse_after(rng() % writes);
        EXPECT_THROW((void)sync.reconcile(plan_full(*next, kLocal)), MapSyncError);
        EXPECT_EQ(writer.tables, before) << "reconcile " << i;
    }

    PortTable ports{{2, make_port(ANDROMEDA_PORT_UNDERLAY, 0)}, {11, make_port(ANDROMEDA_PORT_TENANT, 1, 100)}};
    sync.sync_ports(ports);
    const auto before = writer.table(MapId::ports);
    PortTable next{{2, make_port(ANDROMEDA_PORT_UNDERLAY, 0)},
                   {12, make_port(ANDROMEDA_PORT_TENANT, 1, 100)},
                   {13, make_port(ANDROMEDA_PORT_TENANT, 2, 200)}};
    for (std::size_t n = 0; n < 3; ++n) {  // erase 11, add 12, add 13
        writer.refuse_after(n);
        EXPECT_THROW((void)sync.sync_ports(next), MapSyncError);
        EXPECT_EQ(writer.table(MapId::ports), before) << "refused at write " << n;
    }
    EXPECT_EQ(sync.sync_ports(next)[MapId::ports].writes(), 3u);
}

// etcd's change: entries written ahead, then the snapshot's; refused at any write of the
// second call, a rollback undoes the first call's too.
TEST(FabricMapSyncRollback, ATransactionUndoesTheWritesOfEveryCallInIt) {
    testing::RandomFabric fabrics(21);
    std::mt19937 rng(22);
    FakeMapWriter writer;
    FabricMapSync sync(writer);
    auto running = load(fabrics.next());
    sync.reconcile(plan_full(*running, kLocal));
    int tested = 0;
    for (int i = 0; i < 200; ++i) {
        const auto middle = load(fabrics.next());
        const auto last = load(fabrics.next());
        const auto before = writer.tables;
        sync.begin();
        ASSERT_TRUE(sync.in_transaction());
        sync.apply(plan_diff(*middle, fabric::diff_fabrics(running.get(), *middle), kLocal));
        const std::size_t writes = writes_between(writer.tables, fresh_tables(*last));
        const auto plan = plan_diff(*last, fabric::diff_fabrics(middle.get(), *last), kLocal);
        if (writes > 0) {
            writer.refuse_after(rng() % writes);
            EXPECT_THROW((void)sync.apply(plan), MapSyncError);
        } else {
            sync.apply(plan);
        }
        const RollbackResult undone = sync.rollback();
        EXPECT_TRUE(undone.complete());
        EXPECT_FALSE(sync.in_transaction());
        EXPECT_EQ(writer.tables, before) << "transaction " << i;
        tested += writes > 0 ? 1 : 0;
    }
    EXPECT_GT(tested, 150);

    // Committed, the writes stay; a later rollback has nothing to undo.
    const auto next = load(fabrics.next());
    sync.begin();
    sync.apply(plan_diff(*next, fabric::diff_fabrics(running.get(), *next), kLocal));
    sync.commit();
    EXPECT_EQ(writer.tables, fresh_tables(*next));
    EXPECT_EQ(sync.rollback().undone, 0u);
}

// When the kernel refuses the undo too, the error says so, the sync knows the maps diverged
// from every fabric, and a reconcile (what the daemon's next reload does then) repairs them.
TEST(FabricMapSyncRollback, AnUndoRefusedTooIsReportedAndAReconcileRepairs) {
    FakeMapWriter writer;
    FabricMapSync sync(writer);
    const auto running = load(kTwoNodes);
    sync.reconcile(plan_full(*running, kLocal));
    const auto next = load(with_red_on_node3());
    const auto plan = plan_diff(*next, fabric::diff_fabrics(running.get(), *next), kLocal);

    writer.refuse_after(2, 2);  // peer and VNI written, the CIDR refused, then the VNI's undo
    try {
        (void)sync.apply(plan);
        FAIL() << "the refused write must throw";
    } catch (const MapSyncError& e) {
        EXPECT_EQ(e.rollback().undone, 1u);
        EXPECT_EQ(e.rollback().failed, 1u);
        const std::string what = e.what();
        EXPECT_NE(what.find("writing an entry of andromeda_vpc_cidrs"), std::string::npos) << what;
        EXPECT_NE(what.find("put back 1 of the 2 map entries already written; 1 could not be (deleting an entry of "
                            "andromeda_vnis"),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("until a reload succeeds"), std::string::npos) << what;
    }
    EXPECT_TRUE(sync.diverged());
    EXPECT_EQ(writer.table(MapId::vnis).size(), 2u) << "red's VNI stayed";
    EXPECT_EQ(writer.table(MapId::peers).size(), 1u) << "node3's peer entry was put back";

    const auto counts = sync.reconcile(plan_full(*running, kLocal));
    EXPECT_EQ(counts.total().writes(), 1u) << counts.summary();
    EXPECT_FALSE(sync.diverged());
    EXPECT_EQ(writer.tables, fresh_tables(*running));
}

}  // namespace
}  // namespace andromeda::io
