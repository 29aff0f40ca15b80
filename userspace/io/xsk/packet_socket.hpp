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

    enum class Sent : std::uint8_t {
        sent,
        // The kernel had no room: the socket's send buffer (EAGAIN) or the device's queue
        // (ENOBUFS: a full qdisc, or for a veth with no queue, the full backlog of the CPU its
        // peer receives on). The frame is lost as a full NIC queue loses it; TCP recovers.
        busy,
        // Anything else (no such interface, a frame too long for it, ...), or a frame shorter
        // than an Ethernet header: the frame could never have gone out this way.
        refused,
    };

    // Sends the Ethernet frame `frame` out of interface `ifindex`, without blocking.
    Sent send(std::uint32_t ifindex, std::span<const std::uint8_t> frame) noexcept;

private:
    int fd_ = -1;
};

}  // namespace andromeda::io
