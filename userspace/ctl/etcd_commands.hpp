// andromedactl fabric import|put|delete|get: writing and reading the fabric in etcd (docs/etcd.md).
// They talk to etcd, not to a daemon; every andromedad watching the prefix applies the change.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace andromeda::ctl {

// Where etcd is: node.toml's [etcd] (-c), overridden field by field by the flags.
struct EtcdTarget {
    std::optional<std::string> config;  // a node.toml with [etcd]
    std::vector<std::string> endpoints;
    std::optional<std::string> prefix;
    std::string ca_file, cert_file, key_file, username, password_file;
};

// node.toml's fabric into etcd, validated first; --replace removes the keys the file does not
// have. One transaction when it fits etcd's --max-txn-ops (128 by default), else batches of it.
int run_fabric_import(const EtcdTarget& target, const std::string& file, bool replace, std::ostream& out, std::ostream& err);
// KIND node|vpc|endpoint; NAME: node or VPC name, or VPC/IP for an endpoint. The value is checked
// with the fabric it joins (its schema, its VPC, its CIDR, duplicates); refused, nothing written.
int run_fabric_put(const EtcdTarget& target, const std::string& kind, const std::string& name, const std::string& value,
                   std::ostream& out, std::ostream& err);
// Deleting a VPC deletes its endpoints with it (one transaction).
int run_fabric_delete(const EtcdTarget& target, const std::string& kind, const std::string& name, std::ostream& out,
                      std::ostream& err);
// Every key (or those of KIND, or one), with its value; and the keys the fabric would leave out.
int run_fabric_get(const EtcdTarget& target, const std::string& kind, const std::string& name, bool json, std::ostream& out,
                   std::ostream& err);

}  // namespace andromeda::ctl
