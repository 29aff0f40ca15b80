#include "io/xsk/packet_socket.hpp"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "io/plan/io_error.hpp"

namespace andromeda::io {

PacketSocket::PacketSocket() {
    // Protocol 0: this socket only sends; it never receives a copy of anyone's traffic.
    fd_ = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw IoError("opening an AF_PACKET socket", errno, "andromedad needs CAP_NET_RAW");
}

PacketSocket::~PacketSocket() {
    if (fd_ >= 0) close(fd_);
}

PacketSocket::Sent PacketSocket::send(std::uint32_t ifindex, std::span<const std::uint8_t> frame) noexcept {
    if (frame.size() < ETH_HLEN) return Sent::refused;
    sockaddr_ll addr{};
    addr.sll_family = AF_PACKET;
    addr.sll_ifindex = static_cast<int>(ifindex);
    addr.sll_protocol = htons(static_cast<std::uint16_t>(frame[12] << 8 | frame[13]));
    addr.sll_halen = ETH_ALEN;
    std::copy_n(frame.data(), ETH_ALEN, addr.sll_addr);
    const ssize_t sent = sendto(fd_, frame.data(), frame.size(), MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&addr),
                                sizeof addr);
    if (sent == static_cast<ssize_t>(frame.size())) return Sent::sent;
    return sent < 0 && (errno == ENOBUFS || errno == EAGAIN || errno == EWOULDBLOCK) ? Sent::busy : Sent::refused;
}

}  // namespace andromeda::io
