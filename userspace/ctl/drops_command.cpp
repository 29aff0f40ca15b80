#include "ctl/drops_command.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "util/drop_registry.hpp"

namespace andromeda::ctl {

int run_drops(bool json, std::ostream& out) {
    if (json) {
        nlohmann::json rows = nlohmann::json::array();
        for (const auto& r : util::kDropReasons)
            rows.push_back({{"id", r.id},
                            {"layer", util::to_string(r.layer)},
                            {"name", r.name},
                            {"counter", std::string(r.stats_group) + "." + std::string(r.counter_prefix) + std::string(r.name)},
                            {"description", r.description}});
        out << rows.dump(2) << '\n';
        return 0;
    }
    out << fmt::format("{:<4} {:<9} {:<30} {:<40} {}\n", "id", "layer", "name", "counter (andromedactl stats)",
                       "description");
    for (const auto& r : util::kDropReasons)
        out << fmt::format("{:<4} {:<9} {:<30} {:<40} {}\n", r.id, util::to_string(r.layer), r.name,
                           fmt::format("{}.{}{}", r.stats_group, r.counter_prefix, r.name), r.description);
    return 0;
}

}  // namespace andromeda::ctl
