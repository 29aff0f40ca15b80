#include "io/netlink/netlink.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "io/plan/io_error.hpp"

namespace andromeda::io {

NetlinkRequest::NetlinkRequest(std::uint16_t type, std::uint16_t flags, const void* fixed_header,
                               std::size_t header_size)
    : buffer_(NLMSG_SPACE(header_size) + 256, 0) {
    auto* h = header();
    h->nlmsg_len = static_cast<std::uint32_t>(NLMSG_LENGTH(header_size));
    h->nlmsg_type = type;
    h->nlmsg_flags = static_cast<std::uint16_t>(flags | NLM_F_REQUEST);
    std::memcpy(NLMSG_DATA(h), fixed_header, header_size);
}

void NetlinkRequest::add_attribute(std::uint16_t type, const void* data, std::size_t size) {
    const std::size_t offset = NLMSG_ALIGN(header()->nlmsg_len);
    const std::size_t space = RTA_SPACE(size);
    if (buffer_.size() < offset + space) buffer_.resize(offset + space);
    auto* attr = reinterpret_cast<rtattr*>(buffer_.data() + offset);
    attr->rta_type = type;
    attr->rta_len = static_cast<unsigned short>(RTA_LENGTH(size));
    if (size != 0) std::memcpy(RTA_DATA(attr), data, size);
    header()->nlmsg_len = static_cast<std::uint32_t>(offset + RTA_ALIGN(attr->rta_len));
}

std::size_t NetlinkRequest::begin_nested(std::uint16_t type) {
    const std::size_t start = NLMSG_ALIGN(header()->nlmsg_len);
    add_attribute(type, nullptr, 0);
    return start;
}

void NetlinkRequest::end_nested(std::size_t start) {
    auto* attr = reinterpret_cast<rtattr*>(buffer_.data() + start);
    attr->rta_len = static_cast<unsigned short>(header()->nlmsg_len - start);
}

void NetlinkRequest::add_raw(const void* data, std::size_t size) {
    const std::size_t offset = NLMSG_ALIGN(header()->nlmsg_len);
    const std::size_t space = NLMSG_ALIGN(size);
    if (buffer_.size() < offset + space) buffer_.resize(offset + space);
    std::memcpy(buffer_.data() + offset, data, size);
    header()->nlmsg_len = static_cast<std::uint32_t>(offset + space);
}

NetlinkAttributes::NetlinkAttributes(const void* first, std::size_t length) {
    auto remaining = static_cast<unsigned int>(length);
    for (auto* attr = static_cast<const rtattr*>(first); RTA_OK(attr, remaining); attr = RTA_NEXT(attr, remaining))
        attributes_.push_back(attr);
}

const rtattr* NetlinkAttributes::find(std::uint16_t type) const noexcept {
    for (const rtattr* attr : attributes_)
        if ((attr->rta_type & NLA_TYPE_MASK) == type) return attr;
    return nullptr;
}

std::span<const std::uint8_t> NetlinkAttributes::bytes(std::uint16_t type) const noexcept {
    const rtattr* attr = find(type);
    if (attr == nullptr) return {};
    return {static_cast<const std::uint8_t*>(RTA_DATA(attr)), RTA_PAYLOAD(attr)};
}

std::optional<std::uint32_t> NetlinkAttributes::u32(std::uint16_t type) const noexcept {
    const auto b = bytes(type);
    if (b.size() < sizeof(std::uint32_t)) return std::nullopt;
    std::uint32_t v;
    std::memcpy(&v, b.data(), sizeof v);
    return v;
}

std::optional<std::uint8_t> NetlinkAttributes::u8(std::uint16_t type) const noexcept {
    const auto b = bytes(type);
    if (b.empty()) return std::nullopt;
    return b[0];
}

std::optional<std::string> NetlinkAttributes::string(std::uint16_t type) const {
    const auto b = bytes(type);
    if (b.empty()) return std::nullopt;
    std::string s(reinterpret_cast<const char*>(b.data()), b.size());
    if (const auto nul = s.find('\0'); nul != std::string::npos) s.resize(nul);
    return s;
}

NetlinkAttributes NetlinkAttributes::nested(std::uint16_t type) const noexcept {
    const auto b = bytes(type);
    return NetlinkAttributes(b.data(), b.size());
}

RtnetlinkSocket::RtnetlinkSocket() : fd_(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)) {
    if (fd_ < 0) throw IoError("opening a route netlink socket", errno);
    sockaddr_nl local{};
    local.nl_family = AF_NETLINK;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
        const int error = errno;
        close(fd_);
        throw IoError("binding a route netlink socket", error);
    }
}

RtnetlinkSocket::~RtnetlinkSocket() { close(fd_); }

int RtnetlinkSocket::transact(NetlinkRequest& request, const std::function<void(const nlmsghdr&)>& on_message) {
    nlmsghdr* h = request.header();
    const bool dump = (h->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
    if (!dump) h->nlmsg_flags |= NLM_F_ACK;
    h->nlmsg_seq = ++sequence_;
    const auto out = request.bytes();
    if (send(fd_, out.data(), out.size(), 0) != static_cast<ssize_t>(out.size()))
        throw IoError("sending a netlink request", errno);
    std::vector<std::uint8_t> buffer(1 << 16);
    for (;;) {
        const ssize_t n = recv(fd_, buffer.data(), buffer.size(), 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw IoError("reading a netlink reply", errno);
        }
        auto remaining = static_cast<unsigned int>(n);
        for (auto* m = reinterpret_cast<const nlmsghdr*>(buffer.data()); NLMSG_OK(m, remaining);
             m = NLMSG_NEXT(m, remaining)) {
            if (m->nlmsg_seq != sequence_) continue;
            if (m->nlmsg_type == NLMSG_DONE) return 0;
            // A request without NLM_F_DUMP ends with an ACK: an error message with error 0.
            if (m->nlmsg_type == NLMSG_ERROR) return fixed_header<nlmsgerr>(*m).error;
            if (on_message) on_message(*m);
        }
    }
}

}  // namespace andromeda::io
