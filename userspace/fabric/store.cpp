#include "fabric/store.hpp"

namespace andromeda::fabric {

std::string ReloadResult::message() const {
    if (!applied) return to_string(errors) + "fabric not changed: " + std::to_string(errors.size()) + " error(s)\n";
    return "fabric generation " + std::to_string(snapshot->generation()) + " from " + snapshot->source_name() + ": " +
           diff.summary();
}

LoadOptions FabricStore::next_options() const { return {generation_ + 1, ports_}; }

ReloadResult FabricStore::load_file(const std::string& path) {
    std::lock_guard lock(reload_mutex_);
    return apply(load_fabric_file(path, next_options()));
}

ReloadResult FabricStore::load_string(std::string_view text, const std::string& display_name) {
    std::lock_guard lock(reload_mutex_);
    return apply(load_fabric_string(text, display_name, next_options()));
}

ReloadResult FabricStore::load_with(const std::function<LoadResult(const LoadOptions&)>& build) {
    std::lock_guard lock(reload_mutex_);
    return apply(build(next_options()));
}

std::optional<ReloadResult> FabricStore::derive(
    const std::function<std::optional<DerivedFabric>(const FabricSnapshot&, const LoadOptions&)>& derive) {
    std::lock_guard lock(reload_mutex_);
    const auto running = publisher_.current();
    if (!running) return std::nullopt;
    std::optional<DerivedFabric> derived = derive(*running, next_options());
    if (!derived) return std::nullopt;
    ReloadResult result;
    result.applied = true;
    result.diff = std::move(derived->diff);
    result.snapshot = derived->snapshot;
    generation_ = derived->snapshot->generation();
    publisher_.publish(std::move(derived->snapshot));
    return result;
}

ReloadResult FabricStore::apply(LoadResult loaded) {
    ReloadResult result;
    if (!loaded.ok()) {
        result.errors = std::move(loaded.errors);
        result.snapshot = publisher_.current();
        return result;
    }
    const auto running = publisher_.current();
    result.diff = diff_fabrics(running.get(), *loaded.snapshot);
    result.snapshot = loaded.snapshot;
    result.applied = true;
    generation_ = loaded.snapshot->generation();
    publisher_.publish(std::move(loaded.snapshot));
    return result;
}

}  // namespace andromeda::fabric
