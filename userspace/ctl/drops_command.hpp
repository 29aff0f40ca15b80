// `andromedactl drops [--json]`: the registry of every drop reason (util/drop_registry.hpp), with
// its stable id, its layer, what it means and which `andromedactl stats` counter counts it. Needs
// no daemon.
#pragma once

#include <iosfwd>

namespace andromeda::ctl {

// Prints the registry as a table, or as a JSON array with --json. Returns the exit code (0).
int run_drops(bool json, std::ostream& out);

}  // namespace andromeda::ctl
