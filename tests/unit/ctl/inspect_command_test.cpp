// `andromedactl inspect` around the decoder: --print-hex, exit codes and one-line errors, and the
// reference implementation's captures read with libpcap.
#include "ctl/inspect_command.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace andromeda::ctl {
namespace {

using inspect::example_overlay_packet;
using inspect::inspect_frame;
using inspect::parse_hex;
using inspect::render_text;
using inspect::to_hex;

const std::string kUnderlayPcap = std::string(ANDROMEDA_TESTDATA_DIR) + "/light-andromeda/underlay.pcap";
const std::string kTenantPcap = std::string(ANDROMEDA_TESTDATA_DIR) + "/light-andromeda/tenant1.pcap";

TEST(InspectCommand, PrintHexShowsTheBytesBeforeTheirDecode) {
    std::ostringstream out, err;
    InspectRequest r;
    r.print_hex = true;
    ASSERT_EQ(run_inspect(r, out, err), 0) << err.str();
    const std::string hex = to_hex(example_overlay_packet());
    EXPECT_EQ(out.str(), "hex " + hex + "\n" + render_text(inspect_frame(example_overlay_packet())));
    std::string why;
    EXPECT_EQ(parse_hex(hex, why), example_overlay_packet());
}

TEST(InspectCommand, ExitCodesAndOneLineErrors) {
    std::ostringstream out, err;
    InspectRequest r;
    r.hex = "0102";
    EXPECT_EQ(run_inspect(r, out, err), 1);
    EXPECT_EQ(err.str(), "andromedactl inspect: Ethernet at offset 0: truncated (2 bytes left)\n");
    err.str("");
    r.hex = "123";
    EXPECT_EQ(run_inspect(r, out, err), 2);
    err.str("");
    r.hex.reset();
    r.pcap = "/nonexistent/file.pcap";
    EXPECT_EQ(run_inspect(r, out, err), 2);
    EXPECT_NE(err.str().find("cannot read pcap '/nonexistent/file.pcap'"), std::string::npos);
}

// The reference implementation's capture: every frame decodes, every checksum verifies, and
// the conversations are the ones its README describes.
TEST(InspectCommand, ReferenceUnderlayCaptureDecodesCleanly) {
    std::ostringstream out, err;
    InspectRequest r;
    r.pcap = kUnderlayPcap;
    r.json = true;
    ASSERT_EQ(run_inspect(r, out, err), 0) << err.str();
    const auto frames = nlohmann::json::parse(out.str());
    ASSERT_GT(frames.size(), 10u);
    int echo = 0, tcp = 0, udp_7001 = 0;
    for (const auto& f : frames) {
        EXPECT_FALSE(f.contains("error")) << f.dump();
        for (const auto& l : f["layers"]) {
            if (l.contains("checksum_ok")) {
                EXPECT_TRUE(l["checksum_ok"].get<bool>()) << l.dump();
            }
            if (l["layer"] == "andromeda") {
                EXPECT_EQ(l["vni"], 100);
            }
            if (l["layer"] == "icmp") ++echo;
            if (l["layer"] == "tcp") ++tcp;
            if (l["layer"] == "udp" && l["depth"] == 6 && l["dst_port"] == 7001) ++udp_7001;
        }
    }
    EXPECT_EQ(echo, 6);  // 3 requests, 3 replies
    EXPECT_GE(tcp, 6);   // handshake, data, close
    EXPECT_EQ(udp_7001, 1);
}

TEST(InspectCommand, ReferenceTenantCaptureDecodesCleanly) {
    std::ostringstream out, err;
    InspectRequest r;
    r.pcap = kTenantPcap;
    // What the file holds (its README promises more): the tenant kernel's IPv6 neighbour
    // discovery and MLD noise, with a hop-by-hop extension header in the MLD reports.
    ASSERT_EQ(run_inspect(r, out, err), 0) << err.str();
    EXPECT_NE(out.str().find("ICMPv6  neighbor solicitation (type 135 code 0)  cksum ok"), std::string::npos);
    EXPECT_NE(out.str().find("next 58 (ICMPv6)  hop 1  len 36  ext 1"), std::string::npos);
    EXPECT_EQ(out.str().find("cksum BAD"), std::string::npos);
}

}  // namespace
}  // namespace andromeda::ctl
