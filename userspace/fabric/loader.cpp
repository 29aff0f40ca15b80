#include "fabric/loader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "fabric/decode.hpp"

namespace andromeda::fabric {

LoadResult load_fabric_string(std::string_view text, const std::string& display_name, const LoadOptions& options) {
    LoadResult result;
    ValidationError syntax;
    const auto tree = detail::parse_toml(text, display_name, syntax);
    if (!tree) {
        result.errors.push_back(std::move(syntax));
        return result;
    }
    detail::DecodedFabric decoded = detail::decode_fabric(*tree, display_name);
    detail::validate_fabric(decoded);
    if (!decoded.errors.empty()) {
        // Reading order; errors without a line (missing sections) first.
        std::stable_sort(decoded.errors.begin(), decoded.errors.end(),
                         [](const ValidationError& a, const ValidationError& b) { return a.line < b.line; });
        result.errors = std::move(decoded.errors);
        return result;
    }
    result.snapshot = std::make_shared<const FabricSnapshot>(std::move(decoded.config), options.generation, options.ports);
    return result;
}

std::optional<std::string> read_text_file(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    std::ostringstream text;
    if (file) text << file.rdbuf();
    if (!file || file.bad()) return std::nullopt;
    return text.str();
}

LoadResult load_fabric_file(const std::string& path, const LoadOptions& options) {
    const auto text = read_text_file(path);
    if (!text) {
        LoadResult result;
        result.errors.push_back({path, 0, "", std::string("cannot read the file: ") + std::strerror(errno),
                                 "check the path and its permissions"});
        return result;
    }
    return load_fabric_string(*text, path, options);
}

}  // namespace andromeda::fabric
