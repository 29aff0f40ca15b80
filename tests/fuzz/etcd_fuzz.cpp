// What andromedad reads from etcd, under arbitrary bytes: the watch stream's messages
// (etcd::read_watch_message) and the fabric built from keys and values (fabric::EtcdFabricBuilder).
// It must never crash; every key is either used or rejected once; and a builder that kept the
// values of an earlier build builds what a fresh one does.
//
// Input: byte 0 even: the rest is watch-stream lines ('\n'-separated).
//        byte 0 odd:  the rest is records KEY '\x01' VALUE separated by '\0'; a key without a
//                     leading '/' is put under /andromeda/v1/.
// Seeds: tests/fuzz/corpus/etcd.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "etcd/client.hpp"
#include "fabric/diff.hpp"
#include "fabric/etcd_fabric.hpp"

namespace {

using namespace andromeda;

[[noreturn]] void violation(const char* what, const std::string& detail = "") {
    std::fprintf(stderr, "etcd_fuzz: %s %s\n", what, detail.c_str());
    std::abort();
}

void watch_lines(std::string_view text) {
    while (!text.empty()) {
        const auto newline = text.find('\n');
        const std::string_view line = text.substr(0, newline);
        try {
            bool created = false;
            std::size_t events = 0;
            const auto end = etcd::read_watch_message(line, [&](const etcd::WatchBatch& b) {
                if (b.events.empty()) violation("a batch without events was handed over");
                events += b.events.size();
            }, &created);
            if (end && end->why == etcd::WatchEnd::Why::compacted && end->compact_revision == 0)
                violation("a compaction without its revision");
            if (end && events != 0) violation("events handed over from a message that ended the watch");
        } catch (const etcd::EtcdError&) {
        }
        if (newline == std::string_view::npos) break;
        text.remove_prefix(newline + 1);
    }
}

const std::string kLocal = "[node]\nname = \"node1\"\nunderlay = \"eth1\"\naddress = \"192.168.1.1\"\n"
                           "[etcd]\nendpoints = [\"http://127.0.0.1:2379\"]\n";

void check(const fabric::EtcdFabric& f, const std::map<std::string, std::string>& kvs) {
    if (!f.loaded.ok()) violation("node.toml's part is valid, yet nothing was built:", fabric::to_string(f.loaded.errors));
    std::set<std::string> rejected;
    for (const auto& r : f.rejected) {
        if (!kvs.count(r.key)) violation("a rejected key that was never given:", r.key);
        if (!rejected.insert(r.key).second) violation("a key rejected twice:", r.key);
        if (r.reason.empty()) violation("a rejection without a reason:", r.key);
    }
    if (f.keys_used + f.rejected.size() != kvs.size()) violation("keys neither used nor rejected");
}

void fabric_keys(std::string_view text) {
    std::map<std::string, std::string> kvs;
    while (!text.empty()) {
        const auto end = text.find('\0');
        const std::string_view record = text.substr(0, end);
        const auto split = record.find('\x01');
        std::string key(record.substr(0, split));
        if (key.empty() || key[0] != '/') key = "/andromeda/v1/" + key;
        kvs[key] = split == std::string_view::npos ? "" : std::string(record.substr(split + 1));
        if (end == std::string_view::npos) break;
        text.remove_prefix(end + 1);
    }
    const fabric::EtcdLayout layout("/andromeda");
    const fabric::EtcdFabric fresh = fabric::build_etcd_fabric(kLocal, "node.toml", kvs, layout);
    check(fresh, kvs);
    // The same keys reached in two steps (the first half, then all), as a daemon's builder does.
    std::map<std::string, std::string> half;
    std::size_t i = 0;
    for (const auto& kv : kvs)
        if (i++ % 2 == 0) half.insert(kv);
    fabric::EtcdFabricBuilder builder(layout);
    builder.update(half);
    check(builder.build(kLocal, "node.toml"), half);
    builder.update(kvs);
    const fabric::EtcdFabric stepped = builder.build(kLocal, "node.toml");
    check(stepped, kvs);
    if (stepped.rejected != fresh.rejected) violation("the builder rejects other keys than a fresh build");
    if (!fabric::diff_fabrics(stepped.loaded.snapshot.get(), *fresh.loaded.snapshot).empty())
        violation("the builder builds another fabric than a fresh build");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 64 * 1024) return 0;
    const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (data[0] % 2 == 0) watch_lines(rest);
    else fabric_keys(rest);
    return 0;
}
