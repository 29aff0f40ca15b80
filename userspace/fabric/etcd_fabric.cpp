#include "fabric/etcd_fabric.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <unordered_set>
#include <nlohmann/json.hpp>

#include "fabric/decode.hpp"
#include "fabric/toml_tree.hpp"
#include "wire/addresses.hpp"

namespace andromeda::fabric {

namespace {

using detail::TomlMember;
using detail::TomlNode;
using Kind = TomlNode::Kind;
using nlohmann::json;

// Lines from here on name etcd keys (entry i has line kKeyLine + i); below are node.toml's.
constexpr std::uint32_t kKeyLine = 1u << 30;

TomlNode node_of(const json& value, std::uint32_t line) {
    TomlNode n;
    n.line = line;
    switch (value.type()) {
        case json::value_t::object:
            n.kind = Kind::table;
            for (const auto& [k, v] : value.items()) n.members.push_back({k, node_of(v, line)});
            break;
        case json::value_t::array:
            n.kind = Kind::array;
            for (const json& item : value) n.items.push_back(node_of(item, line));
            break;
        case json::value_t::string:
            n.kind = Kind::string;
            n.text = value.get<std::string>();
            break;
        case json::value_t::boolean:
            n.kind = Kind::boolean;
            n.boolean = value.get<bool>();
            break;
        case json::value_t::number_integer:
            n.kind = Kind::integer;
            n.integer = value.get<std::int64_t>();
            break;
        case json::value_t::number_unsigned:
            n.kind = value.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX) ? Kind::integer : Kind::other;
            n.integer = static_cast<std::int64_t>(value.get<std::uint64_t>());
            n.text = "integer out of range";
            break;
        default:  // float, null, binary: the decoder says what it expected instead
            n.kind = Kind::other;
            n.text = value.is_null() ? "null" : "float";
            break;
    }
    return n;
}

json json_of(const TomlNode& n) {
    switch (n.kind) {
        case Kind::table: {
            json out = json::object();
            for (const TomlMember& m : n.members) out[m.first] = json_of(m.second);
            return out;
        }
        case Kind::array: {
            json out = json::array();
            for (const TomlNode& item : n.items) out.push_back(json_of(item));
            return out;
        }
        case Kind::string: return n.text;
        case Kind::integer: return n.integer;
        case Kind::boolean: return n.boolean;
        case Kind::other: break;
    }
    return nullptr;
}

struct Entry {
    std::string key;
    EtcdLayout::Key what;
    TomlNode value;
    std::string parse_reject;  // why its value alone is unusable (parsed once per value)
    std::optional<std::string> encap;  // a node's "encap", checked against this node's at build
    std::string rejected;      // per build: why it is left out; empty while it is in
};

// The field a key names: the value may leave it out (the key gives it) or must agree.
std::string fill_name(TomlNode& value, const char* field, const std::string& from_key) {
    if (TomlNode* given = value.find(field)) {
        if (given->kind != Kind::string || given->text != from_key)
            return std::string("its \"") + field + "\" (" + (given->kind == Kind::string ? given->text : "not a string") +
                   ") is not the one its key names (" + from_key + "); make them agree";
        return "";
    }
    TomlNode name;
    name.kind = Kind::string;
    name.text = from_key;
    value.members.reserve(value.members.size() + 1);  // kept for every key: no room to spare
    value.members.insert(value.members.begin(), {field, std::move(name)});
    return "";
}

// Parses one value and checks it against its key; what fails is rejected before decoding.
Entry parse_entry(const std::string& key, const std::string& text, const EtcdLayout& layout) {
    Entry e{key, layout.parse(key), {}, "", std::nullopt, ""};
    if (e.what.kind == EtcdLayout::Kind::unknown) {
        e.parse_reject = "not a key of the fabric's layout (" + layout.root() + "nodes/NAME, vpcs/NAME or endpoints/VPC/IP)";
        return e;
    }
    const json value = json::parse(text, nullptr, false);
    if (value.is_discarded() || !value.is_object()) {
        e.parse_reject = value.is_discarded() ? "its value is not JSON" : "its value is not a JSON object";
        return e;
    }
    e.value = node_of(value, 0);
    switch (e.what.kind) {
        case EtcdLayout::Kind::node: {
            e.parse_reject = fill_name(e.value, "name", e.what.name);
            auto& members = e.value.members;
            const auto encap = std::find_if(members.begin(), members.end(), [](const TomlMember& m) { return m.first == "encap"; });
            if (encap != members.end()) {
                e.encap = encap->second.kind == Kind::string ? encap->second.text : "not a string";
                members.erase(encap);
            }
            // What a daemon says of itself for people (`fabric get`): its own underlay MAC. Not the
            // next hop ("mac" pins that), which on a routed underlay is a router's.
            const auto own_mac =
                std::find_if(members.begin(), members.end(), [](const TomlMember& m) { return m.first == "underlay_mac"; });
            if (own_mac != members.end()) {
                if (e.parse_reject.empty() && (own_mac->second.kind != Kind::string || !wire::MacAddress::parse(own_mac->second.text)))
                    e.parse_reject = "underlay_mac: not a MAC address";
                members.erase(own_mac);
            }
            break;
        }
        case EtcdLayout::Kind::vpc:
            e.parse_reject = fill_name(e.value, "name", e.what.name);
            if (e.parse_reject.empty() && e.value.find("endpoint") != nullptr)
                e.parse_reject = "a VPC's value has no \"endpoint\" list: each endpoint is a key of its own under " + layout.root() +
                                 "endpoints/" + e.what.name + "/";
            break;
        case EtcdLayout::Kind::endpoint: e.parse_reject = fill_name(e.value, "ip", e.what.name); break;
        case EtcdLayout::Kind::unknown: break;
    }
    return e;
}

void stamp(TomlNode& n, std::uint32_t line) {
    n.line = line;
    for (TomlMember& m : n.members) stamp(m.second, line);
    for (TomlNode& item : n.items) stamp(item, line);
}

// node.toml's tree with the accepted entries moved in as [[nodes]] and [[vpc]] (endpoints under
// their VPC); endpoints whose VPC is not in are rejected on the way. restore() moves them back.
struct Composed {
    TomlNode root;
    std::vector<Entry*> nodes;
    std::vector<Entry*> vpcs;
    std::vector<std::vector<Entry*>> endpoints;  // per VPC, in order

    void restore() {
        TomlNode* node_list = root.find("nodes");
        for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i]->value = std::move(node_list->items[i]);
        TomlNode* vpc_list = root.find("vpc");
        for (std::size_t v = 0; v < vpcs.size(); ++v) {
            TomlNode& table = vpc_list->items[v];
            if (TomlNode* list = table.find("endpoint"))
                for (std::size_t k = 0; k < endpoints[v].size(); ++k) endpoints[v][k]->value = std::move(list->items[k]);
            std::erase_if(table.members, [](const TomlMember& m) { return m.first == "endpoint"; });
            vpcs[v]->value = std::move(table);
        }
    }
};

// node.toml's own part of its tree (no [etcd], [[nodes]] or [[vpc]]), for the entries to join.
TomlNode own_part(const TomlNode& local) {
    TomlNode root = local;
    std::erase_if(root.members, [](const TomlMember& m) { return m.first == "etcd" || m.first == "nodes" || m.first == "vpc"; });
    return root;
}

Composed compose(const TomlNode& local, const std::vector<Entry*>& entries, const EtcdLayout& layout) {
    Composed c;
    c.root = own_part(local);
    std::map<std::string_view, std::size_t> vpc_index;
    for (Entry* e : entries) {
        if (!e->rejected.empty()) continue;
        if (e->what.kind == EtcdLayout::Kind::node) c.nodes.push_back(e);
        if (e->what.kind == EtcdLayout::Kind::vpc) {
            vpc_index[e->what.name] = c.vpcs.size();
            c.vpcs.push_back(e);
        }
    }
    c.endpoints.resize(c.vpcs.size());
    for (Entry* e : entries) {
        if (!e->rejected.empty() || e->what.kind != EtcdLayout::Kind::endpoint) continue;
        const auto vpc = vpc_index.find(e->what.vpc);
        if (vpc == vpc_index.end()) {
            e->rejected = "its VPC " + e->what.vpc + " is not in the fabric (no valid key " + layout.vpc_key(e->what.vpc) + ")";
            continue;
        }
        c.endpoints[vpc->second].push_back(e);
    }
    TomlNode nodes;
    nodes.kind = Kind::array;
    for (Entry* e : c.nodes) nodes.items.push_back(std::move(e->value));
    TomlNode vpcs;
    vpcs.kind = Kind::array;
    for (std::size_t v = 0; v < c.vpcs.size(); ++v) {
        TomlNode table = std::move(c.vpcs[v]->value);
        if (!c.endpoints[v].empty()) {
            TomlNode list;
            list.kind = Kind::array;
            list.line = table.line;
            list.items.reserve(c.endpoints[v].size());
            for (Entry* e : c.endpoints[v]) list.items.push_back(std::move(e->value));
            table.members.push_back({"endpoint", std::move(list)});
        }
        vpcs.items.push_back(std::move(table));
    }
    // Always both (possibly empty), so restore() finds them.
    c.root.members.push_back({"nodes", std::move(nodes)});
    c.root.members.push_back({"vpc", std::move(vpcs)});
    return c;
}

std::string reason_of(const ValidationError& error, const std::vector<Entry*>& entries) {
    std::string field = error.key;
    if (const auto bracket = field.rfind(']'); bracket != std::string::npos)
        field = bracket + 2 <= field.size() ? field.substr(bracket + 2) : "";
    std::string text = field.empty() ? error.problem : field + ": " + error.problem;
    if (!error.expected.empty()) text += "; " + error.expected;
    // "(line 1073741837)" about another entry: that entry's key instead.
    for (std::size_t at = text.find("line "); at != std::string::npos; at = text.find("line ", at + 1)) {
        std::size_t end = at + 5;
        while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
        if (end == at + 5 || end - at - 5 > 10) continue;
        const std::uint64_t line = std::stoull(text.substr(at + 5, end - at - 5));
        if (line < kKeyLine || line - kKeyLine >= entries.size()) continue;
        const std::string key = "key " + entries[line - kKeyLine]->key;
        text.replace(at, end - at, key);
        at += key.size() - 1;
    }
    return text;
}

}  // namespace

EtcdLayout::Key EtcdLayout::parse(std::string_view key) const {
    Key out;
    if (key.substr(0, root_.size()) != root_) return out;
    const std::string_view rest = key.substr(root_.size());
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) return out;
    const std::string_view kind = rest.substr(0, slash);
    const std::string_view tail = rest.substr(slash + 1);
    if (tail.empty()) return out;
    if (kind == "nodes" || kind == "vpcs") {
        if (tail.find('/') != std::string_view::npos) return out;
        out.kind = kind == "nodes" ? Kind::node : Kind::vpc;
        out.name = std::string(tail);
    } else if (kind == "endpoints") {
        const auto second = tail.find('/');
        if (second == std::string_view::npos || second == 0 || second + 1 == tail.size() ||
            tail.find('/', second + 1) != std::string_view::npos)
            return out;
        out.kind = Kind::endpoint;
        out.vpc = std::string(tail.substr(0, second));
        out.name = std::string(tail.substr(second + 1));
    }
    return out;
}

namespace {

// The fabric of node.toml's part and `entries` (in key order): decode, reject the keys the errors
// point at, again until what is left decodes cleanly. Every round rejects at least one key.
EtcdFabric build_from(std::string_view local_toml, const std::string& display_name, const std::vector<Entry*>& entries,
                      const EtcdLayout& layout, const LoadOptions& options) {
    EtcdFabric out;
    ValidationError syntax;
    const auto local = detail::parse_toml(local_toml, display_name, syntax);
    if (!local) {
        out.loaded.errors.push_back(std::move(syntax));
        return out;
    }
    // node.toml alone first: its own errors stop everything (they are not the store's).
    detail::DecodedFabric own = detail::decode_fabric(*local, display_name);
    detail::validate_fabric(own);
    if (!own.errors.empty()) {
        out.loaded.errors = std::move(own.errors);
        return out;
    }
    const std::string local_encap(to_string(own.config.local.encap));
    for (std::size_t i = 0; i < entries.size(); ++i) {
        Entry& e = *entries[i];
        stamp(e.value, static_cast<std::uint32_t>(kKeyLine + i));
        e.rejected = e.parse_reject;
        if (e.rejected.empty() && e.encap && *e.encap != local_encap)
            e.rejected = "its encap (" + *e.encap + ") is not this node's (" + local_encap +
                         "): every node of a fabric uses one encapsulation";
    }
    for (;;) {
        Composed composed = compose(*local, entries, layout);
        detail::DecodedFabric decoded = detail::decode_fabric(composed.root, display_name);
        composed.restore();
        detail::validate_fabric(decoded);
        bool rejected_any = false;
        ValidationErrors unattributed;
        for (const ValidationError& error : decoded.errors) {
            if (error.line < kKeyLine || error.line - kKeyLine >= entries.size()) {
                unattributed.push_back(error);
                continue;
            }
            Entry& e = *entries[error.line - kKeyLine];
            if (!e.rejected.empty()) continue;
            e.rejected = reason_of(error, entries);
            rejected_any = true;
            if (e.what.kind == EtcdLayout::Kind::vpc) {  // its endpoints go with it
                for (Entry* other : entries)
                    if (other->rejected.empty() && other->what.kind == EtcdLayout::Kind::endpoint && other->what.vpc == e.what.name)
                        other->rejected = "its VPC's key " + e.key + " is rejected";
            }
        }
        if (rejected_any) continue;
        if (!unattributed.empty()) {
            out.loaded.errors = std::move(unattributed);
            return out;
        }
        decoded.config.local.etcd = own.config.local.etcd;
        decoded.config.source_name = display_name + " + etcd " + layout.root();
        out.loaded.snapshot = std::make_shared<const FabricSnapshot>(std::move(decoded.config), options.generation, options.ports);
        break;
    }
    for (const Entry* e : entries) {
        if (e->rejected.empty()) ++out.keys_used;
        else out.rejected.push_back({e->key, e->rejected});
    }
    return out;
}

// node.toml's part with every node entry as [[nodes]] and `vpcs` as [[vpc]], decoded and
// validated as build_from() does it.
detail::DecodedFabric decode_with(const TomlNode& local, const std::vector<const Entry*>& nodes, std::vector<TomlNode> vpcs,
                                  const std::string& display_name) {
    TomlNode root = own_part(local);
    TomlNode node_list;
    node_list.kind = Kind::array;
    for (const Entry* n : nodes) node_list.items.push_back(n->value);
    TomlNode vpc_list;
    vpc_list.kind = Kind::array;
    vpc_list.items = std::move(vpcs);
    root.members.push_back({"nodes", std::move(node_list)});
    root.members.push_back({"vpc", std::move(vpc_list)});
    detail::DecodedFabric decoded = detail::decode_fabric(root, display_name);
    detail::validate_fabric(decoded);
    return decoded;
}

// One endpoint entry decoded and validated as build_from() checks it, against node.toml's part,
// the fabric's nodes and its VPC (without the VPC's NAT, whose port forwards name endpoints not
// given here): the endpoint, or nullopt when anything is wrong with it. Checks that span
// endpoints (a MAC unique in its VPC, forward targets) are the caller's.
std::optional<Endpoint> decode_endpoint(const TomlNode& local, const std::vector<const Entry*>& nodes, const Entry& vpc,
                                        const Entry& endpoint, const std::string& display_name) {
    TomlNode table = vpc.value;
    std::erase_if(table.members, [](const TomlMember& m) { return m.first == "nat"; });
    TomlNode endpoints;
    endpoints.kind = Kind::array;
    endpoints.items.push_back(endpoint.value);
    table.members.push_back({"endpoint", std::move(endpoints)});
    std::vector<TomlNode> vpcs;
    vpcs.push_back(std::move(table));
    detail::DecodedFabric decoded = decode_with(local, nodes, std::move(vpcs), display_name);
    if (!decoded.errors.empty() || decoded.config.endpoints.size() != 1) return std::nullopt;
    return std::move(decoded.config.endpoints.front());
}

// The nodes alone (names and addresses unique, the VLAN underlay's pinned MACs), the local one
// first, or nullopt when anything is wrong with them.
std::optional<std::vector<Node>> decode_nodes(const TomlNode& local, const std::vector<const Entry*>& nodes,
                                              const std::string& display_name) {
    detail::DecodedFabric decoded = decode_with(local, nodes, {}, display_name);
    if (!decoded.errors.empty()) return std::nullopt;
    return std::move(decoded.config.nodes);
}

}  // namespace

struct EtcdFabricBuilder::Cache {
    struct Value {
        std::string text;
        Entry entry;
    };
    std::map<std::string, Value> by_key;
};

EtcdFabricBuilder::EtcdFabricBuilder(EtcdLayout layout) : layout_(std::move(layout)), cache_(std::make_unique<Cache>()) {}
EtcdFabricBuilder::~EtcdFabricBuilder() = default;

std::size_t EtcdFabricBuilder::update(const std::map<std::string, std::string>& kvs) {
    std::size_t parsed = 0;
    auto& cached = cache_->by_key;
    // Both maps are in key order: one walk finds what went, what came and what changed.
    auto c = cached.begin();
    for (const auto& [key, text] : kvs) {
        while (c != cached.end() && c->first < key) c = cached.erase(c);
        if (c != cached.end() && c->first == key) {
            if (c->second.text != text) {
                c->second = {text, parse_entry(key, text, layout_)};
                ++parsed;
            }
            ++c;
            continue;
        }
        c = cached.emplace_hint(c, key, Cache::Value{text, parse_entry(key, text, layout_)});
        ++c;
        ++parsed;
    }
    cached.erase(c, cached.end());
    return parsed;
}

std::size_t EtcdFabricBuilder::update(const EtcdChanges& changes) {
    std::size_t parsed = 0;
    auto& cached = cache_->by_key;
    for (const auto& [key, text] : changes) {
        if (!text) {
            cached.erase(key);
            continue;
        }
        const auto it = cached.find(key);
        if (it != cached.end() && it->second.text == *text) continue;
        Cache::Value value{*text, parse_entry(key, *text, layout_)};
        if (it != cached.end()) it->second = std::move(value);
        else cached.emplace(key, std::move(value));
        ++parsed;
    }
    return parsed;
}

EtcdFabric EtcdFabricBuilder::build(std::string_view local_toml, const std::string& display_name, const LoadOptions& options) {
    std::vector<Entry*> entries;
    entries.reserve(cache_->by_key.size());
    for (auto& [key, value] : cache_->by_key) entries.push_back(&value.entry);
    EtcdFabric built = build_from(local_toml, display_name, entries, layout_, options);
    clean_ = built.loaded.ok() && built.rejected.empty();
    return built;
}

std::string_view to_string(InPlaceDecline decline) noexcept {
    switch (decline) {
        case InPlaceDecline::none: return "none";
#define ANDROMEDA_IN_PLACE_DECLINE_NAME(name, description) \
    case InPlaceDecline::name: return #name;
        ANDROMEDA_ETCD_IN_PLACE_DECLINES(ANDROMEDA_IN_PLACE_DECLINE_NAME)
#undef ANDROMEDA_IN_PLACE_DECLINE_NAME
    }
    return "unknown";
}

std::string_view describe(InPlaceDecline decline) noexcept {
    switch (decline) {
        case InPlaceDecline::none: return "applied in place";
#define ANDROMEDA_IN_PLACE_DECLINE_DESCRIPTION(name, description) \
    case InPlaceDecline::name: return description;
        ANDROMEDA_ETCD_IN_PLACE_DECLINES(ANDROMEDA_IN_PLACE_DECLINE_DESCRIPTION)
#undef ANDROMEDA_IN_PLACE_DECLINE_DESCRIPTION
    }
    return "unknown";
}

// plan_change()'s steps, by key kind: node puts first (an endpoint of the same batch may name a
// new node), then each endpoint key, then the MACs the endpoints take. Each step returns why it
// declines, or none.
class EtcdFabricBuilder::ChangePlanner {
public:
    ChangePlanner(const EtcdFabricBuilder& builder, const FabricSnapshot& running, std::string_view local_toml,
                  const std::string& display_name)
        : builder_(builder),
          cached_(builder.cache_->by_key),
          running_(running),
          local_toml_(local_toml),
          display_name_(display_name) {
        plan_.base_generation = running.generation();
        plan_.nodes.assign(running.nodes().begin(), running.nodes().end());
    }

    // Each a node that is not this one, put (added or changed; a deletion may strand endpoints).
    InPlaceDecline plan_nodes(const EtcdChanges& changes) {
        std::vector<std::string_view> puts;
        for (const auto& [key, value] : changes) {
            const EtcdLayout::Key what = builder_.layout_.parse(key);
            if (what.kind != EtcdLayout::Kind::node) continue;
            if (!value) return InPlaceDecline::node_deleted;
            if (what.name == running_.local().name) return InPlaceDecline::own_node_key;
            const auto entry = cached_.find(key);
            if (entry == cached_.end() || !entry->second.entry.parse_reject.empty())
                return InPlaceDecline::node_unparsed;
            if (entry->second.entry.encap && *entry->second.entry.encap != to_string(running_.local().encap))
                return InPlaceDecline::node_encap;
            puts.push_back(std::string_view(entry->first).substr(entry->first.size() - what.name.size()));
        }
        if (puts.empty()) return InPlaceDecline::none;
        if (!prepare()) return InPlaceDecline::local_toml_unparsed;
        const std::optional<std::vector<Node>> decoded = decode_nodes(*local_, node_entries_, display_name_);
        if (!decoded) return InPlaceDecline::nodes_invalid;
        for (const std::string_view name : puts) {
            const auto fresh = std::find_if(decoded->begin(), decoded->end(), [&](const Node& n) { return n.name == name; });
            if (fresh == decoded->end()) return InPlaceDecline::nodes_invalid;
            Node* old = node_named(name);
            if (old == nullptr) {
                plan_.diff.nodes_added.push_back(*fresh);
                plan_.nodes.push_back(*fresh);
            } else if (!(*old == *fresh)) {
                plan_.diff.nodes_changed.push_back({*old, *fresh});
                *old = *fresh;
            }
        }
        return InPlaceDecline::none;
    }

    // An endpoint key of a running VPC, neither before nor after on this node.
    InPlaceDecline plan_endpoint(const std::string& key, const std::optional<std::string>& value) {
        const EtcdLayout::Key what = builder_.layout_.parse(key);
        if (what.kind == EtcdLayout::Kind::node) return InPlaceDecline::none;  // plan_nodes()
        if (what.kind != EtcdLayout::Kind::endpoint) return InPlaceDecline::not_endpoint_key;
        const auto ip = wire::Ipv4Address::parse(what.name);
        if (!ip || ip->to_string() != what.name) return InPlaceDecline::endpoint_address;
        const auto vpcs = running_.vpcs();
        const auto vpc = std::find_if(vpcs.begin(), vpcs.end(), [&](const Vpc& v) { return v.name == what.vpc; });
        if (vpc == vpcs.end()) return InPlaceDecline::vpc_not_running;
        const Endpoint* old = running_.find_endpoint(vpc->vni, *ip);
        if (old != nullptr && old->is_local) return InPlaceDecline::local_endpoint;
        if (!value) return remove(*vpc, old);
        const auto entry = cached_.find(key);
        const auto vpc_entry = cached_.find(builder_.layout_.vpc_key(what.vpc));
        if (entry == cached_.end() || vpc_entry == cached_.end() || !entry->second.entry.parse_reject.empty())
            return InPlaceDecline::endpoint_unparsed;
        if (!prepare()) return InPlaceDecline::local_toml_unparsed;
        std::optional<Endpoint> endpoint =
            decode_endpoint(*local_, node_entries_, vpc_entry->second.entry, entry->second.entry, display_name_);
        if (!endpoint) return InPlaceDecline::endpoint_invalid;
        if (endpoint->is_local) return InPlaceDecline::local_endpoint;
        const Node* node = node_named(endpoint->node);
        if (node == nullptr) return InPlaceDecline::endpoint_node_unknown;
        endpoint->vpc_index = static_cast<std::uint32_t>(vpc - vpcs.begin());
        endpoint->node_index = static_cast<std::uint32_t>(node - plan_.nodes.data());
        if (old != nullptr) {
            if (!old->same_config(*endpoint)) plan_.diff.endpoints_changed.push_back({*old, *endpoint});
            touched_.insert(old->position);
            plan_.endpoints.replaced.emplace_back(old->position, std::move(*endpoint));
        } else {
            plan_.diff.endpoints_added.push_back(*endpoint);
            plan_.endpoints.added.push_back(std::move(*endpoint));
        }
        return InPlaceDecline::none;
    }

    // A MAC is unique within its VPC: each new or changed endpoint's among the others of the
    // change and among the endpoints the change leaves as they are.
    InPlaceDecline check_macs() {
        std::unordered_set<std::uint64_t> macs;
        const auto mac_is_free = [&](const Endpoint& e) {
            if (!macs.insert(std::uint64_t{e.vpc_index} << 48 | e.mac.as_u64()).second) return false;
            const Endpoint* holder = running_.find_endpoint_by_mac(e.vpc_index, e.mac);
            return holder == nullptr || touched_.count(holder->position) != 0;
        };
        for (const auto& r : plan_.endpoints.replaced)
            if (!mac_is_free(r.second)) return InPlaceDecline::mac_taken;
        for (const Endpoint& e : plan_.endpoints.added)
            if (!mac_is_free(e)) return InPlaceDecline::mac_taken;
        return InPlaceDecline::none;
    }

    [[nodiscard]] EtcdChangePlan take() { return std::move(plan_); }

private:
    InPlaceDecline remove(const Vpc& vpc, const Endpoint* old) {
        if (old == nullptr) return InPlaceDecline::none;
        if (vpc.nat)
            for (const NatForward& f : vpc.nat->forwards)
                if (f.endpoint_ip == old->ip) return InPlaceDecline::forward_target_removed;
        plan_.endpoints.removed.push_back(old->position);
        touched_.insert(old->position);
        plan_.diff.endpoints_removed.push_back(*old);
        return InPlaceDecline::none;
    }

    Node* node_named(std::string_view name) {
        const auto it =
            std::find_if(plan_.nodes.begin(), plan_.nodes.end(), [&](const Node& n) { return n.name == name; });
        return it == plan_.nodes.end() ? nullptr : &*it;
    }

    // node.toml's part and every node entry (all of them are in: the fabric is clean), once.
    bool prepare() {
        if (local_) return true;
        ValidationError syntax;
        local_ = detail::parse_toml(local_toml_, display_name_, syntax);
        const std::string prefix = builder_.layout_.root() + "nodes/";
        for (auto it = cached_.lower_bound(prefix); it != cached_.end() && it->first.starts_with(prefix); ++it)
            node_entries_.push_back(&it->second.entry);
        return local_.has_value();
    }

    const EtcdFabricBuilder& builder_;
    const std::map<std::string, Cache::Value>& cached_;
    const FabricSnapshot& running_;
    std::string_view local_toml_;
    const std::string& display_name_;
    std::optional<TomlNode> local_;
    std::vector<const Entry*> node_entries_;
    std::unordered_set<std::uint32_t> touched_;  // running positions removed or replaced
    EtcdChangePlan plan_;
};

PlannedChange EtcdFabricBuilder::plan_change(const FabricSnapshot& running, const EtcdChanges& changes,
                                             std::string_view local_toml, const std::string& display_name) {
    const auto declined = [&](InPlaceDecline reason) {
        ++declines_[static_cast<std::size_t>(reason) - 1];
        return PlannedChange{std::nullopt, reason};
    };
    if (!clean_) return declined(InPlaceDecline::keys_rejected);
    ChangePlanner planner(*this, running, local_toml, display_name);
    if (const InPlaceDecline d = planner.plan_nodes(changes); d != InPlaceDecline::none) return declined(d);
    for (const auto& [key, value] : changes)
        if (const InPlaceDecline d = planner.plan_endpoint(key, value); d != InPlaceDecline::none) return declined(d);
    if (const InPlaceDecline d = planner.check_macs(); d != InPlaceDecline::none) return declined(d);
    return PlannedChange{planner.take(), InPlaceDecline::none};
}

DerivedFabric EtcdFabricBuilder::apply_change(const FabricSnapshot& running, EtcdChangePlan plan,
                                              const LoadOptions& options) const {
    DerivedFabric out;
    out.diff = std::move(plan.diff);
    out.snapshot =
        FabricSnapshot::derive(running, std::move(plan.nodes), std::move(plan.endpoints), options.generation, options.ports);
    return out;
}

std::optional<DerivedFabric> EtcdFabricBuilder::derive(const FabricSnapshot& running, const EtcdChanges& changes,
                                                       std::string_view local_toml, const std::string& display_name,
                                                       const LoadOptions& options) {
    PlannedChange planned = plan_change(running, changes, local_toml, display_name);
    if (!planned.plan) return std::nullopt;
    return apply_change(running, std::move(*planned.plan), options);
}

EtcdFabric build_etcd_fabric(std::string_view local_toml, const std::string& display_name,
                             const std::map<std::string, std::string>& kvs, const EtcdLayout& layout,
                             const LoadOptions& options) {
    EtcdFabricBuilder builder(layout);
    builder.update(kvs);
    return builder.build(local_toml, display_name, options);
}

EtcdImport etcd_values_of(std::string_view toml, const std::string& display_name, const EtcdLayout& layout) {
    EtcdImport out;
    const LoadResult checked = load_fabric_string(toml, display_name);
    if (!checked.ok()) {
        out.errors = checked.errors;
        return out;
    }
    ValidationError syntax;
    const auto tree = detail::parse_toml(toml, display_name, syntax);
    if (!tree) {  // cannot happen after a successful load; said anyway
        out.errors.push_back(std::move(syntax));
        return out;
    }
    std::vector<std::string> node_names;
    if (const TomlNode* nodes = tree->find("nodes")) {
        for (const TomlNode& n : nodes->items) {
            json value = json_of(n);
            const std::string name = value.value("name", std::string());
            node_names.push_back(name);
            out.values.emplace_back(layout.node_key(name), value.dump());
        }
    }
    // The file's own node is a node of the fabric too, when it says where it is.
    const auto& local = checked.snapshot->local();
    if (local.address && std::find(node_names.begin(), node_names.end(), local.name) == node_names.end())
        out.values.emplace_back(layout.node_key(local.name),
                                json{{"name", local.name}, {"address", local.address->to_string()}}.dump());
    if (const TomlNode* vpcs = tree->find("vpc")) {
        for (const TomlNode& v : vpcs->items) {
            json value = json_of(v);
            const std::string vpc = value.value("name", std::string());
            json endpoints = value.contains("endpoint") ? value["endpoint"] : json::array();
            value.erase("endpoint");
            out.values.emplace_back(layout.vpc_key(vpc), value.dump());
            for (const json& e : endpoints) out.values.emplace_back(layout.endpoint_key(vpc, e.value("ip", std::string())), e.dump());
        }
    }
    return out;
}

etcd::Config etcd_client_config(const EtcdSettings& settings) {
    etcd::Config config;
    config.endpoints = settings.endpoints;
    config.ca_file = settings.ca_file;
    config.cert_file = settings.cert_file;
    config.key_file = settings.key_file;
    config.username = settings.username;
    if (!settings.password_file.empty()) {
        const auto password = read_text_file(settings.password_file);
        if (!password) throw std::runtime_error("cannot read etcd.password_file " + settings.password_file);
        config.password = *password;
        while (!config.password.empty() && (config.password.back() == '\n' || config.password.back() == '\r'))
            config.password.pop_back();
    }
    return config;
}

}  // namespace andromeda::fabric
