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

std::string text_of(const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_null()) return "-";
    return v.dump();
}

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

std::string render_status(const json& r) {
    std::string s = fmt::format("node {}  pid {}  up {}  fabric generation {}  workers {}\nconfig {}\npins {}\n",
                                text_of(r.value("node", json())), text_of(r.value("pid", json())),
                                duration_text(r.value("uptime_s", std::uint64_t{0})),
                                text_of(r.value("fabric_generation", json())), text_of(r.value("workers", json())),
                                text_of(r.value("config", json())), text_of(r.value("pin_dir", json())));
    // "underlay eth1 VLAN 100 192.168.1.1  encap andromeda": the VLAN only when the daemon tags.
    if (r.contains("underlay")) {
        const auto vlan = r.value("underlay_vlan", std::uint64_t{0});
        s += fmt::format("underlay {}{} {}  encap {}\n", text_of(r.value("underlay", json())),
                         vlan != 0 ? " VLAN " + std::to_string(vlan) : std::string(),
                         text_of(r.value("underlay_address", json())), text_of(r.value("encap", json())));
    }
    // "worker cpus 0:cpu1 1:cpu0(not pinned)" when [node] worker_cpus pins them.
    std::string cpus;
    const json worker_cpus = r.value("worker_cpus", json::array());
    for (std::size_t w = 0; w < worker_cpus.size(); ++w) {
        const json& c = worker_cpus[w];
        if (!c.is_object()) continue;
        cpus += fmt::format(" {}:cpu{}{}", w, text_of(c.value("cpu", json())), c.value("pinned", false) ? "" : "(not pinned)");
    }
    if (!cpus.empty()) s += "worker cpus" + cpus + "\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& p : r.value("ports", json::array()))
        rows.push_back({text_of(p.value("name", json())), text_of(p.value("role", json())),
                        text_of(p.value("xdp_mode", json())), text_of(p.value("bind", json())),
                        text_of(p.value("queues", json())), text_of(p.value("endpoint", json())),
                        text_of(p.value("paths", json()))});
    if (!rows.empty()) s += "\n" + table({"PORT", "ROLE", "XDP", "AF_XDP", "QUEUES", "ENDPOINT", "PATHS"}, rows);
    return s;
}

std::string render_stats(const json& r, const json* previous, double interval_s) {
    std::string s;
    for (const auto& [group, counters] : r.items()) {
        if (!counters.is_object()) continue;
        std::vector<std::vector<std::string>> rows;
        for (const auto& [name, value] : counters.items()) {
            if (!value.is_number_unsigned() && !value.is_number_integer()) continue;
            const auto v = value.get<std::uint64_t>();
            if (v == 0 && previous == nullptr) continue;  // a terminal's worth: only what happened
            std::vector<std::string> row = {name, std::to_string(v)};
            if (previous != nullptr && interval_s > 0) {
                const auto before = previous->value(json::json_pointer("/" + group + "/" + name), std::uint64_t{0});
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
        for (auto& row : rows) row[0] = "  " + row[0];
        s += table(header, rows);
    }
    return s;
}

std::string render_fabric(const json& r) {
    std::string s = fmt::format("fabric generation {}  local node {}\n", text_of(r.value("generation", json())),
                                text_of(r.value("local_node", json())));
    std::vector<std::vector<std::string>> nodes;
    for (const auto& n : r.value("nodes", json::array()))
        nodes.push_back({text_of(n.value("name", json())), text_of(n.value("address", json())),
                         text_of(n.value("mac", json()))});
    s += "\nnodes:\n" + table({"NAME", "ADDRESS", "MAC"}, nodes);
    for (const auto& v : r.value("vpcs", json::array())) {
        s += fmt::format("\nvpc {}  vni {}  cidr {}  gateway {}  mtu {}{}\n", text_of(v.value("name", json())),
                         text_of(v.value("vni", json())), text_of(v.value("cidr", json())),
                         text_of(v.value("gateway", json())), text_of(v.value("mtu", json())),
                         v.contains("nat") ? fmt::format("  nat {} via {}", text_of(v["nat"].value("address", json())),
                                                         text_of(v["nat"].value("gateway_node", json())))
                                           : "");
        std::vector<std::vector<std::string>> eps;
        for (const auto& e : v.value("endpoints", json::array()))
            eps.push_back({text_of(e.value("ip", json())), text_of(e.value("mac", json())),
                           text_of(e.value("node", json())), text_of(e.value("port", json()))});
        s += table({"  IP", "MAC", "NODE", "PORT"}, [&] {
            for (auto& e : eps) e[0] = "  " + e[0];
            return eps;
        }());
    }
    return s;
}

std::string render_conntrack(const json& r) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& f : r.value("flows", json::array()))
        rows.push_back({text_of(f.value("protocol", json())), text_of(f.value("original", json())),
                        text_of(f.value("translated", json())), text_of(f.value("state", json())),
                        text_of(f.value("age_s", json())), text_of(f.value("expires_in_s", json()))});
    return table({"PROTO", "ORIGINAL", "TRANSLATED", "STATE", "AGE", "EXPIRES"}, rows) +
           fmt::format("{} flows\n", rows.size());
}

std::string render_reload(const json& r) {
    return fmt::format("reloaded: fabric generation {}\n{}", text_of(r.value("generation", json())),
                       r.value("summary", std::string("no changes\n")));
}

int run_control_command(const Target& target, const control::ControlRequest& request, const CommandOptions& options,
                        std::ostream& out, std::ostream& err) {
    std::string error;
    const auto socket = resolve_socket(target, error);
    if (!socket) {
        err << "andromedactl: " << error << '\n';
        return 2;
    }
    std::optional<json> previous;
    for (;;) {
        const auto reply = control::send_control_request(*socket, request);
        if (const auto* e = std::get_if<control::ProtocolError>(&reply)) {
            err << "andromedactl: " << e->message << '\n';
            return 2;
        }
        const auto& response = std::get<control::ControlResponse>(reply);
        if (!response.ok) {
            err << "andromedactl " << control::to_string(request.command) << ": " << response.error << '\n';
            return 1;
        }
        if (options.json) {
            out << response.result.dump(2) << '\n';
        } else {
            switch (request.command) {
                case control::Command::status: out << render_status(response.result); break;
                case control::Command::stats:
                    out << render_stats(response.result, previous ? &*previous : nullptr, options.watch_s.value_or(0));
                    break;
                case control::Command::fabric: out << render_fabric(response.result); break;
                case control::Command::conntrack: out << render_conntrack(response.result); break;
                case control::Command::reload: out << render_reload(response.result); break;
            }
        }
        if (!options.watch_s || request.command != control::Command::stats) return 0;
        previous = response.result;
        out << std::flush;
        std::this_thread::sleep_for(std::chrono::duration<double>(*options.watch_s));
        if (!options.json) out << '\n';
    }
}

}  // namespace andromeda::ctl
