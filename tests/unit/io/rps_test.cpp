// io/netlink/rps.hpp without root: the kernel's CPU list and mask formats, and steering against a
// sysfs tree of the test's own (the real one is checked end to end by
// TwoNodesFastPath.TenantPortsKeepEachFlowOnOneCpu, tests/integration/daemon_overlay_test.cpp).
#include "io/netlink/rps.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

namespace andromeda::io {
namespace {

TEST(RpsFormats, ParsesTheKernelsCpuLists) {
    EXPECT_EQ(parse_cpu_list("0-1\n"), CpuMask{0x3});
    EXPECT_EQ(parse_cpu_list("0"), CpuMask{0x1});
    EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), CpuMask{0xd0f});
    EXPECT_EQ(parse_cpu_list("31-32"), (CpuMask{0x80000000u, 0x1}));
    EXPECT_EQ(parse_cpu_list("64"), (CpuMask{0, 0, 0x1}));
    EXPECT_EQ(parse_cpu_list("\n"), CpuMask{});
    for (const char* bad :
         {"1-0", "0-", "-1", "0,", ",0", "0,,1", "a", "0-1x", "65536", "0-65536", "1 2", "0\n\n", "99999"})
        EXPECT_EQ(parse_cpu_list(bad), std::nullopt) << bad;
}

TEST(RpsFormats, ParsesAndWritesTheKernelsMasks) {
    EXPECT_EQ(parse_cpu_mask("3\n"), CpuMask{0x3});
    EXPECT_EQ(parse_cpu_mask("0\n"), CpuMask{});
    EXPECT_EQ(parse_cpu_mask("00000000,00000000\n"), CpuMask{});
    EXPECT_EQ(parse_cpu_mask("00000001,00000103"), (CpuMask{0x103, 0x1}));
    EXPECT_EQ(parse_cpu_mask("ff"), CpuMask{0xff});
    for (const char* bad : {"", "\n", "g", "1,", ",1", "123456789", "0x3", "3 ", "-1"})
        EXPECT_EQ(parse_cpu_mask(bad), std::nullopt) << bad;
    EXPECT_EQ(format_cpu_mask(CpuMask{}), "0");
    EXPECT_EQ(format_cpu_mask(CpuMask{0x3}), "3");
    EXPECT_EQ(format_cpu_mask(CpuMask{0x103, 0x1}), "1,00000103");
    EXPECT_EQ(format_cpu_mask(CpuMask{0x1, 0, 0}), "1");
    EXPECT_EQ(format_cpu_list(CpuMask{}), "");
    EXPECT_EQ(format_cpu_list(CpuMask{0x3}), "0-1");
    EXPECT_EQ(format_cpu_list(CpuMask{0xd0f}), "0-3,8,10-11");
    EXPECT_EQ(format_cpu_list(CpuMask{0x80000000u, 0x1}), "31-32");
}

// Property: whatever set, the mask written reads back as that set, and so does the list.
TEST(RpsFormats, EveryMaskReadsBackAsItWasWritten) {
    std::mt19937 random(20261207);
    for (int round = 0; round < 2000; ++round) {
        CpuMask mask(random() % 6);
        std::string list;
        for (std::size_t word = 0; word < mask.size(); ++word) {
            mask[word] = random() % 3 == 0 ? 0 : static_cast<std::uint32_t>(random());
            for (std::uint32_t bit = 0; bit < 32; ++bit)
                if (mask[word] & (1u << bit)) list += (list.empty() ? "" : ",") + std::to_string(word * 32 + bit);
        }
        while (!mask.empty() && mask.back() == 0) mask.pop_back();
        EXPECT_EQ(parse_cpu_mask(format_cpu_mask(mask)), mask) << format_cpu_mask(mask);
        EXPECT_EQ(parse_cpu_list(list + "\n"), mask) << list;
        EXPECT_EQ(parse_cpu_list(format_cpu_list(mask)), mask) << format_cpu_list(mask);
    }
}

// A sysfs of the test's own: one device with `queues` RX queues, each with the mask given.
class FakeSysfs : public ::testing::Test {
protected:
    static constexpr const char* kMac = "02:00:00:00:00:10";
    static RpsDevice port(const std::string& name, std::uint32_t ifindex, const std::string& mac = kMac) {
        return {name, ifindex, mac};
    }

    void SetUp() override {
        root_ = std::filesystem::temp_directory_path() / ("andromeda-rps-" + std::to_string(::getpid()));
        std::filesystem::remove_all(root_);
    }
    void TearDown() override { std::filesystem::remove_all(root_); }

    // The device's sysfs directory, with the MAC kMac.
    void device(const std::string& name, std::uint32_t ifindex, const std::vector<std::string>& masks) {
        const auto dir = root_ / "class/net" / name;
        std::filesystem::create_directories(dir / "queues");
        std::ofstream(dir / "ifindex") << ifindex << "\n";
        std::ofstream(dir / "address") << kMac << "\n";
        for (std::size_t i = 0; i < masks.size(); ++i) {
            std::filesystem::create_directories(dir / "queues" / ("rx-" + std::to_string(i)));
            std::filesystem::create_directories(dir / "queues" / ("tx-" + std::to_string(i)));
            std::ofstream(dir / "queues" / ("rx-" + std::to_string(i)) / "rps_cpus") << masks[i] << "\n";
        }
    }
    std::string mask_of(const std::string& name, int queue) const {
        std::ifstream in(root_ / "class/net" / name / "queues" / ("rx-" + std::to_string(queue)) / "rps_cpus");
        std::string text;
        std::getline(in, text);
        return text;
    }
    void online(const std::string& list) const {
        std::filesystem::create_directories(root_ / "devices/system/cpu");
        std::ofstream(root_ / "devices/system/cpu/online") << list << "\n";
    }

    std::filesystem::path root_;
};

TEST_F(FakeSysfs, SteersEmptyQueuesAndLeavesAnOperatorsMaskAlone) {
    device("tap-a", 7, {"0", "00000000", "1"});
    const RpsSteering rps(CpuMask{0x3}, root_);
    const RpsOutcome out = rps.steer(port("tap-a", 7));
    EXPECT_EQ(out.queues, 3u);
    EXPECT_EQ(out.set, 2u);
    EXPECT_EQ(out.kept, 1u);
    EXPECT_EQ(out.error, "");
    EXPECT_EQ(mask_of("tap-a", 0), "3");
    EXPECT_EQ(mask_of("tap-a", 1), "3");
    EXPECT_EQ(mask_of("tap-a", 2), "1");  // the operator's

    // Steering again (a restart after kill -9) finds its own masks and keeps them.
    EXPECT_EQ(rps.steer(port("tap-a", 7)).set, 0u);
    // Release empties what holds exactly its CPUs, and nothing else.
    EXPECT_EQ(rps.release(port("tap-a", 7)), 2u);
    EXPECT_EQ(mask_of("tap-a", 0), "0");
    EXPECT_EQ(mask_of("tap-a", 1), "0");
    EXPECT_EQ(mask_of("tap-a", 2), "1");
}

TEST_F(FakeSysfs, WritesNothingWhereSysfsShowsAnotherDevice) {
    device("tap-a", 7, {"0"});
    const RpsSteering rps(CpuMask{0x3}, root_);
    const RpsOutcome other = rps.steer(port("tap-a", 8));  // same name, another namespace's device
    EXPECT_EQ(other.set, 0u);
    EXPECT_NE(other.error.find("another network namespace"), std::string::npos) << other.error;
    EXPECT_EQ(mask_of("tap-a", 0), "0");
    // Same name and ifindex, another MAC: ifindex numbers repeat across namespaces.
    const RpsOutcome same_number = rps.steer(port("tap-a", 7, "02:00:00:00:00:99"));
    EXPECT_EQ(same_number.set, 0u);
    EXPECT_NE(same_number.error.find("another network namespace"), std::string::npos) << same_number.error;
    EXPECT_EQ(mask_of("tap-a", 0), "0");
    // Nor is what it set released through another device's eyes.
    EXPECT_EQ(rps.steer(port("tap-a", 7)).set, 1u);
    EXPECT_EQ(rps.release(port("tap-a", 7, "02:00:00:00:00:99")), 0u);
    EXPECT_EQ(mask_of("tap-a", 0), "3");
    const RpsOutcome missing = rps.steer(port("tap-b", 9));
    EXPECT_EQ(missing.set, 0u);
    EXPECT_NE(missing.error.find("class/net/tap-b"), std::string::npos) << missing.error;
    EXPECT_EQ(rps.release(port("tap-b", 9)), 0u);
}

TEST_F(FakeSysfs, SteeringOverNoCpusTouchesNothing) {
    device("tap-a", 7, {"0"});
    const RpsSteering off(CpuMask{}, root_);
    const RpsOutcome out = off.steer(port("tap-a", 7));
    EXPECT_EQ(out.queues, 0u);
    EXPECT_EQ(out.set, 0u);
    EXPECT_EQ(mask_of("tap-a", 0), "0");
}

TEST_F(FakeSysfs, OnlineCpusAreEveryOnlineCpuOrNoneWhenThereIsOne) {
    online("0-1");
    EXPECT_EQ(RpsSteering::online_cpus(root_), CpuMask{0x3});
    online("0,2-3");
    EXPECT_EQ(RpsSteering::online_cpus(root_), CpuMask{0xd});
    online("0");
    EXPECT_EQ(RpsSteering::online_cpus(root_), CpuMask{});
    online("garbage");
    EXPECT_EQ(RpsSteering::online_cpus(root_), CpuMask{});
    std::filesystem::remove_all(root_ / "devices");
    EXPECT_EQ(RpsSteering::online_cpus(root_), CpuMask{});
}

}  // namespace
}  // namespace andromeda::io
