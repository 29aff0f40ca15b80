// A small route-netlink (rtnetlink) client: one request, its replies, typed attributes. Enough
// for the lookups andromedad needs (links, addresses, routes, neighbours) without a library.
// Netlink talks to the network namespace of the thread that opened the socket, which is what
// `nsenter --net` gives the daemon; /sys/class/net would show the mount's namespace instead.
#pragma once

#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace andromeda::io {

// A request under construction: nlmsghdr, a fixed header (ifinfomsg, ndmsg, ...), attributes.
class NetlinkRequest {
public:
    NetlinkRequest(std::uint16_t type, std::uint16_t flags, const void* fixed_header, std::size_t header_size);

    void add_attribute(std::uint16_t type, const void* data, std::size_t size);
    void add_string(std::uint16_t type, const std::string& value) { add_attribute(type, value.c_str(), value.size() + 1); }
    template <class T>
    void add_value(std::uint16_t type, const T& value) {
        add_attribute(type, &value, sizeof value);
    }
    // A nested attribute: begin_nested() opens it and returns where it starts, the attributes (and
    // raw headers, such as the ifinfomsg of a veth peer) added until end_nested() go inside.
    [[nodiscard]] std::size_t begin_nested(std::uint16_t type);
    void end_nested(std::size_t start);
    void add_raw(const void* data, std::size_t size);

    [[nodiscard]] nlmsghdr* header() noexcept { return reinterpret_cast<nlmsghdr*>(buffer_.data()); }
    [[nodiscard]] std::span<const std::uint8_t> bytes() const noexcept { return {buffer_.data(), header_length()}; }

private:
    [[nodiscard]] std::size_t header_length() const noexcept {
        return reinterpret_cast<const nlmsghdr*>(buffer_.data())->nlmsg_len;
    }
    std::vector<std::uint8_t> buffer_;
};

// The attributes of one message, indexed by type (nested ones parse the same way).
class NetlinkAttributes {
public:
    NetlinkAttributes(const void* first, std::size_t length);

    [[nodiscard]] bool has(std::uint16_t type) const noexcept { return find(type) != nullptr; }
    [[nodiscard]] std::span<const std::uint8_t> bytes(std::uint16_t type) const noexcept;
    [[nodiscard]] std::optional<std::uint32_t> u32(std::uint16_t type) const noexcept;
    [[nodiscard]] std::optional<std::uint8_t> u8(std::uint16_t type) const noexcept;
    [[nodiscard]] std::optional<std::string> string(std::uint16_t type) const;
    [[nodiscard]] NetlinkAttributes nested(std::uint16_t type) const noexcept;

private:
    [[nodiscard]] const rtattr* find(std::uint16_t type) const noexcept;
    std::vector<const rtattr*> attributes_;
};

// Attributes following a message's fixed header of type T.
template <class T>
[[nodiscard]] NetlinkAttributes attributes_after(const nlmsghdr& message) {
    const auto* start = reinterpret_cast<const std::uint8_t*>(NLMSG_DATA(&message)) + NLMSG_ALIGN(sizeof(T));
    const std::size_t total = message.nlmsg_len;
    const std::size_t used = NLMSG_LENGTH(NLMSG_ALIGN(sizeof(T)));
    return NetlinkAttributes(start, total > used ? total - used : 0);
}

template <class T>
[[nodiscard]] const T& fixed_header(const nlmsghdr& message) {
    return *reinterpret_cast<const T*>(NLMSG_DATA(&message));
}

class RtnetlinkSocket {
public:
    // Throws IoError.
    RtnetlinkSocket();
    ~RtnetlinkSocket();
    RtnetlinkSocket(const RtnetlinkSocket&) = delete;
    RtnetlinkSocket& operator=(const RtnetlinkSocket&) = delete;

    // Sends `request` (with NLM_F_REQUEST and, for non-dumps, NLM_F_ACK added) and hands each
    // reply message to `on_message` until the kernel is done. Returns 0, or the negative errno
    // the kernel answered with. Throws IoError when the socket itself fails.
    int transact(NetlinkRequest& request, const std::function<void(const nlmsghdr&)>& on_message = {});

private:
    int fd_ = -1;
    std::uint32_t sequence_ = 0;
};

}  // namespace andromeda::io
