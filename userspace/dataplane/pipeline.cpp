// Entry points: snapshot-derived state, dispatch by port role, batches, counters.
#include "dataplane/pipeline.hpp"

#include <algorithm>
#include <utility>

namespace andromeda::dataplane {

using detail::Action;
using detail::ActionKind;

Pipeline::Pipeline(PipelineConfig config)
    : config_(std::move(config)), icmp_limiter_(config_.icmp_error_rate, config_.clock) {}

void Pipeline::set_next_hop(wire::Ipv4Address node_address, const wire::MacAddress& mac) {
    auto it = std::find_if(config_.next_hops.begin(), config_.next_hops.end(),
                           [&](const NextHop& hop) { return hop.node_address == node_address; });
    if (it != config_.next_hops.end())
        it->mac = mac;
    else
        config_.next_hops.push_back(NextHop{node_address, mac});
    state_.invalidate();
}

void Pipeline::set_ports(std::vector<PortBinding> ports) {
    config_.ports = std::move(ports);
    state_.invalidate();
}

void Pipeline::prepare(const fabric::FabricSnapshot& fabric) {
    fabric_ = &fabric;
    if (state_.is_current(fabric)) return;
    state_.rebuild(fabric, config_);
    ++counters_.fabric_rebuilds;
}

FrameResult Pipeline::process(PortId port, wire::ByteSpan frame, const fabric::FabricSnapshot& fabric,
                              FrameSink& sink) {
    prepare(fabric);
    return process_one(Input{frame, nullptr, -1, port}, sink);
}

FrameResult Pipeline::process_in_place(PortId port, const PacketBuffer& frame, const fabric::FabricSnapshot& fabric,
                                       FrameSink& sink) {
    prepare(fabric);
    return process_one(Input{wire::ByteSpan(frame.data(), frame.length), &frame, 0, port}, sink);
}

std::size_t Pipeline::process_batch(std::span<const RxFrame> frames, const fabric::FabricSnapshot& fabric,
                                    FrameSink& sink, std::span<FrameResult> results) {
    prepare(fabric);
    const std::size_t count = std::min({frames.size(), results.size(), kMaxBatch});
    for (std::size_t i = 0; i < count; ++i) {
        // The next frame's headers are what the next iteration reads first.
        if (i + 1 < count) __builtin_prefetch(frames[i + 1].buffer.data());
        const RxFrame& rx = frames[i];
        results[i] = process_one(
            Input{wire::ByteSpan(rx.buffer.data(), rx.buffer.length), &rx.buffer, static_cast<std::int32_t>(i), rx.port},
            sink);
    }
    return count;
}

FrameResult Pipeline::process_one(const Input& input, FrameSink& sink) {
    const detail::PortState* port = state_.port(input.port);
    if (port == nullptr) return finish(FrameResult{Verdict::drop, DropReason::unknown_port, 0, {}});
    Action action;
    switch (port->role) {
        case PortRole::tenant:
            ++counters_.rx_tenant;
            action = decide_tenant(*port, input);
            break;
        case PortRole::underlay:
            ++counters_.rx_underlay;
            action = decide_underlay(input);
            break;
        case PortRole::uplink:
            ++counters_.rx_uplink;
            action = decide_uplink(input);
            break;
    }
    return finish(execute(action, input, sink));
}

FrameResult Pipeline::route_from_nat(std::uint32_t vni, wire::ByteSpan frame, const fabric::FabricSnapshot& fabric,
                                     FrameSink& sink) {
    prepare(fabric);
    ++counters_.rx_from_nat;
    const Input input{frame, nullptr, -1, kNoPort};
    const auto drop = [&](DropReason reason) {
        return finish(FrameResult{Verdict::drop, reason, 0, {}});
    };
    const fabric::Vpc* vpc = fabric.find_vpc(vni);
    if (vpc == nullptr) return drop(DropReason::unknown_vni);
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet) return drop(DropReason::malformed_ethernet);
    if (ethernet->ethertype() != wire::ethertype::kIpv4) return drop(DropReason::unsupported_ethertype);
    const auto ip = wire::Ipv4View::parse(ethernet->payload());
    if (!ip) return drop(DropReason::malformed_ipv4);
    if (!ip->checksum_valid()) return drop(DropReason::bad_ipv4_checksum);
    const auto vpc_index = static_cast<std::uint32_t>(vpc - fabric.vpcs().data());
    return finish(execute(route_ipv4(state_.vpc(vpc_index), vpc_index, *ethernet, *ip, input, Origin::nat), input, sink));
}

FrameResult Pipeline::finish(FrameResult result) noexcept {
    switch (result.verdict) {
        case Verdict::forward: ++counters_.forwarded; break;
        case Verdict::deliver: ++counters_.delivered; break;
        case Verdict::reply: ++counters_.replied; break;
        case Verdict::to_nat: ++counters_.to_nat; break;
        case Verdict::drop:
            ++counters_.dropped;
            if (std::uint64_t* c = drop_counter(counters_.drops, result.drop_reason)) ++*c;
            break;
    }
    return result;
}

}  // namespace andromeda::dataplane
