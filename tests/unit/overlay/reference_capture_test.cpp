// Interoperability with the Light-Andromeda reference implementation: every packet it put on the
// underlay (testdata/light-andromeda/underlay.pcap, see its README) decodes, carries the flow
// hash we compute, holds the expected conversations, and re-encapsulating its inner frame with
// our template reproduces it byte for byte.
#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <map>
#include <string>
#include <vector>

#include "overlay/decap.hpp"
#include "overlay/flow_hash.hpp"
#include "overlay/outer_template.hpp"
#include "wire/bytes.hpp"
#include "wire/checksum.hpp"

namespace andromeda::overlay {
namespace {

using Bytes = std::vector<std::uint8_t>;

std::vector<Bytes> read_pcap(const std::string& path) {
    char error[PCAP_ERRBUF_SIZE] = {};
    pcap_t* pcap = pcap_open_offline(path.c_str(), error);
    if (pcap == nullptr) {
        ADD_FAILURE() << path << ": " << error;
        return {};
    }
    EXPECT_EQ(pcap_datalink(pcap), DLT_EN10MB);
    std::vector<Bytes> packets;
    pcap_pkthdr* header = nullptr;
    const u_char* data = nullptr;
    while (pcap_next_ex(pcap, &header, &data) == 1) {
        EXPECT_EQ(header->caplen, header->len) << "packet " << packets.size() << " was snapped";
        packets.emplace_back(data, data + header->caplen);
    }
    pcap_close(pcap);
    return packets;
}

const std::vector<Bytes>& underlay_packets() {
    static const std::vector<Bytes> packets =
        read_pcap(std::string(ANDROMEDA_TESTDATA_DIR) + "/light-andromeda/underlay.pcap");
    return packets;
}

// The inner conversation facts of one decapsulated frame (plain IPv4, IHL read from the frame).
struct InnerFacts {
    std::uint32_t src = 0, dst = 0;
    std::uint8_t protocol = 0;
    std::uint16_t dst_port = 0;
    std::uint8_t icmp_type = 0xff;
    std::uint8_t tcp_flags = 0;
    std::size_t tcp_payload = 0;
};

InnerFacts inner_facts(wire::ByteSpan inner) {
    InnerFacts f;
    EXPECT_EQ(wire::load_be16(&inner[12]), 0x0800);
    const std::uint8_t* ip = &inner[14];
    const std::size_t ihl = static_cast<std::size_t>(ip[0] & 0x0f) * 4;
    const std::uint8_t* l4 = ip + ihl;
    f.src = wire::load_be32(ip + 12);
    f.dst = wire::load_be32(ip + 16);
    f.protocol = ip[9];
    if (f.protocol == 1) f.icmp_type = l4[0];
    if (f.protocol == 6 || f.protocol == 17) f.dst_port = wire::load_be16(l4 + 2);
    if (f.protocol == 6) {
        f.tcp_flags = l4[13];
        f.tcp_payload = wire::load_be16(ip + 2) - ihl - static_cast<std::size_t>(l4[12] >> 4) * 4;
    }
    return f;
}

TEST(ReferenceCapture, EveryPacketDecodesWithValidChecksumsAndOurFlowHash) {
    const auto& packets = underlay_packets();
    ASSERT_EQ(packets.size(), 15u);
    for (std::size_t i = 0; i < packets.size(); ++i) {
        SCOPED_TRACE("packet " + std::to_string(i + 1));
        const Bytes& p = packets[i];
        const DecapResult r = decapsulate(p, {EncapKind::andromeda, 0});
        ASSERT_TRUE(r.ok()) << to_string(r.error);
        EXPECT_TRUE(wire::checksum_verifies(wire::ByteSpan(p).subspan(14, 20)));
        EXPECT_EQ(r.packet.vni, 100u);
        EXPECT_EQ(r.packet.hop_limit, 64);
        EXPECT_EQ(r.packet.flags, 0);
        EXPECT_EQ(r.packet.outer_src_port, flow_source_port(r.packet.flow_hash));
        // Ours reproduces theirs for every packet: TCP/UDP by the formula, ICMP as 0.
        EXPECT_EQ(flow_hash_of_frame(r.packet.inner), r.packet.flow_hash);
        const InnerFacts f = inner_facts(r.packet.inner);
        if (f.protocol == 1) {
            EXPECT_EQ(r.packet.flow_hash, 0);
        }
        if (f.protocol == 6 || f.protocol == 17) {
            const auto tuple = flow_tuple_of_frame(r.packet.inner);
            ASSERT_TRUE(tuple);
            EXPECT_EQ(flow_hash(*tuple), r.packet.flow_hash);
        }
    }
}

TEST(ReferenceCapture, HoldsTheExpectedInnerConversations) {
    constexpr std::uint32_t kA = 0x0a00000a, kB = 0x0a000014;
    int echo_requests = 0, echo_replies = 0, udp_to_7001 = 0;
    std::size_t tcp_bytes_to_7000 = 0;
    bool syn = false, syn_ack = false, fin = false;
    for (const Bytes& p : underlay_packets()) {
        const DecapResult r = decapsulate(p, {});
        ASSERT_TRUE(r.ok());
        const InnerFacts f = inner_facts(r.packet.inner);
        if (f.protocol == 1 && f.icmp_type == 8 && f.src == kA && f.dst == kB) ++echo_requests;
        if (f.protocol == 1 && f.icmp_type == 0 && f.src == kB && f.dst == kA) ++echo_replies;
        if (f.protocol == 17 && f.dst == kB && f.dst_port == 7001) ++udp_to_7001;
        if (f.protocol == 6 && f.src == kA && f.dst == kB && f.dst_port == 7000) {
            tcp_bytes_to_7000 += f.tcp_payload;
            syn |= f.tcp_flags == 0x02;
            fin |= (f.tcp_flags & 0x01) != 0;
        }
        if (f.protocol == 6 && f.src == kB && f.tcp_flags == 0x12) syn_ack = true;
    }
    EXPECT_EQ(echo_requests, 3);
    EXPECT_EQ(echo_replies, 3);
    EXPECT_EQ(udp_to_7001, 1);
    EXPECT_EQ(tcp_bytes_to_7000, 26u);
    EXPECT_TRUE(syn && syn_ack && fin);
}

OuterTemplateConfig config_from_captured_outer(const Bytes& p) {
    OuterTemplateConfig c;
    c.kind = EncapKind::andromeda;
    c.dst_mac = wire::MacAddress::from_bytes(&p[0]);
    c.src_mac = wire::MacAddress::from_bytes(&p[6]);
    c.tos = p[15];
    c.dont_fragment = (p[20] & 0x40) != 0;
    c.ttl = p[22];
    c.src_ip = wire::Ipv4Address::from_bytes(&p[26]);
    c.dst_ip = wire::Ipv4Address::from_bytes(&p[30]);
    c.udp_port = wire::load_be16(&p[36]);
    c.udp_checksum = wire::load_be16(&p[40]) != 0;
    return c;
}

// One template per direction, as a sender keeps one per destination, starting at our default
// IP ID: the reference also counts from 1 per destination, so no field needs patching.
TEST(ReferenceCapture, ReEncapsulationReproducesEveryPacketByteForByte) {
    std::map<std::uint32_t, OuterTemplate> templates;  // by outer source IP
    for (std::size_t i = 0; i < underlay_packets().size(); ++i) {
        SCOPED_TRACE("packet " + std::to_string(i + 1));
        const Bytes& captured = underlay_packets()[i];
        const DecapResult r = decapsulate(captured, {});
        ASSERT_TRUE(r.ok());
        auto [it, _] = templates.try_emplace(r.packet.outer_src_ip.value(), config_from_captured_outer(captured));
        OuterTemplate& t = it->second;
        EXPECT_EQ(t.next_ip_id(), wire::load_be16(&captured[18]));
        const OverlayFields fields{r.packet.vni, flow_hash_of_frame(r.packet.inner), kDefaultHopLimit, 0};

        Bytes copy(captured.size() + 8, 0xee);
        t.set_next_ip_id(wire::load_be16(&captured[18]));
        ASSERT_EQ(t.encapsulate(r.packet.inner, copy, fields), captured.size());
        copy.resize(captured.size());
        EXPECT_EQ(copy, captured);

        Bytes umem_frame(256 + r.packet.inner.size());
        std::copy(r.packet.inner.begin(), r.packet.inner.end(), umem_frame.begin() + 256);
        t.set_next_ip_id(wire::load_be16(&captured[18]));
        const auto outer = t.encapsulate_in_place(umem_frame, 256, r.packet.inner.size(), fields);
        EXPECT_EQ(Bytes(outer.begin(), outer.end()), captured);
    }
}

}  // namespace
}  // namespace andromeda::overlay
