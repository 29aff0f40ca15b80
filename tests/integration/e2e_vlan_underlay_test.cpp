// End to end, scenario 6 of issue 7: a VLAN-tagged (802.1Q) underlay.
//
// VlanDeviceUnderlay: each host's underlay address lives on a VLAN device on top of its NIC and
// andromedad runs on that device ([node] underlay = "eth1.100": XDP in generic mode there, AF_XDP
// in copy mode; the kernel's VLAN driver adds and strips the tag):
//
//   t10 ── host1: tap-blue-10   eth1.100 192.168.100.1 (VLAN 100 on eth1, no address) ─┐
//                                                                                      bridge
//   t20 ── host2: tap-blue-20   eth1.100 192.168.100.2 (VLAN 100 on eth1, no address) ─┘
//
// A capture on the underlay bridge proves every overlay frame on the wire carries tag 100, and
// two tenants ping and move data over TCP byte-exact through it. It needs a kernel with 802.1Q
// (CONFIG_VLAN_8021Q) and skips, saying so, on one without.
//
// VlanTagging runs on any kernel: andromedad itself tags its underlay frames ([node]
// underlay_vlan = 100) on the plain (trunk) interface; the node addresses live on VLAN 100
// (192.168.100.K, on no kernel interface) while eth1 keeps its untagged 192.168.1.K for host
// traffic, and every peer's MAC is pinned (the kernel cannot ARP on a VLAN it has no device for):
//
//   t10 ── host1: tap-blue-10   eth1 192.168.1.1 untagged; VLAN 100: 192.168.100.1 (andromedad) ─┐
//                                                                                               bridge
//   t20 ── host2: tap-blue-20   eth1 192.168.1.2 untagged; VLAN 100: 192.168.100.2 (andromedad) ─┘
//
// A capture on the bridge shows every overlay frame tagged 100 both ways; ping and TCP between
// the tenants work byte-exact; host traffic on eth1 still passes; an overlay frame tagged with
// another VLAN is dropped under its own counter while the same frame tagged 100 is delivered.
//
// TaggedOverlayFromTheUnderlay runs on any kernel: overlay packets arriving on a plain underlay
// port with one 802.1Q tag, or an 802.1ad and an 802.1Q tag (as a trunk delivers them), pass the
// XDP program and decapsulation and reach the tenant intact.
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <string>

#include "andromeda_kern_user.h"
#include "fabric_fixture.hpp"
#include "raw_socket.hpp"
#include "test_frames.hpp"

namespace andromeda::testing {
namespace {

constexpr int kVlan = 100;

// An AF_PACKET capture of one interface, both directions, with the VLAN tag the kernel keeps out
// of band (PACKET_AUXDATA) as well as one left in the frame.
class VlanCapture {
public:
    struct Counts {
        std::size_t tagged_overlay_in = 0;   // received on the interface, tag kVlan, UDP to the overlay port
        std::size_t tagged_overlay_out = 0;  // sent out of it, the same
        std::size_t untagged_overlay = 0;    // overlay UDP without a tag: must never happen
    };

    VlanCapture(const Netns& ns, const std::string& ifname) : fd_(open_packet_socket(ns, ifname, SOCK_NONBLOCK)) {
        const int on = 1;
        setsockopt(fd_, SOL_PACKET, PACKET_AUXDATA, &on, sizeof on);
        const int buffer = 8 << 20;
        setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof buffer);
    }
    ~VlanCapture() { close(fd_); }
    VlanCapture(const VlanCapture&) = delete;
    VlanCapture& operator=(const VlanCapture&) = delete;

    // Everything queued so far.
    Counts drain() {
        Counts counts;
        for (;;) {
            std::uint8_t frame[2048];
            alignas(cmsghdr) char control[CMSG_SPACE(sizeof(tpacket_auxdata))];
            sockaddr_ll from{};
            iovec iov{frame, sizeof frame};
            msghdr msg{};
            msg.msg_name = &from;
            msg.msg_namelen = sizeof from;
            msg.msg_iov = &iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            const ssize_t n = recvmsg(fd_, &msg, 0);
            if (n <= 0) break;
            int vlan = -1;
            for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
                if (c->cmsg_level == SOL_PACKET && c->cmsg_type == PACKET_AUXDATA) {
                    tpacket_auxdata aux{};
                    std::memcpy(&aux, CMSG_DATA(c), sizeof aux);
                    if ((aux.tp_status & TP_STATUS_VLAN_VALID) != 0) vlan = aux.tp_vlan_tci & 0x0fff;
                }
            std::size_t l3 = 14;
            auto u16 = [&](std::size_t at) { return static_cast<unsigned>(frame[at] << 8 | frame[at + 1]); };
            if (static_cast<std::size_t>(n) < l3 + 28) continue;
            if (u16(12) == ETH_P_8021Q) {  // the tag still in the frame
                vlan = static_cast<int>(u16(14) & 0x0fff);
                l3 += 4;
            }
            if (static_cast<std::size_t>(n) < l3 + 28 || u16(l3 - 2) != ETH_P_IP || frame[l3 + 9] != IPPROTO_UDP) continue;
            const std::size_t udp = l3 + (frame[l3] & 0x0f) * 4u;
            if (static_cast<std::size_t>(n) < udp + 8 || u16(udp + 2) != ANDROMEDA_OVERLAY_PORT) continue;
            if (vlan == kVlan)
                ++(from.sll_pkttype == PACKET_OUTGOING ? counts.tagged_overlay_out : counts.tagged_overlay_in);
            else
                ++counts.untagged_overlay;
        }
        return counts;
    }

private:
    int fd_ = -1;
};

class VlanDeviceUnderlay : public Fabric {
protected:
    void SetUp() override {
        Fabric::SetUp();
        if (IsSkipped()) return;
        add_nodes(2);
        const std::string dev = "eth1." + std::to_string(kVlan);
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            Netns& host = *nodes_[i].host;
            const auto made = host.try_run(
                {"ip", "link", "add", "link", "eth1", "name", dev, "type", "vlan", "id", std::to_string(kVlan)});
            if (!made.ok() && contains(made.output, "Unknown device type"))
                GTEST_SKIP() << "this kernel has no 802.1Q VLAN devices (CONFIG_VLAN_8021Q): " << made.output;
            ASSERT_TRUE(made.ok()) << made.output;
            host.run({"ip", "addr", "flush", "dev", "eth1"});
            host.run({"ip", "link", "set", dev, "up"});
            nodes_[i].underlay = dev;
            nodes_[i].address = "192.168." + std::to_string(kVlan) + "." + std::to_string(i + 1);
            topo_.add_address(host, dev, nodes_[i].address + "/24");
        }
        vpc_ = add_vpc("blue", 100);
        t10_ = &add_endpoint(vpc_, 0, "10.0.0.10", "02:00:00:00:00:10");
        t20_ = &add_endpoint(vpc_, 1, "10.0.0.20", "02:00:00:00:00:20");
        start_all();
    }

    std::size_t vpc_ = 0;
    Endpoint* t10_ = nullptr;
    Endpoint* t20_ = nullptr;
};

TEST_F(VlanDeviceUnderlay, OverlayFramesCarryTheTagAndTenantsPingAndMoveTcpData) {
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_->ns, "10.0.0.20"); }, 5s)) << logs();
    const auto status = ctl_json(0, "status");
    EXPECT_TRUE(contains(status.dump(), "eth1.100")) << status.dump(2);

    // host1's bridge port sees host1's overlay frames come in and host2's go out, every one tagged.
    VlanCapture capture(*topo_.find("underlay"), "p1");
    const auto ping = t10_->ns->try_run({"ping", "-c", "20", "-i", "0.05", "-W", "1", "10.0.0.20"});
    EXPECT_TRUE(ping.ok() && contains(ping.output, " 0% packet loss")) << ping.output << logs();
    const auto seen = capture.drain();
    EXPECT_GE(seen.tagged_overlay_in, 20u) << "echo requests from host1, tagged " << kVlan;
    EXPECT_GE(seen.tagged_overlay_out, 20u) << "echo replies to host1, tagged " << kVlan;
    EXPECT_EQ(seen.untagged_overlay, 0u);

    // TCP both ways, byte-exact.
    const auto [blob, digest] = random_file("blob", 10'000'000);
    ASSERT_NO_FATAL_FAILURE(send_file(*t10_, *t20_, 5001, blob, digest));
    ASSERT_NO_FATAL_FAILURE(send_file(*t20_, *t10_, 5002, blob, digest));
    EXPECT_EQ(capture.drain().untagged_overlay, 0u);
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const auto s = stats(i);
        EXPECT_GT(stat(s, "xdp", "redirect_overlay"), 10'000'000u / 1398u) << nodes_[i].name;
        EXPECT_EQ(stat(s, "io", "ledger_violations"), 0u) << nodes_[i].name;
    }
}

// MAC of `ifname` in `ns`.
std::string mac_of(const Netns& ns, const std::string& ifname) {
    const std::string link = ns.run({"ip", "-o", "link", "show", ifname});
    const auto at = link.find("link/ether ");
    return at == std::string::npos ? std::string() : link.substr(at + 11, 17);
}

class VlanTagging : public Fabric {
protected:
    void SetUp() override {
        Fabric::SetUp();
        if (IsSkipped()) return;
        add_nodes(2);
        node_extra_ = "underlay_vlan = " + std::to_string(kVlan) + "\n";
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            nodes_[i].address = "192.168." + std::to_string(kVlan) + "." + std::to_string(i + 1);
            macs_.push_back(mac_of(*nodes_[i].host, "eth1"));
            ASSERT_EQ(macs_.back().size(), 17u);
        }
        vpc_ = add_vpc("blue", 100);
        t10_ = &add_endpoint(vpc_, 0, "10.0.0.10", "02:00:00:00:00:10");
        t20_ = &add_endpoint(vpc_, 1, "10.0.0.20", "02:00:00:00:00:20");
        for (std::size_t i = 0; i < nodes_.size(); ++i) nodes_[i].config = write_config(i, pinned_config(i));
        start_all();
    }

    // config_text with every [[nodes]] entry's MAC pinned.
    std::string pinned_config(std::size_t i) const {
        std::string text = config_text(i);
        for (std::size_t n = 0; n < nodes_.size(); ++n) {
            const std::string entry = "name = \"" + nodes_[n].name + "\"\naddress = \"" + nodes_[n].address + "\"\n";
            const auto at = text.find(entry);
            if (at == std::string::npos) {
                ADD_FAILURE() << "no [[nodes]] entry for " << nodes_[n].name << " in\n" << text;
                continue;
            }
            text.insert(at + entry.size(), "mac = \"" + macs_[n] + "\"\n");
        }
        return text;
    }

    std::vector<std::string> macs_;
    std::size_t vpc_ = 0;
    Endpoint* t10_ = nullptr;
    Endpoint* t20_ = nullptr;
};

TEST_F(VlanTagging, EveryOverlayFrameCarriesTheTagAndTenantsPingAndMoveTcpData) {
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_->ns, "10.0.0.20"); }, 10s)) << logs();
    EXPECT_TRUE(contains(nodes_[0].daemon->output(), "underlay eth1 VLAN 100 192.168.100.1")) << logs();
    const auto status = ctl_json(0, "status");
    EXPECT_EQ(status.value("underlay_vlan", -1), kVlan) << status.dump(2);
    EXPECT_EQ(status.value("underlay", std::string()), "eth1") << status.dump(2);

    VlanCapture capture(*topo_.find("underlay"), "p1");  // host1's bridge port
    const auto ping = t10_->ns->try_run({"ping", "-c", "20", "-i", "0.05", "-W", "1", "10.0.0.20"});
    EXPECT_TRUE(ping.ok() && contains(ping.output, " 0% packet loss")) << ping.output << logs();
    const auto seen = capture.drain();
    EXPECT_GE(seen.tagged_overlay_in, 20u) << "echo requests from host1, tagged " << kVlan;
    EXPECT_GE(seen.tagged_overlay_out, 20u) << "echo replies to host1, tagged " << kVlan;
    EXPECT_EQ(seen.untagged_overlay, 0u);

    // TCP both ways, byte-exact.
    constexpr std::size_t kBytes = 4'000'000;
    const auto [blob, digest] = random_file("blob", kBytes);
    ASSERT_NO_FATAL_FAILURE(send_file(*t10_, *t20_, 5101, blob, digest));
    ASSERT_NO_FATAL_FAILURE(send_file(*t20_, *t10_, 5102, blob, digest));
    const auto bulk = capture.drain();
    EXPECT_EQ(bulk.untagged_overlay, 0u);
    EXPECT_GE(bulk.tagged_overlay_in, kBytes / 1500) << "host1's data segments, tagged";
    EXPECT_GE(bulk.tagged_overlay_out, kBytes / 1500) << "host2's data segments, tagged";

    // Host traffic on the trunk's untagged network still passes the XDP program.
    const auto host_ping = nodes_[0].host->try_run({"ping", "-c", "3", "-i", "0.2", "-W", "1", "192.168.1.2"});
    EXPECT_TRUE(host_ping.ok() && contains(host_ping.output, " 0% packet loss")) << host_ping.output;

    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const auto s = stats(i);
        EXPECT_GT(stat(s, "dataplane", "encapsulated"), kBytes / 1500) << nodes_[i].name;
        EXPECT_GT(stat(s, "dataplane", "delivered_from_fabric"), kBytes / 1500) << nodes_[i].name;
        EXPECT_EQ(stat(s, "dataplane", "drop_wrong_underlay_vlan"), 0u) << nodes_[i].name;
        EXPECT_EQ(stat(s, "io", "ledger_violations"), 0u) << nodes_[i].name;
    }
}

TEST_F(VlanTagging, AnotherVlansOverlayFrameIsDroppedUnderItsOwnCounter) {
    namespace f = frames;
    const f::Mac host2 = f::mac(macs_[1]);
    const f::Mac host1 = f::mac(macs_[0]);
    const auto inner_ip = [](int i) {
        const std::string text = "vlan-" + std::to_string(i);
        f::Ipv4Options o;
        o.id = static_cast<std::uint16_t>(i);
        return f::udp_packet(f::ip("10.0.0.10"), f::ip("10.0.0.20"), 4000, 4001, f::Bytes(text.begin(), text.end()), o);
    };
    const auto overlay_frame = [&](int i, int vlan) {
        const auto inner = f::ethernet(f::mac("02:00:00:00:00:ff"), f::mac("02:00:00:00:00:10"), ETH_P_IP, inner_ip(i));
        return f::ethernet(host2, host1, ETH_P_IP, f::overlay_packet(f::ip("192.168.100.1"), f::ip("192.168.100.2"), inner),
                           vlan);
    };
    const auto is_ours = [](const Bytes& frame) {
        return frame.size() > 14 + 28 && frame[12] == 0x08 && frame[13] == 0x00 && frame[14 + 9] == 17 &&
               frame[14 + 22] == 0x0f && frame[14 + 23] == 0xa1;  // UDP to 4001
    };

    RawSocket tenant(*t20_->ns, "eth0");
    RawSocket wire(*topo_.find("underlay"), "p2");  // host2's bridge port
    const auto before = stats(1);
    constexpr int kFrames = 20;
    for (int i = 0; i < kFrames; ++i) wire.send(overlay_frame(i, 200));
    ASSERT_TRUE(eventually(
        [&] { return counter(1, "dataplane", "drop_wrong_underlay_vlan") >= static_cast<std::uint64_t>(kFrames); }, 10s))
        << stats(1).dump(2) << logs();
    // The same frames tagged 100 are delivered, and only they reach the tenant.
    for (int i = 0; i < kFrames; ++i) wire.send(overlay_frame(kFrames + i, kVlan));
    const auto got = tenant.receive(kFrames, 10s, is_ours);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(kFrames)) << logs();
    for (int i = 0; i < kFrames; ++i)
        EXPECT_EQ(f::Bytes(got[static_cast<std::size_t>(i)].begin() + 14, got[static_cast<std::size_t>(i)].end()),
                  inner_ip(kFrames + i))
            << "frame " << i;
    const auto after = stats(1);
    EXPECT_EQ(stat(after, "dataplane", "drop_wrong_underlay_vlan") - stat(before, "dataplane", "drop_wrong_underlay_vlan"),
              static_cast<std::uint64_t>(kFrames));
}

class TaggedOverlay : public Fabric {
protected:
    void SetUp() override {
        Fabric::SetUp();
        if (IsSkipped()) return;
        add_nodes(2);
        vpc_ = add_vpc("blue", 100);
        add_endpoint(vpc_, 0, "10.0.0.10", "02:00:00:00:00:10");
        t20_ = &add_endpoint(vpc_, 1, "10.0.0.20", "02:00:00:00:00:20");
        start_daemon(1);
    }

    std::size_t vpc_ = 0;
    Endpoint* t20_ = nullptr;
};

TEST_F(TaggedOverlay, TaggedOverlayFromTheUnderlayReachesTheTenantIntact) {
    namespace f = frames;
    const std::string link = nodes_[1].host->run({"ip", "-o", "link", "show", "eth1"});
    const auto at = link.find("link/ether ");
    ASSERT_NE(at, std::string::npos) << link;
    const f::Mac host2 = f::mac(link.substr(at + 11, 17));
    const f::Mac host1 = f::mac("02:00:00:00:a1:01");  // any source: the daemon checks the outer IP

    // Node1's endpoint 10.0.0.10 sends UDP to 10.0.0.20, as node1 would encapsulate it.
    const auto inner_ip = [](int i) {
        const std::string text = "tagged-" + std::to_string(i);
        f::Ipv4Options o;
        o.id = static_cast<std::uint16_t>(i);
        return f::udp_packet(f::ip("10.0.0.10"), f::ip("10.0.0.20"), 4000, 4001, f::Bytes(text.begin(), text.end()), o);
    };
    const auto overlay_frame = [&](int i, bool double_tagged) {
        const auto inner = f::ethernet(f::mac("02:00:00:00:00:ff"), f::mac("02:00:00:00:00:10"), ETH_P_IP, inner_ip(i));
        auto frame = f::ethernet(host2, host1, ETH_P_IP, f::overlay_packet(f::ip("192.168.1.1"), f::ip("192.168.1.2"), inner),
                                 kVlan);
        if (double_tagged) {  // an 802.1ad service tag in front of the 802.1Q one
            const f::Bytes s_tag = {0x88, 0xa8, 0x00, 0xc8};
            frame.insert(frame.begin() + 12, s_tag.begin(), s_tag.end());
        }
        return frame;
    };

    RawSocket tenant(*t20_->ns, "eth0");
    RawSocket wire(*topo_.find("underlay"), "p2");  // host2's bridge port: sent here, host2's eth1 receives it
    const auto before = stats(1);
    constexpr int kSingle = 40, kDouble = 10;
    for (int i = 0; i < kSingle + kDouble; ++i) wire.send(overlay_frame(i, i >= kSingle));

    const auto is_ours = [](const Bytes& frame) {
        return frame.size() > 14 + 28 && frame[12] == 0x08 && frame[13] == 0x00 && frame[14 + 9] == 17 &&
               frame[14 + 22] == 0x0f && frame[14 + 23] == 0xa1;  // UDP to 4001
    };
    const auto got = tenant.receive(kSingle + kDouble, 10s, is_ours);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(kSingle + kDouble)) << logs();
    for (int i = 0; i < kSingle + kDouble; ++i) {
        const f::Bytes& frame = got[static_cast<std::size_t>(i)];
        // The inner IP packet byte for byte; Ethernet rewritten to gateway MAC -> endpoint MAC.
        EXPECT_EQ(f::Bytes(frame.begin() + 14, frame.end()), inner_ip(i)) << "frame " << i;
        EXPECT_EQ(f::Bytes(frame.begin(), frame.begin() + 6), f::Bytes({0x02, 0, 0, 0, 0, 0x20})) << "frame " << i;
    }
    const auto after = stats(1);
    EXPECT_GE(stat(after, "xdp", "redirect_overlay") - stat(before, "xdp", "redirect_overlay"),
              static_cast<std::uint64_t>(kSingle + kDouble));
    EXPECT_GE(stat(after, "dataplane", "delivered_from_fabric") - stat(before, "dataplane", "delivered_from_fabric"),
              static_cast<std::uint64_t>(kSingle + kDouble));
}

}  // namespace
}  // namespace andromeda::testing
