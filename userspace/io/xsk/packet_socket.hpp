// A send-only AF_PACKET socket: how a worker hands the kernel a frame for a port it has no
// AF_XDP socket on (a single-queue tenant veth whose one queue belongs to another worker). The
// frame is copied; the caller keeps its buffer.
#pragma once

#include <cstdint>
#include <span>

namespace andromeda::io {

class PacketSocket {
public:
    // Throws IoError when the socket cannot be opened (needs CAP_NET_RAW).
    PacketSocket();
    ~PacketSocket();
    PacketSocket(const PacketSocket&) = delete;
    PacketSocket& operator=(const PacketSocket&) = delete;

    // Sends the Ethernet frame `frame` out of interface `ifindex`, without blocking. False when
    // the frame is shorter than an Ethernet header or the kernel refused it (queue full, no
    // such interface, ...).
    bool send(std::uint32_t ifindex, std::span<const std::uint8_t> frame) noexcept;

private:
    int fd_ = -1;
};

}  // namespace andromeda::io
