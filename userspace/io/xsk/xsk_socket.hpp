// One AF_XDP socket of a worker, bound to (interface, queue), with its four rings. All sockets
// of a worker share its UMEM; each (interface, queue) has its own fill and completion ring.
#pragma once

#include <xdp/xsk.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/plan/config.hpp"
#include "util/counters.hpp"

namespace andromeda::io {

struct SocketSpec {
    std::string ifname;
    std::uint32_t queue = 0;
};

// What a socket ended up as.
struct SocketReport {
    std::string ifname;
    std::uint32_t queue = 0;
    BindMode mode = BindMode::copy;
    bool need_wakeup = false;
    int fd = -1;  // for the XSKMAP (BpfInstance::register_socket)

    [[nodiscard]] std::string message() const;
};

// The kernel's counters for one socket (XDP_STATISTICS; the two *_empty ones are its *_empty_descs).
#define ANDROMEDA_SOCKET_STATISTICS(X) \
    X(rx_dropped)                      \
    X(rx_invalid_descs)                \
    X(tx_invalid_descs)                \
    X(rx_ring_full)                    \
    X(rx_fill_ring_empty)              \
    X(tx_ring_empty)

struct SocketStatistics {
    ANDROMEDA_SOCKET_STATISTICS(ANDROMEDA_COUNTER_FIELD)

    // Calls f(name, value) for every counter (util/counters.hpp).
    template <class F>
    void for_each(F&& f) const {
        ANDROMEDA_SOCKET_STATISTICS(ANDROMEDA_COUNTER_VISIT)
    }
};

struct XskSocket {
    SocketSpec spec;
    xsk_socket* xsk = nullptr;
    xsk_ring_cons rx{};
    xsk_ring_prod tx{};
    xsk_ring_prod fill{};
    xsk_ring_cons completion{};
    SocketReport report;
    std::uint32_t fill_target = 0;  // frames kept posted on the fill ring
    std::uint32_t fill_posted = 0;  // frames on the fill ring or held by the kernel for RX
    std::uint32_t tx_in_flight = 0; // frames on the TX ring or held by the kernel for TX
    std::vector<xdp_desc> pending_tx;  // queued during a batch, flushed after it

    [[nodiscard]] int fd() const noexcept { return xsk_socket__fd(xsk); }
    // Tells the kernel to process the TX ring when it asked to be told (need_wakeup). Errors
    // that only mean "try again later" are ignored; returns whether a syscall was made.
    bool kick_tx() noexcept;
    [[nodiscard]] SocketStatistics statistics() const noexcept;
};

// The bind mode the kernel reports for a bound socket (XDP_OPTIONS).
[[nodiscard]] BindMode bound_mode(int xsk_fd) noexcept;

}  // namespace andromeda::io
