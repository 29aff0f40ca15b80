// Every layer's drop-reason enum from its X-list in shared/andromeda_drops.h, in one shape:
//
//   ANDROMEDA_DEFINE_DROP_REASONS(DropReason, kDropReasonCount, none, "not dropped", ANDROMEDA_DROPS_PIPELINE)
//
// defines, in the namespace it is used in,
//   - enum class DropReason : std::uint8_t { none, <each reason in list order> }: 0 is never a
//     reason, so a zero-initialised result means "not dropped";
//   - kDropReasonCount: the number of reasons, the zero value not included; reason r is counted
//     in slot drop_slot(r) = r - 1 of an array of that size;
//   - to_string(r) (the reason's name, "none" for the zero value, "unknown" outside the enum),
//     describe(r) (its description) and stable_id(r) (its id in andromeda_drops.h, 0 for the zero
//     value).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "andromeda_drops.h"

#define ANDROMEDA_DROP_ENUMERATOR_(name, id, description) , name
#define ANDROMEDA_DROP_PLUS_ONE_(name, id, description) +1
#define ANDROMEDA_DROP_NAME_CASE_(name, id, description) \
    case Reason_::name:                                  \
        return #name;
#define ANDROMEDA_DROP_DESCRIPTION_CASE_(name, id, description) \
    case Reason_::name:                                         \
        return description;
#define ANDROMEDA_DROP_ID_CASE_(name, id, description) \
    case Reason_::name:                                \
        return id;

#define ANDROMEDA_DEFINE_DROP_REASONS(Enum, Count, zero, zero_description, LIST) \
    enum class Enum : std::uint8_t { zero LIST(ANDROMEDA_DROP_ENUMERATOR_) };    \
    inline constexpr std::size_t Count = 0 LIST(ANDROMEDA_DROP_PLUS_ONE_);       \
    [[nodiscard]] constexpr std::string_view to_string(Enum reason) noexcept {   \
        using Reason_ = Enum;                                                     \
        switch (reason) {                                                         \
            case Reason_::zero: return #zero;                                     \
            LIST(ANDROMEDA_DROP_NAME_CASE_)                                       \
        }                                                                         \
        return "unknown";                                                         \
    }                                                                             \
    [[nodiscard]] constexpr std::string_view describe(Enum reason) noexcept {    \
        using Reason_ = Enum;                                                     \
        switch (reason) {                                                         \
            case Reason_::zero: return zero_description;                          \
            LIST(ANDROMEDA_DROP_DESCRIPTION_CASE_)                                \
        }                                                                         \
        return "unknown";                                                         \
    }                                                                             \
    [[nodiscard]] constexpr std::uint16_t stable_id(Enum reason) noexcept {      \
        using Reason_ = Enum;                                                     \
        switch (reason) {                                                         \
            case Reason_::zero: return 0;                                         \
            LIST(ANDROMEDA_DROP_ID_CASE_)                                         \
        }                                                                         \
        return 0;                                                                 \
    }

namespace andromeda::util {

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
