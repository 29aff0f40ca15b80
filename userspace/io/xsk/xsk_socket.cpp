#include "io/xsk/xsk_socket.hpp"

#include <linux/if_xdp.h>
#include <sys/socket.h>

#include <cerrno>

namespace andromeda::io {

std::string SocketReport::message() const {
    return ifname + " queue " + std::to_string(queue) + ": AF_XDP " + to_string(mode) +
           (need_wakeup ? ", need_wakeup" : "");
}

bool XskSocket::kick_tx() noexcept {
    if (!xsk_ring_prod__needs_wakeup(&tx)) return false;
    // In copy mode one sendto() sends at most 32 frames (the kernel's per-call budget) and says
    // EAGAIN when more remain: kick again while the ring still holds descriptors, so a batch
    // leaves in this pass instead of waiting for the next one. EBUSY/ENOBUFS: the device queue
    // is full, frames stay on the ring for the next kick; ENETDOWN: the link is down, same.
    constexpr int kMaxKicks = 16;
    for (int i = 0; i < kMaxKicks; ++i) {
        if (sendto(fd(), nullptr, 0, MSG_DONTWAIT, nullptr, 0) >= 0 || errno != EAGAIN) break;
        if (xsk_prod_nb_free(&tx, tx.size) >= tx.size) break;  // the kernel took every descriptor
    }
    return true;
}

SocketStatistics XskSocket::statistics() const noexcept {
    xdp_statistics raw{};
    socklen_t length = sizeof raw;
    SocketStatistics s;
    if (getsockopt(fd(), SOL_XDP, XDP_STATISTICS, &raw, &length) != 0) return s;
    s.rx_dropped = raw.rx_dropped;
    s.rx_invalid_descs = raw.rx_invalid_descs;
    s.tx_invalid_descs = raw.tx_invalid_descs;
    s.rx_ring_full = raw.rx_ring_full;
    s.rx_fill_ring_empty = raw.rx_fill_ring_empty_descs;
    s.tx_ring_empty = raw.tx_ring_empty_descs;
    return s;
}

BindMode bound_mode(int xsk_fd) noexcept {
    xdp_options options{};
    socklen_t length = sizeof options;
    if (getsockopt(xsk_fd, SOL_XDP, XDP_OPTIONS, &options, &length) != 0) return BindMode::copy;
    return (options.flags & XDP_OPTIONS_ZEROCOPY) != 0 ? BindMode::zero_copy : BindMode::copy;
}

}  // namespace andromeda::io
