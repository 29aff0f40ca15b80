// End to end, scenario 5 of issue 7: traffic from another implementation. The underlay capture
// of the Light-Andromeda reference (tests/data/light-andromeda/underlay.pcap, Rust, not
// written here) is replayed onto the underlay of an andromedad configured as the capture's
// 192.168.1.2, and every inner frame meant for tenant 10.0.0.20 reaches that tenant intact.
//
//   host1 ns (plays 192.168.1.1, no daemon): AF_PACKET on eth1 sends the capture's frames
//        │ underlay bridge
//   host2 ns: andromedad (configs/node2.toml) on eth1 192.168.1.2 ── tap-blue-20 ── t20 ns: eth0
//                                                           AF_PACKET on t20's eth0 collects
//
// The capture's outer MACs are the reference's fixed 02:00:00:00:a1:01 / 02:00:00:00:a1:02 (its
// README). Rather than rewriting the frames, the test gives host1's and host2's eth1 those MACs
// before the daemon starts, so the frames go out exactly as captured and are addressed, at layer
// 2 too, to the node that receives them (a real switch would deliver a1:02 nowhere else).
//
// The expected frames are computed here by decapsulating the capture with userspace/overlay, not
// written down: each inner frame whose IPv4 destination is 10.0.0.20, cut to its IPv4 total
// length, with the MACs a router delivery sets (destination: the endpoint's configured MAC,
// source: the VPC's virtual gateway MAC). The capture also holds the replies (outer
// 192.168.1.2 -> 192.168.1.1, inner to 10.0.0.10): replayed too, they must reach no tenant.
#include <pcap/pcap.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "daemon_fixture.hpp"
#include "overlay/decap.hpp"
#include "raw_socket.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv4.hpp"

namespace andromeda::testing {
namespace {

const std::string kCapture = std::string(ANDROMEDA_TESTDATA_DIR) + "/light-andromeda/underlay.pcap";

struct PcapCloser {
    void operator()(pcap_t* p) const { pcap_close(p); }
};

// Every frame of an Ethernet pcap, whole (a snapped frame is an error: it could not be replayed).
std::vector<Bytes> read_ethernet_pcap(const std::string& path) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    std::unique_ptr<pcap_t, PcapCloser> pcap(pcap_open_offline(path.c_str(), errbuf));
    if (!pcap) throw std::runtime_error("cannot read " + path + ": " + errbuf);
    if (pcap_datalink(pcap.get()) != DLT_EN10MB) throw std::runtime_error(path + ": not an Ethernet capture");
    std::vector<Bytes> frames;
    pcap_pkthdr* header = nullptr;
    const u_char* data = nullptr;
    int rc = 0;
    while ((rc = pcap_next_ex(pcap.get(), &header, &data)) == 1) {
        if (header->caplen != header->len) throw std::runtime_error(path + ": a frame was snapped");
        frames.emplace_back(data, data + header->caplen);
    }
    if (rc != PCAP_ERROR_BREAK) throw std::runtime_error(path + ": " + pcap_geterr(pcap.get()));
    return frames;
}

std::optional<wire::Ipv4Address> ipv4_destination(wire::ByteSpan frame) {
    const auto ethernet = wire::EthernetView::parse(frame);
    if (!ethernet || ethernet->ethertype() != wire::ethertype::kIpv4) return std::nullopt;
    const auto ip = wire::Ipv4View::parse(ethernet->payload());
    if (!ip) return std::nullopt;
    return ip->destination();
}

std::string hex(const Bytes& frame) {
    std::string out;
    char byte[4];
    for (std::size_t i = 0; i < frame.size(); ++i) {
        std::snprintf(byte, sizeof byte, "%02x", frame[i]);
        out += byte;
        if (i % 16 == 15) out += '\n';
    }
    return out;
}

class LightAndromedaReplay : public TwoNodes {};

TEST_F(LightAndromedaReplay, EveryInnerFrameFor10_0_0_20ArrivesIntactAndNothingElse) {
    const auto tenant_ip = *wire::Ipv4Address::parse("10.0.0.20");
    const auto tenant_mac = *wire::MacAddress::parse("02:00:00:00:00:20");   // its endpoint in configs/node2.toml
    const auto gateway_mac = *wire::MacAddress::parse("02:00:00:00:00:ff");  // the VPC's virtual gateway (the reference's too)

    // What the reference put on the wire, decoded by our own decap, and what the tenant should see.
    const std::vector<Bytes> capture = read_ethernet_pcap(kCapture);
    ASSERT_EQ(capture.size(), 15u) << "the capture changed: 3 echo exchanges, a TCP connection, a UDP datagram";
    std::vector<Bytes> expected;
    std::size_t for_others = 0;
    for (const Bytes& frame : capture) {
        const overlay::DecapResult decap = overlay::decapsulate(frame, overlay::DecapConfig{});
        ASSERT_TRUE(decap.ok()) << "the reference's packet does not decode: " << overlay::to_string(decap.error);
        EXPECT_EQ(decap.packet.vni, 100u);
        const auto ethernet = wire::EthernetView::parse(decap.packet.inner);
        ASSERT_TRUE(ethernet);
        const auto ip = wire::Ipv4View::parse(ethernet->payload());
        ASSERT_TRUE(ip) << "every inner frame in this capture is IPv4";
        if (ip->destination() != tenant_ip) {
            ++for_others;
            continue;
        }
        Bytes inner(decap.packet.inner.begin(),
                    decap.packet.inner.begin() + static_cast<std::ptrdiff_t>(ethernet->header_length() + ip->packet().size()));
        tenant_mac.copy_to(inner.data());
        gateway_mac.copy_to(inner.data() + 6);
        expected.push_back(std::move(inner));
    }
    // The README's traffic towards 10.0.0.20: 3 echo requests, SYN, ACK, the data segment,
    // FIN, the last ACK, and the UDP datagram. The other 6 are 10.0.0.20's answers.
    ASSERT_EQ(expected.size(), 9u);
    ASSERT_EQ(for_others, 6u);

    // The capture's outer MACs on the two hosts' underlay interfaces (see the top of the file).
    Netns& sender_host = *nodes_[0].host;
    Netns& node_host = *nodes_[1].host;
    for (auto [host, mac] : {std::pair{&sender_host, "02:00:00:00:a1:01"}, std::pair{&node_host, "02:00:00:00:a1:02"}}) {
        host->run({"ip", "link", "set", "eth1", "down"});
        host->run({"ip", "link", "set", "eth1", "address", mac});
        host->run({"ip", "link", "set", "eth1", "up"});
    }
    start_daemon(1);
    ASSERT_TRUE(nodes_[1].daemon->running()) << logs();

    RawSocket tenant(*t20_, "eth0");
    RawSocket underlay(sender_host, "eth1");
    for (const Bytes& frame : capture) underlay.send(frame);  // unmodified, in capture order

    // The tenant's kernel answers (ARP for 10.0.0.10 among them, which the gateway answers):
    // those leave eth0 and are not collected; the gateway's ARP replies are left out.
    const auto not_arp = [](const Bytes& frame) {
        const auto ethernet = wire::EthernetView::parse(frame);
        return !ethernet || ethernet->ethertype() != wire::ethertype::kArp;
    };
    std::vector<Bytes> received = tenant.receive(expected.size(), 15s, not_arp);
    // The last frame of the capture is one for 10.0.0.20 and one worker handles the underlay in
    // order, so every frame misdelivered would be here already; a short drain catches stragglers.
    const std::vector<Bytes> extra = tenant.receive(1, 500ms, not_arp);
    received.insert(received.end(), extra.begin(), extra.end());

    for (const Bytes& frame : received) {
        const auto destination = ipv4_destination(frame);
        EXPECT_TRUE(destination && *destination == tenant_ip) << "a frame not for 10.0.0.20 reached it:\n" << hex(frame);
    }
    ASSERT_EQ(received.size(), expected.size()) << logs();
    for (std::size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(received[i], expected[i]) << "frame " << i << " differs; expected:\n"
                                            << hex(expected[i]) << "\nreceived:\n" << hex(received[i]);

    EXPECT_EQ(counter(1, delivered_from_fabric_counter()), expected.size());
    EXPECT_EQ(counter(1, "io", "ledger_violations"), 0u);
}

}  // namespace
}  // namespace andromeda::testing
