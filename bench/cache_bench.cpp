// The cache experiment: packets per second of the real per-packet code against the size of the
// memory it works over (the working set), visited in order and in a random permutation, to show
// where the datapath turns from compute-bound to memory-bound on this machine.
//
// Workloads (one core, one thread):
//   frames_decap          a pool of UMEM-like chunks (4096 B apart, the daemon's frame size, the
//                         frame at offset 320 as AF_XDP places it), each an Andromeda overlay
//                         packet with a 60-byte inner frame, decapsulated in place one at a time
//                         by Pipeline::process_in_place (peer, VNI, source checks, delivery);
//   frames_decap_burst32  the same pool through Pipeline::process_batch in bursts of 32, the
//                         daemon's RX path (it prefetches two frames ahead);
//   frames_encap          the same with tenant frames encapsulated in place (process_in_place);
//   flows                 a NAT conntrack table (nat::FlowTable) holding as many flows as fill
//                         the working set, one inside-key lookup per packet;
//   flows_burst32         the same lookups in bursts of 32, bucket heads then flows prefetched
//                         first, as NatEngine::translate_burst does.
// Orders: "sequential" visits frames (flows) in the order they lie in memory (were inserted);
// "shuffled" in a fixed random permutation. Working set: frames: chunks x 4096 B (each frame
// reads and writes ~2 lines of its chunk; with a 4096-byte stride those lines share cache sets,
// so a pool fits a cache about when its size does); flows: the bytes a lookup can touch (the
// 64-byte flow, its bucket head and chain link), the whole table's size is reported beside.
//
//   cache_bench [--quick] [--min-bytes N] [--max-bytes N] [--step 2|4] [--runs R]
//               [--min-time S] [--out FILE] [--filter SUBSTRING]
// Rates are per second of this thread's CPU time; a point is the median of --runs measurements.
// Writes JSON (see docs/performance.md, "Cache experiment") to --out, else to stdout.
#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dataplane/pipeline.hpp"
#include "fabric/loader.hpp"
#include "support/fabric_builder.hpp"
#include "support/frame_builder.hpp"
#include "nat/flow_table.hpp"
#include "overlay/outer_template.hpp"
#include "wire/bytes.hpp"

namespace {

using namespace andromeda;
using Bytes = std::vector<std::uint8_t>;
using json = nlohmann::json;

constexpr std::uint32_t kChunk = 4096;     // io::InstanceConfig::frame_size's default
constexpr std::uint32_t kOffset = 256 + 64;  // XDP_PACKET_HEADROOM + the daemon's frame_headroom
constexpr std::size_t kBurst = 32;
constexpr std::size_t kInnerFrame = 60;
constexpr dataplane::PortId kUnderlay = 1;
constexpr dataplane::PortId kTenant = 10;
// Bytes of the flow table a lookup may touch per flow: the flow's line, 2 bucket heads of 4 B
// (twice as many buckets as flows) and its 4-byte chain link.
constexpr std::size_t kFlowTouchedBytes = 64 + 8 + 4;

// node1's view: 10.0.0.10 is local, 10.0.0.20 is on node2 (next-hop MAC known).
const std::string kFabric = test_support::two_node_blue("node1", "02:00:00:00:a1:02")
                                .endpoint("10.0.0.10", "02:00:00:00:00:10", "node1", "tap-blue-10")
                                .endpoint("10.0.0.20", "02:00:00:00:00:20", "node2")
                                .toml();

const wire::MacAddress kGatewayMac{{2, 0, 0, 0, 0, 0xff}};

[[noreturn]] void die(const std::string& message) {
    std::cerr << "cache_bench: " << message << "\n";
    std::exit(2);
}

Bytes udp_frame(std::size_t size, const wire::MacAddress& dst_mac, const wire::MacAddress& src_mac, std::uint32_t src,
                std::uint32_t dst) {
    return test_support::udp_frame(size, src_mac.bytes(), dst_mac.bytes(), src, dst);
}

Bytes tenant_frame() {
    return udp_frame(kInnerFrame, kGatewayMac, wire::MacAddress({2, 0, 0, 0, 0, 0x10}), 0x0a00000a, 0x0a000014);
}

// node2's encapsulation of 10.0.0.20 -> 10.0.0.10.
Bytes overlay_packet() {
    const Bytes inner = udp_frame(kInnerFrame, wire::MacAddress({2, 0, 0, 0, 0, 0x10}),
                                  wire::MacAddress({2, 0, 0, 0, 0, 0x20}), 0x0a000014, 0x0a00000a);
    overlay::OuterTemplateConfig c;
    c.src_mac = wire::MacAddress({2, 0, 0, 0, 0xa1, 2});
    c.dst_mac = wire::MacAddress({2, 0, 0, 0, 0xa1, 1});
    c.src_ip = wire::Ipv4Address(0xc0a80102);
    c.dst_ip = wire::Ipv4Address(0xc0a80101);
    overlay::OuterTemplate t(c);
    Bytes packet(inner.size() + overlay::kOuterHeadersSize);
    t.encapsulate(inner, packet, {100, 0x1234, overlay::kDefaultHopLimit, 0});
    return packet;
}

// The pipeline, its fabric and a sink, as one worker holds them.
struct Worker {
    Worker() : fabric(fabric::load_fabric_string(kFabric, "cache.toml").snapshot), pipeline(config()) {
        if (!fabric) die("the built-in fabric did not load");
        for (auto& chunk : spare_chunks) spares.push_back({chunk.data(), kChunk, kOffset, 0});
        sink = dataplane::FrameSink(slots, spares);
    }
    static dataplane::PipelineConfig config() {
        dataplane::PipelineConfig c;
        c.underlay_mac = wire::MacAddress({2, 0, 0, 0, 0xa1, 1});
        c.ports = {{kUnderlay, dataplane::PortRole::underlay, ""},
                   {kTenant, dataplane::PortRole::tenant, "tap-blue-10"}};
        return c;
    }
    std::shared_ptr<const fabric::FabricSnapshot> fabric;
    dataplane::Pipeline pipeline;
    std::vector<Bytes> spare_chunks = std::vector<Bytes>(kBurst, Bytes(kChunk));
    std::vector<dataplane::PacketBuffer> spares;
    std::array<dataplane::Emission, dataplane::kMaxBatch> slots{};
    dataplane::FrameSink sink;
};

// `count` chunks of kChunk bytes in one page-aligned allocation, each holding `frame` at kOffset.
struct FramePool {
    FramePool(std::size_t count, const Bytes& frame) : size(count * kChunk) {
        memory = static_cast<std::uint8_t*>(std::aligned_alloc(4096, size));
        if (memory == nullptr) die("out of memory for a frame pool of " + std::to_string(size) + " bytes");
        std::memset(memory, 0, size);
        buffers.reserve(count);
        for (std::size_t i = 0; i < count; ++i) {
            std::uint8_t* chunk = memory + i * kChunk;
            std::copy(frame.begin(), frame.end(), chunk + kOffset);
            buffers.push_back({chunk, kChunk, kOffset, static_cast<std::uint32_t>(frame.size())});
        }
    }
    ~FramePool() { std::free(memory); }
    FramePool(const FramePool&) = delete;
    FramePool& operator=(const FramePool&) = delete;

    std::size_t size;
    std::uint8_t* memory = nullptr;
    std::vector<dataplane::PacketBuffer> buffers;
};

std::vector<std::uint32_t> visiting_order(std::size_t count, bool shuffled) {
    std::vector<std::uint32_t> order(count);
    std::iota(order.begin(), order.end(), 0u);
    if (shuffled) std::shuffle(order.begin(), order.end(), std::mt19937_64(0x5eed));
    return order;
}

// This thread's CPU time in seconds: time spent preempted by other work on a shared machine
// (or stolen by the hypervisor) does not count, as in Google Benchmark's cpu_time.
double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Runs `pass` (one visit of every item, returning how many it processed) until `min_time` of CPU
// time has passed, after one warm-up pass; returns processed items per CPU second. The clock is
// read every 4096 items or more, so that small working sets do not measure the clock.
double items_per_second(const std::function<std::size_t()>& pass, double min_time) {
    const std::size_t per_pass = pass();
    const std::size_t passes_per_read = std::max<std::size_t>(1, 4096 / std::max<std::size_t>(per_pass, 1));
    std::size_t items = 0;
    const double start = thread_cpu_seconds();
    double elapsed = 0;
    do {
        for (std::size_t i = 0; i < passes_per_read; ++i) items += pass();
        elapsed = thread_cpu_seconds() - start;
    } while (elapsed < min_time);
    return static_cast<double>(items) / elapsed;
}

struct Options {
    std::size_t min_bytes = 4096;
    std::size_t max_bytes = std::size_t{64} << 20;
    unsigned step = 2;
    int runs = 3;
    double min_time = 0.2;
    std::string out;
    std::string filter;
    bool quick = false;
};

std::size_t parse_size(const std::string& text) {
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    const std::string unit(end);
    if (unit == "K" || unit == "KiB" || unit == "k") value *= 1024;
    else if (unit == "M" || unit == "MiB") value *= 1024.0 * 1024;
    else if (unit == "G" || unit == "GiB") value *= 1024.0 * 1024 * 1024;
    else if (!unit.empty()) die("bad size '" + text + "' (e.g. 4096, 64K, 64M, 1G)");
    if (value < kChunk) die("sizes start at 4096 bytes, got '" + text + "'");
    return static_cast<std::size_t>(value);
}

Options parse(int argc, char** argv) {
    Options o;
    bool runs_set = false, time_set = false, step_set = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) die(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--quick") o.quick = true;
        else if (arg == "--min-bytes") o.min_bytes = parse_size(value());
        else if (arg == "--max-bytes") o.max_bytes = parse_size(value());
        else if (arg == "--step") o.step = static_cast<unsigned>(std::stoul(value())), step_set = true;
        else if (arg == "--runs") o.runs = std::stoi(value()), runs_set = true;
        else if (arg == "--min-time") o.min_time = std::stod(value()), time_set = true;
        else if (arg == "--out") o.out = value();
        else if (arg == "--filter") o.filter = value();
        else if (arg == "-h" || arg == "--help") {
            std::cout << "cache_bench [--quick] [--min-bytes N] [--max-bytes N] [--step 2|4] [--runs R]\n"
                         "            [--min-time SECONDS] [--out FILE] [--filter SUBSTRING]\n";
            std::exit(0);
        } else die("unknown option '" + arg + "' (try --help)");
    }
    if (o.quick) {
        if (!step_set) o.step = 4;
        if (!runs_set) o.runs = 3;
        if (!time_set) o.min_time = 0.02;
    }
    if (o.step != 2 && o.step != 4) die("--step is 2 or 4");
    if (o.runs < 1) die("--runs is at least 1");
    if (o.max_bytes < o.min_bytes) die("--max-bytes is below --min-bytes");
    return o;
}

json cache_hierarchy() {
    json caches = json::array();
    for (int i = 0; i < 8; ++i) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
        std::ifstream level(dir + "level"), type(dir + "type"), size(dir + "size");
        if (!level || !type || !size) break;
        int l = 0;
        std::string t, s;
        level >> l;
        type >> t;
        size >> s;
        std::size_t bytes = std::stoul(s);
        if (s.find('K') != std::string::npos) bytes *= 1024;
        if (s.find('M') != std::string::npos) bytes *= 1024 * 1024;
        caches.push_back({{"level", l}, {"type", t}, {"size_bytes", bytes}});
    }
    return caches;
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "?";
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One measured point: `runs` measurements of the same pass.
json measure(const Options& o, const std::string& workload, const std::string& order, std::size_t working_set,
             std::size_t items, const std::function<std::size_t()>& pass, json extra = json::object()) {
    std::vector<double> mpps;
    for (int r = 0; r < o.runs; ++r) mpps.push_back(items_per_second(pass, o.min_time) / 1e6);
    const double m = median(mpps);
    json point = {{"workload", workload},
                  {"order", order},
                  {"working_set_bytes", working_set},
                  {"items", items},
                  {"mpps", m},
                  {"ns_per_item", 1e3 / m},
                  {"mpps_min", *std::min_element(mpps.begin(), mpps.end())},
                  {"mpps_max", *std::max_element(mpps.begin(), mpps.end())},
                  {"runs", mpps}};
    point.update(extra);
    std::fprintf(stderr, "%-22s %-10s %10zu B %9zu items  %8.2f Mpps  %7.2f ns\n", workload.c_str(), order.c_str(),
                 working_set, items, m, 1e3 / m);
    return point;
}

bool wanted(const Options& o, const std::string& workload) {
    return o.filter.empty() || workload.find(o.filter) != std::string::npos;
}

// Frames: decap and encap over a pool of `bytes`.
void frame_points(const Options& o, std::size_t bytes, json& results) {
    const std::size_t count = bytes / kChunk;
    Worker w;
    const bool any_decap = wanted(o, "frames_decap") || wanted(o, "frames_decap_burst32");
    if (any_decap) {
        FramePool pool(count, overlay_packet());
        for (const auto& b : pool.buffers) {
            w.sink.reset();
            if (w.pipeline.process_in_place(kUnderlay, b, *w.fabric, w.sink).verdict != dataplane::Verdict::deliver)
                die("the overlay packet was not delivered");
        }
        for (const bool shuffled : {false, true}) {
            const auto order = visiting_order(count, shuffled);
            const std::string order_name = shuffled ? "shuffled" : "sequential";
            if (wanted(o, "frames_decap")) {
                std::uint64_t delivered = 0;
                results.push_back(measure(o, "frames_decap", order_name, bytes, count, [&] {
                    for (const std::uint32_t i : order) {
                        w.sink.reset();
                        delivered += w.pipeline.process_in_place(kUnderlay, pool.buffers[i], *w.fabric, w.sink).emissions;
                    }
                    return order.size();
                }));
                if (delivered == 0) die("frames_decap delivered nothing");
            }
            if (wanted(o, "frames_decap_burst32")) {
                std::vector<dataplane::RxFrame> rx(order.size());
                for (std::size_t k = 0; k < order.size(); ++k) rx[k] = {kUnderlay, pool.buffers[order[k]]};
                std::array<dataplane::FrameResult, kBurst> burst_results{};
                std::uint64_t delivered = 0;
                results.push_back(measure(o, "frames_decap_burst32", order_name, bytes, count, [&] {
                    for (std::size_t k = 0; k < rx.size(); k += kBurst) {
                        const std::size_t n = std::min(kBurst, rx.size() - k);
                        w.sink.reset();
                        w.pipeline.process_batch(std::span(rx).subspan(k, n), *w.fabric, w.sink, burst_results);
                        delivered += w.sink.emissions().size();
                    }
                    return rx.size();
                }));
                if (delivered == 0) die("frames_decap_burst32 delivered nothing");
            }
        }
    }
    if (wanted(o, "frames_encap")) {
        FramePool pool(count, tenant_frame());
        for (const bool shuffled : {false, true}) {
            const auto order = visiting_order(count, shuffled);
            std::uint64_t forwarded = 0;
            results.push_back(measure(o, "frames_encap", shuffled ? "shuffled" : "sequential", bytes, count, [&] {
                for (const std::uint32_t i : order) {
                    const dataplane::PacketBuffer& b = pool.buffers[i];
                    kGatewayMac.copy_to(b.data());  // encap rewrote it to the endpoint's: put it back
                    w.sink.reset();
                    forwarded += w.pipeline.process_in_place(kTenant, b, *w.fabric, w.sink).verdict ==
                                 dataplane::Verdict::forward;
                }
                return order.size();
            }));
            if (forwarded == 0) die("frames_encap forwarded nothing");
        }
    }
}

std::size_t heap_in_use() {
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

nat::InsideKey flow_key(std::size_t i) {
    nat::InsideKey k;
    k.vni = 100;
    k.protocol = nat::Protocol::udp;
    k.inside_ip = 0x0a000000u + static_cast<std::uint32_t>(i / 1000);
    k.inside_port = static_cast<std::uint16_t>(20000 + i % 1000);
    k.remote_ip = 0xcb007100u + static_cast<std::uint32_t>(i % 7);
    k.remote_port = 53;
    return k;
}

// Flows: a conntrack table whose lookups touch `bytes`.
void flow_points(const Options& o, std::size_t bytes, json& results) {
    if (!wanted(o, "flows") && !wanted(o, "flows_burst32")) return;
    const std::size_t count = std::max<std::size_t>(bytes / kFlowTouchedBytes, 1);
    const std::size_t heap_before = heap_in_use();
    nat::FlowTable table(count, 7);
    const std::size_t table_bytes = heap_in_use() - heap_before;
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t id = table.allocate();
        if (id == nat::kNilId) die("flow table full");
        const nat::InsideKey k = flow_key(i);
        nat::Flow& f = table[id];
        f.vni = k.vni;
        f.protocol = k.protocol;
        f.inside_ip = k.inside_ip;
        f.inside_port = k.inside_port;
        f.remote_ip = k.remote_ip;
        f.remote_port = k.remote_port;
        f.nat_ip = 0xc6336401;
        f.nat_port = static_cast<std::uint16_t>(1024 + i % 60000);
        table.link(id);
    }
    const json extra = {{"table_bytes", table_bytes}, {"bytes_per_flow", kFlowTouchedBytes}};
    for (const bool shuffled : {false, true}) {
        const auto order = visiting_order(count, shuffled);
        std::vector<nat::InsideKey> keys(count);
        for (std::size_t k = 0; k < count; ++k) keys[k] = flow_key(order[k]);
        const std::string order_name = shuffled ? "shuffled" : "sequential";
        if (wanted(o, "flows")) {
            std::uint64_t sum = 0, missing = 0;
            results.push_back(measure(o, "flows", order_name, bytes, count, [&] {
                for (const auto& key : keys) {
                    const std::uint32_t id = table.find_inside(key);
                    if (id == nat::kNilId) ++missing;
                    else sum += table[id].nat_port;
                }
                return keys.size();
            }, extra));
            if (missing != 0 || sum == 0) die("flows: a lookup missed");
        }
        if (wanted(o, "flows_burst32")) {
            std::uint64_t sum = 0, missing = 0;
            results.push_back(measure(o, "flows_burst32", order_name, bytes, count, [&] {
                for (std::size_t k = 0; k < keys.size(); k += kBurst) {
                    const std::size_t n = std::min(kBurst, keys.size() - k);
                    for (std::size_t j = 0; j < n; ++j) table.prefetch_bucket(keys[k + j]);
                    for (std::size_t j = 0; j < n; ++j) table.prefetch_first(keys[k + j]);
                    for (std::size_t j = 0; j < n; ++j) {
                        const std::uint32_t id = table.find_inside(keys[k + j]);
                        if (id == nat::kNilId) ++missing;
                        else sum += table[id].nat_port;
                    }
                }
                return keys.size();
            }, extra));
            if (missing != 0 || sum == 0) die("flows_burst32: a lookup missed");
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    json results = json::array();
    for (std::size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.step) {
        frame_points(o, bytes, results);
        flow_points(o, bytes, results);
    }
    char date[64];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S%z", std::localtime(&now));
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) < 0) load[0] = -1;
    const json doc = {{"kind", "cache_experiment"},
                      {"date", date},
                      {"cpu", cpu_model()},
                      {"caches", cache_hierarchy()},
                      {"load_avg", load[0]},
                      {"quick", o.quick},
                      {"runs", o.runs},
                      {"min_time_s", o.min_time},
                      {"frame_chunk_bytes", kChunk},
                      {"inner_frame_bytes", kInnerFrame},
                      {"results", results}};
    if (o.out.empty()) {
        std::cout << doc.dump(1) << "\n";
    } else {
        std::ofstream out(o.out);
        out << doc.dump(1) << "\n";
        if (!out) die("could not write " + o.out);
    }
    return 0;
}
