// The NAT stage around the pipeline: locate the IPv4 packet of a to_nat frame, translate it,
// and send it on (uplink, or back into the fabric through route_from_nat).
#include "dataplane/nat_pipeline.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "gateway/icmp_error.hpp"
#include "wire/bytes.hpp"

namespace andromeda::dataplane {

namespace {

constexpr std::uint32_t kEthernet = 14;
// The largest IPv4 packet, behind room for its new Ethernet header.
constexpr std::size_t kScratchSize = kEthernet + 65535;

// Length of an Ethernet header with up to two VLAN tags in front of an IPv4 packet; 0 when the
// frame carries no IPv4.
std::uint32_t ipv4_header_offset(const std::uint8_t* frame, std::uint32_t length) noexcept {
    std::uint32_t at = 12;
    for (int tags = 0; tags <= 2; ++tags) {
        if (length < at + 2) return 0;
        const std::uint16_t type = wire::load_be16(frame + at);
        if (!wire::is_vlan_tpid(type)) return type == wire::ethertype::kIpv4 ? at + 2 : 0;
        at += 4;
    }
    return 0;
}

// The IPv4 packet without Ethernet padding when its total length says so; else all of it (the
// NAT then refuses it as malformed).
std::uint32_t trimmed_ipv4_length(const std::uint8_t* ip, std::uint32_t available) noexcept {
    if (available < 20) return available;
    const std::uint32_t total = wire::load_be16(ip + 2);
    return total >= 20 && total <= available ? total : available;
}

void write_ethernet(std::uint8_t* at, const wire::MacAddress& destination, const wire::MacAddress& source) noexcept {
    destination.copy_to(at);
    source.copy_to(at + 6);
    wire::store_be16(at + 12, wire::ethertype::kIpv4);
}

PortId find_uplink_port(const PipelineConfig& config) noexcept {
    for (const PortBinding& binding : config.ports)
        if (binding.role == PortRole::uplink) return binding.id;
    return kNoPort;
}

void copy_pipeline_result(const FrameResult& from, NatFrameResult& to) noexcept {
    to.verdict = from.verdict;
    to.drop_reason = from.drop_reason;
    to.emissions = from.emissions;
}

}  // namespace

void NatStageCounters::count_drop(NatStageDrop r) noexcept {
    switch (r) {
        case NatStageDrop::none: break;
#define ANDROMEDA_NAT_STAGE_DROP_CASE(name, id, description) \
    case NatStageDrop::name: ++drop_##name; break;
        ANDROMEDA_DROPS_NAT_STAGE(ANDROMEDA_NAT_STAGE_DROP_CASE)
#undef ANDROMEDA_NAT_STAGE_DROP_CASE
    }
}

std::shared_ptr<const nat::NatRules> nat_rules_for(const fabric::FabricSnapshot& fabric) {
    std::vector<nat::VpcNatConfig> vpcs;
    for (const fabric::Vpc& vpc : fabric.vpcs()) {
        if (!fabric::FabricSnapshot::translates_here(vpc)) continue;
        nat::VpcNatConfig config;
        config.vni = vpc.vni;
        config.nat_address = vpc.nat->address;
        config.port_min = vpc.nat->port_min;
        config.port_max = vpc.nat->port_max;
        for (const fabric::NatForward& f : vpc.nat->forwards)
            config.forwards.push_back(nat::PortForward{
                f.protocol == fabric::NatProtocol::udp ? nat::Protocol::udp : nat::Protocol::tcp, f.nat_port,
                f.endpoint_ip, f.endpoint_port});
        vpcs.push_back(std::move(config));
    }
    return std::make_shared<const nat::NatRules>(std::move(vpcs));
}

NatPipeline::NatPipeline(Pipeline& pipeline, nat::NatEngine* nat, UplinkConfig uplink)
    : pipeline_(pipeline),
      nat_(nat),
      uplink_(uplink),
      scratch_(kScratchSize),
      error_scratch_(gateway::max_icmpv4_error_frame(kEthernet)) {}

void NatPipeline::sync_rules(const fabric::FabricSnapshot& fabric) {
    if (&fabric == rules_snapshot_ && fabric.generation() == rules_generation_) return;
    rules_snapshot_ = &fabric;
    rules_generation_ = fabric.generation();
    // The port table may have changed with it (Pipeline::set_ports).
    uplink_port_ = uplink_.port != kNoPort ? uplink_.port : find_uplink_port(pipeline_.config());
    if (nat_ == nullptr) return;
    try {
        nat_->set_rules(nat_rules_for(fabric));
        ++counters_.rules_installed;
    } catch (const std::invalid_argument&) {
        // Fabric validation should have refused such a file; the old rules stay.
        ++counters_.rules_rejected;
    }
}

std::size_t NatPipeline::on_reload(const fabric::FabricDiff& diff) {
    if (nat_ == nullptr) return 0;
    std::size_t expired = 0;
    for (const fabric::Endpoint& endpoint : diff.endpoints_removed) expired += nat_->expire_endpoint(endpoint.vni, endpoint.ip);
    counters_.endpoint_flows_expired += expired;
    return expired;
}

void NatPipeline::stage_drop(NatStageDrop why, NatFrameResult& result) noexcept {
    result.verdict = Verdict::drop;
    result.stage_drop = why;
    counters_.count_drop(why);
}

bool NatPipeline::locate(const FrameResult& pipeline_result, wire::ByteSpan bytes, const PacketBuffer* input,
                         std::int32_t input_index, NatFrame& out, NatFrameResult& result) noexcept {
    const NatRequest& request = pipeline_result.nat;
    if (nat_ == nullptr) {
        stage_drop(NatStageDrop::no_nat_engine, result);
        return false;
    }
    if (std::size_t{request.frame_offset} + request.frame_length > bytes.size()) {
        stage_drop(NatStageDrop::not_ipv4, result);
        return false;
    }
    const std::uint8_t* frame = bytes.data() + request.frame_offset;
    const std::uint32_t l3 = ipv4_header_offset(frame, request.frame_length);
    if (l3 == 0) {
        stage_drop(NatStageDrop::not_ipv4, result);
        return false;
    }
    out.ip_length = trimmed_ipv4_length(frame + l3, request.frame_length - l3);
    out.input = input;
    out.input_index = input_index;
    if (input != nullptr) {
        out.ip = input->data() + request.frame_offset + l3;  // l3 >= 14: room for the new header
    } else {
        out.ip = scratch_.data() + kEthernet;
        std::memcpy(out.ip, frame + l3, out.ip_length);
    }
    return true;
}

void NatPipeline::finish(const NatFrame& frame, const nat::NatResult& translated, bool inbound,
                         const fabric::FabricSnapshot& fabric, FrameSink& sink, NatFrameResult& result,
                         nat::TimePoint now) {
    if (!translated.translated()) {
        result.verdict = Verdict::drop;
        result.nat_drop = translated.drop;
        counters_.count_nat_drop(translated.drop);
        return;
    }
    if (translated.to_tenant) return to_tenant(frame, translated, inbound, fabric, sink, result, now);
    to_uplink(frame, sink, result);
}

void NatPipeline::to_uplink(const NatFrame& frame, FrameSink& sink, NatFrameResult& result) noexcept {
    if (uplink_port_ == kNoPort) return stage_drop(NatStageDrop::no_uplink_port, result);
    if (!uplink_.next_hop_mac) return stage_drop(NatStageDrop::no_uplink_next_hop, result);
    std::uint8_t* start = frame.ip - kEthernet;
    const std::uint32_t length = kEthernet + frame.ip_length;
    const auto no_buffer = [&](DropReason why) {
        result.verdict = Verdict::drop;
        result.drop_reason = why;
        ++counters_.drop_no_tx_buffer;
    };
    if (frame.input != nullptr) {
        if (sink.free_slots() == 0) return no_buffer(DropReason::no_tx_buffer);
        write_ethernet(start, *uplink_.next_hop_mac, uplink_.mac);
        const PacketBuffer* in = frame.input;
        sink.emit_input(uplink_port_,
                        PacketBuffer{in->chunk, in->size, static_cast<std::uint32_t>(start - in->chunk), length},
                        frame.input_index);
    } else {
        if (!sink.can_emit_spares(1)) return no_buffer(DropReason::no_tx_buffer);
        PacketBuffer out = sink.peek_spare();
        if (out.capacity() < length) return no_buffer(DropReason::tx_buffer_too_small);
        write_ethernet(start, *uplink_.next_hop_mac, uplink_.mac);
        std::memcpy(out.data(), start, length);
        out.length = length;
        sink.emit_spare(uplink_port_, out);
    }
    ++counters_.to_uplink;
    result.verdict = Verdict::forward;
    result.path = NatPath::to_uplink;
    result.emissions = 1;
}

void NatPipeline::to_tenant(const NatFrame& frame, const nat::NatResult& translated, bool inbound,
                            const fabric::FabricSnapshot& fabric, FrameSink& sink, NatFrameResult& result,
                            nat::TimePoint now) {
    // As if the VPC's gateway had routed it in; route_from_nat sets the endpoint's MAC again.
    const fabric::Vpc* vpc = fabric.find_vpc(translated.vni);
    const fabric::Endpoint* endpoint = fabric.find_endpoint(translated.vni, translated.tenant);
    const wire::MacAddress gateway_mac = vpc != nullptr ? vpc->gateway_mac : fabric::kDefaultGatewayMac;
    std::uint8_t* start = frame.ip - kEthernet;
    write_ethernet(start, endpoint != nullptr ? endpoint->mac : gateway_mac, gateway_mac);
    const wire::ByteSpan routed_frame(start, kEthernet + frame.ip_length);
    if (inbound) {
        // (A hairpinned packet's sender is a tenant behind the NAT address: not answered here.)
        const std::size_t error = pipeline_.frag_needed_for_nat(translated.vni, routed_frame, fabric, error_scratch_);
        if (error != 0) return frag_needed_to_uplink(translated.vni, error, sink, result, now);
    }
    ++counters_.to_tenant;
    const FrameResult routed = pipeline_.route_from_nat(translated.vni, routed_frame, fabric, sink);
    copy_pipeline_result(routed, result);
    result.path = NatPath::to_tenant;
}

void NatPipeline::frag_needed_to_uplink(std::uint32_t vni, std::size_t length, FrameSink& sink, NatFrameResult& result,
                                        nat::TimePoint now) {
    // The error goes from the VPC's gateway to the outside sender and quotes the translated packet
    // (sender -> endpoint); NAT makes it come from the NAT address and quote what was sent.
    NatFrame error;
    error.ip = error_scratch_.data() + kEthernet;
    error.ip_length = static_cast<std::uint32_t>(length - kEthernet);
    nat::NatResult translated;
    nat_->outbound(vni, wire::MutableByteSpan(error.ip, error.ip_length), now, translated);
    if (!translated.translated() || translated.to_tenant) {
        result.verdict = Verdict::drop;
        result.nat_drop = translated.translated() ? nat::DropReason::icmp_error_no_flow : translated.drop;
        counters_.count_nat_drop(result.nat_drop);
        return;
    }
    to_uplink(error, sink, result);
    if (result.verdict == Verdict::forward) result.verdict = Verdict::reply;
}

NatFrameResult NatPipeline::handle_one(const FrameResult& pipeline_result, wire::ByteSpan bytes,
                                       const PacketBuffer* input, const fabric::FabricSnapshot& fabric,
                                       FrameSink& sink, nat::TimePoint now) {
    NatFrameResult result;
    if (pipeline_result.verdict != Verdict::to_nat) {
        copy_pipeline_result(pipeline_result, result);
        return result;
    }
    NatFrame frame;
    if (!locate(pipeline_result, bytes, input, 0, frame, result)) return result;
    const wire::MutableByteSpan ip(frame.ip, frame.ip_length);
    nat::NatResult translated;
    if (pipeline_result.nat.direction == NatDirection::outbound)
        nat_->outbound(pipeline_result.nat.vni, ip, now, translated);
    else
        nat_->inbound(ip, now, translated);
    finish(frame, translated, pipeline_result.nat.direction == NatDirection::inbound, fabric, sink, result, now);
    return result;
}

NatFrameResult NatPipeline::process(PortId port, wire::ByteSpan frame, const fabric::FabricSnapshot& fabric,
                                    FrameSink& sink, nat::TimePoint now) {
    sync_rules(fabric);
    const FrameResult first = pipeline_.process(port, frame, fabric, sink);
    return handle_one(first, frame, nullptr, fabric, sink, now);
}

NatFrameResult NatPipeline::process_in_place(PortId port, const PacketBuffer& frame,
                                             const fabric::FabricSnapshot& fabric, FrameSink& sink,
                                             nat::TimePoint now) {
    sync_rules(fabric);
    const FrameResult first = pipeline_.process_in_place(port, frame, fabric, sink);
    return handle_one(first, wire::ByteSpan(frame.data(), frame.length), &frame, fabric, sink, now);
}

std::size_t NatPipeline::process_batch(std::span<const RxFrame> frames, const fabric::FabricSnapshot& fabric,
                                       FrameSink& sink, std::span<NatFrameResult> results, nat::TimePoint now) {
    sync_rules(fabric);
    const std::size_t count = std::min({frames.size(), results.size(), kMaxBatch});
    pipeline_.process_batch(frames.first(count), fabric, sink, std::span(pipeline_results_.data(), count));
    std::size_t burst = 0;
    for (std::size_t i = 0; i < count; ++i) {
        NatFrameResult& result = results[i];
        result = NatFrameResult{};
        const FrameResult& first = pipeline_results_[i];
        if (first.verdict != Verdict::to_nat) {
            copy_pipeline_result(first, result);
            continue;
        }
        const PacketBuffer& buffer = frames[i].buffer;
        NatFrame& frame = burst_frames_[burst];
        if (!locate(first, wire::ByteSpan(buffer.data(), buffer.length), &buffer, static_cast<std::int32_t>(i), frame,
                    result))
            continue;
        burst_[burst] = nat::NatBurstPacket{wire::MutableByteSpan(frame.ip, frame.ip_length),
                                            first.nat.direction == NatDirection::outbound, first.nat.vni, {}};
        burst_index_[burst++] = static_cast<std::uint32_t>(i);
    }
    if (burst == 0) return count;
    nat_->translate_burst(std::span(burst_.data(), burst), now);
    for (std::size_t k = 0; k < burst; ++k)
        finish(burst_frames_[k], burst_[k].result, !burst_[k].outbound, fabric, sink, results[burst_index_[k]], now);
    return count;
}

}  // namespace andromeda::dataplane
