// Every layer's drop-reason enum from its X-list in shared/andromeda_drops.h, in one shape:
//
//   ANDROMEDA_DEFINE_DROP_REASONS(DropReason, kDropReasonCount, none, "not dropped", ANDROMEDA_DROPS_PIPELINE)
//
// defines, in the namespace it is used in,
//   - enum class DropReason : std::uint8_t { none, <each reason in list order> }: 0 is never a
//     reason, so a zero-initialised result means "not dropped";
//   - kDropReasonCount: the number of reasons, the zero value not included; reason r is counted
//     in slot drop_slot(r) = r - 1 of an array of that size;
//   - k<Enum>Entries, the table every value's row is in (name, stable id, description);
//   - to_string(r) (the reason's name, "none" for the zero value, "unknown" outside the enum),
//     describe(r) (its description) and stable_id(r) (its id in andromeda_drops.h, 0 for the zero
//     value).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "andromeda_drops.h"

#define ANDROMEDA_DROP_ENUMERATOR_(name, id, description) , name
#define ANDROMEDA_DROP_ENTRY_(name, id, description) , ::andromeda::util::DropReasonEntry{#name, id, description}

#define ANDROMEDA_DEFINE_DROP_REASONS(Enum, Count, zero, zero_description, LIST)                            \
    enum class Enum : std::uint8_t { zero LIST(ANDROMEDA_DROP_ENUMERATOR_) };                               \
    inline constexpr ::andromeda::util::DropReasonEntry k##Enum##Entries[] = {                              \
        ::andromeda::util::DropReasonEntry{#zero, 0, zero_description} LIST(ANDROMEDA_DROP_ENTRY_)};        \
    inline constexpr std::size_t Count = std::size(k##Enum##Entries) - 1;                                   \
    [[nodiscard]] constexpr std::string_view to_string(Enum reason) noexcept {                              \
        return ::andromeda::util::drop_entry(k##Enum##Entries, reason).name;                                \
    }                                                                                                        \
    [[nodiscard]] constexpr std::string_view describe(Enum reason) noexcept {                               \
        return ::andromeda::util::drop_entry(k##Enum##Entries, reason).description;                         \
    }                                                                                                        \
    [[nodiscard]] constexpr std::uint16_t stable_id(Enum reason) noexcept {                                 \
        return ::andromeda::util::drop_entry(k##Enum##Entries, reason).id;                                  \
    }

namespace andromeda::util {

// One row of a layer's table, indexed by the enum's value.
struct DropReasonEntry {
    std::string_view name;
    std::uint16_t id = 0;
    std::string_view description;
};

// The row of `reason`, or {"unknown", 0, "unknown"} outside the enum.
template <std::size_t N, class Reason>
[[nodiscard]] constexpr DropReasonEntry drop_entry(const DropReasonEntry (&table)[N], Reason reason) noexcept {
    const auto index = static_cast<std::size_t>(reason);
    return index < N ? table[index] : DropReasonEntry{"unknown", 0, "unknown"};
}

// The array slot of a reason (not the zero value) in an array of the layer's Count counters.
template <class Reason>
[[nodiscard]] constexpr std::size_t drop_slot(Reason reason) noexcept {
    return static_cast<std::size_t>(reason) - 1;
}
// The reason counted in `slot`.
template <class Reason>
[[nodiscard]] constexpr Reason drop_of_slot(std::size_t slot) noexcept {
    return static_cast<Reason>(slot + 1);
}

}  // namespace andromeda::util
