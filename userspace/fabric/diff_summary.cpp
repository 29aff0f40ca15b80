// FabricDiff::summary(): the text `andromedactl reload` prints.
#include "fabric/diff.hpp"

namespace andromeda::fabric {

namespace {

std::string describe(const Node& n) {
    std::string out = "node " + n.name + " " + (n.address ? n.address->to_string() : "(underlay address)");
    if (n.mac) out += " mac " + n.mac->to_string();
    return out + (n.is_local ? " (this node)" : "");
}

std::string describe(const Vpc& v) {
    std::string out = "vpc " + v.name + " (vni " + std::to_string(v.vni) + ", cidr";
    for (const auto& c : v.cidrs) {
        // Appended in two steps: `" " + string` trips gcc 12's -Wrestrict false positive at -O3.
        out += ' ';
        out += c.to_string();
    }
    if (v.ipv6_prefix) {
        out += ", ipv6 ";
        out += v.ipv6_prefix->to_string();
        if (v.ipv6_gateway) {
            out += " gateway ";
            out += v.ipv6_gateway->to_string();
        }
        if (!v.dns6.empty()) out += ", dns6 " + std::to_string(v.dns6.size());
        if (v.router_advertisements != gateway::RouterAdvertisementConfig{}) out += ", RA settings";
    }
    out += ", gateway " + v.gateway.to_string() + " " + v.gateway_mac.to_string() + ", mtu " + std::to_string(v.mtu);
    if (!v.fastpath) out += ", fastpath off";
    if (v.nat)
        out += ", nat " + v.nat->address.to_string() + " on " + v.nat->gateway_node + " ports " +
               std::to_string(v.nat->port_min) + "-" + std::to_string(v.nat->port_max);
    return out + ")";
}

std::string describe(const Endpoint& e) {
    std::string out = "endpoint vni " + std::to_string(e.vni) + " " + e.ip.to_string();
    if (e.ipv6) {
        out += ' ';
        out += e.ipv6->to_string();
    }
    out += " " + e.mac.to_string() + " on " + e.node;
    if (e.is_local) out += " port " + e.port;
    return out;
}

std::string describe(const NatForwardEntry& f) {
    return "nat forward vni " + std::to_string(f.vni) + " " + to_string(f.forward.protocol) + " " +
           f.nat_address.to_string() + ":" + std::to_string(f.forward.nat_port) + " -> " +
           f.forward.endpoint_ip.to_string() + ":" + std::to_string(f.forward.endpoint_port);
}

class SummaryWriter {
public:
    explicit SummaryWriter(std::size_t max_lines) : max_lines_(max_lines) {}

    template <class T>
    void items(char sign, const std::vector<T>& list) {
        for (std::size_t i = 0; i < list.size() && i < max_lines_; ++i) text_ += "  " + std::string(1, sign) + " " + describe(list[i]) + "\n";
        more(list.size());
    }
    template <class T>
    void changes(const std::vector<Change<T>>& list) {
        for (std::size_t i = 0; i < list.size() && i < max_lines_; ++i)
            text_ += "  ~ " + describe(list[i].before) + "\n    => " + describe(list[i].after) + "\n";
        more(list.size());
    }
    std::string& text() { return text_; }

private:
    void more(std::size_t count) {
        if (count > max_lines_) text_ += "    ... and " + std::to_string(count - max_lines_) + " more\n";
    }
    std::size_t max_lines_;
    std::string text_;
};

template <class A, class R, class C>
std::string counts(const char* what, const A& added, const R& removed, const C& changed) {
    return std::string(what) + " +" + std::to_string(added.size()) + " -" + std::to_string(removed.size()) + " ~" +
           std::to_string(changed.size());
}

}  // namespace

std::string FabricDiff::summary(std::size_t max_lines) const {
    if (empty()) return "no changes\n";
    SummaryWriter out(max_lines);
    out.text() = counts("nodes", nodes_added, nodes_removed, nodes_changed) + ", " +
                 counts("vpcs", vpcs_added, vpcs_removed, vpcs_changed) + ", " +
                 counts("endpoints", endpoints_added, endpoints_removed, endpoints_changed) + ", " +
                 counts("nat forwards", nat_forwards_added, nat_forwards_removed, nat_forwards_changed) + "\n";
    if (local_settings_changed)
        out.text() += "  ! [node] settings changed; they take effect when andromedad restarts\n";
    out.items('+', nodes_added);
    out.items('-', nodes_removed);
    out.changes(nodes_changed);
    out.items('+', vpcs_added);
    out.items('-', vpcs_removed);
    out.changes(vpcs_changed);
    out.items('+', endpoints_added);
    out.items('-', endpoints_removed);
    out.changes(endpoints_changed);
    out.items('+', nat_forwards_added);
    out.items('-', nat_forwards_removed);
    out.changes(nat_forwards_changed);
    return std::move(out.text());
}

}  // namespace andromeda::fabric
