#include "gateway/dns_forwarder.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>

#include "wire/ethernet.hpp"
#include "wire/ip_protocol.hpp"
#include "wire/ipv4.hpp"
#include "wire/udp.hpp"

namespace andromeda::gateway {

namespace {

constexpr std::size_t kMaxUpstreams = 32;  // a bit each in Pending::tried
constexpr std::size_t kMaxInFlight = 16384;  // a quarter of the ID space: a fresh ID takes few draws
constexpr std::uint16_t kQuestionPointer = wire::kDnsHeaderLength;  // our replies' question name

// The header of every reply to `query`: its ID, opcode, RD and CD; recursion available, as the
// gateway forwards what it does not answer.
wire::DnsHeader reply_header(const wire::DnsHeader& query, std::uint8_t rcode) noexcept {
    wire::DnsHeader h;
    h.id = query.id;
    h.response = true;
    h.opcode = query.opcode;
    h.recursion_desired = query.recursion_desired;
    h.checking_disabled = query.checking_disabled;
    h.recursion_available = true;
    h.rcode = rcode;
    return h;
}

wire::DnsEdns our_edns(const DnsForwarderConfig& config, std::uint8_t extended_rcode = 0) noexcept {
    wire::DnsEdns e;
    e.udp_payload_size = config.edns_udp_size;
    e.extended_rcode = extended_rcode;
    return e;
}

struct LocalAnswer {
    DnsOutcome outcome = DnsOutcome::answered;
    std::size_t length = 0;  // 0: no room
};

// The answer for `question`, a name at or below `zone`'s apex, written into `area`.
LocalAnswer answer_locally(const wire::DnsHeader& query, const wire::DnsQuestion& question, bool edns,
                           const DnsZone& zone, const DnsForwarderConfig& config, wire::MutableByteSpan area) noexcept {
    std::uint8_t rcode = wire::dns_rcode::kNoError;
    const DnsHostAddresses* host = nullptr;
    const bool internet = question.klass == wire::dns_class::kIn || question.klass == wire::dns_class::kAny;
    const std::size_t below = question.name.label_count() - zone.apex().label_count();
    if (!internet) {
        rcode = wire::dns_rcode::kRefused;
    } else if (below > 0) {
        if (below == 1) host = zone.find(question.name.label(0));  // names are one label below the apex
        if (host == nullptr) rcode = wire::dns_rcode::kNxDomain;
    }
    wire::DnsHeader h = reply_header(query, rcode);
    h.authoritative = internet;
    wire::DnsBuilder b(area, h);
    b.add_question(question.name, question.type, question.klass);
    bool any_record = false;
    if (host != nullptr) {
        const bool any = question.type == wire::dns_type::kAny;
        if ((question.type == wire::dns_type::kA || any) && host->ipv4) {
            std::uint8_t rdata[4];
            host->ipv4->copy_to(rdata);
            b.add_record(wire::DnsSection::answer, wire::DnsNameRef::to(kQuestionPointer), wire::dns_type::kA,
                         wire::dns_class::kIn, config.local_ttl, rdata);
            any_record = true;
        }
        if ((question.type == wire::dns_type::kAaaa || any) && host->ipv6) {
            b.add_record(wire::DnsSection::answer, wire::DnsNameRef::to(kQuestionPointer), wire::dns_type::kAaaa,
                         wire::dns_class::kIn, config.local_ttl, host->ipv6->bytes());
            any_record = true;
        }
    }
    if (edns) b.add_opt(our_edns(config));
    const DnsOutcome outcome = rcode == wire::dns_rcode::kRefused    ? DnsOutcome::refused
                               : rcode == wire::dns_rcode::kNxDomain ? DnsOutcome::nxdomain
                               : any_record                          ? DnsOutcome::answered
                                                                     : DnsOutcome::nodata;
    return {outcome, b.finish()};
}

// A reply with `rcode`, the question when there is one, and OPT when `edns` says so.
std::size_t error_reply(const wire::DnsHeader& h, const wire::DnsQuestion* question,
                        const std::optional<wire::DnsEdns>& edns, wire::MutableByteSpan area) noexcept {
    wire::DnsBuilder b(area, h);
    if (question != nullptr) b.add_question(question->name, question->type, question->klass);
    if (edns) b.add_opt(*edns);
    return b.finish();
}

// The largest DNS message a UDP tenant takes: 512 bytes, or its EDNS payload size, within the
// VPC's MTU.
std::uint16_t udp_limit(const std::optional<wire::DnsEdns>& edns, std::uint16_t mtu) noexcept {
    std::size_t limit = wire::kDnsClassicUdpLimit;
    if (edns) limit = std::max<std::size_t>(limit, edns->udp_payload_size);
    if (mtu >= 28 + wire::kDnsClassicUdpLimit) limit = std::min<std::size_t>(limit, mtu - 28u);
    return static_cast<std::uint16_t>(limit);
}

}  // namespace

DnsForwarder::DnsForwarder(DnsForwarderConfig config) : config_(std::move(config)) {
    if (config_.upstreams.size() > kMaxUpstreams) config_.upstreams.resize(kMaxUpstreams);
    config_.max_in_flight = std::clamp<std::size_t>(config_.max_in_flight, 1, kMaxInFlight);
    config_.attempts = std::max<std::uint32_t>(config_.attempts, 1);
    slots_.resize(config_.max_in_flight);
    free_.reserve(slots_.size());
    for (std::size_t i = slots_.size(); i-- > 0;) free_.push_back(static_cast<std::uint16_t>(i));
    slot_of_id_.reset(new std::uint16_t[65536]());  // zeroed in one memset: no ID is in use
    random_state_ = config_.seed != 0 ? config_.seed : (std::uint64_t{std::random_device{}()} << 32 | std::random_device{}());
    if (random_state_ == 0) random_state_ = 0x9E3779B97F4A7C15ull;
}

// xorshift64*: IDs an off-path attacker cannot guess from the ones before (RFC 5452 9.2 asks for
// unpredictable, not cryptographic).
std::uint16_t DnsForwarder::draw_id() noexcept {
    for (;;) {
        random_state_ ^= random_state_ >> 12;
        random_state_ ^= random_state_ << 25;
        random_state_ ^= random_state_ >> 27;
        const auto id = static_cast<std::uint16_t>((random_state_ * 0x2545F4914F6CDD1Dull) >> 48);
        if (slot_of_id_[id] == 0) return id;
    }
}

void DnsForwarder::link_tail(std::uint16_t slot) noexcept {
    Pending& p = slots_[slot];
    p.older = newest_;
    p.newer = kNone;
    if (newest_ != kNone) slots_[newest_].newer = slot;
    newest_ = slot;
    if (oldest_ == kNone) oldest_ = slot;
}

void DnsForwarder::unlink(std::uint16_t slot) noexcept {
    Pending& p = slots_[slot];
    if (p.older != kNone) slots_[p.older].newer = p.newer;
    else oldest_ = p.newer;
    if (p.newer != kNone) slots_[p.newer].older = p.older;
    else newest_ = p.older;
    p.older = p.newer = kNone;
}

void DnsForwarder::release(std::uint16_t slot) noexcept {
    Pending& p = slots_[slot];
    slot_of_id_[p.upstream_id] = 0;
    p.used = false;
    free_.push_back(slot);
    --in_flight_;
}

void DnsForwarder::note(DnsOutcome outcome) noexcept {
    DnsCounters& c = counters_;
    switch (outcome) {
        case DnsOutcome::nxdomain: ++c.nxdomain; [[fallthrough]];
        case DnsOutcome::answered:
        case DnsOutcome::nodata: ++c.answered_locally; break;
        case DnsOutcome::formerr:
        case DnsOutcome::badvers: ++c.formerr; break;
        case DnsOutcome::notimp: ++c.notimp; break;
        case DnsOutcome::refused: ++c.refused; break;
        case DnsOutcome::forwarded: ++c.forwarded; break;
        case DnsOutcome::retried: ++c.retries; break;
        case DnsOutcome::truncated: ++c.truncated; [[fallthrough]];
        case DnsOutcome::returned: ++c.answers_returned; break;
        case DnsOutcome::servfail_full: ++c.full; [[fallthrough]];
        case DnsOutcome::servfail_timeout:
        case DnsOutcome::servfail_no_upstream: ++c.failures; break;
        case DnsOutcome::dropped: ++c.dropped; break;
        case DnsOutcome::unmatched: ++c.unmatched; break;
        case DnsOutcome::malformed_answer: ++c.malformed_answers; break;
        case DnsOutcome::no_room: ++c.no_room; break;
        case DnsOutcome::not_dns:
        case DnsOutcome::idle: break;
    }
}

DnsAction DnsForwarder::count(DnsOutcome outcome) noexcept {
    note(outcome);
    return {DnsActionKind::none, outcome};
}

namespace {

// Where a reply's DNS message goes in `out`: after the frame's headers, or the TCP length.
std::size_t message_offset(bool tcp, const UdpReplyAddressing& addressing) noexcept {
    return tcp ? wire::kDnsTcpLengthPrefix : udp_reply_payload_offset(addressing.ethernet);
}

}  // namespace

// The message is in place at message_offset(); this puts the frame (or the TCP length) around it.
DnsAction DnsForwarder::deliver(const Client& client, wire::MutableByteSpan out, std::size_t message_length,
                                DnsOutcome outcome) noexcept {
    if (message_length == 0) return count(DnsOutcome::no_room);
    if (client.tcp) {
        wire::store_be16(out.data(), static_cast<std::uint16_t>(message_length));
        note(outcome);
        return {DnsActionKind::reply_tcp, outcome, wire::kDnsTcpLengthPrefix + message_length, 0, false,
                client.connection};
    }
    const std::size_t length = finish_udp_reply(out, client.addressing, message_length);
    if (length == 0) return count(DnsOutcome::no_room);
    note(outcome);
    return {DnsActionKind::reply_udp, outcome, length, 0, false, 0, client.tag};
}

DnsAction DnsForwarder::handle_udp_query(wire::ByteSpan frame, const DnsVpc& vpc, std::uint64_t now_ns,
                                         wire::MutableByteSpan out, std::uint64_t tag) noexcept {
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv4) return count(DnsOutcome::not_dns);
    const auto ip = wire::Ipv4View::parse(ethernet->payload());
    if (!ip || ip->protocol() != wire::ip_protocol::kUdp || ip->is_fragment() ||
        ip->destination() != vpc.gateway.ipv4)
        return count(DnsOutcome::not_dns);
    const auto udp = wire::UdpView::parse(ip->payload());
    if (!udp || udp->destination_port() != wire::kDnsPort) return count(DnsOutcome::not_dns);
    if (!ip->checksum_valid() || !udp->checksum_valid(ip->source(), ip->destination())) {
        ++counters_.queries;
        return count(DnsOutcome::dropped);
    }
    Client client;
    client.tag = tag;
    client.addressing.ethernet = ethernet->header();
    client.addressing.ethernet.destination = ethernet->source();
    client.addressing.ethernet.source = vpc.gateway.mac;
    client.addressing.source = vpc.gateway.ipv4;
    client.addressing.destination = ip->source();
    client.addressing.source_port = wire::kDnsPort;
    client.addressing.destination_port = udp->source_port();
    return handle_query(udp->payload(), vpc, client, now_ns, out);
}

DnsAction DnsForwarder::handle_tcp_query(wire::ByteSpan message, const DnsVpc& vpc, std::uint64_t connection,
                                         std::uint64_t now_ns, wire::MutableByteSpan out) noexcept {
    Client client;
    client.tcp = true;
    client.connection = connection;
    return handle_query(message, vpc, client, now_ns, out);
}

DnsAction DnsForwarder::handle_query(wire::ByteSpan message, const DnsVpc& vpc, const Client& asker,
                                     std::uint64_t now_ns, wire::MutableByteSpan out) noexcept {
    ++counters_.queries;
    const auto header = wire::read_dns_header(message);
    if (!header || header->response) return count(DnsOutcome::dropped);  // never answer an answer
    Client client = asker;
    const std::size_t offset = message_offset(client.tcp, client.addressing);
    if (out.size() <= offset) return count(DnsOutcome::no_room);
    const wire::MutableByteSpan area = out.subspan(offset);

    const auto view = wire::DnsMessageView::parse(message);
    const bool bad_opt = view && (view->opt_count() > 1 || !view->opt_name_is_root());
    if (!view || header->question_count != 1 || bad_opt) {
        const auto length = error_reply(reply_header(*header, wire::dns_rcode::kFormErr), nullptr, std::nullopt, area);
        return deliver(client, out, length, DnsOutcome::formerr);
    }
    const wire::DnsQuestion question = *view->first_question();
    const auto edns = view->edns();
    if (header->opcode != wire::dns_opcode::kQuery) {
        const auto length =
            error_reply(reply_header(*header, wire::dns_rcode::kNotImp), &question, std::nullopt, area);
        return deliver(client, out, length, DnsOutcome::notimp);
    }
    if (question.type == wire::dns_type::kOpt) {  // a pseudo-type, never a question
        const auto length = error_reply(reply_header(*header, wire::dns_rcode::kFormErr), &question, std::nullopt, area);
        return deliver(client, out, length, DnsOutcome::formerr);
    }
    if (edns && edns->version != 0) {  // RFC 6891 6.1.3: BADVERS is 16, its upper bits in OPT
        const auto length = error_reply(reply_header(*header, 0), &question,
                                        our_edns(config_, wire::dns_rcode::kBadVers >> 4), area);
        return deliver(client, out, length, DnsOutcome::badvers);
    }
    if (!client.tcp) client.udp_limit = udp_limit(edns, vpc.mtu);
    if (vpc.zone != nullptr && question.name.is_at_or_below(vpc.zone->apex())) {
        const LocalAnswer a = answer_locally(*header, question, edns.has_value(), *vpc.zone, config_, area);
        return deliver(client, out, a.length, a.outcome);
    }
    return forward(message, *header, question, client, now_ns, out);
}

DnsAction DnsForwarder::forward(wire::ByteSpan query, const wire::DnsHeader& header, const wire::DnsQuestion& question,
                                const Client& client, std::uint64_t now_ns, wire::MutableByteSpan out) noexcept {
    const std::size_t offset = message_offset(client.tcp, client.addressing);
    const DnsOutcome refusal = config_.upstreams.empty()          ? DnsOutcome::servfail_no_upstream
                               : query.size() > kMaxForwardedQuery ? DnsOutcome::refused
                               : free_.empty()                    ? DnsOutcome::servfail_full
                                                                  : DnsOutcome::forwarded;
    if (refusal != DnsOutcome::forwarded) {
        const std::uint8_t rcode =
            refusal == DnsOutcome::refused ? wire::dns_rcode::kRefused : wire::dns_rcode::kServFail;
        const auto length = error_reply(reply_header(header, rcode), &question, std::nullopt, out.subspan(offset));
        return deliver(client, out, length, refusal);
    }
    const std::uint16_t slot = free_.back();
    free_.pop_back();
    ++in_flight_;
    Pending& p = slots_[slot];
    p.used = true;
    p.client = client;
    p.name = question.name;
    p.type = question.type;
    p.klass = question.klass;
    p.client_id = header.id;
    p.recursion_desired = header.recursion_desired;
    p.checking_disabled = header.checking_disabled;
    p.upstream_id = draw_id();
    slot_of_id_[p.upstream_id] = static_cast<std::uint16_t>(slot + 1);
    p.tried = 0;
    p.attempts = 0;
    p.upstream = static_cast<std::uint8_t>(preferred_upstream_);
    p.query_length = static_cast<std::uint16_t>(query.size());
    std::memcpy(p.query.data(), query.data(), query.size());
    wire::store_be16(p.query.data(), p.upstream_id);
    return send_attempt(slot, now_ns, out, DnsOutcome::forwarded);
}

DnsAction DnsForwarder::send_attempt(std::uint16_t slot, std::uint64_t now_ns, wire::MutableByteSpan out,
                                     DnsOutcome outcome) noexcept {
    Pending& p = slots_[slot];
    if (out.size() < p.query_length) {
        release(slot);
        return count(DnsOutcome::no_room);
    }
    ++p.attempts;
    p.tried |= std::uint32_t{1} << p.upstream;
    // Never before the newest deadline: the list stays sorted even if a caller's clock steps back.
    p.deadline_ns = now_ns + config_.timeout_ns;
    if (newest_ != kNone) p.deadline_ns = std::max(p.deadline_ns, slots_[newest_].deadline_ns);
    link_tail(slot);
    std::memcpy(out.data(), p.query.data(), p.query_length);
    note(outcome);
    return {DnsActionKind::forward, outcome, p.query_length, p.upstream, p.client.tcp, 0};
}

DnsAction DnsForwarder::servfail(const Pending& p, wire::MutableByteSpan out, DnsOutcome outcome) noexcept {
    const std::size_t offset = message_offset(p.client.tcp, p.client.addressing);
    if (out.size() <= offset) return count(DnsOutcome::no_room);
    wire::DnsHeader query;
    query.id = p.client_id;
    query.recursion_desired = p.recursion_desired;
    query.checking_disabled = p.checking_disabled;
    wire::DnsQuestion question;
    question.name = p.name;
    question.type = p.type;
    question.klass = p.klass;
    const auto length = error_reply(reply_header(query, wire::dns_rcode::kServFail), &question, std::nullopt,
                                    out.subspan(offset));
    return deliver(p.client, out, length, outcome);
}

DnsAction DnsForwarder::poll_timeouts(std::uint64_t now_ns, wire::MutableByteSpan out) noexcept {
    if (oldest_ == kNone || slots_[oldest_].deadline_ns > now_ns) return {};
    const std::uint16_t slot = oldest_;
    unlink(slot);
    ++counters_.timeouts;
    Pending& p = slots_[slot];
    const std::size_t upstreams = config_.upstreams.size();
    if (p.upstream == preferred_upstream_) preferred_upstream_ = (preferred_upstream_ + 1) % upstreams;
    if (p.attempts < config_.attempts) {
        p.upstream = static_cast<std::uint8_t>((p.upstream + 1) % upstreams);
        return send_attempt(slot, now_ns, out, DnsOutcome::retried);
    }
    const DnsAction action = servfail(p, out, DnsOutcome::servfail_timeout);
    release(slot);
    return action;
}

DnsAction DnsForwarder::handle_upstream_answer(wire::ByteSpan message, std::size_t upstream,
                                               wire::MutableByteSpan out) noexcept {
    const auto header = wire::read_dns_header(message);
    if (!header || !header->response) return count(DnsOutcome::malformed_answer);
    const std::uint16_t slot = static_cast<std::uint16_t>(slot_of_id_[header->id] - 1);
    if (slot_of_id_[header->id] == 0 || upstream >= kMaxUpstreams || (slots_[slot].tried >> upstream & 1) == 0)
        return count(DnsOutcome::unmatched);
    const auto view = wire::DnsMessageView::parse(message);
    if (!view) return count(DnsOutcome::malformed_answer);
    const Pending& p = slots_[slot];
    const auto question = header->question_count == 1 ? view->first_question() : std::nullopt;
    if (!question || question->type != p.type || question->klass != p.klass || !question->name.equals_ignoring_case(p.name))
        return count(DnsOutcome::unmatched);

    const Client client = p.client;
    const std::uint16_t client_id = p.client_id;
    unlink(slot);
    release(slot);
    const std::size_t offset = message_offset(client.tcp, client.addressing);
    if (out.size() <= offset) return count(DnsOutcome::no_room);
    const wire::MutableByteSpan area = out.subspan(offset);
    const std::size_t limit = client.tcp ? 0xffff : client.udp_limit;
    if (message.size() <= limit) {
        if (area.size() < message.size()) return count(DnsOutcome::no_room);
        std::memcpy(area.data(), message.data(), message.size());
        wire::store_be16(area.data(), client_id);
        return deliver(client, out, message.size(), DnsOutcome::returned);
    }
    // Too long for the tenant's UDP: the header and the question (never compressed: nothing
    // precedes it to point at), TC set, so it asks again over TCP (RFC 2181 9, RFC 7766).
    const std::size_t question_end = view->section_offset(wire::DnsSection::answer);
    if (area.size() < question_end) return count(DnsOutcome::no_room);
    std::memcpy(area.data(), message.data(), question_end);
    wire::DnsHeader h = *header;
    h.id = client_id;
    h.truncated = true;
    h.answer_count = h.authority_count = h.additional_count = 0;
    h.write(area.data());
    return deliver(client, out, question_end, DnsOutcome::truncated);
}

void DnsForwarder::cancel_connection(std::uint64_t connection) noexcept {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        const Pending& p = slots_[i];
        if (!p.used || !p.client.tcp || p.client.connection != connection) continue;
        unlink(static_cast<std::uint16_t>(i));
        release(static_cast<std::uint16_t>(i));
    }
}

std::uint64_t DnsForwarder::next_deadline() const noexcept {
    return oldest_ == kNone ? 0 : slots_[oldest_].deadline_ns;
}

std::string_view to_string(DnsOutcome outcome) noexcept {
    switch (outcome) {
        case DnsOutcome::answered: return "answered";
        case DnsOutcome::nodata: return "nodata";
        case DnsOutcome::nxdomain: return "nxdomain";
        case DnsOutcome::formerr: return "formerr";
        case DnsOutcome::notimp: return "notimp";
        case DnsOutcome::refused: return "refused";
        case DnsOutcome::badvers: return "badvers";
        case DnsOutcome::forwarded: return "forwarded";
        case DnsOutcome::retried: return "retried";
        case DnsOutcome::returned: return "returned";
        case DnsOutcome::truncated: return "truncated";
        case DnsOutcome::servfail_full: return "servfail_full";
        case DnsOutcome::servfail_timeout: return "servfail_timeout";
        case DnsOutcome::servfail_no_upstream: return "servfail_no_upstream";
        case DnsOutcome::not_dns: return "not_dns";
        case DnsOutcome::dropped: return "dropped";
        case DnsOutcome::unmatched: return "unmatched";
        case DnsOutcome::malformed_answer: return "malformed_answer";
        case DnsOutcome::no_room: return "no_room";
        case DnsOutcome::idle: return "idle";
    }
    return "unknown";
}

}  // namespace andromeda::gateway
