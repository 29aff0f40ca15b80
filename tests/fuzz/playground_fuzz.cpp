// The playground's engine under arbitrary input, three ways by the first byte:
//   0: the rest is a request's text (JSON or not): the answer must be JSON with "ok";
//   1: the rest is a capture file: every frame the reader returns lies inside it, and decoding
//      them never fails;
//   2+: the rest is a frame arriving on one of the ports (byte 0 picks it) of the sample fabric's
//      own view: the answer is "ok", its verdict one of five, and every byte range the page would
//      light up lies inside its frame.
// Seeds: tests/fuzz/corpus/playground.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "inspect/inspect.hpp"
#include "playground/pcap_reader.hpp"
#include "playground/playground.hpp"

namespace {

using nlohmann::json;
using namespace andromeda;

[[noreturn]] void violation(const char* what, const std::string& detail) {
    std::fprintf(stderr, "playground_fuzz: %s\n%s\n", what, detail.c_str());
    std::abort();
}

void check_ranges(const json& frame) {
    const std::size_t length = frame.at("length");
    for (const auto& layer : frame.at("layers")) {
        const std::size_t at = layer.at("offset"), n = layer.at("length");
        if (at + n > length) violation("a layer reaches past its frame", layer.dump());
        for (const auto& f : layer.at("fields"))
            if (f.at("offset").get<std::size_t>() < at ||
                f.at("offset").get<std::size_t>() + f.at("length").get<std::size_t>() > at + n)
                violation("a field lies outside its layer", layer.dump());
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 12000) return 0;
    const wire::ByteSpan rest(data + 1, size - 1);
    if (data[0] == 0) {
        const json answer = json::parse(playground::handle_text(std::string_view(reinterpret_cast<const char*>(rest.data()), rest.size())), nullptr, false);
        if (answer.is_discarded() || !answer.contains("ok")) violation("an answer that is not JSON with ok", answer.dump());
        return 0;
    }
    if (data[0] == 1) {
        const auto capture = playground::read_capture(rest);
        for (const auto& f : capture.frames)
            if (f.offset > rest.size() || f.length > rest.size() - f.offset)
                violation("a captured frame outside the file", std::to_string(f.offset) + "+" + std::to_string(f.length));
        const json answer = playground::handle({{"op", "decode_pcap"}, {"hex", inspect::to_hex(rest)}});
        if (answer.value("ok", false))
            for (const auto& frame : answer.at("frames")) check_ranges(frame);
        return 0;
    }
    if (rest.empty()) return 0;
    // The sample's own view (web/playground/sample_fabric.toml) and its ports, as the engine
    // serves them to the page.
    static const json sample = playground::handle({{"op", "sample"}});
    static const json ports = playground::handle({{"op", "fabric"}, {"fabric", sample.at("fabric")}}).at("ports");
    const json answer = playground::handle({{"op", "run"},
                                            {"fabric", sample.at("fabric")},
                                            {"underlay_mac", sample.at("underlay_mac")},
                                            {"port", ports.at(data[0] % ports.size()).at("name")},
                                            {"hex", inspect::to_hex(rest)}});
    if (!answer.value("ok", false)) violation("a frame was refused", answer.dump());
    const std::string verdict = answer.at("verdict");
    if (verdict != "forward" && verdict != "deliver" && verdict != "reply" && verdict != "nat" && verdict != "drop")
        violation("an unknown verdict", verdict);
    if ((verdict == "drop") == answer.at("drop").is_null()) violation("drop and verdict disagree", answer.dump());
    check_ranges(answer.at("input"));
    for (const auto& e : answer.at("emissions")) check_ranges(e.at("frame"));
    return 0;
}
