#include "ctl/control_commands.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <ostream>
#include <thread>
#include <vector>

#include "control/client.hpp"

namespace andromeda::ctl {

namespace {

using nlohmann::json;

std::string text_of(const std::optional<std::string>& v) { return v ? *v : "-"; }

std::string duration_text(std::uint64_t s) {
    if (s >= 86400) return fmt::format("{}d {}h", s / 86400, s % 86400 / 3600);
    if (s >= 3600) return fmt::format("{}h {}m", s / 3600, s % 3600 / 60);
    if (s >= 60) return fmt::format("{}m {}s", s / 60, s % 60);
    return fmt::format("{}s", s);
}

// Left-aligned columns sized to their widest cell.
std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width(header.size());
    for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
    for (const auto& r : rows)
        for (std::size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
    auto line = [&](const std::vector<std::string>& cells) {
        std::string s;
        for (std::size_t i = 0; i < cells.size() && i < width.size(); ++i) {
            s += cells[i];
            if (i + 1 < cells.size()) s.append(width[i] - cells[i].size() + 2, ' ');
        }
        return s + "\n";
    };
    std::string out = line(header);
    for (const auto& r : rows) out += line(r);
    return out;
}

}  // namespace

std::optional<std::string> resolve_socket(const Target& target, std::string& error, const std::string& run_dir) {
    if (target.socket) return target.socket;
    if (target.node) return run_dir + "/" + *target.node + ".sock";
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(run_dir, ec))
        if (entry.path().extension() == ".sock") found.push_back(entry.path().string());
    if (found.size() == 1) return found.front();
    if (found.empty()) {
        error = fmt::format("no andromedad control socket in {}: is andromedad running? (or pass --socket PATH)", run_dir);
    } else {
        std::sort(found.begin(), found.end());
        std::string names;
        for (const auto& f : found) names += " " + std::filesystem::path(f).stem().string();
        error = fmt::format("several andromedad instances run here; pick one with --node NAME:{}", names);
    }
    return std::nullopt;
}

std::string render_health(const control::HealthReply& r) {
    if (r.healthy) return "healthy\n";
    std::string s = fmt::format("DEGRADED ({} problem{}):\n", r.problems.size(), r.problems.size() == 1 ? "" : "s");
    for (const auto& p : r.problems) {
        std::string detail = p.detail;
        while (!detail.empty() && detail.back() == '\n') detail.pop_back();
        for (std::size_t at = detail.find('\n'); at != std::string::npos; at = detail.find('\n', at + 5))
            detail.replace(at, 1, "\n    ");
        s += fmt::format("  {}: {}\n", p.check, detail);
    }
    return s;
}

std::string render_log_level(const control::LogLevelReply& r) {
    if (r.level == r.previous) return fmt::format("log level {}\n", r.level);
    return fmt::format("log level {} (was {})\n", r.level, r.previous);
}

std::string render_status(const control::StatusReply& r) {
    std::string s = fmt::format("node {}  pid {}  up {}  fabric generation {}  workers {}\nconfig {}\npins {}\n", r.node, r.pid,
                                duration_text(r.uptime_s), r.fabric_generation, r.workers, r.config, r.pin_dir);
    if (!r.version.empty()) s += "version " + r.version + "\n";
    if (r.health) s += "health " + render_health(*r.health);
    // "underlay eth1 VLAN 100 192.168.1.1  encap andromeda": the VLAN only when the daemon tags.
    if (!r.underlay.empty())
        s += fmt::format("underlay {}{} {}  encap {}\n", r.underlay,
                         r.underlay_vlan != 0 ? " VLAN " + std::to_string(r.underlay_vlan) : std::string(),
                         r.underlay_address, r.encap);
    // "fabric etcd http://10.0.0.5:2379 /andromeda/v1/  revision 42  keys 1003  connected", and
    // every key it left out.
    if (r.etcd) {
        const auto& e = *r.etcd;
        std::string endpoints;
        for (const auto& url : e.endpoints) endpoints += (endpoints.empty() ? "" : ",") + url;
        s += fmt::format("fabric etcd {} {}  revision {}  keys {}  {}{}\n", endpoints, e.prefix, e.revision, e.keys,
                         e.connected ? "connected" : "DISCONNECTED (forwarding with the last fabric)",
                         e.lease_alive ? "" : "  this node's entry: not published");
        if (!e.connected && !e.last_error.empty()) s += "  last error: " + e.last_error + "\n";
        for (const auto& k : e.rejected) s += "  rejected " + k.key + ": " + k.reason + "\n";
    }
    // "worker cpus 0:cpu1 1:cpu0(not pinned)" when [node] worker_cpus pins them.
    std::string cpus;
    for (std::size_t w = 0; w < r.worker_cpus.size(); ++w)
        if (const auto& c = r.worker_cpus[w]) cpus += fmt::format(" {}:cpu{}{}", w, c->cpu, c->pinned ? "" : "(not pinned)");
    if (!cpus.empty()) s += "worker cpus" + cpus + "\n";
    // TC: how the port's fast-path program is attached, "tcx" or "clsact" (the JSON's "tc" names
    // the program too: "andromeda_tc_tenant (tcx)"), "-" where none is.
    const auto tc_mode = [](const std::optional<std::string>& tc) -> std::string {
        if (!tc) return "-";
        const auto open = tc->rfind(" (");
        if (open == std::string::npos || tc->back() != ')') return *tc;
        return tc->substr(open + 2, tc->size() - open - 3);
    };
    // WORKERS: the packet workers that have the port's sockets ("0,1"), "-" for none.
    const auto worker_list = [](const std::vector<std::uint32_t>& workers) {
        std::string list;
        for (const std::uint32_t w : workers) list += (list.empty() ? "" : ",") + std::to_string(w);
        return list.empty() ? std::string("-") : list;
    };
    std::vector<std::vector<std::string>> rows;
    for (const auto& p : r.ports)
        rows.push_back({p.name, p.role, text_of(p.xdp_mode), tc_mode(p.tc), text_of(p.bind),
                        std::to_string(p.queue_ids.size()), worker_list(p.workers), text_of(p.endpoint), p.paths});
    if (!rows.empty())
        s += "\n" + table({"PORT", "ROLE", "XDP", "TC", "AF_XDP", "QUEUES", "WORKERS", "ENDPOINT", "PATHS"}, rows);
    return s;
}

std::string render_stats(const control::StatsReply& r, const control::StatsReply* previous, double interval_s) {
    std::string s;
    for (const auto& [group, counters] : r.groups) {
        std::vector<std::vector<std::string>> rows;
        for (const auto& [name, v] : counters) {
            if (v == 0 && previous == nullptr) continue;  // a terminal's worth: only what happened
            std::vector<std::string> row = {"  " + name, std::to_string(v)};
            if (previous != nullptr && interval_s > 0) {
                const std::uint64_t before = previous->value(group, name);
                row.push_back(fmt::format("{:.0f}/s", static_cast<double>(v - std::min(v, before)) / interval_s));
            }
            rows.push_back(std::move(row));
        }
        s += fmt::format("{}:\n", group);
        if (rows.empty()) {
            s += "  (all zero)\n";
            continue;
        }
        std::vector<std::string> header = {"  COUNTER", "VALUE"};
        if (previous != nullptr && interval_s > 0) header.push_back("RATE");
        s += table(header, rows);
    }
    return s;
}

std::string render_fabric(const control::FabricReply& r) {
    std::string s = fmt::format("fabric generation {}  local node {}\n", r.generation, r.local_node);
    std::vector<std::vector<std::string>> nodes;
    for (const auto& n : r.nodes) {
        const std::string path_mtu = n.path_mtu ? fmt::format("{} (learned, {} s left)", *n.path_mtu,
                                                              n.path_mtu_expires_in_s.value_or(0))
                                                : "-";
        nodes.push_back({n.name, text_of(n.address), text_of(n.mac), path_mtu});
    }
    s += "\nnodes:\n" + table({"NAME", "ADDRESS", "MAC", "PATH MTU"}, nodes);
    for (const auto& v : r.vpcs) {
        s += fmt::format("\nvpc {}  vni {}  cidr {}  gateway {}  mtu {}{}{}\n", v.name, v.vni, v.cidr, v.gateway, v.mtu,
                         v.ipv6_prefix ? fmt::format("  ipv6 {} router {}{}", *v.ipv6_prefix, text_of(v.ipv6_router),
                                                   v.ipv6_gateway ? "  gateway " + *v.ipv6_gateway : "")
                                       : "",
                         v.nat ? fmt::format("  nat {} via {}", v.nat->address, v.nat->gateway_node) : "");
        std::vector<std::vector<std::string>> eps;
        for (const auto& e : v.endpoints) {
            eps.push_back({"  " + e.ip, e.mac, e.node, text_of(e.port)});
            if (v.ipv6_prefix) eps.back().push_back(text_of(e.ipv6));
        }
        std::vector<std::string> header{"  IP", "MAC", "NODE", "PORT"};
        if (v.ipv6_prefix) header.push_back("IPV6");
        s += table(header, eps);
    }
    return s;
}

std::string render_nat_conntrack(const control::ConntrackReply& r);
std::string render_firewall_flows(const control::ConntrackReply& r);

std::string render_policy(const control::PolicyReply& r) {
    if (r.enforced_vpcs.empty()) return "no VPC has security groups: every VPC is open\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& rule : r.rules)
        rows.push_back({rule.vpc, rule.group.empty() ? "(default)" : rule.group,
                        rule.index < 0 ? "-" : std::to_string(rule.index), rule.rule, std::to_string(rule.hits)});
    std::string s = table({"VPC", "GROUP", "#", "RULE", "HITS"}, rows);
    s += fmt::format("firewall: {} flows tracked; {} opened, {} denied, {} revoked by a new policy, {} expired, "
                     "{} unknown fragments, {} refused with the table full, {} TCP segments of no open connection "
                     "passed by the rules alone\n",
                     r.flows, r.opened, r.denied, r.revoked, r.expired, r.fragments_unknown, r.table_full, r.unopened);
    return s;
}

std::string render_leases(const control::LeasesReply& r) {
    std::string s;
    if (r.leases.empty()) {
        s = "no DHCP client heard yet\n";
    } else {
        std::vector<std::vector<std::string>> rows;
        for (const auto& l : r.leases)
            rows.push_back({std::to_string(l.vni), l.mac, l.address, l.state,
                            l.expires_in_seconds < 0 ? "-" : fmt::format("{:.0f}s", l.expires_in_seconds),
                            fmt::format("{:.0f}s ago", l.last_seen_seconds_ago), l.last_message, std::to_string(l.naks)});
        s = table({"VNI", "MAC", "ADDRESS", "STATE", "EXPIRES", "LAST SEEN", "LAST", "NAKS"}, rows);
    }
    s += fmt::format("dhcp: {} discovers, {} requests -> {} offers, {} acks, {} naks; {} releases, {} declines, {} informs; "
                     "not answered: {} other clients' MACs, {} over rate, {} malformed\n",
                     r.discovers, r.requests, r.offers, r.acks, r.naks, r.releases, r.declines, r.informs,
                     r.unknown_client, r.rate_limited, r.malformed);
    return s;
}

std::string render_firewall_flows(const control::ConntrackReply& r) {
    if (r.firewall_in_table == 0 && r.firewall_flows.empty()) return "";
    std::vector<std::vector<std::string>> rows;
    // An IPv6 address in brackets before its port (RFC 5952 6), as [fd00::10]:80.
    auto at = [](const std::string& address, std::uint16_t port) {
        return address.find(':') == std::string::npos ? fmt::format("{}:{}", address, port)
                                                      : fmt::format("[{}]:{}", address, port);
    };
    for (const auto& f : r.firewall_flows)
        rows.push_back({f.endpoint, f.direction, f.protocol,
                        at(f.tuple.source, f.tuple.source_port) + " -> " + at(f.tuple.destination, f.tuple.destination_port),
                        std::to_string(f.packets), std::to_string(static_cast<std::uint64_t>(std::max(f.idle_seconds, 0.0))),
                        f.closing ? "closing" : "open", f.rule.empty() ? "-" : f.rule});
    return "\nsecurity-group flows:\n" +
           table({"ENDPOINT", "OPENED AS", "PROTO", "TUPLE", "PKTS", "IDLE", "STATE", "RULE"}, rows) +
           fmt::format("{} of {} firewall flows\n", r.firewall_flows.size(), std::max<std::uint64_t>(r.firewall_in_table, r.firewall_flows.size()));
}

std::string render_conntrack(const control::ConntrackReply& r) {
    return render_nat_conntrack(r) + render_firewall_flows(r);
}

std::string render_nat_conntrack(const control::ConntrackReply& r) {
    auto tuple = [](const control::FlowTuple& t) {
        return fmt::format("{}:{} -> {}:{}", t.source, t.source_port, t.destination, t.destination_port);
    };
    auto whole = [](double seconds) { return std::to_string(static_cast<std::uint64_t>(std::max(seconds, 0.0))); };
    std::vector<std::vector<std::string>> rows;
    for (const auto& f : r.flows)
        rows.push_back({f.protocol, tuple(f.original), tuple(f.translated), f.state, whole(f.age_seconds),
                        whole(f.expires_in_seconds), f.kernel ? "kernel" : "pipeline",
                        f.kernel ? fmt::format("{}/{}", f.kernel_packets, f.kernel_bytes) : "-"});
    std::string s =
        table({"PROTO", "ORIGINAL", "TRANSLATED", "STATE", "AGE", "EXPIRES", "PATH", "KERNEL PKTS/BYTES"}, rows);
    if (!r.nat_gateway) return s + "not a NAT gateway: no flows\n";
    // Never a page that looks like the whole: the total, and where the next page starts.
    // A daemon older than the paging says neither total: what it sent is all there is to say.
    const std::uint64_t shown = r.flows.size();
    const std::uint64_t total = std::max(r.total, shown);
    const std::uint64_t in_table = std::max(r.in_table, total);
    const std::string matching = total == in_table ? fmt::format("{} flows", total)
                                                   : fmt::format("{} flows match of {} in the table", total, in_table);
    if (shown == total) return s + matching + "\n";
    if (shown == 0) return s + fmt::format("{}; none from offset {}\n", matching, r.offset);
    s += fmt::format("flows {}-{} of {}", r.offset + 1, r.offset + shown, matching);
    if (r.offset + shown < total) s += fmt::format("; next page: --offset {}", r.offset + shown);
    return s + "\n";
}

std::string render_reload(const control::ReloadReply& r) {
    return fmt::format("reloaded: fabric generation {}\n{}", r.generation, r.summary.empty() ? "no changes\n" : r.summary);
}

namespace {

// Decodes the result as `Reply` and renders it; a result that does not fit is an error.
template <class Reply, class Render>
bool render_as(const json& result, Render&& render, std::ostream& out, std::ostream& err) {
    auto decoded = control::decode<Reply>(result);
    if (const auto* e = std::get_if<control::ProtocolError>(&decoded)) {
        err << "andromedactl: " << e->message << '\n';
        return false;
    }
    out << render(std::get<Reply>(decoded));
    return true;
}

// Whether a health or status result says the daemon is degraded (a daemon too old to say: not).
bool degraded(control::Command command, const json& result) {
    if (command == control::Command::health) {
        const auto health = control::decode<control::HealthReply>(result);
        return std::holds_alternative<control::HealthReply>(health) && !std::get<control::HealthReply>(health).healthy;
    }
    const auto status = control::decode<control::StatusReply>(result);
    if (!std::holds_alternative<control::StatusReply>(status)) return false;
    const auto& health = std::get<control::StatusReply>(status).health;
    return health && !health->healthy;
}

}  // namespace

int run_control_command(const Target& target, const control::ControlRequest& request, const CommandOptions& options,
                        std::ostream& out, std::ostream& err) {
    std::string error;
    const auto socket = resolve_socket(target, error);
    if (!socket) {
        err << "andromedactl: " << error << '\n';
        return kExitUnreachable;
    }
    std::optional<control::StatsReply> previous;
    for (;;) {
        const auto reply = control::send_control_request(*socket, request);
        if (const auto* e = std::get_if<control::ProtocolError>(&reply)) {
            err << "andromedactl: " << e->message << '\n';
            return kExitUnreachable;
        }
        const auto& response = std::get<control::ControlResponse>(reply);
        if (!response.ok) {
            err << "andromedactl " << control::to_string(request.command) << ": " << response.error << '\n';
            return kExitRefused;
        }
        bool rendered = true;
        if (options.json) {
            out << response.result.dump(2) << '\n';
        } else {
            switch (request.command) {
                case control::Command::status:
                    rendered = render_as<control::StatusReply>(response.result, [](const auto& r) { return render_status(r); }, out, err);
                    break;
                case control::Command::stats:
                    rendered = render_as<control::StatsReply>(
                        response.result,
                        [&](const auto& r) { return render_stats(r, previous ? &*previous : nullptr, options.watch_s.value_or(0)); },
                        out, err);
                    break;
                case control::Command::fabric:
                    rendered = render_as<control::FabricReply>(response.result, [](const auto& r) { return render_fabric(r); }, out, err);
                    break;
                case control::Command::conntrack:
                    rendered = render_as<control::ConntrackReply>(response.result, [](const auto& r) { return render_conntrack(r); },
                                                                  out, err);
                    break;
                case control::Command::reload:
                    rendered = render_as<control::ReloadReply>(response.result, [](const auto& r) { return render_reload(r); }, out, err);
                    break;
                case control::Command::health:
                    rendered = render_as<control::HealthReply>(response.result, [](const auto& r) { return render_health(r); }, out, err);
                    break;
                case control::Command::policy:
                    rendered = render_as<control::PolicyReply>(response.result, [](const auto& r) { return render_policy(r); }, out, err);
                    break;
                case control::Command::leases:
                    rendered = render_as<control::LeasesReply>(response.result, [](const auto& r) { return render_leases(r); }, out, err);
                    break;
                case control::Command::log_level:
                    rendered = render_as<control::LogLevelReply>(response.result, [](const auto& r) { return render_log_level(r); },
                                                                 out, err);
                    break;
            }
        }
        if (!rendered) return kExitUnreachable;
        if (request.command == control::Command::health || request.command == control::Command::status)
            return degraded(request.command, response.result) ? kExitDegraded : kExitOk;
        if (!options.watch_s || request.command != control::Command::stats) return 0;
        if (auto stats = control::decode<control::StatsReply>(response.result); std::holds_alternative<control::StatsReply>(stats))
            previous = std::get<control::StatsReply>(std::move(stats));
        out << std::flush;
        std::this_thread::sleep_for(std::chrono::duration<double>(*options.watch_s));
        if (!options.json) out << '\n';
    }
}

}  // namespace andromeda::ctl
