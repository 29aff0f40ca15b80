// A virtual machine as a tenant (issue 31): a real Linux guest (Debian's kernel, a busybox
// initramfs: scripts/vm-image.sh) boots under QEMU on a tap port that node1's andromedad created
// (port_type = "tap"), leases its address and MTU from the gateway's DHCP, resolves a VPC name and
// an upstream name through the gateway's DNS, pings an endpoint on node2 across the overlay and
// sends it 50 MB over TCP byte-exact, with the guest's virtio-net offloads on.
//
//   VM 10.0.0.40 (tap tv<pid>) ── host1 [node1] ══ underlay ══ [node2] host2 ── t20 10.0.0.20 "web"
//   host1's loopback: the test's upstream resolver, 127.0.0.1:5353 (node1's dns_upstreams)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fixture.hpp"
#include "inet_sockets.hpp"
#include "support/dns_messages.hpp"
#include "support/fake_resolver.hpp"
#include "support/qemu_guest.hpp"
#include "wire/dns.hpp"

namespace andromeda::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The sanitizer builds move 10 MB where the others move 50. The kernel carries those bytes, so
// the sanitizers see the same daemon code either way; and a TCG guest's transfer stalled twice in
// the ASan pass (never in the main build) beside other instrumented tests, which the stall report
// below is there to explain. The main build keeps the 50 MB.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ANDROMEDA_VM_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ANDROMEDA_VM_TEST_SANITIZED 1
#endif
#ifdef ANDROMEDA_VM_TEST_SANITIZED
constexpr std::size_t kTransferMegabytes = 10;
#else
constexpr std::size_t kTransferMegabytes = 50;
#endif

constexpr const char* kVmAddress = "10.0.0.40";
constexpr const char* kVmMac = "02:00:00:00:00:40";

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

class VmTenant : public TwoNodes {
protected:
    void SetUp() override {
        TwoNodes::SetUp();
        if (HasFatalFailure() || IsSkipped()) return;
        if (needs_vm_) {
            if (const std::string missing = missing_vm_tools(); !missing.empty()) {
                if (root_tests_required()) FAIL() << "missing " << missing << " (scripts/install-deps.sh installs them)";
                GTEST_SKIP() << "missing " << missing;
            }
            build_vm_image();
        }
        tap_ = "tv" + std::to_string(getpid());
        for (int i = 0; i < 2; ++i) nodes_[i].config = write_config(i, vm_config(i), "vm");
        {
            NetnsGuard inside(*nodes_[0].host);
            host_lo_up();
            resolver_.emplace(udp_address("127.0.0.1", 5353), udp_address("127.0.0.2", 5353));
        }
        start_both();
    }

    void TearDown() override {
        if (HasFailure() && guest_) std::printf("--- the guest's console ---\n%s\n---\n", guest_->console().c_str());
        if (HasFailure()) std::printf("%s", logs().c_str());
        guest_.reset();  // QEMU first: it holds the tap
        TwoNodes::TearDown();
        resolver_.reset();  // the tap goes with host1's namespace
    }

    void host_lo_up() { nodes_[0].host->run({"ip", "link", "set", "lo", "up"}); }

    // The base fabric, with 10.0.0.20 named "web" (and fd00:0:0:1::14 in the VPC's IPv6 prefix),
    // the VM's endpoint on node1's tap, and node1's resolver on its loopback.
    std::string vm_config(int i) const {
        std::string text = base_config(i);
        replace_all(text, "port = \"tap-blue-20\"", "port = \"tap-blue-20\"\nname = \"web\"\nipv6 = \"fd00:0:0:1::14\"");
        replace_all(text, "cidr = \"10.0.0.0/24\"", "cidr = \"10.0.0.0/24\"\nipv6_prefix = \"fd00:0:0:1::/64\"");
        if (i == 0) replace_all(text, "[node]\n", "[node]\ndns_upstreams = [\"127.0.0.1:5353\"]\n");
        return text + "\n[[vpc.endpoint]]\nip = \"" + kVmAddress + "\"\nmac = \"" + kVmMac + "\"\nnode = \"" +
               nodes_[0].name + "\"\nport = \"" + tap_ + "\"\nport_type = \"tap\"\nname = \"vm\"\n" +
               (queues_ > 1 ? "queues = " + std::to_string(queues_) + "\n" : "");
    }

    void boot_guest() {
        QemuGuestOptions options;
        options.tap = tap_;
        options.mac = kVmMac;
        options.netns = nodes_[0].host->name();
        options.cpus = queues_;
        options.queues = queues_;
        const auto start = Clock::now();
        guest_.emplace(options);
        guest_->wait_booted(120s);
        std::printf("boot to the console shell: %.1f s (TCG)\n", seconds_since(start));
    }

    // Both ends of a stalled transfer, taken while its connection is still open: the guest's
    // sockets, TCP counters and NIC, the tap's queue on host1, t20's socket, and both daemons'
    // counters.
    std::string stall_report(std::uint16_t port) {
        std::string out = "--- the guest ---\n" +
                          guest_->run("cat /proc/net/tcp; grep -A1 '^Tcp' /proc/net/snmp; grep -A1 '^TcpExt' "
                                      "/proc/net/netstat; ip -s link show eth0; grep virtio /proc/interrupts",
                                      30s);
        out += "--- host1: the tap ---\n" + nodes_[0].host->try_run({"ip", "-s", "-s", "link", "show", tap_}).output +
               nodes_[0].host->try_run({"tc", "-s", "qdisc", "show", "dev", tap_}).output;
        out += "--- t20 ---\n" + t20_->try_run({"ss", "-tinm", "sport", "= :" + std::to_string(port)}).output;
        for (int i = 0; i < 2; ++i) out += "--- node" + std::to_string(i + 1) + " stats ---\n" + ctl(i, {"stats"}).output;
        return out;
    }

    // `megabytes` of the guest's random bytes over TCP to t20 (node2's tenant, port `port`),
    // checked byte for byte (sha256 on both sides). Returns the seconds the transfer took.
    double send_to_t20(std::size_t megabytes, std::uint16_t port) {
        const std::size_t bytes = megabytes << 20;
        const std::string guest_hash = guest_->run("dd if=/dev/urandom of=/tmp/blob bs=1M count=" + std::to_string(megabytes) +
                                                       " 2>/dev/null && sha256sum /tmp/blob",
                                                   120s)
                                           .substr(0, 64);
        InetSocket listener(*t20_, SOCK_STREAM, "10.0.0.20", port);
        listener.listen_now();
        std::vector<std::uint8_t> received;
        std::atomic<std::size_t> progress{0};
        std::thread receiver([&] {
            InetSocket served = listener.accept_one(60s);
            if (served.valid()) received = served.receive_all(bytes + 1, 180s, &progress);
        });
        const auto start = Clock::now();
        std::string rc;
        try {
            // nc runs in the background so that, should the transfer stall, the console is free to
            // show the guest's side of the connection while it is still open.
            guest_->run("rm -f /tmp/nc.rc; (nc 10.0.0.20 " + std::to_string(port) +
                        " < /tmp/blob > /tmp/nc.out 2>&1; echo $? > /tmp/nc.rc) &");
            std::string timeline;  // what t20 had received, every 5 s
            for (int second = 1; rc.empty() && second <= 180; ++second) {
                std::this_thread::sleep_until(start + std::chrono::seconds(second));
                rc = guest_->run("cat /tmp/nc.rc 2>/dev/null || true");
                if (second % 5 == 0) timeline += std::to_string(second) + "s:" + std::to_string(progress.load() >> 20) + "MB ";
            }
            if (rc.empty()) {
                ADD_FAILURE() << "the guest's nc did not finish in 180 s; received by t20 over time: " << timeline
                              << "\n" << stall_report(port);
                guest_->run("killall nc 2>/dev/null; true");
            }
        } catch (...) {
            receiver.join();  // bounded by its own timeouts: a thread left joinable would abort the binary
            throw;
        }
        receiver.join();
        EXPECT_EQ(rc, "0\n") << guest_->run("cat /tmp/nc.out");
        const double took = seconds_since(start);
        EXPECT_EQ(received.size(), bytes);
        const std::filesystem::path file = "/tmp/" + topo_.prefix() + "vm-received";
        std::ofstream(file, std::ios::binary)
            .write(reinterpret_cast<const char*>(received.data()), static_cast<std::streamsize>(received.size()));
        const std::string host_hash = run_command({"sha256sum", file.string()}).output.substr(0, 64);
        std::filesystem::remove(file);
        EXPECT_EQ(host_hash, guest_hash) << "the bytes that arrived are not the bytes the guest sent";
        return took;
    }

    bool needs_vm_ = true;  // false: the fabric and the resolver only, no guest booted
    unsigned queues_ = 1;   // the VM's queue pairs (and vCPUs); the endpoint's `queues`
    std::string tap_;
    std::optional<FakeResolver> resolver_;
    std::optional<QemuGuest> guest_;
};

TEST_F(VmTenant, LeasesByDhcpResolvesNamesAndMovesFiftyMegabytesToAnotherHostByteExact) {
    // andromedad made the tap, a persistent one with a virtio-net header, and serves it.
    const std::string tap = nodes_[0].host->run({"ip", "-d", "link", "show", tap_});
    EXPECT_TRUE(contains(tap, "tun type tap")) << tap;
    EXPECT_TRUE(contains(tap, "vnet_hdr on")) << tap;
    EXPECT_TRUE(contains(nodes_[0].daemon->output(), "created tap " + tap_)) << nodes_[0].daemon->output();
    boot_guest();

    // DHCP from the gateway: the endpoint's address and prefix, the gateway as router, the VPC MTU
    // (option 26, asked for with -O mtu as dhclient and systemd-networkd ask by default), the
    // gateway as resolver and the VPC's domain.
    const auto lease = guest_->try_run("udhcpc -i eth0 -O mtu -n -q -t 5 -T 2", 60s);
    ASSERT_TRUE(lease.ok()) << lease.output;
    EXPECT_TRUE(contains(guest_->run("ip -4 addr show dev eth0"), std::string("inet ") + kVmAddress + "/24"));
    EXPECT_TRUE(contains(guest_->run("ip route"), "default via 10.0.0.1"));
    EXPECT_EQ(guest_->run("cat /sys/class/net/eth0/mtu"), "1450\n");
    const std::string resolv = guest_->run("cat /etc/resolv.conf");
    EXPECT_TRUE(contains(resolv, "nameserver 10.0.0.1")) << resolv;
    EXPECT_TRUE(contains(resolv, "blue.internal")) << resolv;
    EXPECT_GE(counter(0, "dhcp", "acks"), 1u);
    EXPECT_GE(counter(0, "dhcp", "leases"), 1u);
    EXPECT_EQ(counter(0, "dhcp", "unknown_client"), 0u);
    const nlohmann::json leases = ctl_json(0, "leases");
    ASSERT_EQ(leases.value("leases", nlohmann::json::array()).size(), 1u) << leases.dump();
    EXPECT_EQ(leases["leases"][0]["address"], kVmAddress);
    EXPECT_EQ(leases["leases"][0]["mac"], kVmMac);
    EXPECT_EQ(leases["leases"][0]["state"], "bound");
    EXPECT_GT(leases["leases"][0]["expires_in_seconds"].get<double>(), 80000.0);
    const std::string table = ctl(0, {"leases"}).output;
    EXPECT_TRUE(contains(table, kVmAddress) && contains(table, "bound")) << table;

    // Across the overlay to node2's tenant, and its reply back into the tap.
    const auto ping = guest_->try_run("ping -c 3 -i 0.2 -W 5 10.0.0.20", 30s);
    EXPECT_TRUE(ping.ok()) << ping.output;
    EXPECT_TRUE(guest_->try_run("ping -c 2 -i 0.2 -W 5 10.0.0.1", 30s).ok()) << "the gateway answers pings";

    // The VPC's names from the gateway itself; anything else from node1's upstream.
    const std::string web = guest_->run("nslookup web.blue.internal", 30s);
    EXPECT_TRUE(contains(web, "10.0.0.20")) << web;
    const std::string self = guest_->run("nslookup vm.blue.internal", 30s);
    EXPECT_TRUE(contains(self, kVmAddress)) << self;
    const std::string upstream = guest_->run("nslookup example.test", 30s);
    EXPECT_TRUE(contains(upstream, "192.0.2.7")) << upstream;
    EXPECT_GE(resolver_->queries(), 1);
    const auto missing = guest_->try_run("nslookup nope.blue.internal", 30s);
    EXPECT_FALSE(missing.ok()) << missing.output;
    EXPECT_GE(counter(0, "dns", "answered_locally"), 2u);
    EXPECT_GE(counter(0, "dns", "answers_returned"), 1u);

    // 50 MB (10 in the sanitizer builds) of the guest's random bytes to t20 on node2, TSO
    // segments from the guest included.
    const std::uint64_t encap_gso_before = counter(0, "fastpath", "encap_gso_packets");
    const std::uint64_t decap_before = counter(0, "fastpath", "decap_packets");
    const double took = send_to_t20(kTransferMegabytes, 5040);
    std::printf("%zu MB VM -> node2 over the overlay: %.1f s (%.0f Mbit/s, TCG guest)\n", kTransferMegabytes, took,
                static_cast<double>(kTransferMegabytes) * 8.0 * (1 << 20) / took / 1e6);
    // The kernel carried it: the guest's TSO segments encapsulated whole at the tap's tc ingress,
    // and node2's ACKs decapsulated and sent out of the tap (bpf_redirect, not redirect_peer).
    if (fast_path()) {
        EXPECT_GT(counter(0, "fastpath", "encap_gso_packets"), encap_gso_before + 10) << logs();
        EXPECT_GT(counter(0, "fastpath", "decap_packets"), decap_before + 100) << logs();
    }
}

// A guest with two vCPUs and two queue pairs: `queues = 2` makes node1's daemon create the tap
// multi-queue, QEMU opens both queues on it, the guest uses both pairs, and the fast path serves
// the tap as any other: ping and 5 MB byte-exact to node2's tenant.
class VmTenantMultiQueue : public VmTenant {
protected:
    void SetUp() override {
        queues_ = 2;
        VmTenant::SetUp();
    }
};

TEST_F(VmTenantMultiQueue, TwoQueuePairsOnAMultiQueueTapCarryTheGuestsTraffic) {
    const std::string before = nodes_[0].host->run({"ip", "-d", "link", "show", tap_});
    EXPECT_TRUE(contains(before, "multi_queue")) << before;
    EXPECT_TRUE(contains(nodes_[0].daemon->output(), "created multi-queue tap " + tap_)) << nodes_[0].daemon->output();
    boot_guest();
    const std::string attached = nodes_[0].host->run({"ip", "-d", "link", "show", tap_});
    EXPECT_TRUE(contains(attached, "numqueues 2")) << "QEMU opened both queues of the tap: " << attached;
    const std::string queues = guest_->run("ls /sys/class/net/eth0/queues");
    EXPECT_TRUE(contains(queues, "rx-1") && contains(queues, "tx-1")) << "the guest uses two queue pairs: " << queues;
    guest_->run("ip addr add 10.0.0.40/24 dev eth0 && ip link set eth0 up");
    const auto ping = guest_->try_run("ping -c 3 -i 0.2 -W 5 10.0.0.20", 30s);
    EXPECT_TRUE(ping.ok()) << ping.output;

    send_to_t20(5, 5041);
    std::printf("guest interrupts per queue:\n%s", guest_->run("grep virtio0 /proc/interrupts || true").c_str());
}

// DNS over TCP (RFC 7766), from a container: node1's veth tenant t10 asks the gateway with the
// kernel's own TCP, offloads on. The fabric and the upstream are the VM tests'; no guest boots.
class GatewayDnsOverTcp : public VmTenant {
protected:
    void SetUp() override {
        needs_vm_ = false;
        VmTenant::SetUp();
    }

    static bool send_query(InetSocket& s, std::uint16_t id, const char* name) {
        const auto framed = dns_tcp_framed(dns_a_query(id, name));
        return s.send_all(framed.data(), framed.size(), 10s);
    }
    struct Answer {
        std::uint16_t id = 0;
        std::uint8_t rcode = 0xff;
        bool truncated = false;
        std::vector<std::string> addresses;
    };
    static Answer decode(const std::vector<std::uint8_t>& message) {
        Answer a;
        const auto view = wire::DnsMessageView::parse(message);
        if (!view) return a;
        a.id = view->header().id;
        a.rcode = view->header().rcode;
        a.truncated = view->header().truncated;
        auto records = view->cursor(wire::DnsSection::answer);
        while (const auto r = records.next_record())
            if (r->type == wire::dns_type::kA && r->rdata.size() == 4)
                a.addresses.push_back(wire::Ipv4Address::from_bytes(r->rdata.data()).to_string());
        return a;
    }
    // One length-prefixed answer off the connection.
    static Answer read_answer(InetSocket& s) {
        const auto prefix = s.receive_all(2, 10s);
        if (prefix.size() != 2) return {};
        return decode(s.receive_all(wire::load_be16(prefix.data()), 10s));
    }
};

TEST_F(GatewayDnsOverTcp, AContainerAsksTheGatewayOverTcpAfterATruncatedUdpAnswer) {
    // Over UDP, big.test's 100 addresses do not fit the classic 512 bytes: the gateway relays
    // the upstream's answer cut to its question, with TC set, so the client asks over TCP.
    InetSocket udp(*t10_, SOCK_DGRAM);
    const auto udp_query = dns_a_query(7, "big.test");
    ASSERT_TRUE(udp.send_datagram(std::string(udp_query.begin(), udp_query.end()), "10.0.0.1", 53));
    std::string datagram;
    InetAddress from;
    ASSERT_TRUE(udp.receive_datagram(datagram, from, 10s)) << logs();
    const Answer cut = decode(std::vector<std::uint8_t>(datagram.begin(), datagram.end()));
    EXPECT_EQ(cut.id, 7);
    EXPECT_TRUE(cut.truncated);
    EXPECT_TRUE(cut.addresses.empty());

    // A dual-stack endpoint's AAAA record, from the fabric's ipv6 (issue 30's VPC prefix).
    const auto aaaa_query = dns_a_query(8, "web.blue.internal", wire::dns_type::kAaaa);
    ASSERT_TRUE(udp.send_datagram(std::string(aaaa_query.begin(), aaaa_query.end()), "10.0.0.1", 53));
    ASSERT_TRUE(udp.receive_datagram(datagram, from, 10s)) << logs();
    {
        const std::vector<std::uint8_t> message(datagram.begin(), datagram.end());
        const auto view = wire::DnsMessageView::parse(message);
        ASSERT_TRUE(view.has_value());
        EXPECT_EQ(view->header().id, 8);
        auto records = view->cursor(wire::DnsSection::answer);
        const auto record = records.next_record();
        ASSERT_TRUE(record.has_value());
        EXPECT_EQ(record->type, wire::dns_type::kAaaa);
        ASSERT_EQ(record->rdata.size(), 16u);
        EXPECT_EQ(wire::Ipv6Address::from_bytes(record->rdata.data()).to_string(), "fd00:0:0:1::14");
    }

    InetSocket tcp(*t10_, SOCK_STREAM);
    ASSERT_TRUE(tcp.connect_to("10.0.0.1", 53, 10s)) << logs();
    ASSERT_TRUE(send_query(tcp, 1, "web.blue.internal"));
    const Answer web = read_answer(tcp);
    EXPECT_EQ(web.id, 1);
    EXPECT_EQ(web.addresses, std::vector<std::string>{"10.0.0.20"});

    // Pipelined on the same connection: a VPC name, answered at once, and an upstream name,
    // asked upstream over TCP; answers come in the order they are ready, matched by ID.
    ASSERT_TRUE(send_query(tcp, 2, "example.test"));
    ASSERT_TRUE(send_query(tcp, 3, "vm.blue.internal"));
    std::map<std::uint16_t, Answer> by_id;
    for (int i = 0; i < 2; ++i) {
        const Answer a = read_answer(tcp);
        by_id[a.id] = a;
    }
    EXPECT_EQ(by_id[2].addresses, std::vector<std::string>{"192.0.2.7"});
    EXPECT_EQ(by_id[3].addresses, std::vector<std::string>{kVmAddress});

    // The whole answer over TCP: 1.6 KB, more than one segment of the VPC's MSS.
    ASSERT_TRUE(send_query(tcp, 4, "big.test"));
    const Answer big = read_answer(tcp);
    EXPECT_EQ(big.id, 4);
    EXPECT_FALSE(big.truncated);
    EXPECT_EQ(big.addresses.size(), 100u);

    // The tenant closes; every answer sent, the gateway closes too.
    tcp.shutdown_write();
    EXPECT_TRUE(tcp.receive_all(1, 10s).empty()) << "the gateway's FIN, and nothing else";
    EXPECT_TRUE(eventually([&] { return counter(0, "dns_tcp", "closed") == 1; }, 10s)) << ctl(0, {"stats"}).output;
    EXPECT_EQ(counter(0, "dns_tcp", "messages"), 4u);
    EXPECT_EQ(counter(0, "dns_tcp", "connections"), 0u);
    EXPECT_EQ(counter(0, "dns_tcp", "malformed"), 0u);
    EXPECT_GE(counter(0, "dns", "upstream_tcp_answers"), 2u);
    EXPECT_GE(resolver_->tcp_queries(), 2);
}

}  // namespace
}  // namespace andromeda::testing
