// The harness's arithmetic over runs (e2e_common.hpp): medians with their range, and the paired
// ratios quoted for figures that drift between runs. No root, no network.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <vector>

#include "e2e_common.hpp"
#include "north_south.hpp"

namespace andromeda::e2e {
namespace {

json row(const std::string& impl, int run, double p50, int streams = 0) {
    json r = {{"impl", impl}, {"run", run}, {"p50_us", p50}};
    if (streams) r["streams"] = streams;
    return r;
}

// Three runs in which the machine's state moves every figure: the median of each side comes
// from a different run, and their ratio (90 / 40) says Andromeda takes twice the kernel's time,
// which no run shows; the paired ratio is the middle run's own, 0.9.
TEST(E2eAggregate, PairedRatioCancelsDriftBetweenRuns) {
    const std::vector<json> rows = {row("andromeda", 0, 30), row("kernel-vxlan", 0, 40),   //
                                    row("kernel-vxlan", 1, 100), row("andromeda", 1, 90),  //
                                    row("andromeda", 2, 95), row("kernel-vxlan", 2, 35)};
    const json medians = aggregate(rows, {"impl"}, {"p50_us"});
    ASSERT_EQ(medians.size(), 2U);
    EXPECT_DOUBLE_EQ(medians[0]["p50_us"].get<double>() / medians[1]["p50_us"].get<double>(), 90.0 / 40.0);
    EXPECT_FALSE(medians[0].contains("run")) << "the run number is not a figure to take the median of";

    const json paired = paired_ratio(rows, "andromeda", "kernel-vxlan", "p50_us");
    ASSERT_FALSE(paired.is_null());
    EXPECT_DOUBLE_EQ(paired["median"].get<double>(), 0.9);
    EXPECT_DOUBLE_EQ(paired["min"].get<double>(), 0.75);
    EXPECT_DOUBLE_EQ(paired["max"].get<double>(), 95.0 / 35.0);
    EXPECT_EQ(paired["runs"].get<int>(), 3);
}

TEST(E2eAggregate, PairedRatioMatchesOneFigureAndSkipsRunsWithoutTheBaseline) {
    const std::vector<json> rows = {row("andromeda", 0, 10, 1), row("andromeda", 0, 40, 4),    //
                                    row("kernel-vxlan", 0, 8, 1), row("kernel-vxlan", 0, 20, 4),  //
                                    row("andromeda", 1, 12, 1),  // its kernel run failed: no pair
                                    row("ceiling", 0, 50, 4)};
    const json one = paired_ratio(rows, "andromeda", "kernel-vxlan", "p50_us", {"streams", 1});
    ASSERT_FALSE(one.is_null());
    EXPECT_DOUBLE_EQ(one["median"].get<double>(), 10.0 / 8.0);
    EXPECT_EQ(one["runs"].get<int>(), 1);
    const json four = paired_ratio(rows, "andromeda", "kernel-vxlan", "p50_us", {"streams", 4});
    EXPECT_DOUBLE_EQ(four["median"].get<double>(), 2.0);
    EXPECT_TRUE(paired_ratio(rows, "andromeda-slow", "kernel-vxlan", "p50_us").is_null());
    EXPECT_TRUE(paired_ratio(rows, "andromeda", "kernel-vxlan", "gbps").is_null());
}

// North-south: the report pairs each Andromeda path with ns-kernel run by run, figure by figure,
// beside the ratios of medians it always gave.
TEST(E2eAggregate, NorthSouthReportPairsEachPathWithTheKernelRunByRun) {
    const auto tcp_row = [](const std::string& impl, int run, int streams, double gbps) {
        return json{{"impl", impl}, {"run", run}, {"streams", streams}, {"gbps", gbps}};
    };
    std::vector<json> tcp, ping;
    for (int run = 0; run < 3; ++run) {
        const double load = 1.0 + run;  // each run slower than the last, for every datapath alike
        tcp.push_back(tcp_row("ns-kernel", run, 1, 10 / load));
        tcp.push_back(tcp_row("ns-andromeda", run, 1, 12 / load));
        tcp.push_back(tcp_row("ns-kernel", run, 4, 20 / load));
        tcp.push_back(tcp_row("ns-andromeda", run, 4, 15 / load));
        ping.push_back({{"impl", "ns-kernel"}, {"run", run}, {"p50_us", 100 * load}, {"p99_us", 200 * load}});
        ping.push_back({{"impl", "ns-andromeda"}, {"run", run}, {"p50_us", 50 * load}, {"p99_us", 150 * load}});
    }
    ping.push_back({{"impl", "ns-andromeda"}, {"run", 3}, {"p50_us", 1.0}, {"p99_us", 1.0}});  // no kernel run 3
    const json report = north_south_report(tcp, ping, {}, {});
    const json& paired = report["paired_ratios_andromeda_over_kernel"];
    EXPECT_DOUBLE_EQ(paired["tcp_1"]["median"].get<double>(), 1.2) << paired.dump(2);
    EXPECT_DOUBLE_EQ(paired["tcp_4"]["median"].get<double>(), 0.75);
    EXPECT_DOUBLE_EQ(paired["ping_p50_us"]["median"].get<double>(), 0.5);
    EXPECT_DOUBLE_EQ(paired["ping_p99_us"]["median"].get<double>(), 0.75);
    EXPECT_EQ(paired["ping_p50_us"]["runs"].get<int>(), 3) << "a run without the kernel pairs with nothing";
    EXPECT_FALSE(paired.contains("udp_rr_p50_us")) << "no UDP measured, no ratio";
    EXPECT_TRUE(report["paired_ratios_slow_path_over_kernel"].empty());
    EXPECT_FALSE(report["tcp"][0].contains("run"));
}

}  // namespace
}  // namespace andromeda::e2e
