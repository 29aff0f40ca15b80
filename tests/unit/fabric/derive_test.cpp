// A snapshot derived from another (FabricSnapshot::derive) against a model of what it should
// hold, and the hash table operations that derivation rests on (util::FlatTable's erase and
// replace) against a reference map.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <unordered_map>

#include "fabric/fabric.hpp"
#include "support/fabric_builder.hpp"
#include "support/sanitizer_scale.hpp"
#include "util/flat_table.hpp"

namespace andromeda::fabric {
namespace {

MacAddress mac48(std::uint64_t v) {
    std::uint8_t b[6];
    for (int i = 0; i < 6; ++i) b[i] = static_cast<std::uint8_t>(v >> (40 - 8 * i));
    return MacAddress::from_bytes(b);
}

// Random inserts, erases and replaces in a small table whose runs wrap around its end, each
// followed by a lookup of every key: the table says what the reference says, and erasing leaves
// no key unreachable (backward-shift deletion moved the right entries).
TEST(FlatTable, EraseAndReplaceKeepEveryOtherEntryReachable) {
    using Table = util::FlatTable<std::uint32_t, std::uint32_t, util::Fibonacci32>;
    std::mt19937 rng(5);
    for (int round = 0; round < 20; ++round) {
        Table table(48);  // 128 slots: at most 64 entries
        std::unordered_map<std::uint32_t, std::uint32_t> reference;
        for (int op = 0; op < 3000; ++op) {
            const std::uint32_t key = rng() % 300;
            const auto it = reference.find(key);
            switch (rng() % 3) {
                case 0:
                    if (reference.size() < table.capacity() && it == reference.end()) {
                        const std::uint32_t value = rng() % 1000;
                        ASSERT_TRUE(table.insert(key, value));
                        reference[key] = value;
                    }
                    break;
                case 1:
                    if (it != reference.end()) {
                        EXPECT_FALSE(table.erase(key, it->second + 1)) << "another value under the key is not erased";
                        ASSERT_TRUE(table.erase(key, it->second));
                        reference.erase(it);
                    } else {
                        EXPECT_FALSE(table.erase(key, 0));
                    }
                    break;
                default:
                    if (it != reference.end()) {
                        ASSERT_TRUE(table.replace(key, it->second, it->second + 7));
                        it->second += 7;
                    } else {
                        EXPECT_FALSE(table.replace(key, 0, 1));
                    }
            }
            ASSERT_EQ(table.size(), reference.size());
            for (std::uint32_t k = 0; k < 300; ++k) {
                const auto want = reference.find(k);
                ASSERT_EQ(table.find(k), want == reference.end() ? Table::kMissing : want->second)
                    << "key " << k << " after op " << op << " of round " << round;
            }
        }
    }
}

// What a snapshot holds, read through every lookup, sorted: two snapshots that hold the same
// fabric give the same text whatever their positions.
std::string contents(const FabricSnapshot& s) {
    std::vector<std::string> lines;
    std::size_t position = 0;
    for (const Endpoint& e : s.endpoints()) {
        EXPECT_EQ(e.position, position++) << "positions are dense and in order";
        EXPECT_EQ(s.find_endpoint(e.vni, e.ip), &e) << e.ip.to_string();
        EXPECT_EQ(s.find_endpoint_by_mac(e.vpc_index, e.mac), &e) << e.mac.to_string();
        if (e.is_local) {
            EXPECT_EQ(s.find_local_endpoint(e.port), &e) << e.port;
            if (e.port_ifindex != 0) {
                EXPECT_EQ(s.find_local_endpoint_by_ifindex(e.port_ifindex), &e);
            }
        }
        lines.push_back(std::to_string(e.vni) + " " + e.ip.to_string() + " " + e.mac.to_string() + " " + e.node + " " +
                        s.nodes()[e.node_index].name + " " + s.vpcs()[e.vpc_index].name + " " + e.port + " " +
                        std::to_string(e.port_ifindex) + (e.is_local ? " local" : ""));
    }
    std::size_t locals = 0;
    for (const std::uint32_t p : s.local_positions()) {
        EXPECT_TRUE(s.endpoints()[p].is_local);
        ++locals;
    }
    EXPECT_EQ(locals, static_cast<std::size_t>(std::count_if(s.endpoints().begin(), s.endpoints().end(),
                                                              [](const Endpoint& e) { return e.is_local; })));
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (const auto& n : s.nodes()) out += "node " + n.name + " " + (n.address ? n.address->to_string() : "-") + "\n";
    for (const auto& l : lines) out += l + "\n";
    return out;
}

// Rounds of random patches (endpoints removed, replaced with a new MAC or node, added; now and
// then a local one, which the snapshot leaves to a full build) on a fabric of several chunks with
// local endpoints among the remote ones: each derived snapshot holds exactly the model's fabric,
// every lookup finds every endpoint where it now is, and the snapshot it was derived from still
// holds what it held (the chunks they share were copied before being written).
TEST(FabricSnapshotDerive, RandomPatchesGiveTheModelsFabricAndLeaveTheBaseAsItWas) {
    auto builder = test_support::two_node_blue("node1");
    builder.peer("node3", "192.168.1.3");
    std::mt19937 rng(17);
    std::map<std::pair<std::uint32_t, std::uint32_t>, Endpoint> model;  // (vni, ip)
    const auto mac_of = [](std::uint32_t n) { return mac48(0x020000100000ULL | n); };  // never the gateway MAC
    std::uint32_t next_mac = 1;
    const auto entry = [&](std::uint32_t host, int i) {
        const bool local = i % 97 == 5;
        const std::string node = local ? "node1" : (i % 2 ? "node2" : "node3");
        return "\n[[vpc.endpoint]]\nip = \"" + Ipv4Address(host).to_string() + "\"\nmac = \"" + mac_of(next_mac++).to_string() +
               "\"\nnode = \"" + node + "\"\n" + (local ? "port = \"tap" + std::to_string(i) + "\"\n" : "");
    };
    std::string text = builder.toml();  // blue, VNI 100, 10.0.0.0/24: 200 endpoints
    for (int i = 0; i < 200; ++i) text += entry(0x0a000002u + static_cast<std::uint32_t>(i), i);
    // green, VNI 200, 10.0.0.0/16 (overlapping blue's addresses): 1000 more
    text += "\n[[vpc]]\nname = \"green\"\nvni = 200\ncidr = \"10.0.0.0/16\"\ngateway = \"10.0.0.1\"\n";
    for (int i = 0; i < 1000; ++i) text += entry(0x0a000100u + static_cast<std::uint32_t>(i), 1000 + i);
    LoadOptions options;
    options.ports = fabric::resolve_port_names([](std::string_view port) -> std::optional<std::uint32_t> {
        return port.size() > 3 ? std::optional<std::uint32_t>(100 + std::stoul(std::string(port.substr(3)))) : std::nullopt;
    });
    const LoadResult loaded = load_fabric_string(text, "derive.toml", options);
    ASSERT_TRUE(loaded.ok()) << to_string(loaded.errors);
    std::shared_ptr<const FabricSnapshot> running = loaded.snapshot;
    ASSERT_GT(running->endpoints().size(), 3 * kEndpointChunk);
    for (const Endpoint& e : running->endpoints()) model[{e.vni, e.ip.value()}] = e;

    std::size_t fell_back = 0;
    for (int round = 0; round < andromeda::test::sanitizer_scaled(300); ++round) {
        const std::string before = contents(*running);
        std::vector<Node> nodes(running->nodes().begin(), running->nodes().end());
        if (round % 50 == 7) nodes.back().address = Ipv4Address(0xc0a80164u + static_cast<std::uint32_t>(round));  // a node moves
        EndpointPatch patch;
        std::set<std::uint32_t> touched;
        const std::size_t n = running->endpoints().size();
        bool has_local = false;
        for (int k = 1 + static_cast<int>(rng() % 40); k > 0; --k) {
            const auto p = static_cast<std::uint32_t>(rng() % n);
            if (!touched.insert(p).second) continue;
            const Endpoint& e = running->endpoints()[p];
            has_local |= e.is_local;
            if (rng() % 2) {
                patch.removed.push_back(p);
                model.erase({e.vni, e.ip.value()});
            } else {
                Endpoint changed = e;
                changed.mac = mac_of(next_mac++);
                if (!e.is_local) {
                    changed.node = rng() % 2 ? "node2" : "node3";
                    changed.node_index = static_cast<std::uint32_t>(
                        std::find_if(nodes.begin(), nodes.end(), [&](const Node& x) { return x.name == changed.node; }) -
                        nodes.begin());
                }
                model[{e.vni, e.ip.value()}] = changed;
                patch.replaced.emplace_back(p, std::move(changed));
            }
        }
        for (int k = static_cast<int>(rng() % 30); k > 0; --k) {
            const std::uint32_t vpc = rng() % 2;
            const std::uint32_t vni = vpc == 0 ? 100 : 200;
            const std::uint32_t host = (vpc == 0 ? 0x0a000002u + rng() % 250 : 0x0a000100u + rng() % 3000);
            if (model.count({vni, host})) continue;
            Endpoint e;
            e.vni = vni;
            e.ip = Ipv4Address(host);
            e.mac = mac_of(next_mac++);
            e.node = "node2";
            e.vpc_index = vpc;
            e.node_index = static_cast<std::uint32_t>(
                std::find_if(nodes.begin(), nodes.end(), [](const Node& x) { return x.name == "node2"; }) - nodes.begin());
            model[{vni, host}] = e;
            patch.added.push_back(e);
        }
        const auto derived = FabricSnapshot::derive(*running, nodes, patch, static_cast<std::uint64_t>(round + 1), options.ports);
        fell_back += has_local ? 1 : 0;
        EXPECT_EQ(contents(*running), before) << "round " << round << ": the base changed";
        ASSERT_EQ(derived->endpoints().size(), model.size()) << "round " << round;
        for (const auto& [key, want] : model) {
            const Endpoint* got = derived->find_endpoint(key.first, Ipv4Address(key.second));
            ASSERT_NE(got, nullptr) << "round " << round << ": " << Ipv4Address(key.second).to_string();
            EXPECT_EQ(got->mac, want.mac);
            EXPECT_EQ(got->node, want.node);
            EXPECT_EQ(derived->nodes()[got->node_index].name, want.node);
            EXPECT_EQ(got->is_local, want.is_local);
            if (want.is_local) {
                EXPECT_EQ(got->port_ifindex, 100 + std::stoul(want.port.substr(3)));
            }
        }
        EXPECT_EQ(derived->generation(), static_cast<std::uint64_t>(round + 1));
        // The same fabric, built in full from the model, reads the same through every lookup.
        FabricConfig config;
        config.local = derived->local();
        config.nodes = nodes;
        config.vpcs.assign(derived->vpcs().begin(), derived->vpcs().end());
        for (const auto& [key, e] : model) config.endpoints.push_back(e);
        const FabricSnapshot built(std::move(config), 0, options.ports);
        ASSERT_EQ(contents(*derived), contents(built)) << "round " << round;
        running = derived;
    }
    EXPECT_GT(fell_back, 5u) << "some patches named local endpoints and were built in full";
}

// A patch that outgrows the endpoint index is built in full, and holds all the same.
TEST(FabricSnapshotDerive, APatchBeyondTheIndexesCapacityIsBuiltInFull) {
    const LoadResult loaded =
        load_fabric_string(test_support::two_node_blue("node1").endpoint("10.0.0.20", "02:00:00:00:00:20", "node2").toml(), "t.toml");
    ASSERT_TRUE(loaded.ok());
    EndpointPatch patch;
    for (std::uint32_t i = 0; i < 100; ++i) {
        Endpoint e;
        e.vni = 100;
        e.ip = Ipv4Address(0x0a000064u + i);
        e.mac = mac48(0x020000000100ULL + i);
        e.node = "node2";
        e.vpc_index = 0;
        e.node_index = 1;
        patch.added.push_back(e);
    }
    const auto derived = FabricSnapshot::derive(*loaded.snapshot, {loaded.snapshot->nodes().begin(), loaded.snapshot->nodes().end()},
                                                patch, 2);
    EXPECT_EQ(derived->endpoints().size(), 101u);
    for (std::uint32_t i = 0; i < 100; ++i) EXPECT_NE(derived->find_endpoint(100, Ipv4Address(0x0a000064u + i)), nullptr);
}

// Chunks the patch does not touch are the base's own, not copies; the one it touches is a copy.
TEST(FabricSnapshotDerive, UntouchedChunksAreSharedWithTheBase) {
    auto builder = test_support::two_node_blue("node1");
    for (std::uint32_t i = 0; i < 2 * kEndpointChunk; ++i)
        builder.endpoint(Ipv4Address(0x0a000002u + i % 250).to_string(), mac48(0x020000000100ULL + i).to_string(), "node2");
    std::string text = builder.toml();
    text = text.replace(text.find("10.0.0.0/24"), 11, "10.0.0.0/16");
    // 512 endpoints need more than 250 addresses: the rest in 10.0.1.x.
    std::size_t at = 0;
    for (std::uint32_t i = 0; i < 2 * kEndpointChunk; ++i) {
        at = text.find("ip = \"", at) + 6;
        const std::string want = Ipv4Address(0x0a000002u + i).to_string();
        const std::size_t end = text.find('"', at);
        text.replace(at, end - at, want);
    }
    const LoadResult loaded = load_fabric_string(text, "t.toml");
    ASSERT_TRUE(loaded.ok()) << to_string(loaded.errors);
    const FabricSnapshot& base = *loaded.snapshot;
    ASSERT_EQ(base.endpoints().size(), 2 * kEndpointChunk);
    EndpointPatch patch;
    Endpoint changed = base.endpoints()[3];
    changed.mac = mac48(0x02000000ffffULL);
    patch.replaced.emplace_back(3, changed);
    const auto derived = FabricSnapshot::derive(base, {base.nodes().begin(), base.nodes().end()}, patch, 2);
    EXPECT_EQ(&derived->endpoints()[kEndpointChunk + 1], &base.endpoints()[kEndpointChunk + 1]) << "the second chunk is shared";
    EXPECT_NE(&derived->endpoints()[4], &base.endpoints()[4]) << "the first was copied";
    EXPECT_EQ(derived->endpoints()[4].mac, base.endpoints()[4].mac);
    EXPECT_EQ(derived->endpoints()[3].mac, changed.mac);
    EXPECT_NE(base.endpoints()[3].mac, changed.mac);
    EXPECT_EQ(derived->find_endpoint_by_mac(0, changed.mac), &derived->endpoints()[3]);
    EXPECT_EQ(derived->find_endpoint_by_mac(0, base.endpoints()[3].mac), nullptr);
}

}  // namespace
}  // namespace andromeda::fabric
