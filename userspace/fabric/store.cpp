#include "fabric/store.hpp"

namespace andromeda::fabric {

std::string ReloadResult::message() const {
    if (!applied) return to_string(errors) + "fabric not changed: " + std::to_string(errors.size()) + " error(s)\n";
    return "fabric generation " + std::to_string(snapshot->generation()) + " from " + snapshot->source_name() + ": " +
           diff.summary();
}

LoadOptions FabricStore::next_options() const { return {generation_ + 1, ports_}; }

ReloadResult FabricStore::load_file(const std::string& path, const BeforePublish& before_publish) {
    std::lock_guard lock(reload_mutex_);
    return apply(load_fabric_file(path, next_options()), before_publish);
}

ReloadResult FabricStore::load_string(std::string_view text, const std::string& display_name,
                                      const BeforePublish& before_publish) {
    std::lock_guard lock(reload_mutex_);
    return apply(load_fabric_string(text, display_name, next_options()), before_publish);
}

ReloadResult FabricStore::load_with(const std::function<LoadResult(const LoadOptions&)>& build,
                                    const BeforePublish& before_publish) {
    std::lock_guard lock(reload_mutex_);
    return apply(build(next_options()), before_publish);
}

std::optional<ReloadResult> FabricStore::derive(
    const std::function<std::optional<DerivedFabric>(const FabricSnapshot&, const LoadOptions&)>& derive,
    const BeforePublish& before_publish) {
    std::lock_guard lock(reload_mutex_);
    const auto running = publisher_.current();
    if (!running) return std::nullopt;
    std::optional<DerivedFabric> derived = derive(*running, next_options());
    if (!derived) return std::nullopt;
    ReloadResult result;
    result.diff = std::move(derived->diff);
    result.snapshot = std::move(derived->snapshot);
    publish(result, before_publish);
    return result;
}

ReloadResult FabricStore::apply(LoadResult loaded, const BeforePublish& before_publish) {
    ReloadResult result;
    if (!loaded.ok()) {
        result.errors = std::move(loaded.errors);
        result.snapshot = publisher_.current();
        return result;
    }
    const auto running = publisher_.current();
    result.diff = diff_fabrics(running.get(), *loaded.snapshot);
    result.snapshot = std::move(loaded.snapshot);
    publish(result, before_publish);
    return result;
}

void FabricStore::publish(ReloadResult& result, const BeforePublish& before_publish) {
    if (before_publish) {
        result.errors = before_publish(*result.snapshot, result.diff);
        if (!result.errors.empty()) {
            result.diff = {};
            result.snapshot = publisher_.current();
            return;
        }
    }
    result.applied = true;
    generation_ = result.snapshot->generation();
    publisher_.publish(result.snapshot);
}

}  // namespace andromeda::fabric
