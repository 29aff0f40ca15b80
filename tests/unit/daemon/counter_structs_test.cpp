// Every counter struct keeps util/counters.hpp's convention: all of it is uint64 words that
// util::add_counters sums, and its for_each names each word exactly once. A field added without
// a name, a name read from the wrong field, or a field that is not a uint64 fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "dataplane/counters.hpp"
#include "dataplane/nat_pipeline.hpp"
#include "io/bpf/xdp_stats.hpp"
#include "io/xsk/xsk_socket.hpp"
#include "io/xsk/xsk_worker.hpp"
#include "nat/counters.hpp"
#include "util/counters.hpp"
#include "worker/packet_worker.hpp"

namespace andromeda {
namespace {

// A struct whose word i holds `base` * (i + 1).
template <class T>
T numbered(std::uint64_t base) {
    std::vector<std::uint64_t> words(sizeof(T) / sizeof(std::uint64_t));
    for (std::size_t i = 0; i < words.size(); ++i) words[i] = base * (i + 1);
    T t;
    std::memcpy(static_cast<void*>(&t), words.data(), sizeof t);
    return t;
}

template <class T, class Named>
void expect_counter_struct(Named&& named_values) {
    const std::size_t words = sizeof(T) / sizeof(std::uint64_t);
    T sum{};
    util::add_counters(sum, numbered<T>(1));
    util::add_counters(sum, numbered<T>(2));  // word i: 3 (i + 1)
    std::vector<std::uint64_t> values;
    std::set<std::string> names;
    named_values(sum, [&](std::string name, std::uint64_t v) {
        EXPECT_TRUE(names.insert(name).second) << "named twice: " << name;
        values.push_back(v);
    });
    std::sort(values.begin(), values.end());
    std::vector<std::uint64_t> expected(words);
    for (std::size_t i = 0; i < words; ++i) expected[i] = 3 * (i + 1);
    EXPECT_EQ(values, expected) << "each word summed, and named exactly once";
}

template <class T>
void expect_counter_struct() {
    expect_counter_struct<T>([](const T& t, auto&& f) { t.for_each([&](auto name, std::uint64_t v) { f(std::string(name), v); }); });
}

TEST(CounterStructs, EveryWordIsSummedAndNamedOnce) {
    expect_counter_struct<dataplane::PipelineCounters>();
    expect_counter_struct<dataplane::NatStageCounters>();
    expect_counter_struct<nat::NatCounters>();
    expect_counter_struct<io::WorkerCounters>();
    expect_counter_struct<io::SocketStatistics>();
    expect_counter_struct<worker::GlueCounters>();
    expect_counter_struct<andromeda_xdp_stats>([](const andromeda_xdp_stats& s, auto&& f) {
        io::XdpStats(std::span(&s, 1)).for_each([&](std::string_view name, std::uint64_t v) { f(std::string(name), v); });
    });
    expect_counter_struct<andromeda_fp_stats>([](const andromeda_fp_stats& s, auto&& f) {
        io::FastPathStats(std::span(&s, 1)).for_each([&](std::string_view name, std::uint64_t v) { f(std::string(name), v); });
    });
}

TEST(CounterStructs, PerCpuTotalsSumEveryCpu) {
    std::vector<andromeda_fp_stats> per_cpu(4);
    for (std::size_t c = 0; c < per_cpu.size(); ++c) {
        per_cpu[c].punt_packets = c + 1;
        per_cpu[c].drop_spoofed_mac = 10;
    }
    const io::FastPathStats totals(per_cpu);
    EXPECT_EQ(totals.totals().punt_packets, 10u);
    EXPECT_EQ(totals.value("drop_spoofed_mac"), 40u);
    EXPECT_EQ(totals.drops(), 40u);
    EXPECT_EQ(totals.value("no_such_counter"), std::nullopt);
}

}  // namespace
}  // namespace andromeda
