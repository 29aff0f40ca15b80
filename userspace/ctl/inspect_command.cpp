#include "ctl/inspect_command.hpp"

#include <fmt/format.h>
#include <pcap/pcap.h>

#include <memory>
#include <ostream>

namespace andromeda::ctl {

namespace {

using inspect::DecodedFrame;
using inspect::example_overlay_packet;
using inspect::inspect_frame;
using inspect::parse_hex;
using inspect::render_json;
using inspect::render_text;
using inspect::to_hex;

struct PcapCloser {
    void operator()(pcap_t* p) const { pcap_close(p); }
};

// Prints one frame; returns why it is malformed, or nothing when it decoded cleanly.
std::optional<std::string> print_frame(wire::ByteSpan bytes, const InspectRequest& request, std::ostream& out, nlohmann::json* json_frames,
                 std::optional<std::size_t> index) {
    const DecodedFrame frame = inspect_frame(bytes, request.options);
    if (json_frames) {
        auto j = render_json(frame);
        if (index) j["frame"] = *index;
        if (request.print_hex) j["hex"] = to_hex(bytes);
        json_frames->push_back(std::move(j));
    } else {
        if (index) out << fmt::format("# frame {} ({} bytes)\n", *index, bytes.size());
        if (request.print_hex) out << "hex " << to_hex(bytes) << '\n';
        out << render_text(frame);
    }
    return frame.error;
}

int inspect_pcap(const InspectRequest& request, std::ostream& out, std::ostream& err) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    std::unique_ptr<pcap_t, PcapCloser> pcap(pcap_open_offline(request.pcap->c_str(), errbuf));
    if (!pcap) {
        err << fmt::format("andromedactl inspect: cannot read pcap '{}': {}\n", *request.pcap, errbuf);
        return 2;
    }
    if (pcap_datalink(pcap.get()) != DLT_EN10MB) {
        err << fmt::format("andromedactl inspect: '{}' has link type {} ({}); only Ethernet captures are supported\n",
                           *request.pcap, pcap_datalink_val_to_name(pcap_datalink(pcap.get())),
                           pcap_datalink(pcap.get()));
        return 2;
    }
    nlohmann::json frames = nlohmann::json::array();
    std::size_t index = 0, malformed = 0;
    pcap_pkthdr* header = nullptr;
    const u_char* data = nullptr;
    int rc;
    while ((rc = pcap_next_ex(pcap.get(), &header, &data)) == 1) {
        ++index;
        if (!request.json && index > 1) out << '\n';
        if (print_frame({data, header->caplen}, request, out, request.json ? &frames : nullptr, index)) ++malformed;
    }
    if (rc == PCAP_ERROR) {
        err << fmt::format("andromedactl inspect: '{}' is corrupt after frame {}: {}\n", *request.pcap, index,
                           pcap_geterr(pcap.get()));
        return 2;
    }
    if (request.json) out << frames.dump(2) << '\n';
    if (malformed > 0) {
        err << fmt::format("andromedactl inspect: {} of {} frames malformed\n", malformed, index);
        return 1;
    }
    return 0;
}

}  // namespace

int run_inspect(const InspectRequest& request, std::ostream& out, std::ostream& err) {
    if (request.pcap) return inspect_pcap(request, out, err);
    std::vector<std::uint8_t> bytes;
    if (request.hex) {
        std::string why;
        auto parsed = parse_hex(*request.hex, why);
        if (!parsed) {
            err << "andromedactl inspect: bad hex: " << why << '\n';
            return 2;
        }
        bytes = std::move(*parsed);
    } else {
        bytes = example_overlay_packet();
    }
    nlohmann::json frames = nlohmann::json::array();
    const auto error = print_frame(bytes, request, out, request.json ? &frames : nullptr, std::nullopt);
    if (request.json) out << frames.at(0).dump(2) << '\n';
    if (error) {
        err << "andromedactl inspect: " << *error << '\n';
        return 1;
    }
    return 0;
}

}  // namespace andromeda::ctl
