// The playground's engine: what the page shows is what the pipeline and the decoder do. The
// README example built from form fields and run on node1 must come out as exactly the bytes
// `andromedactl inspect` decodes; every verdict of the sample fabric is reachable; every byte
// range the page lights up lies inside its frame and its layer; bad requests say what is wrong.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "inspect/inspect.hpp"
#include "playground/playground.hpp"
#include "unit/playground/requests.hpp"
#include "support/sanitizer_scale.hpp"

namespace andromeda::playground {
namespace {

using nlohmann::json;
using namespace testing_requests;

// Every layer and field range inside the frame, every field inside its layer.
void expect_spans_inside(const json& frame) {
    const std::size_t length = frame.at("length");
    ASSERT_EQ(frame.at("hex").get<std::string>().size(), 2 * length);
    for (const auto& layer : frame.at("layers")) {
        const std::size_t at = layer.at("offset"), n = layer.at("length");
        EXPECT_LE(at + n, length) << layer.dump();
        for (const auto& f : layer.at("fields")) {
            const std::size_t fa = f.at("offset"), fn = f.at("length");
            EXPECT_GT(fn, 0u) << f.dump();
            EXPECT_GE(fa, at) << layer.dump();
            EXPECT_LE(fa + fn, at + n) << layer.dump();
        }
    }
}

TEST(Playground, TheReadmeExampleBuiltFromTheFormIsExactlyWhatInspectDecodes) {
    const json r = run(example("readme"));
    EXPECT_EQ(r.at("verdict"), "forward");
    EXPECT_EQ(r.at("summary"), "encapsulated to node2 (192.168.1.2)");
    ASSERT_EQ(r.at("emissions").size(), 1u);
    const json& out = r.at("emissions")[0];
    EXPECT_EQ(out.at("port"), "underlay");
    const auto example = inspect::example_overlay_packet();
    EXPECT_EQ(out.at("frame").at("hex"), inspect::to_hex(example));
    EXPECT_EQ(out.at("frame").at("text"), inspect::render_text(inspect::inspect_frame(example)));
    EXPECT_EQ(r.at("flow").at("hash"), "0x60d1");
    EXPECT_EQ(r.at("flow").at("source_port"), 57553);
    EXPECT_TRUE(r.at("drop").is_null());
    expect_spans_inside(out.at("frame"));
    expect_spans_inside(r.at("input"));
    // The page colours by layer: outer Ethernet, IPv4, UDP, Andromeda, the inner frame and its
    // headers, each with the checksum verdict the decoder gives.
    std::vector<std::string> names;
    for (const auto& l : out.at("frame").at("layers")) names.push_back(l.at("layer"));
    EXPECT_EQ(names, (std::vector<std::string>{"ethernet", "ipv4", "udp", "andromeda", "inner_frame", "ethernet",
                                               "ipv4", "udp", "data"}));
    EXPECT_EQ(out.at("frame").at("layers")[1].at("checksum_ok"), true);
    // The Andromeda header's VNI field is bytes 46-48 of the packet: 14 + 20 + 8 + 4.
    const json& andromeda = out.at("frame").at("layers")[3];
    bool vni_found = false;
    for (const auto& f : andromeda.at("fields"))
        if (f.at("name") == "vni") {
            vni_found = true;
            EXPECT_EQ(f.at("offset"), 46);
            EXPECT_EQ(f.at("length"), 3);
            EXPECT_EQ(f.at("value"), 100);
        }
    EXPECT_TRUE(vni_found) << andromeda.dump(2);
}

// Each preset the engine offers for the sample reaches its verdict; so do delivery on the node
// and node2's view of the README example.
TEST(Playground, TheSampleFabricReachesEveryVerdict) {
    // A spoofed source: dropped by the pipeline, with its reason and description.
    json r = run(example("spoof"));
    EXPECT_EQ(r.at("verdict"), "drop");
    EXPECT_EQ(r.at("drop").at("layer"), "pipeline");
    EXPECT_EQ(r.at("drop").at("reason"), "spoofed_source_ip");
    EXPECT_NE(r.at("drop").at("description").get<std::string>(), "");
    EXPECT_TRUE(r.at("emissions").empty());

    // ARP for a remote endpoint: the gateway answers with its MAC.
    r = run(example("arp"));
    EXPECT_EQ(r.at("verdict"), "reply");
    ASSERT_EQ(r.at("emissions").size(), 1u);
    EXPECT_EQ(r.at("emissions")[0].at("port"), "tap-blue-10");
    EXPECT_NE(r.at("emissions")[0].at("frame").at("text").get<std::string>().find("10.0.0.20 is-at 02:00:00:00:00:ff"),
              std::string::npos)
        << r.dump(2);

    // A ping of the gateway: an echo reply.
    r = run(example("ping"));
    EXPECT_EQ(r.at("verdict"), "reply");
    EXPECT_NE(r.at("summary").get<std::string>().find("echo reply"), std::string::npos) << r.dump(2);

    // To another endpoint on the same node: delivered, no overlay.
    r = run(with(example("readme"), {{"dst_ip", "10.0.0.11"}}));
    EXPECT_EQ(r.at("verdict"), "deliver");
    EXPECT_EQ(r.at("summary"), "delivered to tap-blue-11 (10.0.0.11, VPC blue)");

    // To the Internet from the NAT VPC on its NAT node: translated and out of the uplink.
    const json nat = example("nat");
    EXPECT_EQ(nat.at("port"), "tap-orange-10");
    r = run(nat);
    EXPECT_EQ(r.at("verdict"), "nat");
    ASSERT_EQ(r.at("emissions").size(), 1u);
    EXPECT_EQ(r.at("emissions")[0].at("port"), "uplink");
    EXPECT_NE(r.at("emissions")[0].at("frame").at("text").get<std::string>().find("IPv4  203.0.113.10 -> 198.51.100.7"),
              std::string::npos)
        << r.dump(2);

    // node2's view: the README example arriving on the underlay is decapsulated and delivered.
    const json n2 = ok({{"op", "run"},
                        {"fabric", sample({{"node", "node2"}}).at("fabric")},
                        {"port", "underlay"},
                        {"hex", inspect::to_hex(inspect::example_overlay_packet())}});
    EXPECT_EQ(n2.at("verdict"), "deliver") << n2.dump(2);
    EXPECT_EQ(n2.at("summary"), "delivered to tap-blue-20 (10.0.0.20, VPC blue)");
}

TEST(Playground, VxlanAndTheVniFollowTheSampleSettings) {
    const json view = sample({{"encap", "vxlan"}, {"vni", 4242}});
    EXPECT_EQ(view.at("encap"), "vxlan");
    EXPECT_EQ(view.at("vni"), 4242);
    EXPECT_EQ(view.at("vni_vpc"), "blue");
    const json r = run(example("readme", view), view);
    ASSERT_EQ(r.at("verdict"), "forward") << r.dump(2);
    const std::string text = r.at("emissions")[0].at("frame").at("text");
    EXPECT_NE(text.find("UDP  " + std::to_string(r.at("flow").at("source_port").get<int>()) + " -> 4789"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("VXLAN  flags 0x08  VNI 4242"), std::string::npos) << text;
    // The other VPCs keep VNIs of their own whatever blue gets.
    for (const std::uint32_t vni : {200u, 400u}) {
        const json v = sample({{"vni", vni}});
        const json ports = describe(v.at("fabric")).at("ports");
        std::string port;
        for (const auto& p : ports)
            if (p.value("vpc", "") == "green") port = p.at("name");
        ASSERT_FALSE(port.empty()) << ports.dump();
        const json g = run_on(v, port, with(example("readme", v), {{"src_mac", "02:00:00:c8:00:0a"}}).at("packet"));
        EXPECT_EQ(g.value("verdict", ""), "forward") << g.dump(2);
    }
}

TEST(Playground, DecodeGivesInspectsLinesAndPcapFilesTheirFrames) {
    const auto example = inspect::example_overlay_packet();
    const json d = handle({{"op", "decode"}, {"hex", inspect::to_hex(example)}});
    ASSERT_TRUE(d.at("ok")) << d.dump(2);
    EXPECT_EQ(d.at("frames")[0].at("text"), inspect::render_text(inspect::inspect_frame(example)));

    // A pcap file of one frame, written here: its frame comes back decoded, numbered from 1.
    std::vector<std::uint8_t> file = {0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0};
    const auto le32 = [&](std::uint32_t v) {
        for (int i = 0; i < 4; ++i) file.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    };
    le32(0);
    le32(0);
    le32(static_cast<std::uint32_t>(example.size()));
    le32(static_cast<std::uint32_t>(example.size()));
    file.insert(file.end(), example.begin(), example.end());
    const json p = handle({{"op", "decode_pcap"}, {"hex", inspect::to_hex(file)}});
    ASSERT_TRUE(p.at("ok")) << p.dump(2);
    ASSERT_EQ(p.at("frames").size(), 1u);
    EXPECT_EQ(p.at("frames")[0].at("index"), 1);
    EXPECT_EQ(p.at("frames")[0].at("hex"), inspect::to_hex(example));
    const json bad = handle({{"op", "decode_pcap"}, {"hex", "00112233"}});
    EXPECT_FALSE(bad.at("ok"));
    EXPECT_NE(bad.at("error").get<std::string>().find("not a capture file"), std::string::npos);
}

TEST(Playground, BadRequestsSayWhatIsWrongAndWhere) {
    const auto error_of = [](const json& request) {
        const json r = handle(request);
        EXPECT_FALSE(r.at("ok")) << r.dump(2);
        return r.value("error", "");
    };
    const json readme = example("readme");
    const auto packet_with = [&](const json& changes) { return with(readme, changes).at("packet"); };
    EXPECT_EQ(handle_text("{not json"), R"({"error":"request: not JSON","ok":false})");
    EXPECT_NE(error_of({{"op", "fly"}}).find("'fly' is not one of sample, fabric, build, run"), std::string::npos);
    EXPECT_NE(error_of({{"op", "build"}, {"packet", packet_with({{"src_ip", "10.0.0.300"}})}})
                  .find("packet.src_ip: '10.0.0.300' is not an IPv4 address"),
              std::string::npos);
    EXPECT_NE(error_of({{"op", "build"}, {"packet", packet_with({{"ttl", 300}})}})
                  .find("packet.ttl: must be a whole number from 0 to 255"),
              std::string::npos);
    EXPECT_NE(error_of({{"op", "build"}, {"packet", packet_with({{"protocol", "sctp"}})}})
                  .find("'sctp' is not one of udp, tcp, icmp, arp"),
              std::string::npos);
    EXPECT_EQ(error_of({{"op", "sample"}, {"node", "node3"}}), "request.node: 'node3' is not one of node1, node2");
    EXPECT_EQ(error_of({{"op", "sample"}, {"encap", "geneve"}}), "request.encap: 'geneve' is not andromeda or vxlan");
    EXPECT_EQ(error_of({{"op", "fabric"}}), "request.fabric: missing");
    const std::string hex = build(readme.at("packet"));
    EXPECT_NE(error_of({{"op", "run"}, {"fabric", "[node]\nname = 1\n"}, {"port", "underlay"}, {"hex", hex}})
                  .find("the fabric does not load:\nnode.toml:"),
              std::string::npos);
    const std::string fabric = sample().at("fabric");
    EXPECT_NE(error_of({{"op", "run"}, {"fabric", fabric}, {"port", "tap-red-1"}, {"hex", hex}})
                  .find("'tap-red-1' is no port of node1 (its ports: underlay, uplink, tap-blue-10"),
              std::string::npos);
    EXPECT_NE(error_of({{"op", "run"}, {"fabric", fabric}, {"port", "underlay"}, {"hex", "abc"}})
                  .find("request.hex: odd number of hex digits"),
              std::string::npos);
    // A message quoting part of a multi-byte character still comes out as valid JSON.
    const std::string answer = handle_text(R"({"op":"decode","hex":"é"})");
    EXPECT_FALSE(json::parse(answer).at("ok"));
}

// Whatever arrives on whichever port, the answer is well formed and every range the page
// highlights lies inside its frame.
TEST(Playground, RandomFramesOnEveryPortGiveWellFormedAnswers) {
    std::mt19937 rng(11);
    const std::string fabric = sample().at("fabric");
    const json described = describe(fabric);
    std::vector<std::string> ports;
    for (const auto& p : described.at("ports")) ports.push_back(p.at("name"));
    ASSERT_GE(ports.size(), 4u);
    const auto base = inspect::example_overlay_packet();
    for (int round = 0; round < andromeda::test::sanitizer_scaled(400); ++round) {
        std::vector<std::uint8_t> frame = base;
        if (round % 2 == 0) frame.erase(frame.begin(), frame.begin() + 50);  // the inner frame alone
        for (int flips = rng() % 6; flips > 0; --flips) frame[rng() % frame.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        frame.resize(rng() % (frame.size() + 1));
        if (frame.empty()) frame.push_back(0);
        const json r = handle({{"op", "run"}, {"fabric", fabric}, {"port", ports[rng() % ports.size()]},
                               {"hex", inspect::to_hex(frame)}});
        ASSERT_TRUE(r.at("ok")) << r.dump(2);
        const std::string verdict = r.at("verdict");
        EXPECT_TRUE(verdict == "forward" || verdict == "deliver" || verdict == "reply" || verdict == "nat" ||
                    verdict == "drop")
            << verdict;
        EXPECT_EQ(verdict == "drop", !r.at("drop").is_null());
        expect_spans_inside(r.at("input"));
        for (const auto& e : r.at("emissions")) expect_spans_inside(e.at("frame"));
    }
}

}  // namespace
}  // namespace andromeda::playground
