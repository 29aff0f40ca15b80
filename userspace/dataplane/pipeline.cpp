// Entry points: snapshot-derived state, dispatch by port role, batches, counters.
#include "dataplane/pipeline.hpp"

#include <algorithm>
#include <utility>

namespace andromeda::dataplane {


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
    FrameResult result;
    const detail::PortState* port = state_.port(input.port);
    if (port != nullptr && config_.fast_path) {
        const bool handled = port->role == PortRole::tenant     ? fast_tenant(*port, input, sink, result)
                             : port->role == PortRole::underlay ? fast_underlay(input, sink, result)
                                                                : false;
        if (handled) return result;  // counted there
    }
    Action action;
    decide(port, input, action);
    execute(action, input, sink, result);
    count(result);
    return result;
}

void Pipeline::decide(const detail::PortState* port, const Input& input, Action& a) {
    if (port == nullptr) return a.drop(DropReason::unknown_port);
    switch (port->role) {
        case PortRole::tenant:
            ++counters_.rx_tenant;
            return decide_tenant(*port, input, a);
        case PortRole::underlay:
            ++counters_.rx_underlay;
            return decide_underlay(input, a);
        case PortRole::uplink:
            ++counters_.rx_uplink;
            return decide_uplink(input, a);
    }
}

FrameResult Pipeline::route_from_nat(std::uint32_t vni, wire::ByteSpan frame, const fabric::FabricSnapshot& fabric,
                                     FrameSink& sink) {
    prepare(fabric);
    ++counters_.rx_from_nat;
    const Input input{frame, nullptr, -1, kNoPort};
    FrameResult result;
    Action action;
    const fabric::Vpc* vpc = fabric.find_vpc(vni);
    const auto ethernet = wire::EthernetView::parse(frame);
    const auto ip = ethernet && ethernet->ethertype() == wire::ethertype::kIpv4 ? wire::Ipv4View::parse(ethernet->payload())
                                                                               : wire::Parsed<wire::Ipv4View>(wire::ParseError::None);
    if (vpc == nullptr) {
        action.drop(DropReason::unknown_vni);
    } else if (!ethernet) {
        action.drop(DropReason::malformed_ethernet);
    } else if (ethernet->ethertype() != wire::ethertype::kIpv4) {
        action.drop(DropReason::unsupported_ethertype);
    } else if (!ip) {
        action.drop(DropReason::malformed_ipv4);
    } else if (!ip->checksum_valid()) {
        action.drop(DropReason::bad_ipv4_checksum);
    } else {
        const auto vpc_index = static_cast<std::uint32_t>(vpc - fabric.vpcs().data());
        route_ipv4(state_.vpc(vpc_index), vpc_index, *ethernet, *ip, input, Origin::nat, action);
    }
    execute(action, input, sink, result);
    count(result);
    return result;
}

void Pipeline::count(const FrameResult& result) noexcept {
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
}

}  // namespace andromeda::dataplane
