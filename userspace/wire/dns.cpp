#include "wire/dns.hpp"

#include <cstring>

namespace andromeda::wire {

namespace {

constexpr std::size_t kQuestionFixed = 4;  // type, class
constexpr std::size_t kRecordFixed = 10;   // type, class, TTL, RDLENGTH

}  // namespace

std::string_view to_string(DnsErrorKind kind) noexcept {
    switch (kind) {
        case DnsErrorKind::none: return "none";
        case DnsErrorKind::truncated_header: return "truncated_header";
        case DnsErrorKind::truncated_name: return "truncated_name";
        case DnsErrorKind::bad_label_type: return "bad_label_type";
        case DnsErrorKind::name_too_long: return "name_too_long";
        case DnsErrorKind::bad_pointer: return "bad_pointer";
        case DnsErrorKind::too_many_pointers: return "too_many_pointers";
        case DnsErrorKind::truncated_question: return "truncated_question";
        case DnsErrorKind::truncated_record: return "truncated_record";
    }
    return "unknown";
}

std::uint16_t DnsHeader::flags() const noexcept {
    return static_cast<std::uint16_t>((response ? 0x8000 : 0) | (opcode & 0xf) << 11 | (authoritative ? 0x0400 : 0) |
                                      (truncated ? 0x0200 : 0) | (recursion_desired ? 0x0100 : 0) |
                                      (recursion_available ? 0x0080 : 0) | (zero ? 0x0040 : 0) |
                                      (authentic_data ? 0x0020 : 0) | (checking_disabled ? 0x0010 : 0) |
                                      (rcode & 0xf));
}

DnsHeader DnsHeader::read(const std::uint8_t* p) noexcept {
    const std::uint16_t f = load_be16(p + 2);
    DnsHeader h;
    h.id = load_be16(p);
    h.response = (f & 0x8000) != 0;
    h.opcode = static_cast<std::uint8_t>(f >> 11 & 0xf);
    h.authoritative = (f & 0x0400) != 0;
    h.truncated = (f & 0x0200) != 0;
    h.recursion_desired = (f & 0x0100) != 0;
    h.recursion_available = (f & 0x0080) != 0;
    h.zero = (f & 0x0040) != 0;
    h.authentic_data = (f & 0x0020) != 0;
    h.checking_disabled = (f & 0x0010) != 0;
    h.rcode = static_cast<std::uint8_t>(f & 0xf);
    h.question_count = load_be16(p + 4);
    h.answer_count = load_be16(p + 6);
    h.authority_count = load_be16(p + 8);
    h.additional_count = load_be16(p + 10);
    return h;
}

void DnsHeader::write(std::uint8_t* p) const noexcept {
    store_be16(p, id);
    store_be16(p + 2, flags());
    store_be16(p + 4, question_count);
    store_be16(p + 6, answer_count);
    store_be16(p + 8, authority_count);
    store_be16(p + 10, additional_count);
}

std::optional<DnsHeader> read_dns_header(ByteSpan message) noexcept {
    if (message.size() < kDnsHeaderLength) return std::nullopt;
    return DnsHeader::read(message.data());
}

Parsed<DnsMessageView, DnsError> DnsMessageView::parse(ByteSpan m) noexcept {
    if (m.size() < kDnsHeaderLength) return DnsError{DnsErrorKind::truncated_header, m.size()};
    DnsMessageView view(m);
    const DnsHeader h = DnsHeader::read(m.data());
    std::size_t at = kDnsHeaderLength;
    std::size_t next = 0;
    view.sections_[0] = at;
    for (std::size_t i = 0; i < h.question_count; ++i) {
        if (const DnsError e = read_dns_name(m, at, nullptr, next); e.kind != DnsErrorKind::none) return e;
        if (next + kQuestionFixed > m.size()) return DnsError{DnsErrorKind::truncated_question, next};
        at = next + kQuestionFixed;
    }
    const std::uint16_t counts[3] = {h.answer_count, h.authority_count, h.additional_count};
    for (std::size_t s = 1; s <= 3; ++s) {
        view.sections_[s] = at;
        for (std::size_t i = 0; i < counts[s - 1]; ++i) {
            if (const DnsError e = read_dns_name(m, at, nullptr, next); e.kind != DnsErrorKind::none) return e;
            if (next + kRecordFixed > m.size()) return DnsError{DnsErrorKind::truncated_record, next};
            const std::size_t rdata_end = next + kRecordFixed + load_be16(&m[next + 8]);
            if (rdata_end > m.size()) return DnsError{DnsErrorKind::truncated_record, next};
            if (s == 3 && load_be16(&m[next]) == dns_type::kOpt) {
                if (view.opt_count_++ == 0) view.opt_offset_ = at;
                if (m[at] != 0) view.opt_name_is_root_ = false;
            }
            at = rdata_end;
        }
    }
    view.end_ = at;
    return view;
}

DnsCursor DnsMessageView::cursor(DnsSection section) const noexcept {
    const DnsHeader h = header();
    const std::uint16_t counts[4] = {h.question_count, h.answer_count, h.authority_count, h.additional_count};
    const auto s = static_cast<std::size_t>(section);
    return DnsCursor(message_, sections_[s], counts[s]);
}

std::optional<DnsQuestion> DnsMessageView::first_question() const noexcept {
    return cursor(DnsSection::question).next_question();
}

std::optional<DnsEdns> DnsMessageView::edns() const noexcept {
    if (opt_count_ == 0) return std::nullopt;
    DnsCursor c(message_, opt_offset_, 1);
    const auto opt = c.next_record();
    if (!opt) return std::nullopt;
    DnsEdns e;
    e.udp_payload_size = opt->klass;
    e.extended_rcode = static_cast<std::uint8_t>(opt->ttl >> 24);
    e.version = static_cast<std::uint8_t>(opt->ttl >> 16);
    e.dnssec_ok = (opt->ttl & 0x8000) != 0;
    e.options = opt->rdata;
    return e;
}

// parse() checked every name and length the cursors read; a failure here means a cursor was
// made over something else, and it ends the walk rather than reading past the message.
std::optional<DnsQuestion> DnsCursor::next_question() noexcept {
    if (left_ == 0) return std::nullopt;
    DnsQuestion q;
    std::size_t next = 0;
    if (read_dns_name(message_, at_, &q.name, next).kind != DnsErrorKind::none || next + kQuestionFixed > message_.size()) {
        left_ = 0;
        return std::nullopt;
    }
    q.offset = at_;
    q.type = load_be16(&message_[next]);
    q.klass = load_be16(&message_[next + 2]);
    at_ = next + kQuestionFixed;
    --left_;
    return q;
}

std::optional<DnsRecord> DnsCursor::next_record() noexcept {
    if (left_ == 0) return std::nullopt;
    DnsRecord r;
    std::size_t next = 0;
    if (read_dns_name(message_, at_, &r.name, next).kind != DnsErrorKind::none || next + kRecordFixed > message_.size()) {
        left_ = 0;
        return std::nullopt;
    }
    const std::size_t rdata_length = load_be16(&message_[next + 8]);
    if (next + kRecordFixed + rdata_length > message_.size()) {
        left_ = 0;
        return std::nullopt;
    }
    r.offset = at_;
    r.type = load_be16(&message_[next]);
    r.klass = load_be16(&message_[next + 2]);
    r.ttl = load_be32(&message_[next + 4]);
    r.rdata_offset = next + kRecordFixed;
    r.rdata = message_.subspan(r.rdata_offset, rdata_length);
    at_ = r.rdata_offset + rdata_length;
    --left_;
    return r;
}

DnsBuilder::DnsBuilder(MutableByteSpan out, const DnsHeader& header) noexcept : out_(out) {
    if (out.size() < kDnsHeaderLength) return;
    header.write(out.data());
    at_ = kDnsHeaderLength;
    ok_ = true;
}

bool DnsBuilder::enter(DnsSection section) noexcept {
    const auto s = static_cast<std::uint8_t>(section);
    if (!ok_ || s < section_ || counts_[s] == 0xffff) return ok_ = false;
    section_ = s;
    return true;
}

bool DnsBuilder::write_name(const DnsNameRef& ref) noexcept {
    std::size_t length = 0;  // of the labels written in full
    if (ref.labels > 0) {
        if (ref.name == nullptr) return false;
        const ByteSpan wire = ref.name->wire();
        for (std::size_t i = 0; i < ref.labels; ++i) {
            if (length >= wire.size() || wire[length] == 0) return false;  // fewer labels than asked
            length += 1 + std::size_t{wire[length]};
        }
    }
    const bool whole = !ref.pointer && ref.name != nullptr && length + 1 == ref.name->wire_length();
    if (!ref.pointer && !whole && !(ref.name == nullptr && ref.labels == 0)) return false;
    if (ref.pointer && *ref.pointer >= 0x4000) return false;
    const std::size_t needed = length + (ref.pointer ? 2 : 1);
    if (at_ + needed > out_.size()) return false;
    if (length > 0) std::memcpy(&out_[at_], ref.name->wire().data(), length);
    at_ += length;
    if (ref.pointer) {
        store_be16(&out_[at_], static_cast<std::uint16_t>(0xc000 | *ref.pointer));
        at_ += 2;
    } else {
        out_[at_++] = 0;
    }
    return true;
}

bool DnsBuilder::add_question(const DnsName& name, std::uint16_t type, std::uint16_t klass) noexcept {
    if (!enter(DnsSection::question)) return false;
    if (at_ + name.wire_length() + kQuestionFixed > out_.size()) return ok_ = false;
    std::memcpy(&out_[at_], name.wire().data(), name.wire_length());
    at_ += name.wire_length();
    store_be16(&out_[at_], type);
    store_be16(&out_[at_ + 2], klass);
    at_ += kQuestionFixed;
    ++counts_[0];
    return true;
}

bool DnsBuilder::add_record(DnsSection section, const DnsNameRef& name, std::uint16_t type, std::uint16_t klass,
                            std::uint32_t ttl, ByteSpan rdata) noexcept {
    if (section == DnsSection::question || rdata.size() > 0xffff || !enter(section)) return ok_ = false;
    if (!write_name(name) || at_ + kRecordFixed + rdata.size() > out_.size()) return ok_ = false;
    store_be16(&out_[at_], type);
    store_be16(&out_[at_ + 2], klass);
    store_be32(&out_[at_ + 4], ttl);
    store_be16(&out_[at_ + 8], static_cast<std::uint16_t>(rdata.size()));
    if (!rdata.empty()) std::memcpy(&out_[at_ + kRecordFixed], rdata.data(), rdata.size());
    at_ += kRecordFixed + rdata.size();
    ++counts_[static_cast<std::size_t>(section)];
    return true;
}

bool DnsBuilder::add_opt(const DnsEdns& edns) noexcept {
    const std::uint32_t ttl = std::uint32_t{edns.extended_rcode} << 24 | std::uint32_t{edns.version} << 16 |
                              (edns.dnssec_ok ? 0x8000u : 0u);
    return add_record(DnsSection::additional, DnsNameRef{}, dns_type::kOpt, edns.udp_payload_size, ttl, edns.options);
}

std::size_t DnsBuilder::finish() noexcept {
    if (!ok_) return 0;
    for (std::size_t i = 0; i < 4; ++i) store_be16(&out_[4 + 2 * i], counts_[i]);
    return at_;
}

DnsTcpMessage next_dns_tcp_message(ByteSpan stream) noexcept {
    if (stream.size() < kDnsTcpLengthPrefix) return {};
    const std::size_t length = load_be16(stream.data());
    if (length == 0) return {DnsTcpStatus::empty, {}, 0};
    if (stream.size() < kDnsTcpLengthPrefix + length) return {};
    return {DnsTcpStatus::complete, stream.subspan(kDnsTcpLengthPrefix, length), kDnsTcpLengthPrefix + length};
}

std::size_t write_dns_tcp_message(MutableByteSpan out, ByteSpan message) noexcept {
    if (message.size() > 0xffff || out.size() < kDnsTcpLengthPrefix + message.size()) return 0;
    store_be16(out.data(), static_cast<std::uint16_t>(message.size()));
    if (!message.empty()) std::memcpy(out.data() + kDnsTcpLengthPrefix, message.data(), message.size());
    return kDnsTcpLengthPrefix + message.size();
}

}  // namespace andromeda::wire
