// The running fabric of one andromedad: load or reload node.toml, diff it against what runs,
// publish it to the workers with one atomic swap. A file that fails validation changes nothing.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "fabric/diff.hpp"
#include "fabric/loader.hpp"
#include "fabric/publisher.hpp"

namespace andromeda::fabric {

struct ReloadResult {
    bool applied = false;
    ValidationErrors errors;  // why nothing was applied
    FabricDiff diff;          // what the applied snapshot changed
    std::shared_ptr<const FabricSnapshot> snapshot;  // the snapshot now running

    // The errors, or the diff summary: what `andromedactl reload` shows.
    [[nodiscard]] std::string message() const;
};

// The last word on a valid fabric before it is published, given it and its diff from the
// running one (the daemon: whether it fits the BPF maps, then their writes). Errors refuse it as
// validation errors do; an exception refuses it too and reaches the caller of the load. Either
// way nothing is published and the next load gets the same generation.
using BeforePublish = std::function<ValidationErrors(const FabricSnapshot& next, const FabricDiff& diff)>;

class FabricStore {
public:
    explicit FabricStore(PortResolver ports = {}) : ports_(std::move(ports)) {}

    // First load and every reload go through here; concurrent calls are serialized.
    ReloadResult load_file(const std::string& path, const BeforePublish& before_publish = {});
    ReloadResult load_string(std::string_view text, const std::string& display_name,
                             const BeforePublish& before_publish = {});
    // Any other source (etcd): `build` makes the fabric with the options it is given (the next
    // generation, the port resolver); applied as a reload is.
    ReloadResult load_with(const std::function<LoadResult(const LoadOptions&)>& build,
                           const BeforePublish& before_publish = {});
    // A source that derives the next fabric from the running one (etcd's endpoint changes):
    // `derive` gets the running snapshot and the next generation's options and returns the new
    // snapshot with its diff, or nullopt when it cannot (then nothing changes, and nullopt is
    // returned: the caller builds in full instead).
    std::optional<ReloadResult> derive(
        const std::function<std::optional<DerivedFabric>(const FabricSnapshot&, const LoadOptions&)>& derive,
        const BeforePublish& before_publish = {});

    // One per worker thread, created before the workers start reading.
    [[nodiscard]] FabricReader make_reader() { return publisher_.make_reader(); }
    [[nodiscard]] std::shared_ptr<const FabricSnapshot> current() const { return publisher_.current(); }
    SnapshotPublisher& publisher() noexcept { return publisher_; }

private:
    ReloadResult apply(LoadResult loaded, const BeforePublish& before_publish);
    // Publishes `result.snapshot` unless `before_publish` refuses it (then `result` says why).
    void publish(ReloadResult& result, const BeforePublish& before_publish);
    LoadOptions next_options() const;

    PortResolver ports_;
    std::mutex reload_mutex_;
    std::uint64_t generation_ = 0;
    SnapshotPublisher publisher_;
};

}  // namespace andromeda::fabric
