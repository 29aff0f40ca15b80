#include "daemon/conntrack_query.hpp"

#include <algorithm>
#include <array>
#include <tuple>

namespace andromeda::daemon {

namespace {

constexpr std::array kStates = {nat::FlowState::tcp_syn_sent,    nat::FlowState::tcp_syn_received,
                                nat::FlowState::tcp_established, nat::FlowState::tcp_fin_wait,
                                nat::FlowState::tcp_closing,     nat::FlowState::tcp_reset,
                                nat::FlowState::unreplied,       nat::FlowState::replied};
constexpr std::array kProtocols = {nat::Protocol::tcp, nat::Protocol::udp, nat::Protocol::icmp};

template <class Enum, std::size_t N>
std::string names_of(const std::array<Enum, N>& values) {
    std::string out;
    for (const Enum v : values) out += (out.empty() ? "" : ", ") + std::string(nat::to_string(v));
    return out;
}

template <class Enum, std::size_t N>
std::optional<Enum> find_named(const std::array<Enum, N>& values, const std::string& name) {
    for (const Enum v : values)
        if (nat::to_string(v) == name) return v;
    return std::nullopt;
}

// The filters as values; std::nullopt where the query sets none.
struct Filter {
    std::optional<wire::Ipv4Address> address;
    std::optional<std::uint16_t> port;
    std::optional<nat::FlowState> state;
    std::optional<nat::Protocol> protocol;

    [[nodiscard]] bool matches(const nat::FlowInfo& f) const {
        const auto side = [&](wire::Ipv4Address a, std::uint16_t p) {
            return (!address || a == *address) && (!port || p == *port);
        };
        const auto on = [&](const nat::FlowEndpoints& e) {
            return side(e.source, e.source_port) || side(e.destination, e.destination_port);
        };
        if (state && f.state != *state) return false;
        if (protocol && f.protocol != *protocol) return false;
        // Address and port on the same end of a tuple: "10.0.0.10 port 80" is that host's port 80.
        return on(f.original) || on(f.translated);
    }
};

auto sort_key(const nat::FlowInfo& f) {
    return std::tuple(f.vni, f.protocol, f.original.source, f.original.source_port, f.original.destination,
                      f.original.destination_port);
}

control::FlowTuple tuple_of(const nat::FlowEndpoints& e) {
    return {e.source.to_string(), e.source_port, e.destination.to_string(), e.destination_port};
}

double seconds(nat::Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

std::variant<control::ConntrackReply, std::string> select_flows(std::vector<nat::FlowInfo> flows,
                                                                const control::ConntrackQuery& query) {
    Filter filter;
    if (query.address) {
        filter.address = wire::Ipv4Address::parse(*query.address);
        if (!filter.address) return "address \"" + *query.address + "\" is not an IPv4 address (e.g. 10.0.0.10)";
    }
    filter.port = query.port;
    if (query.state) {
        filter.state = find_named(kStates, *query.state);
        if (!filter.state) return "state \"" + *query.state + "\" is none of " + names_of(kStates);
    }
    if (query.protocol) {
        filter.protocol = find_named(kProtocols, *query.protocol);
        if (!filter.protocol) return "protocol \"" + *query.protocol + "\" is none of " + names_of(kProtocols);
    }
    control::ConntrackReply reply;
    reply.nat_gateway = true;
    reply.in_table = flows.size();
    reply.offset = query.offset;
    reply.limit = std::clamp<std::uint64_t>(query.limit, 1, control::kConntrackMaxLimit);
    const auto kept =
        std::remove_if(flows.begin(), flows.end(), [&](const nat::FlowInfo& f) { return !filter.matches(f); });
    flows.erase(kept, flows.end());
    reply.total = flows.size();
    // A stable order, so that --offset pages through the same sequence while flows come and go.
    std::sort(flows.begin(), flows.end(), [](const auto& a, const auto& b) { return sort_key(a) < sort_key(b); });
    const std::size_t first = std::min<std::uint64_t>(query.offset, flows.size());
    const std::size_t last = first + std::min<std::uint64_t>(reply.limit, flows.size() - first);
    for (std::size_t i = first; i < last; ++i) {
        const nat::FlowInfo& f = flows[i];
        reply.flows.push_back({f.vni, std::string(nat::to_string(f.protocol)), std::string(nat::to_string(f.origin)),
                               std::string(nat::to_string(f.state)), f.port_forward, tuple_of(f.original),
                               tuple_of(f.translated), seconds(f.age), seconds(f.expires_in), f.offloaded,
                               f.kernel_original.packets + f.kernel_reply.packets,
                               f.kernel_original.bytes + f.kernel_reply.bytes});
    }
    reply.count = reply.flows.size();
    return reply;
}

}  // namespace andromeda::daemon
