#include "version/version.hpp"

namespace andromeda {

std::string version_text() {
    std::string text(version());
    if (git_commit().empty()) return text + " (not built from a git checkout)";
    return text + " (git " + std::string(git_commit()) + (git_modified() ? ", modified)" : ")");
}

}  // namespace andromeda
