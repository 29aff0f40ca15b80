// A narrower underlay: ICMP fragmentation needed about this node's outer packets, as the XDP
// prefilter hands them to the pipeline. Believed only about our own packet to a known peer with a
// plausible MTU; then both the pipeline's PMTUD answers and its encapsulation size by it, until
// it ages out. Everything else is counted and ignored; random and truncated bytes never crash.
#include "dataplane/underlay_pmtu.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <string>
#include <random>
#include <thread>
#include <vector>

#include "unit/dataplane/pipeline_fixture.hpp"

namespace andromeda::testing {
namespace {

using dataplane::DropReason;
using dataplane::OuterFragNeeded;
using dataplane::Verdict;

const wire::Ipv4Address kRouterIp = ipv4("192.168.1.254");
const wire::MacAddress kRouterMac = mac("02:00:00:00:a1:fe");

// Fragmentation needed from the router at `from` to node1, next-hop MTU `mtu`, quoting the first
// `quote` bytes of the IPv4 packet inside `offending` (an Ethernet frame).
Bytes frag_needed(const Bytes& offending, std::uint16_t mtu, std::size_t quote = 28, wire::Ipv4Address from = kRouterIp,
                  std::uint8_t type = 3, std::uint8_t code = 4) {
    const std::size_t quoted = std::min(quote, offending.size() - 14);
    Bytes f(14 + 20 + 8 + quoted);
    const auto eth = f.data();
    kNode1Mac.copy_to(eth);
    kRouterMac.copy_to(eth + 6);
    wire::store_be16(eth + 12, wire::ethertype::kIpv4);
    std::uint8_t* ip = eth + 14;
    ip[0] = 0x45;
    wire::store_be16(ip + 2, static_cast<std::uint16_t>(f.size() - 14));
    ip[8] = 64;
    ip[9] = wire::ip_protocol::kIcmp;
    wire::store_be32(ip + 12, from.value());
    wire::store_be32(ip + 16, kNode1Ip.value());
    wire::store_be16(ip + 10, wire::internet_checksum({ip, 20}));
    std::uint8_t* icmp = ip + 20;
    icmp[0] = type;
    icmp[1] = code;
    wire::store_be16(icmp + 6, mtu);
    std::copy_n(offending.begin() + 14, quoted, icmp + 8);
    wire::store_be16(icmp + 2, wire::internet_checksum({icmp, 8 + quoted}));
    return f;
}

// A blue 10.0.0.10 -> 10.0.0.20 (node2) UDP packet of `ip_length` bytes.
Bytes blue_to_node2(std::size_t ip_length, bool dont_fragment = true) {
    Ipv4Spec s = blue10_to("10.0.0.20");
    s.payload = ip_length - 28;
    s.dont_fragment = dont_fragment;
    return ipv4_frame(s);
}

struct FakeClock {
    std::uint64_t now = 1'000'000'000;
};

class UnderlayPmtuTest : public ::testing::Test {
protected:
    UnderlayPmtuTest() : fabric_(load_fabric(fabric_text("node1"))), pipeline_(config()) {}

    dataplane::PipelineConfig config() {
        auto c = node_config("node1");
        c.clock = [this] { return time_.now; };
        return c;
    }
    dataplane::FrameResult run(PortId port, const Bytes& frame) {
        return pipeline_.process(port, frame, *fabric_, out_.fresh());
    }
    // An outer packet node1 really sends to node2: a tenant frame through the pipeline.
    Bytes our_outer_packet() {
        EXPECT_EQ(run(kBlue10Port, blue_to_node2(1000)).verdict, Verdict::forward);
        return out_.frame(0);
    }
    // The next-hop MTU of the Fragmentation Needed the gateway answered a tenant with.
    std::uint16_t answered_mtu() {
        EXPECT_EQ(out_.emissions().size(), 1u);
        if (out_.emissions().empty()) return 0;
        const Bytes reply = out_.frame(0);
        const auto ip = wire::Ipv4View::parse(wire::ByteSpan(reply).subspan(14));
        const auto icmp = wire::Icmpv4View::parse(ip->payload());
        EXPECT_TRUE(icmp->is_fragmentation_needed());
        return icmp->next_hop_mtu();
    }
    // Feeds `icmp` in on the underlay: it is never forwarded, whatever it says.
    void report(const Bytes& icmp) {
        const auto r = run(kUnderlayPort, icmp);
        EXPECT_EQ(r.verdict, Verdict::drop);
        EXPECT_EQ(r.drop_reason, DropReason::underlay_icmp_read);
        EXPECT_TRUE(out_.emissions().empty());
    }

    FakeClock time_;
    std::shared_ptr<const fabric::FabricSnapshot> fabric_;
    dataplane::Pipeline pipeline_;
    SinkStorage out_;
};

TEST_F(UnderlayPmtuTest, ParsesFragmentationNeededAboutOurOuterPacket) {
    const Bytes icmp = frag_needed(our_outer_packet(), 1400);
    const auto r = dataplane::parse_outer_frag_needed(icmp, kNode1Ip, 43481);
    EXPECT_EQ(r.kind, OuterFragNeeded::ours);
    EXPECT_EQ(r.peer, kNode2Ip);
    EXPECT_EQ(r.mtu, 1400u);
    // The whole outer packet quoted (as Linux does, up to 576 bytes) reads the same.
    const auto whole = dataplane::parse_outer_frag_needed(frag_needed(our_outer_packet(), 1400, 548), kNode1Ip, 43481);
    EXPECT_EQ(whole.kind, OuterFragNeeded::ours);
    EXPECT_EQ(whole.peer, kNode2Ip);
}

TEST_F(UnderlayPmtuTest, LearnedMtuLowersThePathForTheTenantOnEveryLane) {
    // Before: 1450 fits (underlay_mtu 1500 less the overlay).
    ASSERT_EQ(run(kBlue10Port, blue_to_node2(1450)).verdict, Verdict::forward);
    report(frag_needed(our_outer_packet(), 1400));
    EXPECT_EQ(pipeline_.counters().underlay_pmtu_learned, 1u);
    EXPECT_EQ(pipeline_.counters().underlay_pmtu_ignored, 0u);
    EXPECT_EQ(pipeline_.peer_path_mtu()->mtu(kNode2Ip, time_.now), 1400u);

    // The inner MTU is now 1400 less the outer IPv4, UDP, overlay and inner Ethernet headers (1350),
    // on the copy and the in-place lanes alike.
    ASSERT_EQ(run(kBlue10Port, blue_to_node2(1351)).verdict, Verdict::reply);
    EXPECT_EQ(answered_mtu(), 1350);
    ChunkFrame big(blue_to_node2(1351));
    ASSERT_EQ(pipeline_.process_in_place(kBlue10Port, big.buffer, *fabric_, out_.fresh()).verdict, Verdict::reply);
    EXPECT_EQ(answered_mtu(), 1350);
    ASSERT_EQ(run(kBlue10Port, blue_to_node2(1350)).verdict, Verdict::forward);
    EXPECT_EQ(wire::Ipv4View::parse(wire::ByteSpan(out_.frame(0)).subspan(14))->total_length(), 1400);
    ChunkFrame fits(blue_to_node2(1350));
    ASSERT_EQ(pipeline_.process_in_place(kBlue10Port, fits.buffer, *fabric_, out_.fresh()).verdict, Verdict::forward);
    // Without DF the packet is fragmented to fit the narrower path.
    ASSERT_EQ(run(kBlue10Port, blue_to_node2(1450, false)).verdict, Verdict::forward);
    ASSERT_EQ(out_.emissions().size(), 2u);
    for (std::size_t i = 0; i < 2; ++i)
        EXPECT_LE(wire::Ipv4View::parse(wire::ByteSpan(out_.frame(i)).subspan(14))->total_length(), 1400);
    // Other peers keep the configured MTU: red's NAT node is node2 too, but blue .30 is on node3.
    EXPECT_EQ(pipeline_.peer_path_mtu()->mtu(kNode3Ip, time_.now), 0u);
}

TEST_F(UnderlayPmtuTest, TheLearnedMtuAgesOutAndIsNeverRaisedWhileItLasts) {
    report(frag_needed(our_outer_packet(), 1400));
    report(frag_needed(our_outer_packet(), 1450));  // higher: the narrower hop is still there
    EXPECT_EQ(pipeline_.peer_path_mtu()->mtu(kNode2Ip, time_.now), 1400u);
    EXPECT_EQ(pipeline_.counters().underlay_pmtu_ignored, 1u);
    report(frag_needed(our_outer_packet(), 1300));  // lower: a narrower hop still
    EXPECT_EQ(pipeline_.peer_path_mtu()->mtu(kNode2Ip, time_.now), 1300u);
    EXPECT_EQ(pipeline_.counters().underlay_pmtu_learned, 2u);

    time_.now += dataplane::kPeerMtuLifetimeNs - 1;
    ASSERT_EQ(run(kBlue10Port, blue_to_node2(1251)).verdict, Verdict::reply);
    EXPECT_EQ(answered_mtu(), 1250);
    time_.now += 1;
    EXPECT_EQ(run(kBlue10Port, blue_to_node2(1450)).verdict, Verdict::forward);
    EXPECT_EQ(pipeline_.peer_path_mtu()->expire(time_.now), 1u);
    EXPECT_TRUE(pipeline_.peer_path_mtu()->empty());
    // Once expired, a higher report is believed again.
    report(frag_needed(our_outer_packet(), 1450));
    EXPECT_EQ(pipeline_.peer_path_mtu()->mtu(kNode2Ip, time_.now), 1450u);
}

// Translated inbound traffic for orange's 192.168.50.20 on node2 (NAT at node1): the NAT stage
// asks frag_needed_for_nat, which sizes by the learned path MTU too.
TEST_F(UnderlayPmtuTest, TranslatedInboundTrafficIsSizedByTheLearnedMtu) {
    Ipv4Spec s;
    s.src_mac = kNode1Mac;
    s.dst_mac = kGatewayMac;
    s.src = ipv4("8.8.8.8");
    s.dst = ipv4("192.168.50.20");
    s.payload = 1400 - 28;
    s.dont_fragment = true;
    const Bytes inbound = ipv4_frame(s);
    Bytes error(600);
    EXPECT_EQ(pipeline_.frag_needed_for_nat(400, inbound, *fabric_, error), 0u);  // fits 1450
    report(frag_needed(our_outer_packet(), 1400));
    const std::size_t length = pipeline_.frag_needed_for_nat(400, inbound, *fabric_, error);
    ASSERT_GT(length, 0u);
    const auto ip = wire::Ipv4View::parse(wire::ByteSpan(error.data(), length).subspan(14));
    ASSERT_TRUE(ip);
    EXPECT_EQ(ip->destination(), ipv4("8.8.8.8"));
    EXPECT_EQ(wire::Icmpv4View::parse(ip->payload())->next_hop_mtu(), 1350);
}

TEST_F(UnderlayPmtuTest, WorkersShareWhatOneOfThemLearned) {
    auto c = config();
    c.peer_path_mtu = pipeline_.peer_path_mtu();
    dataplane::Pipeline other(c);
    report(frag_needed(our_outer_packet(), 1400));
    SinkStorage out;
    EXPECT_EQ(other.process(kBlue10Port, blue_to_node2(1351), *fabric_, out.fresh()).verdict, Verdict::reply);
    EXPECT_EQ(other.process(kBlue10Port, blue_to_node2(1350), *fabric_, out.fresh()).verdict, Verdict::forward);
}

TEST_F(UnderlayPmtuTest, ReportsNotAboutOurPacketToAKnownPeerAreCountedAndIgnored) {
    const Bytes ours = our_outer_packet();
    auto with = [&](auto edit) {
        Bytes packet = ours;
        edit(packet.data() + 14);
        return packet;
    };
    const auto set_address = [](std::size_t at, wire::Ipv4Address a) {
        return [at, a](std::uint8_t* ip) { wire::store_be32(ip + at, a.value()); };
    };
    const std::vector<std::pair<std::string, Bytes>> refused = {
        {"someone else's packet (quoted source)", frag_needed(with(set_address(12, ipv4("192.168.1.77"))), 1400)},
        {"to an unknown peer", frag_needed(with(set_address(16, ipv4("192.168.1.99"))), 1400)},
        {"to this node itself", frag_needed(with(set_address(16, kNode1Ip)), 1400)},
        {"not to the overlay port", frag_needed(with([](std::uint8_t* ip) { wire::store_be16(ip + 22, 53); }), 1400)},
        {"not UDP", frag_needed(with([](std::uint8_t* ip) { ip[9] = wire::ip_protocol::kTcp; }), 1400)},
        {"MTU below 576", frag_needed(ours, 575)},
        {"MTU 0 (a pre-RFC 1191 router)", frag_needed(ours, 0)},
        {"MTU the configured underlay_mtu", frag_needed(ours, 1500)},
        {"MTU above it", frag_needed(ours, 9000)},
        {"quote without the UDP header", frag_needed(ours, 1400, 27)},
        {"quote of the IPv4 header only", frag_needed(ours, 1400, 20)},
        {"bad ICMP checksum",
         [&] {
             Bytes b = frag_needed(ours, 1400);
             b[14 + 20 + 2] ^= 0xff;
             return b;
         }()},
    };
    std::uint64_t ignored = 0;
    for (const auto& [what, icmp] : refused) {
        SCOPED_TRACE(what);
        report(icmp);
        EXPECT_EQ(pipeline_.counters().underlay_pmtu_ignored, ++ignored);
        EXPECT_EQ(pipeline_.counters().underlay_pmtu_learned, 0u);
        EXPECT_TRUE(pipeline_.peer_path_mtu()->empty());
    }
    EXPECT_EQ(run(kBlue10Port, blue_to_node2(1450)).verdict, Verdict::forward);
    // Other ICMP on the underlay is the host's: the prefilter should have passed it.
    const auto echo = run(kUnderlayPort, frag_needed(ours, 1400, 28, kRouterIp, 8, 0));
    EXPECT_EQ(echo.drop_reason, DropReason::underlay_not_overlay);
    const auto port_unreachable = run(kUnderlayPort, frag_needed(ours, 1400, 28, kRouterIp, 3, 3));
    EXPECT_EQ(port_unreachable.drop_reason, DropReason::underlay_not_overlay);
    EXPECT_EQ(pipeline_.counters().underlay_pmtu_ignored, ignored);
}

TEST(PeerPathMtuTest, FullTableRefusesNewPeersAndExpiryFreesSlots) {
    dataplane::PeerPathMtu table;
    for (std::uint32_t i = 1; i <= dataplane::PeerPathMtu::kCapacity; ++i)
        ASSERT_TRUE(table.learn(wire::Ipv4Address(0x0a000000 + i), 1400, 0));
    EXPECT_FALSE(table.learn(wire::Ipv4Address(0x0b000000), 1400, 0));
    EXPECT_EQ(table.entries(0).size(), dataplane::PeerPathMtu::kCapacity);
    EXPECT_EQ(table.expire(dataplane::kPeerMtuLifetimeNs), dataplane::PeerPathMtu::kCapacity);
    EXPECT_TRUE(table.empty());
    EXPECT_TRUE(table.learn(wire::Ipv4Address(0x0b000000), 1300, 5));
    EXPECT_EQ(table.mtu(wire::Ipv4Address(0x0b000000), 5), 1300u);
    EXPECT_EQ(table.mtu(wire::Ipv4Address(0x0a000001), 5), 0u);
}

// The fuzz seeds scapy made (tests/fuzz/corpus/underlay_pmtu/make_seeds.py, an independent
// encoder) read as an IPv6 underlay's Packet Too Big to node1 (fd00:1::1) about its outer packets
// to node2 (fd00:1::2), and the near misses as what they are.
TEST(OuterPacketTooBigTest, ScapysPacketTooBigSeedsReadAsTheyWereMade) {
    const auto seed = [](const std::string& name) {
        std::ifstream in(std::string(ANDROMEDA_SOURCE_DIR) + "/tests/fuzz/corpus/underlay_pmtu/" + name, std::ios::binary);
        const Bytes bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        EXPECT_GT(bytes.size(), 1u) << name;
        return bytes.size() > 1 ? Bytes(bytes.begin() + 1, bytes.end()) : Bytes{};  // byte 0 is the target's selector
    };
    const wire::Ipv6Address node1 = ipv6("fd00:1::1");
    const struct {
        const char* name;
        OuterFragNeeded kind;
        std::uint32_t mtu;
    } cases[] = {
        {"ptb6_ours_1400", OuterFragNeeded::ours, 1400},
        {"ptb6_ours_tagged", OuterFragNeeded::ours, 1400},
        {"ptb6_mtu_1279", OuterFragNeeded::ours, 1279},  // read; not believed (plausible_path_mtu)
        {"ptb6_quote_48", OuterFragNeeded::ours, 1400},
        {"ptb6_quote_47", OuterFragNeeded::truncated, 0},
        {"ptb6_not_overlay_port", OuterFragNeeded::not_our_packet, 0},
        {"ptb6_someone_elses_packet", OuterFragNeeded::not_our_packet, 0},
        {"ptb6_dest_unreach", OuterFragNeeded::not_frag_needed, 0},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        const auto r = dataplane::parse_outer_packet_too_big(seed(c.name), node1, 43481);
        EXPECT_EQ(r.kind, c.kind) << to_string(r.kind);
        EXPECT_EQ(r.mtu, c.mtu);
        if (r.kind == OuterFragNeeded::ours) {
            EXPECT_EQ(r.peer, ipv6("fd00:1::2"));
        }
        // Not to this node: the host's.
        EXPECT_EQ(dataplane::parse_outer_packet_too_big(seed(c.name), ipv6("fd00:1::3"), 43481).kind,
                  OuterFragNeeded::not_frag_needed);
    }
    EXPECT_FALSE(dataplane::plausible_path_mtu(1279, 1500, true));
    EXPECT_TRUE(dataplane::plausible_path_mtu(1280, 1500, true));
    EXPECT_TRUE(dataplane::plausible_path_mtu(1279, 1500, false));
}

// Either family in one table (an IPv6 underlay's peers are IPv6 addresses): IPv4 10.0.0.1 and IPv6
// ::10.0.0.1 (the same low word) are different peers; an IPv6 MTU is lowered and refreshed, never
// raised while it lasts, and ages out as IPv4's does.
TEST(PeerPathMtuTest, KeysEitherFamilyAndTellsTheFamiliesApart) {
    dataplane::PeerPathMtu table;
    const wire::Ipv6Address node2 = ipv6("fd00:1::2");
    const wire::Ipv6Address compatible = ipv6("::10.0.0.1");
    EXPECT_FALSE(table.learn(ipv6("::"), 1400, 0)) << "the unspecified address is nobody";
    EXPECT_TRUE(table.learn(ipv4("10.0.0.1"), 1400, 0));
    EXPECT_EQ(table.mtu(compatible, 1), 0u);
    EXPECT_TRUE(table.learn(compatible, 1300, 0));
    EXPECT_TRUE(table.learn(node2, 1420, 0));
    EXPECT_EQ(table.mtu(ipv4("10.0.0.1"), 1), 1400u);
    EXPECT_EQ(table.mtu(compatible, 1), 1300u);
    EXPECT_EQ(table.mtu(node2, 1), 1420u);
    EXPECT_FALSE(table.learn(node2, 1450, 1)) << "never raised while it lasts";
    EXPECT_TRUE(table.learn(node2, 1380, 2));
    EXPECT_EQ(table.mtu(node2, 3), 1380u);
    const auto entries = table.entries(3);
    ASSERT_EQ(entries.size(), 3u);
    EXPECT_EQ(entries[2].peer, wire::IpAddress(node2));
    EXPECT_EQ(entries[2].expires_ns, 2 + dataplane::kPeerMtuLifetimeNs);
    EXPECT_EQ(table.expire(dataplane::kPeerMtuLifetimeNs + 1), 2u) << "the two learned at 0";
    EXPECT_EQ(table.mtu(node2, dataplane::kPeerMtuLifetimeNs + 1), 1380u);
    EXPECT_EQ(table.mtu(compatible, dataplane::kPeerMtuLifetimeNs + 1), 0u);
    // A freed slot takes a peer of the other family.
    EXPECT_TRUE(table.learn(ipv4("10.0.0.2"), 1350, dataplane::kPeerMtuLifetimeNs + 1));
    EXPECT_EQ(table.entries(dataplane::kPeerMtuLifetimeNs + 1).size(), 2u);
}

// Workers read while the daemon's worker learns and expires (the slots rewritten under them): a
// reader gets 0 or an MTU that was learned for the very peer it asked about, never a mix of two
// slots' values. The writer starts once both readers run, and goes on until they have seen
// entries a thousand times (or two million rounds). (Under ThreadSanitizer in scripts/test.sh.)
TEST(PeerPathMtuTest, ReadersNeverSeeAnotherPeersMtuWhileSlotsAreRewritten) {
    dataplane::PeerPathMtu table;
    const wire::IpAddress a = ipv6("fd00:1::a");
    const wire::IpAddress b = ipv6("fd00:1::b");
    std::atomic<bool> stop{false};
    std::atomic<int> running{0};
    std::atomic<std::uint64_t> wrong{0};
    std::atomic<std::uint64_t> seen{0};
    std::vector<std::thread> readers;
    for (int r = 0; r < 2; ++r)
        readers.emplace_back([&] {
            ++running;
            while (!stop.load(std::memory_order_relaxed)) {
                const std::uint32_t ma = table.mtu(a, 0);
                const std::uint32_t mb = table.mtu(b, 0);
                if ((ma != 0 && (ma < 1300 || ma >= 1350)) || (mb != 0 && (mb < 1400 || mb >= 1450))) ++wrong;
                if (ma != 0 || mb != 0) ++seen;
            }
        });
    while (running.load() < 2) std::this_thread::yield();
    int rounds = 0;
    for (; rounds < 20000 || (seen.load() < 1000 && rounds < 2'000'000); ++rounds) {
        // a's MTUs are 1300-1349 and b's 1400-1449; each expires and is learned again, so the
        // two take each other's slot in turn.
        table.learn(rounds % 2 ? a : b, static_cast<std::uint32_t>((rounds % 2 ? 1300 : 1400) + rounds % 50), 1);
        if (rounds % 3 == 0) table.expire(dataplane::kPeerMtuLifetimeNs + 2);
    }
    stop = true;
    for (auto& t : readers) t.join();
    EXPECT_EQ(wrong.load(), 0u);
    EXPECT_GE(seen.load(), 1000u) << "the readers saw entries at all (" << rounds << " rounds)";
}


// Random bytes, and every truncation and single-byte corruption of a real report: the parser never
// reads outside the frame (ASan), and never calls a report "ours" with less than a full quote.
TEST_F(UnderlayPmtuTest, RandomAndTruncatedReportsNeverCrashOrLearnFromAPartialQuote) {
    const Bytes valid = frag_needed(our_outer_packet(), 1400, 100);
    for (std::size_t n = 0; n <= valid.size(); ++n) {
        const Bytes cut(valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(n));
        const auto r = dataplane::parse_outer_frag_needed(cut, kNode1Ip, 43481);
        if (r.kind == OuterFragNeeded::ours) {
            EXPECT_GE(n, 14u + 20 + 8 + 28) << n;
        }
        run(kUnderlayPort, cut);
    }
    std::mt19937 rng(32);
    for (int i = 0; i < 20000; ++i) {
        Bytes b = valid;
        b[rng() % b.size()] = static_cast<std::uint8_t>(rng());
        b.resize(rng() % (b.size() + 1));
        (void)dataplane::parse_outer_frag_needed(b, kNode1Ip, 43481);
        Bytes noise(rng() % 200);
        for (auto& x : noise) x = static_cast<std::uint8_t>(rng());
        (void)dataplane::parse_outer_frag_needed(noise, kNode1Ip, 43481);
        run(kUnderlayPort, b);
    }
    // Nothing but the valid one's MTU (or a corrupted one, if it still checksummed and made sense)
    // was learned, and every learned MTU is plausible.
    for (const auto& e : pipeline_.peer_path_mtu()->entries(time_.now)) {
        EXPECT_EQ(e.peer, kNode2Ip);
        EXPECT_TRUE(dataplane::plausible_path_mtu(e.mtu, 1500)) << e.mtu;
    }
}

}  // namespace
}  // namespace andromeda::testing
