#include "fabric/errors.hpp"

namespace andromeda::fabric {

std::string ValidationError::to_string() const {
    std::string out = file;
    if (line != 0) out += ':' + std::to_string(line);
    out += ": ";
    if (!key.empty()) out += key + ": ";
    out += problem;
    if (!expected.empty()) out += "; " + expected;
    return out;
}

std::string to_string(const ValidationErrors& errors) {
    std::string out;
    for (const auto& e : errors) out += e.to_string() + '\n';
    return out;
}

}  // namespace andromeda::fabric
