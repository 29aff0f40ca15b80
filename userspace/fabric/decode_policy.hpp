// Internal: decoding security groups, VPC defaults and endpoint memberships (decode_policy.cpp).
#pragma once

#include <string>
#include <vector>

#include "fabric/decode_fields.hpp"
#include "fabric/model.hpp"
#include "fabric/toml_tree.hpp"

namespace andromeda::fabric::detail {

// [[vpc.security_group]] and default_ingress / default_egress of one [[vpc]] table, into `vpc`.
void decode_security_groups(FieldReader& fields, const TomlNode& vpc_table, const std::string& path, Vpc& vpc);

// An endpoint's `groups = [...]`, each a group of `vpc`; false when one was reported.
bool decode_endpoint_groups(FieldReader& fields, const TomlNode& endpoint_table, const std::string& path,
                            const Vpc& vpc, std::vector<std::string>& groups);

}  // namespace andromeda::fabric::detail
