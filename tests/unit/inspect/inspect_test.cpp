// The frame decoder (userspace/inspect): the example decodes layer by layer, every layer and
// field knows its bytes, bad checksums, VXLAN, truncation and unknown versions are named, and no
// input crashes it.
#include "inspect/inspect.hpp"
#include "support/sanitizer_scale.hpp"

#include <gtest/gtest.h>

#include <random>

namespace andromeda::inspect {
namespace {

TEST(Inspect, ExamplePacketDecodesLayerByLayer) {
    const auto text = render_text(inspect_frame(example_overlay_packet()));
    EXPECT_EQ(text,
              "Ethernet  02:00:00:00:a1:01 -> 02:00:00:00:a1:02  ethertype 0x0800 (IPv4)\n"
              "  IPv4  192.168.1.1 -> 192.168.1.2  proto 17 (UDP)  ttl 64  len 90  DF  cksum ok\n"
              "    UDP  57553 -> 43481  len 70\n"
              "      Andromeda  v1  VNI 100  flow 0x60d1  hop 64\n"
              "      -- inner frame --\n"
              "        Ethernet  02:00:00:00:00:0a -> 02:00:00:00:00:0b  ethertype 0x0800 (IPv4)\n"
              "          IPv4  10.0.0.10 -> 10.0.0.20  proto 17 (UDP)  ttl 64  len 40  DF  cksum ok\n"
              "            UDP  40000 -> 4242  len 20  cksum ok\n"
              "              payload 12 bytes\n");
}

// Each layer knows its bytes and its fields' bytes: the outer headers of the example at their
// RFC offsets, the inner frame where the overlay header ends.
TEST(Inspect, LayersAndFieldsKnowTheirBytes) {
    const auto frame = inspect_frame(example_overlay_packet());
    ASSERT_EQ(frame.layers.size(), 9u);
    const auto where = [&](std::size_t i) { return std::pair{frame.layers[i].offset, frame.layers[i].length}; };
    EXPECT_EQ(where(0), (std::pair<std::size_t, std::size_t>{0, 14}));   // outer Ethernet
    EXPECT_EQ(where(1), (std::pair<std::size_t, std::size_t>{14, 20}));  // outer IPv4
    EXPECT_EQ(where(2), (std::pair<std::size_t, std::size_t>{34, 8}));   // outer UDP
    EXPECT_EQ(where(3), (std::pair<std::size_t, std::size_t>{42, 8}));   // Andromeda
    EXPECT_EQ(where(4), (std::pair<std::size_t, std::size_t>{50, 54}));  // the inner frame, whole
    EXPECT_EQ(where(8), (std::pair<std::size_t, std::size_t>{92, 12}));  // its payload
    const auto span = [&](std::size_t i, std::string_view name) {
        for (const auto& s : frame.layers[i].spans)
            if (s.name == name) return std::pair{s.offset, s.length};
        return std::pair<std::size_t, std::size_t>{0, 0};
    };
    EXPECT_EQ(span(1, "ttl"), (std::pair<std::size_t, std::size_t>{22, 1}));
    EXPECT_EQ(span(1, "dst"), (std::pair<std::size_t, std::size_t>{30, 4}));
    EXPECT_EQ(span(2, "src_port"), (std::pair<std::size_t, std::size_t>{34, 2}));
    EXPECT_EQ(span(3, "flow_hash"), (std::pair<std::size_t, std::size_t>{44, 2}));
    EXPECT_EQ(span(5, "src"), (std::pair<std::size_t, std::size_t>{56, 6}));  // inner Ethernet source
    // A frame cut inside a header: the spans stop where the bytes do.
    auto cut = example_overlay_packet();
    cut.resize(30);
    for (const auto& layer : inspect_frame(cut).layers)
        for (const auto& s : layer.spans) EXPECT_LE(s.offset + s.length, 30u) << s.name;
}

TEST(Inspect, JsonCarriesTheSameLayers) {
    const auto frame = inspect_frame(example_overlay_packet());
    const auto j = render_json(frame);
    ASSERT_EQ(j["layers"].size(), frame.layers.size());
    EXPECT_EQ(j["layers"][3]["layer"], "andromeda");
    EXPECT_EQ(j["layers"][3]["vni"], 100);
    EXPECT_EQ(j["layers"][3]["flow_hash"], 0x60d1);
    EXPECT_EQ(j["layers"][1]["checksum_ok"], true);
    EXPECT_EQ(j["layers"][6]["src"], "10.0.0.10");
    EXPECT_EQ(j["layers"][6]["depth"], 5);
    EXPECT_FALSE(j.contains("error"));
}

TEST(Inspect, BadChecksumIsReported) {
    auto bytes = example_overlay_packet();
    bytes[14 + 10] ^= 0xff;  // outer IPv4 checksum
    const auto text = render_text(inspect_frame(bytes));
    EXPECT_NE(text.find("len 90  DF  cksum BAD"), std::string::npos) << text;
}

TEST(Inspect, VxlanIsDecodedOnItsPort) {
    auto bytes = example_overlay_packet();
    // Turn the Andromeda header into a VXLAN one on port 4789.
    bytes[36] = 0x12;
    bytes[37] = 0xb5;
    bytes[42] = 0x08;
    bytes[43] = bytes[44] = bytes[45] = 0;
    const auto text = render_text(inspect_frame(bytes));
    EXPECT_NE(text.find("VXLAN  flags 0x08  VNI 100\n      -- inner frame --"), std::string::npos) << text;
}

TEST(Inspect, TruncatedFrameNamesLayerAndOffset) {
    auto bytes = example_overlay_packet();
    bytes.resize(14 + 10);
    const auto frame = inspect_frame(bytes);
    ASSERT_TRUE(frame.error);
    EXPECT_EQ(*frame.error, "IPv4 at offset 14: truncated (10 bytes left)");
    ASSERT_EQ(frame.layers.size(), 1u);
}

TEST(Inspect, UnknownOverlayVersionIsAnError) {
    auto bytes = example_overlay_packet();
    bytes[42] = 0x20;
    const auto frame = inspect_frame(bytes);
    ASSERT_TRUE(frame.error);
    EXPECT_EQ(*frame.error, "Andromeda header at offset 42: version 2 (expected 1)");
}

TEST(Inspect, HexParsing) {
    std::string why;
    EXPECT_EQ(parse_hex("0x0a:0B-0c 0d", why), (std::vector<std::uint8_t>{0x0a, 0x0b, 0x0c, 0x0d}));
    EXPECT_FALSE(parse_hex("abc", why));
    EXPECT_EQ(why, "odd number of hex digits: every byte needs two");
    EXPECT_FALSE(parse_hex("zz", why));
    EXPECT_EQ(why, "not a hex digit: 'z' at position 0");
    EXPECT_FALSE(parse_hex("", why));
}

TEST(Inspect, RandomBytesAndTruncationsNeverCrash) {
    std::mt19937 rng(2);
    const auto example = example_overlay_packet();
    for (int i = 0; i < andromeda::test::sanitizer_scaled(20000); ++i) {
        std::vector<std::uint8_t> bytes;
        if (i % 2 == 0) {
            bytes.resize(rng() % 200);
            for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
        } else {
            bytes.assign(example.begin(), example.begin() + static_cast<long>(rng() % (example.size() + 1)));
            if (!bytes.empty()) bytes[rng() % bytes.size()] ^= static_cast<std::uint8_t>(rng());
        }
        const auto frame = inspect_frame(bytes);
        (void)render_text(frame);
        (void)render_json(frame).dump();
    }
}

}  // namespace
}  // namespace andromeda::inspect
