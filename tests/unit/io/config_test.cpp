// Parsing of the I/O settings and the UMEM configuration checks.
#include <gtest/gtest.h>

#include "andromeda_kern_user.h"
#include "io/plan/config.hpp"
#include "io/plan/io_error.hpp"

namespace andromeda::io {
namespace {

TEST(IoConfig, ParsesXdpModes) {
    EXPECT_EQ(parse_xdp_mode("auto"), XdpModePreference::best);
    EXPECT_EQ(parse_xdp_mode("native"), XdpModePreference::native_only);
    EXPECT_EQ(parse_xdp_mode("driver"), XdpModePreference::native_only);
    EXPECT_EQ(parse_xdp_mode("generic"), XdpModePreference::generic_only);
    EXPECT_EQ(parse_xdp_mode("skb"), XdpModePreference::generic_only);
    EXPECT_EQ(parse_xdp_mode("Native"), std::nullopt);
    EXPECT_EQ(parse_xdp_mode(""), std::nullopt);
    for (auto m : {XdpModePreference::best, XdpModePreference::native_only, XdpModePreference::generic_only})
        EXPECT_EQ(parse_xdp_mode(to_string(m)), m);
}

TEST(IoConfig, ParsesBindModes) {
    EXPECT_EQ(parse_bind_mode("auto"), BindPreference::best);
    EXPECT_EQ(parse_bind_mode("zerocopy"), BindPreference::zero_copy_only);
    EXPECT_EQ(parse_bind_mode("zero-copy"), BindPreference::zero_copy_only);
    EXPECT_EQ(parse_bind_mode("zc"), BindPreference::zero_copy_only);
    EXPECT_EQ(parse_bind_mode("copy"), BindPreference::copy_only);
    EXPECT_EQ(parse_bind_mode("fast"), std::nullopt);
    for (auto m : {BindPreference::best, BindPreference::zero_copy_only, BindPreference::copy_only})
        EXPECT_EQ(parse_bind_mode(to_string(m)), m);
    EXPECT_STREQ(to_string(BindMode::zero_copy), "zero-copy");
    EXPECT_STREQ(to_string(XdpMode::generic), "generic");
}

TEST(IoConfig, DefaultUmemIsValidAndLeavesRoomForEncapsulation) {
    const UmemConfig config;
    EXPECT_TRUE(config.problems().empty());
    EXPECT_NO_THROW(config.validate());
    EXPECT_GE(config.frame_headroom, ANDROMEDA_ENCAP_OVERHEAD);
    EXPECT_GE(config.max_frame_length(), 1514u + ANDROMEDA_ENCAP_OVERHEAD);
    EXPECT_LE(config.batch_size, 64u);
}

TEST(IoConfig, UmemProblemsNameEveryBadField) {
    UmemConfig config;
    config.frame_size = 3000;
    config.frame_headroom = 16;
    config.fill_size = 1000;
    config.tx_size = 32;
    config.batch_size = 65;
    config.frame_count = 10;
    const auto problems = config.problems();
    ASSERT_EQ(problems.size(), 6u);
    const std::string all = [&] {
        std::string s;
        for (const auto& p : problems) s += p + "\n";
        return s;
    }();
    for (const char* field : {"frame_size", "frame_headroom", "fill_size", "tx_size", "batch_size", "frame_count"})
        EXPECT_NE(all.find(field), std::string::npos) << field;
    try {
        config.validate();
        FAIL() << "validate() accepted a bad configuration";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("frame_headroom must be at least 50"), std::string::npos) << e.what();
        EXPECT_EQ(e.error_number(), EINVAL);
    }
}

TEST(IoConfig, StaggerSpreadsFramesAsFarAsTheChunkHasRoom) {
    UmemConfig config;  // 4096-byte chunks: 4096 - 320 - 1514 leaves room for 35 more steps
    EXPECT_EQ(config.stagger_slots(), 16u);
    EXPECT_EQ(config.stagger_of(0), 0u);
    EXPECT_EQ(config.stagger_of(1), 64u);
    EXPECT_EQ(config.stagger_of(15), 960u);
    EXPECT_EQ(config.stagger_of(16), 0u);
    EXPECT_EQ(config.max_frame_length(), 4096u - 320 - 960);
    // The kernel's chunk stops where the next stride starts, and the frame fits in it.
    EXPECT_EQ(config.registered_chunk_size(), 4096u - 960);
    EXPECT_EQ(config.stagger_of(15) + config.registered_chunk_size(), 4096u);
    EXPECT_EQ(config.registered_chunk_size() - 320, config.max_frame_length());
    config.max_stagger_slots = 4;
    EXPECT_EQ(config.stagger_slots(), 4u);
    EXPECT_EQ(config.stagger_of(5), 64u);
    EXPECT_EQ(config.registered_chunk_size(), 4096u - 192);
    config.frame_size = 2048;  // a staggered chunk would be under the kernel's 2048-byte minimum
    EXPECT_EQ(config.stagger_slots(), 1u);
    EXPECT_EQ(config.registered_chunk_size(), 2048u);
    EXPECT_EQ(config.max_frame_length(), 2048u - 320);
    config.frame_size = 4096;
    config.max_stagger_slots = 1;
    EXPECT_EQ(config.stagger_slots(), 1u);
    EXPECT_EQ(config.stagger_of(7), 0u);
    EXPECT_EQ(config.max_frame_length(), 4096u - 320);
    config.max_stagger_slots = 0;  // means no staggering too, not a division by zero
    EXPECT_EQ(config.stagger_slots(), 1u);
}

TEST(IoConfig, HeadroomMustLeaveRoomForAFullFrame) {
    UmemConfig config;
    config.frame_size = 2048;
    config.frame_headroom = 512;  // 2048 - 512 - 256 < 1514
    ASSERT_EQ(config.problems().size(), 1u);
    EXPECT_NE(config.problems()[0].find("no room for a 1514-byte frame"), std::string::npos);
}

TEST(IoConfig, PinDirectoryDefaultsUnderSysFsBpf) {
    EXPECT_EQ(default_pin_dir("node1"), "/sys/fs/bpf/andromeda/node1");
    for (const char* bad : {"", ".", "..", "a/b"}) EXPECT_THROW((void)default_pin_dir(bad), IoError) << bad;
}

TEST(IoConfig, InstanceConfigFromNodeSettings) {
    fabric::LocalNodeSettings local;
    local.name = "node7";
    local.encap = fabric::Encap::andromeda;
    auto config = instance_config_from(local);
    EXPECT_EQ(config.node_name, "node7");
    EXPECT_EQ(config.pin_dir, "/sys/fs/bpf/andromeda/node7");
    EXPECT_EQ(config.overlay_port, ANDROMEDA_OVERLAY_PORT);
    EXPECT_EQ(config.encap_kind, static_cast<std::uint32_t>(ANDROMEDA_ENCAP_ANDROMEDA));

    local.encap = fabric::Encap::vxlan;
    local.vxlan_port = 8472;
    local.pin_dir = "/sys/fs/bpf/custom";
    config = instance_config_from(local);
    EXPECT_EQ(config.overlay_port, 8472);
    EXPECT_EQ(config.encap_kind, static_cast<std::uint32_t>(ANDROMEDA_ENCAP_VXLAN));
    EXPECT_EQ(config.pin_dir, "/sys/fs/bpf/custom");
}

}  // namespace
}  // namespace andromeda::io
