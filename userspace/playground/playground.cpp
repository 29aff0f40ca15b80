#include "playground/playground.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "dataplane/nat_pipeline.hpp"
#include "dataplane/pipeline.hpp"
#include "inspect/inspect.hpp"
#include "overlay/flow_hash.hpp"
#include "playground/fabric_view.hpp"
#include "playground/pcap_reader.hpp"
#include "playground/request.hpp"
#include "playground/sample.hpp"
#include "wire/arp.hpp"
#include "wire/ethernet.hpp"
#include "wire/icmp.hpp"
#include "wire/ipv4.hpp"
#include "wire/tcp.hpp"
#include "wire/udp.hpp"

namespace andromeda::playground {

namespace {

using nlohmann::json;
using Bytes = std::vector<std::uint8_t>;

// Stand-ins for what the daemon learns from the host: the uplink's own MAC and its router's
// (netlink).
const wire::MacAddress kUplinkMac{{0x02, 0x00, 0x00, 0x00, 0xee, 0x01}};
const wire::MacAddress kUplinkRouterMac{{0x02, 0x00, 0x00, 0x00, 0xee, 0xfe}};
constexpr std::size_t kMaxFrame = 9216;
constexpr std::size_t kMaxPayload = 8000;

// ---- build ----------------------------------------------------------------------------------

Bytes build_frame(const json& packet) {
    constexpr std::string_view kWhere = "packet";
    const std::string protocol = string_field(packet, "protocol", kWhere);
    wire::EthernetHeader eth;
    eth.source = mac_field(packet, "src_mac", kWhere);
    eth.destination = mac_field(packet, "dst_mac", kWhere);
    const auto src = ipv4_field(packet, "src_ip", kWhere);
    const auto dst = ipv4_field(packet, "dst_ip", kWhere);
    Bytes frame(kMaxFrame);
    const wire::MutableByteSpan out(frame);

    if (protocol == "arp") {
        eth.ethertype = wire::ethertype::kArp;
        const std::size_t l2 = wire::write_ethernet_header(out, eth);
        const std::size_t arp = wire::write_arp(out.subspan(l2), wire::make_arp_request(eth.source, src, dst));
        frame.resize(l2 + arp);
        return frame;
    }
    const std::string payload = string_field_or(packet, "payload", kWhere, "");
    if (payload.size() > kMaxPayload)
        throw RequestError("packet.payload: " + std::to_string(payload.size()) + " bytes; at most " +
                           std::to_string(kMaxPayload));
    const auto src_port = static_cast<std::uint16_t>(number_field(packet, "src_port", kWhere, 0, 65535, 0));
    const auto dst_port = static_cast<std::uint16_t>(number_field(packet, "dst_port", kWhere, 0, 65535, 0));

    eth.ethertype = wire::ethertype::kIpv4;
    const std::size_t l2 = wire::write_ethernet_header(out, eth);
    wire::Ipv4Header ip;
    ip.source = src;
    ip.destination = dst;
    ip.ttl = static_cast<std::uint8_t>(number_field(packet, "ttl", kWhere, 0, 255, 64));
    if (const auto df = packet.find("df"); df != packet.end()) {
        if (!df->is_boolean()) throw RequestError("packet.df: must be true or false");
        ip.dont_fragment = df->get<bool>();
    }
    ip.identification = static_cast<std::uint16_t>(number_field(packet, "id", kWhere, 0, 65535, 0));
    std::size_t l4 = 0;
    if (protocol == "udp") {
        ip.protocol = 17;
        l4 = wire::kUdpHeaderLength;
    } else if (protocol == "tcp") {
        ip.protocol = 6;
        l4 = wire::kTcpMinHeaderLength;
    } else if (protocol == "icmp") {
        ip.protocol = 1;
        l4 = 8;
    } else {
        throw RequestError("packet.protocol: '" + protocol + "' is not one of udp, tcp, icmp, arp");
    }
    ip.total_length = static_cast<std::uint16_t>(wire::kIpv4MinHeaderLength + l4 + payload.size());
    const std::size_t l3 = wire::write_ipv4_header(out.subspan(l2), ip);
    const auto segment = out.subspan(l2 + l3, l4 + payload.size());
    std::copy(payload.begin(), payload.end(), segment.begin() + static_cast<std::ptrdiff_t>(l4));
    if (protocol == "udp") {
        (void)wire::write_udp_header(segment, {src_port, dst_port, static_cast<std::uint16_t>(segment.size()), 0});
        if (auto u = wire::MutableUdpView::parse(segment)) u->update_checksum(src, dst);
    } else if (protocol == "tcp") {
        wire::TcpHeader tcp;
        tcp.source_port = src_port;
        tcp.destination_port = dst_port;
        tcp.sequence = 1;
        tcp.acknowledgment = 1;
        tcp.flags = wire::tcp_flag::kPsh | wire::tcp_flag::kAck;
        tcp.window = 502;
        (void)wire::write_tcp_header(segment, tcp);
        if (auto t = wire::MutableTcpView::parse(segment)) t->update_checksum(src, dst);
    } else {
        // An echo request: the ports stand for the identifier and the sequence number.
        (void)wire::write_icmp_header(segment, wire::icmp_echo(wire::icmpv4_type::kEchoRequest, src_port, dst_port));
        if (auto m = wire::MutableIcmpv4View::parse(segment)) m->update_checksum();
    }
    frame.resize(l2 + l3 + segment.size());
    return frame;
}

// ---- decode ---------------------------------------------------------------------------------

// Fields people read in hex (as tcpdump and Wireshark show them), not as decimal numbers.
bool shown_in_hex(std::string_view name) {
    return name == "ethertype" || name == "checksum" || name == "flow_hash" || name == "flags";
}

std::string hex_number(std::uint32_t value, std::size_t bytes) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%0*x", static_cast<int>(2 * std::min<std::size_t>(bytes, 4)), value);
    return text;
}

json frame_json(wire::ByteSpan bytes, const inspect::InspectOptions& options) {
    const inspect::DecodedFrame decoded = inspect::inspect_frame(bytes, options);
    json layers = json::array();
    for (const auto& layer : decoded.layers) {
        json fields = json::array();
        for (const auto& span : layer.spans) {
            json field = {{"name", span.name}, {"offset", span.offset}, {"length", span.length}};
            const auto known = layer.fields.find(span.name);
            if (known != layer.fields.end() && known->is_number_unsigned() && shown_in_hex(span.name))
                field["value"] = hex_number(known->get<std::uint32_t>(), span.length);
            else if (known != layer.fields.end() && !known->is_object() && !known->is_array())
                field["value"] = *known;
            else
                field["value"] = "0x" + inspect::to_hex(bytes.subspan(span.offset, span.length));
            fields.push_back(std::move(field));
        }
        json l = {{"depth", layer.depth},
                  {"text", layer.text},
                  {"layer", layer.fields.value("layer", "")},
                  {"offset", layer.offset},
                  {"length", layer.length},
                  {"fields", std::move(fields)}};
        if (const auto ok = layer.fields.find("checksum_ok"); ok != layer.fields.end()) l["checksum_ok"] = *ok;
        layers.push_back(std::move(l));
    }
    return {{"hex", inspect::to_hex(bytes)},
            {"length", bytes.size()},
            {"text", inspect::render_text(decoded)},
            {"error", decoded.error ? json(*decoded.error) : json(nullptr)},
            {"layers", std::move(layers)}};
}

json decode(const json& request) { return {{"ok", true}, {"frames", json::array({frame_json(hex_field(request, "hex", "request"), {})})}}; }

json decode_pcap(const json& request) {
    const Bytes file = hex_field(request, "hex", "request");
    const CaptureFile capture = read_capture(file);
    json frames = json::array();
    std::size_t index = 0;
    for (const auto& f : capture.frames) {
        ++index;
        if (f.link_type != kLinkTypeEthernet) continue;
        json frame = frame_json(wire::ByteSpan(file).subspan(f.offset, f.length), {});
        frame["index"] = index;
        frames.push_back(std::move(frame));
    }
    if (!capture.error.empty() && capture.frames.empty()) throw RequestError(capture.error);
    json answer = {{"ok", true}, {"frames", std::move(frames)}};
    if (index != answer["frames"].size())
        answer["warning"] = std::to_string(index - answer["frames"].size()) +
                            " frames are not Ethernet (link type other than 1) and were left out";
    if (!capture.error.empty()) answer["warning"] = capture.error + "; the frames before it are shown";
    return answer;
}

// ---- run ------------------------------------------------------------------------------------

// In a decoded frame (frame_json): its first layer of a kind, and a field of a layer; null when
// there is none.
const json* first_layer(const json& frame, std::string_view kind) {
    for (const auto& layer : frame.at("layers"))
        if (layer.value("layer", "") == kind) return &layer;
    return nullptr;
}
const json* field_of(const json* layer, std::string_view name) {
    if (layer == nullptr) return nullptr;
    for (const auto& f : layer->at("fields"))
        if (f.value("name", "") == name) return &f.at("value");
    return nullptr;
}

std::string describe_emission(const json& frame, const Port* port, const fabric::FabricSnapshot& fabric) {
    if (port == nullptr) return "an unknown port";
    if (port->role == dataplane::PortRole::tenant) {
        std::string s = port->name;
        if (port->endpoint)
            s += " (" + port->endpoint->ip.to_string() + ", VPC " + fabric.vpc_of(*port->endpoint).name + ")";
        return s;
    }
    if (port->role == dataplane::PortRole::underlay) {
        const json* dst = field_of(first_layer(frame, "ipv4"), "dst");
        if (dst == nullptr || !dst->is_string()) return "the underlay";
        const std::string address = dst->get<std::string>();
        const auto ip = wire::Ipv4Address::parse(address);
        const fabric::Node* node = ip ? fabric.find_node_by_address(*ip) : nullptr;
        return node ? node->name + " (" + address + ")" : address;
    }
    return "the uplink";
}

json run(const json& request) {
    const std::string text = string_field(request, "fabric", "request");
    const std::string port_name = string_field(request, "port", "request");
    const Bytes input = hex_field(request, "hex", "request");

    const std::shared_ptr<const fabric::FabricSnapshot> snapshot = load_fabric(text);
    const fabric::FabricSnapshot& fabric = *snapshot;

    const std::vector<Port> ports = port_table(fabric);
    const auto port_by_id = [&](dataplane::PortId id) -> const Port* {
        for (const auto& p : ports)
            if (p.id == id) return &p;
        return nullptr;
    };
    const Port* ingress = nullptr;
    for (const auto& p : ports)
        if (p.name == port_name) ingress = &p;
    if (ingress == nullptr) {
        std::string names;
        for (const auto& p : ports) names += (names.empty() ? "" : ", ") + p.name;
        throw RequestError("request.port: '" + port_name + "' is no port of " + fabric.local().name + " (its ports: " +
                           names + ")");
    }

    dataplane::PipelineConfig config;
    // The daemon reads its own MAC off the underlay interface; here the request says it.
    config.underlay_mac = request.contains("underlay_mac") ? mac_field(request, "underlay_mac", "request")
                                                           : stand_in_mac(fabric.local_node());
    for (const auto& node : fabric.nodes())
        if (!node.is_local && node.address) config.next_hops.push_back({*node.address, stand_in_mac(node)});
    for (const auto& p : ports) config.ports.push_back({p.id, p.role, p.role == dataplane::PortRole::tenant ? p.name : ""});
    config.clock = [] { return std::uint64_t{1'000'000'000}; };
    dataplane::Pipeline pipeline(config);

    bool nat_node = false;
    for (const auto& vpc : fabric.vpcs())
        if (vpc.nat && vpc.nat->gateway_node == fabric.local().name) nat_node = true;
    nat::NatSettings settings;
    settings.max_flows = 1024;
    settings.hash_seed = 1;
    std::unique_ptr<nat::NatEngine> engine = nat_node ? std::make_unique<nat::NatEngine>(settings) : nullptr;
    dataplane::NatPipeline stage(pipeline, engine.get(), {kUplinkPort, kUplinkMac, kUplinkRouterMac});

    // Owned chunks behind the sink, each with headroom as an AF_XDP UMEM chunk has.
    // Enough for a jumbo frame encapsulated in fragments, or an answer and an error.
    constexpr std::size_t kChunks = 32, kChunkSize = 10240, kHeadroom = 256;
    std::vector<Bytes> chunks(kChunks, Bytes(kChunkSize));
    std::vector<dataplane::PacketBuffer> spares;
    for (auto& chunk : chunks) spares.push_back({chunk.data(), kChunkSize, kHeadroom, 0});
    std::vector<dataplane::Emission> slots(kChunks + dataplane::kMaxBatch);
    dataplane::FrameSink sink(slots, spares);
    const auto now = nat::TimePoint{} + std::chrono::seconds(1000);
    const dataplane::NatFrameResult result = stage.process(ingress->id, input, fabric, sink, now);

    inspect::InspectOptions options;
    options.vxlan_ports.push_back(fabric.local().vxlan_port);
    json emissions = json::array();
    std::string first_target;
    json flow = nullptr;
    for (const auto& e : sink.emissions()) {
        const wire::ByteSpan bytes(e.frame.data(), e.frame.length);
        const Port* out = port_by_id(e.port);
        json frame = frame_json(bytes, options);
        if (first_target.empty()) first_target = describe_emission(frame, out, fabric);
        if (out && out->role == dataplane::PortRole::underlay && flow.is_null()) {
            // The flow hash of the inner frame (wherever the outer headers end, a VLAN tag
            // included), and the outer UDP source port it gave.
            const json* port = field_of(first_layer(frame, "udp"), "src_port");
            const json* inner = first_layer(frame, "inner_frame");
            if (port != nullptr && inner != nullptr) {
                const auto hash = overlay::flow_hash_of_frame(
                    bytes.subspan(inner->at("offset").get<std::size_t>(), inner->at("length").get<std::size_t>()));
                flow = {{"hash", hex_number(hash, 2)}, {"source_port", *port}};
            }
        }
        emissions.push_back({{"port", out ? out->name : "port " + std::to_string(e.port)},
                             {"role", out ? std::string(dataplane::to_string(out->role)) : "unknown"},
                             {"frame", std::move(frame)}});
    }

    std::string verdict(dataplane::to_string(result.verdict));
    json drop = nullptr;
    std::string summary;
    const std::size_t n = emissions.size();
    switch (result.verdict) {
        case dataplane::Verdict::forward:
            summary = "encapsulated to " + first_target + (n > 1 ? " in " + std::to_string(n) + " fragments" : "");
            break;
        case dataplane::Verdict::deliver: summary = "delivered to " + first_target; break;
        case dataplane::Verdict::reply: {
            summary = "answered by the gateway on " + first_target;
            const json& layers = emissions.at(0).at("frame").at("layers");
            if (!layers.empty()) summary += ": " + layers.back().value("text", "");
            break;
        }
        case dataplane::Verdict::to_nat:  // never from NatPipeline; reported as a drop if it were
        case dataplane::Verdict::drop: {
            if (result.nat_drop != nat::DropReason::none)
                drop = {{"layer", "nat"},
                        {"reason", nat::to_string(result.nat_drop)},
                        {"description", nat::describe(result.nat_drop)}};
            else if (result.stage_drop != dataplane::NatStageDrop::none)
                drop = {{"layer", "nat stage"},
                        {"reason", dataplane::to_string(result.stage_drop)},
                        {"description", dataplane::describe(result.stage_drop)}};
            else
                drop = {{"layer", "pipeline"},
                        {"reason", dataplane::to_string(result.drop_reason)},
                        {"description", dataplane::describe(result.drop_reason)}};
            verdict = "drop";
            summary = "dropped by the " + drop["layer"].get<std::string>() + ": " + drop["reason"].get<std::string>() +
                      " (" + drop["description"].get<std::string>() + ")";
            break;
        }
    }
    if (result.path != dataplane::NatPath::none && result.verdict != dataplane::Verdict::drop) {
        verdict = "nat";
        summary = "translated by NAT, then " + (result.path == dataplane::NatPath::to_uplink ? "sent out of the uplink"
                                                                                            : summary);
    }
    return {{"ok", true},
            {"node", fabric.local().name},
            {"ports", ports_json(ports, fabric)},
            {"input", frame_json(input, options)},
            {"verdict", verdict},
            {"summary", summary},
            {"drop", std::move(drop)},
            {"flow", std::move(flow)},
            {"emissions", std::move(emissions)}};
}

}  // namespace

json handle(const json& request) {
    try {
        const std::string op = string_field(request, "op", "request");
        if (op == "sample") return answer_sample(request);
        if (op == "fabric") return describe_fabric(*load_fabric(string_field(request, "fabric", "request")));
        if (op == "build") return {{"ok", true}, {"hex", inspect::to_hex(build_frame(member(request, "packet", "request")))}};
        if (op == "run") return run(request);
        if (op == "decode") return decode(request);
        if (op == "decode_pcap") return decode_pcap(request);
        throw RequestError("request.op: '" + op + "' is not one of sample, fabric, build, run, decode, decode_pcap");
    } catch (const FabricLoadError& e) {
        json errors = json::array();
        for (const auto& error : e.errors) errors.push_back(error.to_string());
        return {{"ok", false}, {"error", e.what()}, {"errors", std::move(errors)}};
    } catch (const RequestError& e) {
        return {{"ok", false}, {"error", e.what()}};
    } catch (const json::exception& e) {
        return {{"ok", false}, {"error", std::string("request: ") + e.what()}};
    }
}

std::string handle_text(std::string_view request) {
    const json parsed = json::parse(request, nullptr, false);
    if (parsed.is_discarded()) return json{{"ok", false}, {"error", "request: not JSON"}}.dump();
    // Replace, not throw: an error message may quote a byte of a user's multi-byte character.
    return handle(parsed).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace andromeda::playground
