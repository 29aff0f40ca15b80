// Load and validation errors. One format everywhere, so people and scripts can read it:
//   <file>:<line>: <key>: <what is wrong>; <what would be valid>
// The line is left out when it is not known (for example a key that is missing altogether).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace andromeda::fabric {

struct ValidationError {
    std::string file;
    std::uint32_t line = 0;  // 1-based; 0 when unknown
    std::string key;         // path such as "vpc[0].endpoint[3].mac"
    std::string problem;     // what is wrong
    std::string expected;    // what would be valid

    [[nodiscard]] std::string to_string() const;
    friend bool operator==(const ValidationError&, const ValidationError&) = default;
};

using ValidationErrors = std::vector<ValidationError>;

// All errors, one per line.
[[nodiscard]] std::string to_string(const ValidationErrors& errors);

}  // namespace andromeda::fabric
