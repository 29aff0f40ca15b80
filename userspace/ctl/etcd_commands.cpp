#include "ctl/etcd_commands.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "etcd/client.hpp"
#include "fabric/etcd_fabric.hpp"

namespace andromeda::ctl {

namespace {

using nlohmann::json;

// etcd's default --max-txn-ops: the most operations one transaction may hold.
constexpr std::size_t kMaxTxnOps = 128;

struct Connection {
    fabric::EtcdSettings settings;
    std::string encap = "andromeda";  // the fabric's, for checking node values
    std::unique_ptr<etcd::Client> client;
    fabric::EtcdLayout layout{};
};

// Connects as `target` says; on failure writes why to `err` and returns null.
std::unique_ptr<Connection> connect(const EtcdTarget& target, std::ostream& err) {
    auto c = std::make_unique<Connection>();
    if (target.config) {
        const fabric::LoadResult loaded = fabric::load_fabric_file(*target.config);
        if (!loaded.ok()) {
            err << fabric::to_string(loaded.errors) << "andromedactl: " << *target.config << " is not a valid node.toml\n";
            return nullptr;
        }
        if (!loaded.snapshot->local().etcd && target.endpoints.empty()) {
            err << "andromedactl: " << *target.config << " has no [etcd] table; give --etcd URL\n";
            return nullptr;
        }
        if (loaded.snapshot->local().etcd) c->settings = *loaded.snapshot->local().etcd;
        c->encap = std::string(fabric::to_string(loaded.snapshot->local().encap));
    }
    if (!target.endpoints.empty()) c->settings.endpoints = target.endpoints;
    if (target.prefix) c->settings.prefix = *target.prefix;
    for (auto [value, field] : {std::pair{&target.ca_file, &c->settings.ca_file}, {&target.cert_file, &c->settings.cert_file},
                                {&target.key_file, &c->settings.key_file}, {&target.username, &c->settings.username},
                                {&target.password_file, &c->settings.password_file}})
        if (!value->empty()) *field = *value;
    if (c->settings.endpoints.empty()) {
        err << "andromedactl: where is etcd? give --etcd http://HOST:2379 or -c node.toml (its [etcd])\n";
        return nullptr;
    }
    try {
        c->client = std::make_unique<etcd::Client>(fabric::etcd_client_config(c->settings));
    } catch (const std::exception& e) {
        err << "andromedactl: " << e.what() << '\n';
        return nullptr;
    }
    c->layout = fabric::EtcdLayout(c->settings.prefix);
    return c;
}

std::map<std::string, std::string> current_keys(Connection& c) {
    std::map<std::string, std::string> kvs;
    for (auto& kv : c.client->range_prefix(c.layout.root()).kvs) kvs.emplace(std::move(kv.key), std::move(kv.value));
    return kvs;
}

// The fabric these keys make, as a node of it would build it (any node: none is local here).
fabric::EtcdFabric check(const Connection& c, const std::map<std::string, std::string>& kvs) {
    const std::string self = "andromedactl-check";
    const std::string local = "[node]\nname = \"" + self + "\"\nunderlay = \"lo\"\nencap = \"" + c.encap + "\"\n";
    fabric::EtcdFabric built = fabric::build_etcd_fabric(local, "andromedactl", kvs, c.layout);
    for (auto& r : built.rejected) {  // the stand-in node is no node of the fabric: not in the hints
        for (const std::string& s : {self + ", ", ", " + self, self})
            if (const auto at = r.reason.find(s); at != std::string::npos) r.reason.erase(at, s.size());
    }
    return built;
}

std::optional<std::string> key_of(const fabric::EtcdLayout& layout, const std::string& kind, const std::string& name,
                                  std::ostream& err) {
    if (kind == "node") return layout.node_key(name);
    if (kind == "vpc") return layout.vpc_key(name);
    if (kind == "endpoint") {
        const auto slash = name.find('/');
        if (slash == std::string::npos || slash == 0 || slash + 1 == name.size()) {
            err << "andromedactl: an endpoint is named VPC/IP, e.g. blue/10.0.0.10 (got \"" << name << "\")\n";
            return std::nullopt;
        }
        return layout.endpoint_key(name.substr(0, slash), name.substr(slash + 1));
    }
    err << "andromedactl: KIND is node, vpc or endpoint (got \"" << kind << "\")\n";
    return std::nullopt;
}

// Runs `body`, turning etcd failures into exit status 2 with the reason.
template <class F>
int guarded(std::ostream& err, F&& body) {
    try {
        return body();
    } catch (const etcd::EtcdError& e) {
        err << "andromedactl: " << e.what() << '\n';
        return 2;
    }
}

}  // namespace

int run_fabric_import(const EtcdTarget& target, const std::string& file, bool replace, std::ostream& out, std::ostream& err) {
    const auto text = fabric::read_text_file(file);
    if (!text) {
        err << "andromedactl: cannot read " << file << '\n';
        return 2;
    }
    auto c = connect(target, err);
    if (!c) return 2;
    const fabric::EtcdImport imported = fabric::etcd_values_of(*text, file, c->layout);
    if (!imported.errors.empty()) {
        err << fabric::to_string(imported.errors) << "andromedactl: nothing imported: " << imported.errors.size()
            << " error(s) in " << file << '\n';
        return 1;
    }
    return guarded(err, [&] {
        std::vector<std::string> erases;
        if (replace) {
            std::map<std::string, bool> keep;
            for (const auto& [key, value] : imported.values) keep[key] = true;
            for (const auto& [key, value] : current_keys(*c))
                if (!keep.count(key)) erases.push_back(key);
        }
        const std::size_t ops = imported.values.size() + erases.size();
        std::size_t transactions = 0;
        std::int64_t revision = 0;
        std::size_t put_at = 0, erase_at = 0;
        while (put_at < imported.values.size() || erase_at < erases.size()) {
            std::vector<std::pair<std::string, std::string>> puts;
            std::vector<std::string> gone;
            while (gone.size() + puts.size() < kMaxTxnOps && erase_at < erases.size()) gone.push_back(erases[erase_at++]);
            while (gone.size() + puts.size() < kMaxTxnOps && put_at < imported.values.size())
                puts.push_back(imported.values[put_at++]);
            revision = c->client->put_all(puts, gone);
            ++transactions;
        }
        out << fmt::format("imported {} keys from {} under {}{} in {} transaction{} (revision {})\n", imported.values.size(), file,
                           c->layout.root(), erases.empty() ? "" : fmt::format(", removed {} others", erases.size()),
                           transactions, transactions == 1 ? "" : "s", revision);
        if (ops > kMaxTxnOps)
            out << fmt::format("note: {} operations exceed one transaction's {} (etcd's --max-txn-ops): watchers may see the "
                               "import in {} steps\n",
                               ops, kMaxTxnOps, transactions);
        return 0;
    });
}

int run_fabric_put(const EtcdTarget& target, const std::string& kind, const std::string& name, const std::string& value,
                   std::ostream& out, std::ostream& err) {
    auto c = connect(target, err);
    if (!c) return 2;
    const auto key = key_of(c->layout, kind, name, err);
    if (!key) return 2;
    return guarded(err, [&] {
        auto kvs = current_keys(*c);
        kvs[*key] = value;
        const fabric::EtcdFabric checked = check(*c, kvs);
        if (!checked.loaded.ok()) {
            err << fabric::to_string(checked.loaded.errors);
            return 1;
        }
        for (const auto& r : checked.rejected) {
            if (r.key == *key) {
                err << "andromedactl: " << r.key << ": " << r.reason << "\nnothing written\n";
                return 1;
            }
        }
        const std::int64_t revision = c->client->put(*key, value);
        out << fmt::format("put {} (revision {})\n", *key, revision);
        for (const auto& r : checked.rejected) out << "warning: already rejected: " << r.key << ": " << r.reason << '\n';
        return 0;
    });
}

int run_fabric_delete(const EtcdTarget& target, const std::string& kind, const std::string& name, std::ostream& out,
                      std::ostream& err) {
    auto c = connect(target, err);
    if (!c) return 2;
    const auto key = key_of(c->layout, kind, name, err);
    if (!key) return 2;
    return guarded(err, [&] {
        const auto kvs = current_keys(*c);
        if (!kvs.count(*key)) {
            err << "andromedactl: no key " << *key << '\n';
            return 1;
        }
        std::vector<std::string> gone{*key};
        if (kind == "vpc") {
            const std::string endpoints = c->layout.root() + "endpoints/" + name + "/";
            for (const auto& [k, v] : kvs)
                if (k.rfind(endpoints, 0) == 0) gone.push_back(k);
        }
        std::int64_t revision = 0;
        for (std::size_t at = 0; at < gone.size(); at += kMaxTxnOps)
            revision = c->client->put_all({}, {gone.begin() + static_cast<std::ptrdiff_t>(at),
                                               gone.begin() + static_cast<std::ptrdiff_t>(std::min(gone.size(), at + kMaxTxnOps))});
        out << fmt::format("deleted {}{} (revision {})\n", *key,
                           gone.size() > 1 ? fmt::format(" and its {} endpoint(s)", gone.size() - 1) : "", revision);
        return 0;
    });
}

int run_fabric_get(const EtcdTarget& target, const std::string& kind, const std::string& name, bool as_json, std::ostream& out,
                   std::ostream& err) {
    auto c = connect(target, err);
    if (!c) return 2;
    std::string prefix = c->layout.root();
    if (!kind.empty()) {
        if (!name.empty()) {
            const auto key = key_of(c->layout, kind, name, err);
            if (!key) return 2;
            prefix = *key;
        } else if (kind == "node" || kind == "vpc" || kind == "endpoint") {
            prefix += kind == "node" ? "nodes/" : kind == "vpc" ? "vpcs/" : "endpoints/";
        } else {
            err << "andromedactl: KIND is node, vpc or endpoint (got \"" << kind << "\")\n";
            return 2;
        }
    }
    return guarded(err, [&] {
        const auto all = current_keys(*c);
        const fabric::EtcdFabric checked = check(*c, all);
        std::map<std::string, std::string> rejected;
        for (const auto& r : checked.rejected) rejected[r.key] = r.reason;
        json doc = json::object();
        std::size_t shown = 0;
        for (const auto& [key, value] : all) {
            if (key.rfind(prefix, 0) != 0 || (!name.empty() && key != prefix)) continue;
            ++shown;
            if (as_json) {
                json v = json::parse(value, nullptr, false);
                doc[key] = {{"value", v.is_discarded() ? json(value) : v}};
                if (rejected.count(key)) doc[key]["rejected"] = rejected[key];
                continue;
            }
            out << key << ' ' << value << '\n';
            if (rejected.count(key)) out << "  rejected: " << rejected[key] << '\n';
        }
        if (as_json) out << doc.dump(2) << '\n';
        if (shown == 0 && !name.empty()) {
            err << "andromedactl: no key " << prefix << '\n';
            return 1;
        }
        return 0;
    });
}

}  // namespace andromeda::ctl
