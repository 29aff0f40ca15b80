#include "gateway/dns_tcp.hpp"

#include <algorithm>
#include <random>

#include "gateway/udp_reply.hpp"
#include "wire/dns.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"
#include "wire/tcp.hpp"

namespace andromeda::gateway {

namespace {

using namespace wire::tcp_flag;

// A whole message of the largest size and its prefix: with less room than that, a stream could
// hold no complete message and still be full.
constexpr std::size_t kReceiveRoom = wire::kDnsTcpLengthPrefix + 0xffff;
constexpr std::size_t kFrameRoom = 22 + wire::kIpv4MinHeaderLength + wire::kTcpMinHeaderLength + 4 + 0xffff;
constexpr std::uint64_t kMaxRto = 60'000'000'000;  // RFC 6298 2.5
constexpr std::uint16_t kDefaultMss = 536;         // RFC 9293 3.7.1, without the option
constexpr std::uint16_t kMinMss = 64;

constexpr std::uint64_t tenant_of(std::uint32_t vni, std::uint32_t address) noexcept {
    return std::uint64_t{vni} << 32 | address;
}

// Sequence-number order modulo 2^32 (RFC 9293 3.4).
constexpr bool seq_before(std::uint32_t a, std::uint32_t b) noexcept { return static_cast<std::int32_t>(a - b) < 0; }
constexpr bool seq_after(std::uint32_t a, std::uint32_t b) noexcept { return seq_before(b, a); }

// The MSS option of a SYN's options (kind 2, length 4), or 0.
std::uint16_t mss_option(wire::ByteSpan options) noexcept {
    std::size_t i = 0;
    while (i < options.size()) {
        const std::uint8_t kind = options[i];
        if (kind == 0) break;  // end of options
        if (kind == 1) {       // no-op
            ++i;
            continue;
        }
        if (i + 1 >= options.size()) break;
        const std::size_t length = options[i + 1];
        if (length < 2 || i + length > options.size()) break;
        if (kind == 2 && length == 4) return wire::load_be16(&options[i + 2]);
        i += length;
    }
    return 0;
}

}  // namespace

DnsTcpServer::DnsTcpServer(DnsTcpConfig config) : config_(config) {
    config_.max_connections = std::clamp<std::size_t>(config_.max_connections, 1, 0xffff);
    config_.max_per_tenant = std::clamp<std::size_t>(config_.max_per_tenant, 1, config_.max_connections);
    config_.max_retransmits = std::min<std::uint32_t>(config_.max_retransmits, 30);
    config_.initial_rto_ns = std::clamp<std::uint64_t>(config_.initial_rto_ns, 1'000'000, kMaxRto);
    config_.send_room = std::max<std::size_t>(config_.send_room, kReceiveRoom);
    slots_.resize(config_.max_connections);
    free_.reserve(slots_.size());
    for (std::size_t i = slots_.size(); i-- > 0;) free_.push_back(static_cast<std::uint16_t>(i));
    by_key_.reserve(slots_.size());
    frame_.resize(kFrameRoom);
    random_state_ =
        config_.seed != 0 ? config_.seed : (std::uint64_t{std::random_device{}()} << 32 | std::random_device{}());
    if (random_state_ == 0) random_state_ = 0x9E3779B97F4A7C15ull;
}

std::uint32_t DnsTcpServer::draw_iss() noexcept {
    random_state_ ^= random_state_ >> 12;
    random_state_ ^= random_state_ << 25;
    random_state_ ^= random_state_ >> 27;
    return static_cast<std::uint32_t>((random_state_ * 0x2545F4914F6CDD1Dull) >> 32);
}

std::uint64_t DnsTcpServer::token(std::size_t slot) const noexcept {
    return std::uint64_t{slots_[slot].generation} << 16 | slot;
}

DnsTcpServer::Connection* DnsTcpServer::find(std::uint64_t connection) noexcept {
    const std::size_t slot = connection & 0xffff;
    if (slot >= slots_.size()) return nullptr;
    Connection& c = slots_[slot];
    return c.used && c.generation == (connection >> 16) ? &c : nullptr;
}

std::uint16_t DnsTcpServer::receive_window(const Connection& c) const noexcept {
    return static_cast<std::uint16_t>(std::min<std::size_t>(0xffff, kReceiveRoom - c.rx.size()));
}

void DnsTcpServer::write_frame(const wire::EthernetHeader& ethernet, wire::Ipv4Address source,
                               wire::Ipv4Address destination, std::uint16_t destination_port, std::uint32_t sequence,
                               std::uint32_t acknowledgment, std::uint8_t flags, std::uint16_t window,
                               std::uint16_t mss, wire::ByteSpan data, std::uint64_t tag, DnsTcpSink& sink) {
    const wire::MutableByteSpan out(frame_);
    const std::uint8_t options[4] = {2, 4, static_cast<std::uint8_t>(mss >> 8), static_cast<std::uint8_t>(mss)};
    const std::size_t options_length = mss != 0 ? sizeof options : 0;
    const std::size_t tcp_length = wire::kTcpMinHeaderLength + options_length + data.size();
    const std::size_t at = write_reply_headers(out, ethernet, source, destination, wire::ip_protocol::kTcp, tcp_length);
    if (at == 0) return;  // cannot happen: data is at most an MSS
    const wire::MutableByteSpan segment = out.subspan(at, tcp_length);
    wire::TcpHeader t;
    t.source_port = wire::kDnsPort;
    t.destination_port = destination_port;
    t.sequence = sequence;
    t.acknowledgment = acknowledgment;
    t.flags = flags;
    t.window = window;
    t.options = wire::ByteSpan(options, options_length);
    const std::size_t header_length = wire::write_tcp_header(segment, t);
    if (!data.empty())
        std::copy(data.begin(), data.end(), segment.begin() + static_cast<std::ptrdiff_t>(header_length));
    wire::MutableTcpView::parse(segment)->update_checksum(source, destination);
    sink.send_frame(tag, out.first(at + tcp_length));
}

void DnsTcpServer::segment(Connection& c, std::uint32_t sequence, std::uint8_t flags, wire::ByteSpan data,
                           DnsTcpSink& sink, bool with_mss) {
    write_frame(c.ethernet, c.gateway, wire::Ipv4Address(c.key.tenant), c.key.port, sequence, c.rcv_nxt, flags,
                receive_window(c), with_mss ? c.mss_offer : 0, data, c.tag, sink);
}

void DnsTcpServer::reply_reset(const wire::EthernetHeader& to_tenant, wire::Ipv4Address gateway,
                               wire::Ipv4Address tenant, std::uint16_t port, std::uint32_t sequence,
                               std::uint32_t acknowledgment, bool with_ack, std::uint64_t tag, DnsTcpSink& sink) {
    ++counters_.resets_sent;
    write_frame(to_tenant, gateway, tenant, port, sequence, acknowledgment, with_ack ? kRst | kAck : kRst, 0, 0, {},
                tag, sink);
}

void DnsTcpServer::release(Connection& c, DnsTcpSink& sink) {
    const auto slot = static_cast<std::uint16_t>(&c - slots_.data());
    const std::uint64_t gone = token(slot);
    by_key_.erase(c.key);
    if (const auto t = per_tenant_.find(tenant_of(c.key.vni, c.key.tenant)); t != per_tenant_.end() && --t->second == 0)
        per_tenant_.erase(t);
    const std::uint32_t generation = c.generation + 1;
    c = Connection{};  // and its buffers freed: an idle server holds nothing per connection
    c.generation = generation;
    free_.push_back(slot);
    sink.closed(gone);
}

void DnsTcpServer::reset(Connection& c, DnsTcpSink& sink) {
    ++counters_.resets_sent;
    segment(c, c.snd_nxt, kRst | kAck, {}, sink);
    release(c, sink);
}

void DnsTcpServer::open(const Key& key, std::uint32_t sequence, std::uint16_t window, wire::ByteSpan options,
                        const wire::EthernetHeader& to_tenant, wire::Ipv4Address gateway, std::uint16_t mtu,
                        std::uint64_t tag, std::uint64_t now_ns, DnsTcpSink& sink) {
    const auto tenant = per_tenant_.find(tenant_of(key.vni, key.tenant));
    const bool tenant_full = tenant != per_tenant_.end() && tenant->second >= config_.max_per_tenant;
    if (free_.empty() || tenant_full) {
        ++(free_.empty() ? counters_.refused_full : counters_.refused_tenant);
        reply_reset(to_tenant, gateway, wire::Ipv4Address(key.tenant), key.port, 0, sequence + 1, true, tag, sink);
        return;
    }
    ++per_tenant_[tenant_of(key.vni, key.tenant)];
    const std::uint16_t slot = free_.back();
    free_.pop_back();
    Connection& c = slots_[slot];
    c.used = true;
    c.key = key;
    c.tag = tag;
    c.ethernet = to_tenant;
    c.gateway = gateway;
    c.mss_offer = static_cast<std::uint16_t>(std::max<int>(kMinMss, mtu - 40));
    const std::uint16_t offered = mss_option(options);
    c.mss = std::clamp<std::uint16_t>(offered != 0 ? offered : kDefaultMss, kMinMss, c.mss_offer);
    c.cwnd = std::min<std::uint32_t>(10u * c.mss, std::max<std::uint32_t>(2u * c.mss, 14600));  // RFC 6928
    c.iss = draw_iss();
    c.snd_una = c.iss;
    c.snd_nxt = c.iss + 1;
    c.rcv_nxt = sequence + 1;
    c.snd_wnd = window;
    c.rto_ns = config_.initial_rto_ns;
    c.rto_deadline = now_ns + c.rto_ns;
    c.idle_deadline = now_ns + config_.idle_timeout_ns;
    by_key_.emplace(key, slot);
    ++counters_.opened;
    segment(c, c.iss, kSyn | kAck, {}, sink, true);
}

std::size_t DnsTcpServer::transmit(Connection& c, std::uint64_t now_ns, DnsTcpSink& sink) {
    if (!c.established) return 0;
    std::size_t sent = 0;
    std::uint32_t in_flight = c.snd_nxt - c.snd_una;
    std::size_t offset = in_flight;  // of the next unsent byte in tx (the FIN, once sent, is last)
    const std::uint32_t window = std::min(c.snd_wnd, c.cwnd);
    while (!c.fin_sent && offset < c.tx.size() && in_flight < window) {
        const std::size_t n = std::min<std::size_t>({c.mss, c.tx.size() - offset, window - in_flight});
        segment(c, c.snd_nxt, kAck | kPsh, wire::ByteSpan(c.tx).subspan(offset, n), sink);
        c.snd_nxt += static_cast<std::uint32_t>(n);
        in_flight += static_cast<std::uint32_t>(n);
        offset += n;
        ++sent;
    }
    if (c.fin_wanted && !c.fin_sent && offset == c.tx.size()) {
        segment(c, c.snd_nxt, kFin | kAck, {}, sink);
        c.snd_nxt += 1;
        c.fin_sent = true;
        ++sent;
    }
    // Something unacknowledged, or data the tenant's shut window holds back (the timer probes it).
    if (c.rto_deadline == 0 && (c.snd_nxt != c.snd_una || offset < c.tx.size())) c.rto_deadline = now_ns + c.rto_ns;
    return sent;
}

void DnsTcpServer::retransmit(Connection& c, std::uint64_t now_ns, DnsTcpSink& sink) {
    if (c.retries >= config_.max_retransmits) {
        ++counters_.timed_out;
        return reset(c, sink);
    }
    ++c.retries;
    ++counters_.retransmits;
    c.rto_ns = std::min(c.rto_ns * 2, kMaxRto);
    c.rto_deadline = now_ns + c.rto_ns;
    if (!c.established) return segment(c, c.iss, kSyn | kAck, {}, sink, true);
    // Go back to the oldest unacknowledged byte, one segment at a time again (RFC 5681 3.1).
    c.cwnd = c.mss;
    c.snd_nxt = c.snd_una;
    c.fin_sent = false;
    if (transmit(c, now_ns, sink) == 0 && !c.tx.empty()) {
        // The window is shut: a byte past it asks the tenant for its window again (RFC 9293 3.8.6.1).
        segment(c, c.snd_nxt, kAck | kPsh, wire::ByteSpan(c.tx).first(1), sink);
        c.snd_nxt += 1;
    }
}

void DnsTcpServer::handle_frame(wire::ByteSpan frame, std::uint32_t vni, const GatewayAddress& gateway,
                                std::uint16_t mtu, std::uint64_t tag, std::uint64_t now_ns, DnsTcpSink& sink,
                                std::vector<DnsTcpQuery>& queries) {
    ++counters_.segments;
    const auto ethernet = wire::EthernetView::parse(frame);
    const auto ip = ethernet && ethernet->ethertype() == wire::ethertype::kIpv4
                        ? wire::Ipv4View::parse(ethernet->payload())
                        : wire::Parsed<wire::Ipv4View>(wire::ParseError::Truncated);
    if (!ip || ip->protocol() != wire::ip_protocol::kTcp || ip->is_fragment() || ip->destination() != gateway.ipv4 ||
        !ip->checksum_valid()) {
        ++counters_.malformed;
        return;
    }
    const auto tcp = wire::TcpView::parse(ip->payload());
    if (!tcp || tcp->destination_port() != wire::kDnsPort || !tcp->checksum_valid(ip->source(), ip->destination())) {
        ++counters_.malformed;
        return;
    }
    wire::EthernetHeader to_tenant = ethernet->header();
    to_tenant.destination = ethernet->source();
    to_tenant.source = gateway.mac;
    const Key key{vni, ip->source().value(), tcp->source_port()};
    const std::uint8_t flags = tcp->flags();
    const std::uint32_t sequence = tcp->sequence();
    const wire::ByteSpan payload = tcp->payload();

    const auto found = by_key_.find(key);
    if (found == by_key_.end()) {
        if ((flags & kRst) != 0) return;  // never answer a reset
        if ((flags & (kSyn | kAck)) == kSyn)
            return open(key, sequence, tcp->window(), tcp->options(), to_tenant, gateway.ipv4, mtu, tag, now_ns, sink);
        // RFC 9293 3.10.7.1: a segment of no connection is reset.
        const auto length = static_cast<std::uint32_t>(payload.size() + ((flags & kSyn) != 0) + ((flags & kFin) != 0));
        if ((flags & kAck) != 0)
            reply_reset(to_tenant, gateway.ipv4, ip->source(), key.port, tcp->acknowledgment(), 0, false, tag, sink);
        else
            reply_reset(to_tenant, gateway.ipv4, ip->source(), key.port, 0, sequence + length, true, tag, sink);
        return;
    }
    Connection& c = slots_[found->second];
    const std::uint64_t connection = token(found->second);

    if ((flags & kRst) != 0) {
        // RFC 5961 3.2: a reset at exactly the next expected byte ends the connection; one
        // elsewhere in the window only draws a challenge ACK (a blind attacker must guess).
        if (sequence == c.rcv_nxt) {
            ++counters_.resets_received;
            release(c, sink);
        } else if (seq_after(sequence, c.rcv_nxt) && seq_before(sequence, c.rcv_nxt + receive_window(c))) {
            ++counters_.challenge_acks;
            segment(c, c.snd_nxt, kAck, {}, sink);
        }
        return;
    }
    if ((flags & kSyn) != 0) {
        if (!c.established && sequence + 1 == c.rcv_nxt) return segment(c, c.iss, kSyn | kAck, {}, sink, true);
        ++counters_.challenge_acks;  // RFC 5961 4.2
        return segment(c, c.snd_nxt, kAck, {}, sink);
    }
    if ((flags & kAck) == 0) return;  // RFC 9293 3.10.7.4: a segment without ACK is dropped

    const std::uint32_t ack = tcp->acknowledgment();
    if (seq_after(ack, c.snd_nxt)) return segment(c, c.snd_nxt, kAck, {}, sink);  // acknowledges the unsent
    c.idle_deadline = now_ns + config_.idle_timeout_ns;
    if (!c.established) {
        if (ack != c.iss + 1) {
            reply_reset(to_tenant, gateway.ipv4, ip->source(), key.port, ack, 0, false, tag, sink);
            return;
        }
        c.established = true;
        ++counters_.established;
        c.snd_una = ack;
        c.retries = 0;
        c.rto_ns = config_.initial_rto_ns;
        c.rto_deadline = 0;
    } else if (seq_after(ack, c.snd_una)) {
        const std::size_t acked = std::min<std::size_t>(ack - c.snd_una, c.tx.size());  // a FIN has no byte in tx
        c.tx.erase(c.tx.begin(), c.tx.begin() + static_cast<std::ptrdiff_t>(acked));
        c.snd_una = ack;
        c.retries = 0;
        c.rto_ns = config_.initial_rto_ns;
        c.rto_deadline = c.snd_nxt != c.snd_una ? now_ns + c.rto_ns : 0;
        c.cwnd = std::min<std::uint32_t>(c.cwnd + c.mss, 4 * 0xffff);
    }
    c.snd_wnd = tcp->window();

    bool ack_owed = false;
    if (!payload.empty() || (flags & kFin) != 0) {
        ack_owed = true;
        if (seq_after(sequence, c.rcv_nxt)) {
            ++counters_.out_of_order;  // a gap before it: the tenant sends it again from rcv_nxt
        } else if (!c.fin_received) {
            const std::size_t old = c.rcv_nxt - sequence;  // bytes already taken
            std::size_t taken = 0;
            if (old < payload.size()) {
                taken = std::min(payload.size() - old, kReceiveRoom - c.rx.size());
                c.rx.insert(c.rx.end(), payload.begin() + static_cast<std::ptrdiff_t>(old),
                            payload.begin() + static_cast<std::ptrdiff_t>(old + taken));
                c.rcv_nxt += static_cast<std::uint32_t>(taken);
            }
            if ((flags & kFin) != 0 && old <= payload.size() && old + taken == payload.size()) {
                c.fin_received = true;
                c.rcv_nxt += 1;
            }
        }
    }

    std::size_t consumed = 0;
    for (;;) {
        const wire::DnsTcpMessage m = wire::next_dns_tcp_message(wire::ByteSpan(c.rx).subspan(consumed));
        if (m.status == wire::DnsTcpStatus::incomplete) break;
        if (m.status == wire::DnsTcpStatus::empty) return reset(c, sink);  // no DNS message is empty
        queries.push_back({connection, vni, std::vector<std::uint8_t>(m.message.begin(), m.message.end())});
        ++counters_.messages;
        ++c.owed;
        consumed += m.consumed;
    }
    c.rx.erase(c.rx.begin(), c.rx.begin() + static_cast<std::ptrdiff_t>(consumed));
    if (c.fin_received && c.owed == 0) c.fin_wanted = true;

    if (transmit(c, now_ns, sink) == 0 && ack_owed) segment(c, c.snd_nxt, kAck, {}, sink);
    if (c.fin_received && c.fin_sent && c.snd_una == c.snd_nxt) {  // both FINs acknowledged
        ++counters_.closed;
        if (c.idle_close) ++counters_.idle_closed;
        release(c, sink);
    }
}

bool DnsTcpServer::send(std::uint64_t connection, wire::ByteSpan data, std::uint64_t now_ns, DnsTcpSink& sink) {
    Connection* c = find(connection);
    if (c == nullptr) return false;
    ++counters_.answers;
    if (c->owed > 0) --c->owed;
    if (c->fin_wanted) return false;  // closing: the tenant asks again on a new connection
    if (c->tx.size() + data.size() > config_.send_room) {
        ++counters_.send_room_full;
        reset(*c, sink);
        return false;
    }
    c->tx.insert(c->tx.end(), data.begin(), data.end());
    c->idle_deadline = now_ns + config_.idle_timeout_ns;
    if (c->fin_received && c->owed == 0) c->fin_wanted = true;
    transmit(*c, now_ns, sink);
    return true;
}

void DnsTcpServer::no_answer(std::uint64_t connection, std::uint64_t now_ns, DnsTcpSink& sink) {
    Connection* c = find(connection);
    if (c == nullptr || c->owed == 0) return;
    if (--c->owed == 0 && c->fin_received) {
        c->fin_wanted = true;
        transmit(*c, now_ns, sink);
    }
}

void DnsTcpServer::poll(std::uint64_t now_ns, DnsTcpSink& sink) {
    for (Connection& c : slots_) {
        if (!c.used) continue;
        if (c.rto_deadline != 0 && c.rto_deadline <= now_ns) {
            retransmit(c, now_ns, sink);
            if (!c.used) continue;
        }
        if (c.idle_deadline > now_ns) continue;
        if (!c.established || c.fin_wanted) {
            // The handshake, or the close the gateway began, did not finish in an idle period.
            ++counters_.timed_out;
            reset(c, sink);
        } else if (c.owed > 0 || !c.tx.empty()) {
            c.idle_deadline = now_ns + config_.idle_timeout_ns;  // busy: answers owed or unacknowledged
        } else {
            c.fin_wanted = c.idle_close = true;
            c.idle_deadline = now_ns + config_.idle_timeout_ns;
            transmit(c, now_ns, sink);
        }
    }
}

std::uint64_t DnsTcpServer::next_deadline() const noexcept {
    std::uint64_t next = 0;
    for (const auto& [key, slot] : by_key_) {
        const Connection& c = slots_[slot];
        for (const std::uint64_t d : {c.rto_deadline, c.idle_deadline})
            if (d != 0 && (next == 0 || d < next)) next = d;
    }
    return next;
}

}  // namespace andromeda::gateway
