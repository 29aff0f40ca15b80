// libFuzzer target over the node.toml loader: any input must give either a snapshot or at least
// one error naming the file, never a crash or hang. Also a differential check: whenever the
// TOML subset reader accepts an input, toml11 must accept it too and read the same document.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fabric/fabric.hpp"
#include "fabric/toml_tree.hpp"

namespace {

using namespace andromeda::fabric;

void check_subset_reader_agrees(std::string_view text) {
    const auto subset = detail::parse_toml_subset(text);
    if (!subset) return;
    ValidationError error;
    const auto full = detail::parse_toml_full(text, "fuzz.toml", error);
    if (!full || !detail::same_document(*subset, *full)) std::abort();
}

void exercise(const FabricSnapshot& fabric) {
    for (const Endpoint& e : fabric.endpoints()) {
        if (fabric.find_endpoint(e.vni, e.ip) == nullptr) std::abort();
        if (e.is_local && fabric.find_local_endpoint(e.port) == nullptr) std::abort();
        if (fabric.find_vpc(e.vni) == nullptr || fabric.node_of(e).name != e.node) std::abort();
    }
    if (!diff_fabrics(&fabric, fabric).empty()) std::abort();
    (void)diff_fabrics(nullptr, fabric).summary();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const LoadResult result = load_fabric_string(text, "fuzz.toml");
    if (result.ok() != result.errors.empty()) std::abort();
    for (const auto& e : result.errors)
        if (e.file != "fuzz.toml" || e.to_string().empty()) std::abort();
    if (result.ok()) exercise(*result.snapshot);
    check_subset_reader_agrees(text);
    return 0;
}
