// The security-group part of the schema: [[vpc.security_group]], its [[vpc.security_group.rule]]s,
// a VPC's default_ingress / default_egress and an endpoint's `groups` (docs/security-groups.md).
// Every check that needs only one VPC happens here, where the lines are known: names, ranges,
// references to groups, and rules no packet can ever reach.
#include "fabric/decode_policy.hpp"

#include <algorithm>
#include <charconv>

#include "fabric/decode_fields.hpp"

namespace andromeda::fabric::detail {

namespace {

using Kind = TomlNode::Kind;

std::optional<std::uint16_t> port_number(std::string_view text) {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || value > 65535) return std::nullopt;
    return static_cast<std::uint16_t>(value);
}

// "80" or "8000-8099".
std::optional<PortRange> port_range(std::string_view text) {
    const auto dash = text.find('-');
    const auto first = port_number(text.substr(0, dash));
    const auto last = dash == std::string_view::npos ? first : port_number(text.substr(dash + 1));
    if (!first || !last || *first > *last) return std::nullopt;
    return PortRange{*first, *last};
}

bool ranges_cover(const std::vector<PortRange>& outer, const std::vector<PortRange>& inner) {
    if (outer.empty()) return true;
    if (inner.empty()) return false;
    // Every port of `inner` lies in some range of `outer` (ranges are few; check each inner range
    // against the union of the outer ones by walking it).
    for (const PortRange& r : inner) {
        std::uint32_t next = r.first;
        bool progressed = true;
        while (next <= r.last && progressed) {
            progressed = false;
            for (const PortRange& o : outer)
                if (o.first <= next && o.last >= next) {
                    next = std::uint32_t{o.last} + 1;
                    progressed = true;
                }
        }
        if (next <= r.last) return false;
    }
    return true;
}

// Whether every prefix of `inner` lies inside one of `outer` (IPv4 or IPv6 alike).
template <class Prefix>
bool prefixes_cover(const std::vector<Prefix>& outer, const std::vector<Prefix>& inner) {
    return std::all_of(inner.begin(), inner.end(), [&](const Prefix& p) {
        return std::any_of(outer.begin(), outer.end(),
                           [&](const Prefix& o) { return o.length() <= p.length() && o.contains(p.network()); });
    });
}

// Whether a prefix of `a` and one of `b` share an address.
template <class Prefix>
bool prefixes_meet(const std::vector<Prefix>& a, const std::vector<Prefix>& b) {
    return std::any_of(a.begin(), a.end(), [&](const Prefix& x) {
        return std::any_of(b.begin(), b.end(), [&](const Prefix& y) { return x.overlaps(y); });
    });
}

bool remotes_cover(const SecurityRule& outer, const SecurityRule& inner) {
    if (outer.any_remote()) return true;
    if (inner.any_remote()) return false;
    // A group's members change as endpoints come and go: only the same group name covers a group.
    for (const std::string& g : inner.remote_groups)
        if (std::find(outer.remote_groups.begin(), outer.remote_groups.end(), g) == outer.remote_groups.end())
            return false;
    return prefixes_cover(outer.remote_cidrs, inner.remote_cidrs) &&
           prefixes_cover(outer.remote_cidrs6, inner.remote_cidrs6);
}

// Whether every packet `inner` matches is matched by `outer` too.
bool covers(const SecurityRule& outer, const SecurityRule& inner) {
    if (outer.direction != inner.direction) return false;
    if (outer.protocol != PolicyProtocol::any && outer.protocol != inner.protocol) return false;
    if (outer.protocol == PolicyProtocol::tcp || outer.protocol == PolicyProtocol::udp)
        if (!ranges_cover(outer.ports, inner.ports)) return false;
    if (outer.is_icmp()) {
        if (outer.icmp_type >= 0 && outer.icmp_type != inner.icmp_type) return false;
        if (outer.icmp_code >= 0 && outer.icmp_code != inner.icmp_code) return false;
    }
    return remotes_cover(outer, inner);
}

// Whether some packet could match both (conservatively: group members may be any address).
bool overlaps(const SecurityRule& a, const SecurityRule& b) {
    if (a.direction != b.direction) return false;
    if (a.protocol != PolicyProtocol::any && b.protocol != PolicyProtocol::any && a.protocol != b.protocol) return false;
    if (a.protocol == b.protocol && (a.protocol == PolicyProtocol::tcp || a.protocol == PolicyProtocol::udp) &&
        !a.ports.empty() && !b.ports.empty()) {
        bool any = false;
        for (const PortRange& x : a.ports)
            for (const PortRange& y : b.ports) any = any || (x.first <= y.last && y.first <= x.last);
        if (!any) return false;
    }
    if (a.is_icmp() && a.protocol == b.protocol && a.icmp_type >= 0 && b.icmp_type >= 0 && a.icmp_type != b.icmp_type)
        return false;
    if (a.any_remote() || b.any_remote() || !a.remote_groups.empty() || !b.remote_groups.empty()) return true;
    return prefixes_meet(a.remote_cidrs, b.remote_cidrs) || prefixes_meet(a.remote_cidrs6, b.remote_cidrs6);
}

// Decided first: the lower priority number, and at the same priority a deny.
bool precedes(const SecurityRule& a, const SecurityRule& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    return a.action == PolicyAction::deny && b.action == PolicyAction::allow;
}

class PolicyDecoder {
public:
    PolicyDecoder(FieldReader& fields, const TomlNode& vpc_table, const std::string& path, Vpc& vpc)
        : fields_(fields), table_(vpc_table), path_(path), vpc_(vpc) {}

    void decode() {
        vpc_.default_ingress = action(table_, path_, "default_ingress");
        vpc_.default_egress = action(table_, path_, "default_egress");
        const TomlNode* groups = fields_.table_array(table_, path_, "security_group");
        if (groups == nullptr) return;
        std::vector<std::vector<std::uint32_t>> rule_lines;
        std::vector<std::uint32_t> group_lines;
        for (std::size_t i = 0; i < groups->items.size(); ++i) {
            const TomlNode& g = groups->items[i];
            const std::string path = path_ + ".security_group[" + std::to_string(i) + "]";
            fields_.reject_unknown_keys(g, path, {"name", "rule"});
            std::uint32_t line = 0;
            auto name = fields_.string(g, path, "name", true, "name = \"web\"", &line);
            if (!name) continue;
            if (!is_valid_name(*name)) {
                fields_.error(line, path + ".name", quoted(*name) + " is not a valid group name",
                              "use 1 to 64 letters, digits, '-', '_' or '.'");
                continue;
            }
            if (const auto seen = std::find_if(vpc_.security_groups.begin(), vpc_.security_groups.end(),
                                               [&](const SecurityGroup& s) { return s.name == *name; });
                seen != vpc_.security_groups.end()) {
                fields_.error(line, path + ".name",
                              "security group " + quoted(*name) + " is defined twice in VPC " + quoted(vpc_.name) +
                                  " (first at line " +
                                  std::to_string(group_lines[static_cast<std::size_t>(seen - vpc_.security_groups.begin())]) + ")",
                              "give each group of a VPC its own name");
                continue;
            }
            SecurityGroup group;
            group.name = *name;
            std::vector<std::uint32_t> lines;
            if (const TomlNode* rules = fields_.table_array(g, path, "rule"))
                for (std::size_t r = 0; r < rules->items.size(); ++r) {
                    auto rule = decode_rule(rules->items[r], path + ".rule[" + std::to_string(r) + "]");
                    if (!rule) continue;
                    group.rules.push_back(std::move(*rule));
                    lines.push_back(rules->items[r].line);
                }
            vpc_.security_groups.push_back(std::move(group));
            rule_lines.push_back(std::move(lines));
            group_lines.push_back(g.line);
            paths_.push_back(path);
        }
        // References to groups, and dead rules, once every group is known.
        for (std::size_t gi = 0; gi < vpc_.security_groups.size(); ++gi) {
            SecurityGroup& group = vpc_.security_groups[gi];
            for (std::size_t r = 0; r < group.rules.size(); ++r) {
                const std::string rule_path = paths_[gi] + ".rule[" + std::to_string(r) + "]";
                for (const std::string& ref : group.rules[r].remote_groups)
                    if (vpc_.find_group(ref) == nullptr)
                        fields_.error(rule_lines[gi][r], rule_path + ".remote_groups",
                                      "no security group " + quoted(ref) + " in VPC " + quoted(vpc_.name),
                                      "name one of this VPC's groups: " + group_names());
            }
            check_dead_rules(group, rule_lines[gi], paths_[gi]);
        }
    }

private:
    std::optional<PolicyAction> action(const TomlNode& table, const std::string& path, std::string_view key) {
        std::uint32_t line = 0;
        auto text = fields_.string(table, path, key, false, std::string(key) + " = \"deny\"", &line);
        if (!text) return std::nullopt;
        if (*text == "allow") return PolicyAction::allow;
        if (*text == "deny") return PolicyAction::deny;
        fields_.error(line, join_path(path, key), quoted(*text) + " is not an action", "expected \"allow\" or \"deny\"");
        return std::nullopt;
    }

    std::optional<SecurityRule> decode_rule(const TomlNode& t, const std::string& path) {
        fields_.reject_unknown_keys(t, path, {"direction", "action", "priority", "protocol", "ports", "icmp_type",
                                              "icmp_code", "remote_cidrs", "remote_groups", "description"});
        SecurityRule rule;
        bool ok = true;
        std::uint32_t line = 0;
        if (auto d = fields_.string(t, path, "direction", true, "direction = \"ingress\"", &line)) {
            if (*d == "ingress" || *d == "egress") {
                rule.direction = *d == "ingress" ? PolicyDirection::ingress : PolicyDirection::egress;
            } else {
                fields_.error(line, path + ".direction", quoted(*d) + " is not a direction",
                              "expected \"ingress\" or \"egress\"");
                ok = false;
            }
        } else {
            ok = false;
        }
        if (t.find("action") != nullptr) {
            auto a = action(t, path, "action");
            ok = ok && a.has_value();
            rule.action = a.value_or(PolicyAction::allow);
        }
        auto priority = fields_.integer(t, path, "priority", false,
                                        {1, kMaxRulePriority, 100, "the lower number decides first; valid"});
        if (t.find("priority") != nullptr && !priority) ok = false;
        rule.priority = static_cast<std::uint32_t>(priority.value_or(kDefaultRulePriority));
        if (auto p = fields_.string(t, path, "protocol", false, "protocol = \"tcp\"", &line)) {
            if (*p == "tcp") rule.protocol = PolicyProtocol::tcp;
            else if (*p == "udp") rule.protocol = PolicyProtocol::udp;
            else if (*p == "icmp") rule.protocol = PolicyProtocol::icmp;
            else if (*p == "icmpv6") rule.protocol = PolicyProtocol::icmpv6;
            else if (*p == "any") rule.protocol = PolicyProtocol::any;
            else {
                fields_.error(line, path + ".protocol", quoted(*p) + " is not a protocol a rule can match",
                              "expected \"tcp\", \"udp\", \"icmp\", \"icmpv6\" or \"any\"");
                ok = false;
            }
        }
        ok = decode_ports(t, path, rule) && ok;
        ok = decode_icmp(t, path, rule) && ok;
        ok = decode_remotes(t, path, rule) && ok;
        ok = check_family(t, path, rule) && ok;
        if (t.find("description") != nullptr)
            rule.description = fields_.string(t, path, "description", false, "description = \"web from app\"").value_or("");
        if (!ok) return std::nullopt;
        return rule;
    }

    bool decode_ports(const TomlNode& t, const std::string& path, SecurityRule& rule) {
        const TomlNode* ports = t.find("ports");
        if (ports == nullptr) return true;
        const std::string key = path + ".ports";
        if (rule.protocol != PolicyProtocol::tcp && rule.protocol != PolicyProtocol::udp) {
            fields_.error(ports->line, key, std::string("ports with protocol \"") + to_string(rule.protocol) + "\"",
                          "ports need protocol = \"tcp\" or \"udp\" (ICMP has icmp_type and icmp_code)");
            return false;
        }
        std::vector<const TomlNode*> items;
        if (ports->kind == Kind::array)
            for (const TomlNode& item : ports->items) items.push_back(&item);
        else
            items.push_back(ports);
        if (items.empty()) {
            fields_.error(ports->line, key, "an empty list of ports matches nothing",
                          "leave ports out to match every port, or list some: ports = [80, \"8000-8099\"]");
            return false;
        }
        bool ok = true;
        for (const TomlNode* item : items) {
            std::optional<PortRange> range;
            if (item->kind == Kind::integer && item->integer >= 0 && item->integer <= 65535)
                range = PortRange{static_cast<std::uint16_t>(item->integer), static_cast<std::uint16_t>(item->integer)};
            else if (item->kind == Kind::string)
                range = port_range(item->text);
            if (!range) {
                const std::string shown = item->kind == Kind::string    ? quoted(item->text)
                                          : item->kind == Kind::integer ? std::to_string(item->integer)
                                                                        : std::string("a ") + kind_name(item->kind);
                fields_.error(item->line != 0 ? item->line : ports->line, key, shown + " is not a port or port range",
                              "a port 0-65535 or \"first-last\" with first <= last, e.g. ports = [22, \"8000-8099\"]");
                ok = false;
                continue;
            }
            rule.ports.push_back(*range);
        }
        return ok;
    }

    bool decode_icmp(const TomlNode& t, const std::string& path, SecurityRule& rule) {
        bool ok = true;
        for (const char* key : {"icmp_type", "icmp_code"}) {
            const TomlNode* node = t.find(key);
            if (node == nullptr) continue;
            if (!rule.is_icmp()) {
                fields_.error(node->line, path + "." + key,
                              std::string(key) + " without protocol = \"icmp\" or \"icmpv6\"",
                              "add protocol = \"icmp\" (IPv4) or \"icmpv6\" (IPv6), or remove it");
                ok = false;
                continue;
            }
            auto value = fields_.integer(t, path, key, false, {0, 255, 8, "an ICMP type or code is a byte; valid"});
            if (!value) {
                ok = false;
                continue;
            }
            (std::string_view(key) == "icmp_type" ? rule.icmp_type : rule.icmp_code) = static_cast<std::int16_t>(*value);
        }
        if (rule.icmp_code >= 0 && rule.icmp_type < 0) {
            fields_.error(t.find("icmp_code")->line, path + ".icmp_code", "icmp_code without icmp_type",
                          "a code means something only for one type: add icmp_type");
            ok = false;
        }
        return ok;
    }

    bool decode_remotes(const TomlNode& t, const std::string& path, SecurityRule& rule) {
        bool ok = true;
        if (const TomlNode* cidrs = t.find("remote_cidrs")) {
            if (cidrs->kind != Kind::array || cidrs->items.empty()) {
                fields_.error(cidrs->line, path + ".remote_cidrs", "expected a non-empty array of CIDRs",
                              "e.g. remote_cidrs = [\"10.0.0.0/24\", \"0.0.0.0/0\"]");
                ok = false;
            } else {
                for (const TomlNode& item : cidrs->items) {
                    if (item.kind == Kind::string && item.text.find(':') != std::string::npos) {
                        ok = decode_cidr6(item, path + ".remote_cidrs", rule) && ok;
                        continue;
                    }
                    auto prefix = fields_.prefix(item, path + ".remote_cidrs");
                    if (prefix) rule.remote_cidrs.push_back(*prefix);
                    else ok = false;
                }
            }
        }
        if (const TomlNode* groups = t.find("remote_groups")) {
            const bool strings = groups->kind == Kind::array && !groups->items.empty() &&
                                 std::all_of(groups->items.begin(), groups->items.end(),
                                             [](const TomlNode& n) { return n.kind == Kind::string; });
            if (!strings) {
                fields_.error(groups->line, path + ".remote_groups", "expected a non-empty array of group names",
                              "e.g. remote_groups = [\"app\"]");
                ok = false;
            } else {
                for (const TomlNode& item : groups->items) rule.remote_groups.push_back(item.text);
            }
        }
        return ok;
    }

    // An IPv6 prefix such as "fd00:0:0:1::/64" or "::/0".
    bool decode_cidr6(const TomlNode& item, const std::string& key, SecurityRule& rule) {
        if (auto prefix = wire::Ipv6Prefix::parse(item.text)) {
            rule.remote_cidrs6.push_back(*prefix);
            return true;
        }
        const auto slash = item.text.find('/');
        const auto address = wire::Ipv6Address::parse(std::string_view(item.text).substr(0, slash));
        const auto length = slash == std::string::npos ? std::string() : item.text.substr(slash + 1);
        if (address && !length.empty() && length.size() <= 3 &&
            std::all_of(length.begin(), length.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
            std::stoi(length) <= 128) {
            const wire::Ipv6Prefix network(*address, static_cast<std::uint8_t>(std::stoi(length)));
            fields_.error(item.line, key, quoted(item.text) + " has host bits set",
                          "did you mean \"" + network.to_string() + "\"?");
            return false;
        }
        fields_.error(item.line, key, quoted(item.text) + " is not a CIDR prefix",
                      "expected a network address and prefix length such as \"10.0.0.0/24\" or \"fd00::/64\"");
        return false;
    }

    // A rule whose protocol is one family's and whose remotes are all the other's can match no
    // packet: icmp with only IPv6 CIDRs, icmpv6 with only IPv4 ones.
    bool check_family(const TomlNode& t, const std::string& path, const SecurityRule& rule) {
        if (!rule.remote_groups.empty() || rule.any_remote()) return true;
        const bool v4_only = rule.remote_cidrs6.empty();
        const bool v6_only = rule.remote_cidrs.empty();
        const bool dead = (rule.protocol == PolicyProtocol::icmp && v6_only) ||
                          (rule.protocol == PolicyProtocol::icmpv6 && v4_only);
        if (!dead) return true;
        const TomlNode* node = t.find("remote_cidrs");
        fields_.error(node != nullptr ? node->line : 0, path + ".remote_cidrs",
                      std::string("protocol \"") + to_string(rule.protocol) + "\" with only " +
                          (v4_only ? "IPv4" : "IPv6") + " remote_cidrs can match no packet",
                      rule.protocol == PolicyProtocol::icmp
                          ? "icmp is IPv4's: use protocol = \"icmpv6\" for IPv6 peers, or give IPv4 CIDRs"
                          : "icmpv6 is IPv6's: use protocol = \"icmp\" for IPv4 peers, or give IPv6 CIDRs");
        return false;
    }

    void check_dead_rules(const SecurityGroup& group, const std::vector<std::uint32_t>& lines, const std::string& path) {
        for (std::size_t r = 0; r < group.rules.size(); ++r) {
            const SecurityRule& rule = group.rules[r];
            for (std::size_t o = 0; o < group.rules.size(); ++o) {
                if (o == r) continue;
                const SecurityRule& other = group.rules[o];
                const std::string where = path + ".rule[" + std::to_string(r) + "]";
                const std::string other_name = "rule[" + std::to_string(o) + "] (line " + std::to_string(lines[o]) +
                                               ", priority " + std::to_string(other.priority) + ", " +
                                               to_string(other.action) + ")";
                if (precedes(other, rule) && covers(other, rule)) {
                    fields_.error(lines[r], where,
                                  "can never decide: " + other_name + " matches every packet it does and decides first",
                                  "give it a lower priority number than " + std::to_string(other.priority) +
                                      ", narrow " + other_name.substr(0, other_name.find(' ')) + ", or remove it");
                    break;
                }
                if (o < r && other.priority == rule.priority && other.action != rule.action && overlaps(other, rule)) {
                    fields_.error(lines[r], where,
                                  "priority " + std::to_string(rule.priority) + " is also " + other_name +
                                      "'s, with the other action, and the two can match the same packet",
                                  "give one of them another priority: the lower number decides first");
                    break;
                }
            }
        }
    }

    std::string group_names() const {
        std::string out;
        for (const auto& g : vpc_.security_groups) out += (out.empty() ? "" : ", ") + quoted(g.name);
        return out.empty() ? "(none defined)" : out;
    }

    FieldReader& fields_;
    const TomlNode& table_;
    const std::string& path_;
    Vpc& vpc_;
    std::vector<std::string> paths_;
};

}  // namespace

void decode_security_groups(FieldReader& fields, const TomlNode& vpc_table, const std::string& path, Vpc& vpc) {
    PolicyDecoder(fields, vpc_table, path, vpc).decode();
}

bool decode_endpoint_groups(FieldReader& fields, const TomlNode& endpoint_table, const std::string& path,
                            const Vpc& vpc, std::vector<std::string>& groups) {
    const TomlNode* node = endpoint_table.find("groups");
    if (node == nullptr) return true;
    const bool strings = node->kind == Kind::array && std::all_of(node->items.begin(), node->items.end(), [](const TomlNode& n) {
                             return n.kind == Kind::string;
                         });
    if (!strings) {
        fields.error(node->line, path + ".groups", "expected an array of security group names",
                     "e.g. groups = [\"web\", \"ssh\"]");
        return false;
    }
    bool ok = true;
    for (const TomlNode& item : node->items) {
        if (vpc.find_group(item.text) == nullptr) {
            std::string names;
            for (const auto& g : vpc.security_groups) names += (names.empty() ? "" : ", ") + quoted(g.name);
            fields.error(item.line != 0 ? item.line : node->line, path + ".groups",
                         "no security group " + quoted(item.text) + " in VPC " + quoted(vpc.name),
                         names.empty() ? "define it as [[vpc.security_group]] name = " + quoted(item.text)
                                       : "name one of " + names);
            ok = false;
        } else if (std::find(groups.begin(), groups.end(), item.text) == groups.end()) {
            groups.push_back(item.text);
        }
    }
    return ok;
}

}  // namespace andromeda::fabric::detail
