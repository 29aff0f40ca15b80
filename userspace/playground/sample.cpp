#include "playground/sample.hpp"

#include <algorithm>
#include <stdexcept>

#include "fabric/loader.hpp"
#include "playground/fabric_view.hpp"
#include "playground/request.hpp"

namespace andromeda::playground {

namespace {

std::string_view trimmed(std::string_view line) {
    const auto first = line.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return {};
    return line.substr(first, line.find_last_not_of(" \t\r\n") - first + 1);
}

// The fixture's lines are tables, keys, comments and blank lines, one a line: its header for a
// table line ("[node.uplink]"), empty otherwise.
std::string_view header_of(std::string_view line) {
    const std::string_view t = trimmed(line);
    const std::size_t close = t.find(']');
    if (t.empty() || t.front() != '[' || close == std::string_view::npos) return {};
    return t.substr(0, close + (t.starts_with("[[") ? 2 : 1));
}
bool is_key(std::string_view line, std::string_view key) {
    const std::string_view t = trimmed(line);
    return t.starts_with(key) && trimmed(t.substr(key.size())).starts_with('=');
}

std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> lines;
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t end = std::min(text.find('\n', at), text.size() - 1) + 1;
        lines.push_back(text.substr(at, end - at));
        at = end;
    }
    return lines;
}

// [node] for `view`: the fixture's own, written for another node and encapsulation (its uplink
// only on a node that serves NAT).
std::string node_table(const fabric::FabricSnapshot& fixture, const SampleView& view) {
    const fabric::Node* node = fixture.find_node(view.node);
    std::string t = "[node]\nname = \"" + view.node + "\"\nunderlay = \"" + fixture.local().underlay + "\"\n";
    if (node != nullptr && node->address) t += "address = \"" + node->address->to_string() + "\"\n";
    if (view.encap != "andromeda") t += "encap = \"" + view.encap + "\"\n";
    bool nat = false;
    for (const auto& vpc : fixture.vpcs()) nat = nat || (vpc.nat && vpc.nat->gateway_node == view.node);
    if (nat && fixture.local().uplink)
        t += "\n[node.uplink]\ninterface = \"" + fixture.local().uplink->interface + "\"\n";
    return t;
}

// The VNIs of the view's VPCs, in file order: the first one `vni`, the others the fixture's, or
// the next VNI no earlier VPC has.
std::vector<std::uint32_t> view_vnis(const fabric::FabricSnapshot& fixture, std::uint32_t vni) {
    std::vector<std::uint32_t> vnis = {vni};
    for (std::size_t i = 1; i < fixture.vpcs().size(); ++i) {
        std::uint32_t v = fixture.vpcs()[i].vni;
        while (std::find(vnis.begin(), vnis.end(), v) != vnis.end()) ++v;
        vnis.push_back(v);
    }
    return vnis;
}

// The MAC the sample gives `view.node`'s own underlay NIC: the one the other nodes pin for it in
// [[nodes]]. The loader folds a node's own entry into [node], so it is read in another node's view.
wire::MacAddress own_underlay_mac(const SampleView& view) {
    for (const auto& other : sample_nodes()) {
        if (other == view.node) continue;
        const auto peers_view = load_fabric(sample_text({other, view.encap, view.vni}));
        if (const fabric::Node* node = peers_view->find_node(view.node)) return stand_in_mac(*node);
    }
    return stand_in_mac(*sample_snapshot().find_node(view.node));
}

}  // namespace

const fabric::FabricSnapshot& sample_snapshot() {
    static const std::shared_ptr<const fabric::FabricSnapshot> fixture = [] {
        fabric::LoadResult loaded = fabric::load_fabric_string(sample_fixture(), "sample_fabric.toml");
        if (!loaded.ok())
            throw std::logic_error("web/playground/sample_fabric.toml does not load:\n" +
                                   fabric::to_string(loaded.errors));
        if (loaded.snapshot->vpcs().empty()) throw std::logic_error("web/playground/sample_fabric.toml has no VPC");
        return loaded.snapshot;
    }();
    return *fixture;
}

SampleView default_view() {
    const fabric::FabricSnapshot& fixture = sample_snapshot();
    return {fixture.local().name, std::string(overlay::to_string(fixture.local().encap)), fixture.vpcs().front().vni};
}

std::vector<std::string> sample_nodes() {
    std::vector<std::string> names;
    for (const auto& node : sample_snapshot().nodes()) names.push_back(node.name);
    return names;
}

std::string sample_text(const SampleView& view) {
    const fabric::FabricSnapshot& fixture = sample_snapshot();
    if (fixture.find_node(view.node) == nullptr)
        throw RequestError("request.node: '" + view.node + "' is no node of the sample");
    const std::vector<std::string_view> lines = lines_of(sample_fixture());
    // [node] runs from its header to its last key or sub-table ([node.uplink]); the comments and
    // blank lines before the next table are the next table's.
    std::size_t node_first = lines.size(), node_last = lines.size();
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const std::string_view header = header_of(lines[i]);
        if (node_first == lines.size()) {
            if (header == "[node]") node_first = node_last = i;
            continue;
        }
        if (!header.empty() && !header.starts_with("[node.")) break;
        const std::string_view t = trimmed(lines[i]);
        if (!t.empty() && t.front() != '#') node_last = i;
    }
    if (node_first == lines.size()) throw std::logic_error("web/playground/sample_fabric.toml has no [node]");
    const std::vector<std::uint32_t> vnis = view_vnis(fixture, view.vni);
    std::string text;
    std::size_t vpc = 0;
    bool in_vpc = false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (i == node_first) text += node_table(fixture, view);
        if (i >= node_first && i <= node_last) continue;
        const std::string_view header = header_of(lines[i]);
        if (!header.empty()) {
            in_vpc = header == "[[vpc]]";
            vpc += in_vpc ? 1 : 0;
        }
        if (in_vpc && is_key(lines[i], "vni") && vpc <= vnis.size())
            text += "vni = " + std::to_string(vnis[vpc - 1]) + "\n";
        else
            text += lines[i];
    }
    return text;
}

nlohmann::json answer_sample(const nlohmann::json& request) {
    const SampleView fallback = default_view();
    const SampleView view{
        string_field_or(request, "node", "request", fallback.node),
        string_field_or(request, "encap", "request", fallback.encap),
        static_cast<std::uint32_t>(number_field(request, "vni", "request", 1, fabric::kMaxVni - 1, fallback.vni))};
    const std::vector<std::string> nodes = sample_nodes();
    if (std::find(nodes.begin(), nodes.end(), view.node) == nodes.end()) {
        std::string names;
        for (const auto& n : nodes) names += (names.empty() ? "" : ", ") + n;
        throw RequestError("request.node: '" + view.node + "' is not one of " + names);
    }
    if (view.encap != "andromeda" && view.encap != "vxlan")
        throw RequestError("request.encap: '" + view.encap + "' is not andromeda or vxlan");
    const wire::MacAddress underlay_mac = own_underlay_mac(view);
    std::string text = sample_text(view);
    // Loaded last, so the page's next request (with this text) finds it loaded.
    const auto snapshot = load_fabric(text);
    return {{"ok", true},        {"fabric", std::move(text)},
            {"nodes", nodes},    {"underlay_mac", underlay_mac.to_string()},
            {"node", view.node}, {"encap", view.encap},
            {"vni", view.vni},   {"vni_vpc", snapshot->vpcs().front().name}};
}

}  // namespace andromeda::playground
