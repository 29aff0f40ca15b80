// andromeda_peer_mtu kept equal to the learned path MTUs: new and refreshed entries written,
// unchanged ones left alone, expired or foreign ones erased.
#include "daemon/peer_mtu_sync.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "unit/io/fake_map_writer.hpp"

namespace andromeda::daemon {
namespace {

using dataplane::PeerPathMtu;
using io::MapId;

const andromeda_peer_mtu* entry(const io::testing::FakeMapWriter& map, std::uint32_t peer_host_order) {
    const __be32 key = htonl(peer_host_order);
    return map.find<__be32, andromeda_peer_mtu>(MapId::peer_mtu, key);
}

TEST(PeerMtuSyncTest, WritesWhatChangedAndErasesWhatIsGone) {
    io::testing::FakeMapWriter map;
    const wire::Ipv4Address node2(0xc0a80102), node3(0xc0a80103);
    std::vector<PeerPathMtu::Entry> learned = {{node2, 1400, 5000}, {node3, 1300, 6000}};
    EXPECT_EQ(sync_peer_mtu(map, learned).written.size(), 2u);
    ASSERT_NE(entry(map, node2.value()), nullptr);
    EXPECT_EQ(entry(map, node2.value())->mtu, 1400u);
    EXPECT_EQ(entry(map, node2.value())->expires_ns, 5000u);
    EXPECT_EQ(entry(map, node3.value())->mtu, 1300u);

    // Unchanged: nothing written.
    const std::size_t calls = map.calls();
    const PeerMtuSyncCounts again = sync_peer_mtu(map, learned);
    EXPECT_TRUE(again.written.empty());
    EXPECT_EQ(again.erased, 0u);
    EXPECT_EQ(map.calls(), calls);

    // node2 refreshed, node3 expired.
    learned = {{node2, 1400, 9000}};
    const PeerMtuSyncCounts next = sync_peer_mtu(map, learned);
    ASSERT_EQ(next.written.size(), 1u);
    EXPECT_EQ(next.written[0].peer, node2);
    EXPECT_EQ(next.erased, 1u);
    EXPECT_EQ(entry(map, node2.value())->expires_ns, 9000u);
    EXPECT_EQ(entry(map, node3.value()), nullptr);

    // A predecessor's entries, with nothing learned: all erased.
    EXPECT_EQ(sync_peer_mtu(map, {}).erased, 1u);
    EXPECT_TRUE(map.table(MapId::peer_mtu).empty());
}

}  // namespace
}  // namespace andromeda::daemon
