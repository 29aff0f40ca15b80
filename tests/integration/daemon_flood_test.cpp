// A tenant that floods the slow path does not starve its neighbours (issue 32): on node2, t30
// (and then t40 too) sends as fast as a socket can (UDP to 10.0.0.99, an address of the VPC
// that no endpoint has, so tc punts every datagram as no_route; or ARP requests for the
// gateway) while t20, on the same host, resolves the gateway's MAC, pings the gateway, and gets
// its Fragmentation Needed (PMTUD) from it for a packet to t10 on node1. Each of those must
// succeed within kBound; the flood must be counted at the flooding port (andromedactl stats,
// group punt_limit: <port>.rate_limited) and nothing of the neighbour's. Tenants keep the
// kernel's default offloads. Topology: daemon_fixture.hpp's TwoNodes plus t30 and t40 on node2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <thread>

#include "daemon_fixture.hpp"
#include "inet_sockets.hpp"
#include "raw_socket.hpp"

namespace andromeda::testing {
namespace {

// Generous on a loaded 2-core box with one core spent on each flood: success is asserted, not
// latency.
constexpr auto kBound = 2s;

enum class FloodKind { udp_no_route, arp };

// Sends from inside a tenant namespace on its own thread until destroyed; send errors (ENOBUFS
// when the device queue is full) are part of flooding and ignored.
class Flood {
public:
    Flood(const Netns& tenant, FloodKind kind, const std::string& mac_octet) {
        if (kind == FloodKind::udp_no_route) {
            socket_ = std::make_unique<InetSocket>(tenant, SOCK_DGRAM);
            const sockaddr_in to = make_sockaddr("10.0.0.99", 9);
            thread_ = std::thread([this, to] {
                const char payload[64] = {};
                while (!stop_.load(std::memory_order_relaxed)) {
                    if (sendto(socket_->fd(), payload, sizeof payload, 0, reinterpret_cast<const sockaddr*>(&to),
                               sizeof to) > 0)
                        sent_.fetch_add(1, std::memory_order_relaxed);
                }
            });
        } else {
            packet_fd_ = open_packet_socket(tenant, "eth0");
            thread_ = std::thread([this, frame = arp_request(mac_octet)] {
                while (!stop_.load(std::memory_order_relaxed))
                    if (::send(packet_fd_, frame.data(), frame.size(), 0) > 0)
                        sent_.fetch_add(1, std::memory_order_relaxed);
            });
        }
    }
    ~Flood() {
        stop_ = true;
        thread_.join();
        if (packet_fd_ >= 0) close(packet_fd_);
    }
    Flood(const Flood&) = delete;
    Flood& operator=(const Flood&) = delete;

    [[nodiscard]] std::uint64_t sent() const { return sent_.load(); }

private:
    // Who has 10.0.0.1, from 10.0.0.<octet> at 02:00:00:00:00:<octet> (the endpoint's own: port
    // security passes it, so only the punt limit stands in its way).
    static Bytes arp_request(const std::string& octet) {
        const auto hex = static_cast<std::uint8_t>(std::stoi(octet, nullptr, 16));
        const auto decimal = static_cast<std::uint8_t>(std::stoi(octet));
        const Bytes mac = {0x02, 0, 0, 0, 0, hex};
        Bytes f(42, 0);
        std::fill(f.begin(), f.begin() + 6, 0xff);
        std::copy(mac.begin(), mac.end(), f.begin() + 6);
        f[12] = 0x08, f[13] = 0x06;                                           // ARP
        f[14] = 0, f[15] = 1, f[16] = 0x08, f[17] = 0, f[18] = 6, f[19] = 4;  // Ethernet, IPv4
        f[20] = 0, f[21] = 1;                                                 // request
        std::copy(mac.begin(), mac.end(), f.begin() + 22);
        f[28] = 10, f[29] = 0, f[30] = 0, f[31] = decimal;  // sender 10.0.0.<octet>
        f[38] = 10, f[39] = 0, f[40] = 0, f[41] = 1;        // target 10.0.0.1
        return f;
    }

    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> sent_{0};
    std::unique_ptr<InetSocket> socket_;
    int packet_fd_ = -1;
    std::thread thread_;
};

class Flooding : public TwoNodes {
protected:
    void SetUp() override {
        TwoNodes::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        t40_ = &add_tenant(*nodes_[1].host, "tap-blue-40", "40");
        for (int i = 0; i < 2; ++i) {
            texts_[i] = config_with_third_endpoint(i) +
                        "\n[[vpc.endpoint]]\nip = \"10.0.0.40\"\nmac = "
                        "\"02:00:00:00:00:40\"\nnode = \"" +
                        nodes_[1].name + "\"\nport = \"tap-blue-40\"\n";
            nodes_[i].config = write_config(i, texts_[i], "-flood");
        }
        start_both();
        ASSERT_TRUE(eventually([&] { return ping_once(*t20_, "10.0.0.10"); }, 10s)) << logs();
    }

    // What t20 must get done while the others flood, each within kBound.
    void neighbour_is_served() {
        // ARP for the gateway, from an empty neighbour cache, then its echo.
        t20_->run({"ip", "neigh", "flush", "dev", "eth0"});
        const auto ping = t20_->try_run({"ping", "-n", "-c", "1", "-W", "2", "10.0.0.1"}, 10s);
        EXPECT_TRUE(ping.ok()) << "ARP and ping of the gateway within " << kBound.count() << " s\n" << ping.output;
        // PMTUD: a 1500-byte DF packet to node1's t10 is answered by the gateway (first from a
        // fresh route cache, so the answer is the gateway's, not a cached MTU).
        t20_->run({"ip", "route", "flush", "cache"});
        const auto big =
            t20_->try_run({"ping", "-n", "-M", "do", "-s", "1472", "-c", "1", "-W", "2", "10.0.0.10"}, 10s);
        EXPECT_TRUE(contains(big.output, "Frag needed and DF set (mtu = 1450)"))
            << "PMTUD answer within " << kBound.count() << " s\n"
            << big.output;
        // And ordinary traffic to node1 still flows.
        EXPECT_TRUE(t20_->try_run({"ping", "-n", "-c", "1", "-W", "2", "10.0.0.10"}, 10s).ok());
    }

    std::uint64_t rate_limited(const std::string& port) const {
        return counter(1, "punt_limit", port + ".rate_limited");
    }

    // node2's file with `settings` added to [node], reloaded; the reload's output.
    std::string reload_node2_with(const std::string& settings, const std::string& tag) {
        std::string text = texts_[1];
        text.insert(text.find("[node]\n") + 7, settings);
        const auto r = ctl(1, {"reload", write_config(1, text, tag)});
        EXPECT_TRUE(r.ok()) << r.output;
        return r.output;
    }

    Netns* t40_ = nullptr;
    std::string texts_[2];
};

void expect_flood_counted_at(const std::vector<std::uint64_t>& limited, const std::vector<std::uint64_t>& sent) {
    for (std::size_t i = 0; i < limited.size(); ++i) {
        EXPECT_GT(sent[i], 0u) << "flood " << i << " sent nothing";
        EXPECT_GT(limited[i], 0u) << "flood " << i << " (" << sent[i] << " sent) was never limited";
    }
}

TEST_F(Flooding, AUdpFloodIsLimitedAtItsPortAndTheNeighbourIsServed) {
    {
        Flood flood(*t30_, FloodKind::udp_no_route, "30");
        std::this_thread::sleep_for(1s);
        neighbour_is_served();
        expect_flood_counted_at({rate_limited("tap-blue-30")}, {flood.sent()});
    }
    EXPECT_EQ(rate_limited("tap-blue-20"), 0u) << "the neighbour lost nothing to the limit";
    EXPECT_GT(counter(1, "fastpath", "drop_punt_rate_limited"), 0u);
    std::printf("UDP flood: %llu punts limited at tap-blue-30\n",
                static_cast<unsigned long long>(rate_limited("tap-blue-30")));
}

TEST_F(Flooding, AnArpFloodIsLimitedAtItsPortAndTheNeighbourIsServed) {
    {
        Flood flood(*t30_, FloodKind::arp, "30");
        std::this_thread::sleep_for(1s);
        neighbour_is_served();
        expect_flood_counted_at({rate_limited("tap-blue-30")}, {flood.sent()});
    }
    EXPECT_EQ(rate_limited("tap-blue-20"), 0u);
    // What did pass the punt limit, the gateway answered only within t30's reply budget.
    EXPECT_GT(counter(1, "dataplane", "drop_gateway_reply_rate_limited"), 0u);
}

TEST_F(Flooding, TwoFloodingTenantsAreEachLimitedAndTheNeighbourIsServed) {
    {
        Flood udp(*t30_, FloodKind::udp_no_route, "30");
        Flood arp(*t40_, FloodKind::arp, "40");
        std::this_thread::sleep_for(1s);
        neighbour_is_served();
        expect_flood_counted_at({rate_limited("tap-blue-30"), rate_limited("tap-blue-40")}, {udp.sent(), arp.sent()});
    }
    EXPECT_EQ(rate_limited("tap-blue-20"), 0u);
}

// [node] punt_rate and punt_burst apply at a reload: 0 lifts the limit, a small budget brings it
// back for the port that keeps flooding.
TEST_F(Flooding, PuntRateTakesEffectAtReload) {
    reload_node2_with("punt_rate = 0\n", "-unlimited");
    const std::uint64_t before = rate_limited("tap-blue-30");
    const std::uint64_t punted_before = counter(1, "fastpath", "punt_packets");
    {
        Flood flood(*t30_, FloodKind::udp_no_route, "30");
        std::this_thread::sleep_for(1s);
        EXPECT_GT(flood.sent(), 0u);
        EXPECT_EQ(rate_limited("tap-blue-30"), before) << "punt_rate = 0 limits nothing";
        // Unlimited buckets count nothing; the punts themselves are counted as ever.
        EXPECT_GT(counter(1, "fastpath", "punt_packets"), punted_before + 1000);
    }
    reload_node2_with("punt_rate = 100\npunt_burst = 10\n", "-small");
    {
        Flood flood(*t30_, FloodKind::udp_no_route, "30");
        std::this_thread::sleep_for(1s);
        EXPECT_GT(rate_limited("tap-blue-30"), before);
        neighbour_is_served();
    }
    EXPECT_EQ(rate_limited("tap-blue-20"), 0u) << "the neighbour's 100/s budget covers its ARP and pings";
}

}  // namespace
}  // namespace andromeda::testing
