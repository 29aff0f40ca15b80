// Loading node.toml into a validated snapshot. The only I/O is reading the file.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "fabric/errors.hpp"
#include "fabric/snapshot.hpp"

namespace andromeda::fabric {

struct LoadResult {
    std::shared_ptr<const FabricSnapshot> snapshot;  // null when there are errors
    ValidationErrors errors;                         // every error found, in file order

    [[nodiscard]] bool ok() const noexcept { return snapshot != nullptr; }
};

struct LoadOptions {
    std::uint64_t generation = 0;
    PortResolver ports;  // optional: binds tenant port names to ifindexes
};

// `display_name` is the file name used in error messages.
[[nodiscard]] LoadResult load_fabric_string(std::string_view text, const std::string& display_name,
                                            const LoadOptions& options = {});
// A whole file as text; nullopt when it cannot be read (errno says why).
[[nodiscard]] std::optional<std::string> read_text_file(const std::string& path);

[[nodiscard]] LoadResult load_fabric_file(const std::string& path, const LoadOptions& options = {});

}  // namespace andromeda::fabric
