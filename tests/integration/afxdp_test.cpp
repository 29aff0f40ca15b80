// AF_XDP on real veths: a tenant socket and an underlay socket sharing one UMEM. Tenant frames
// leave through the underlay encapsulated in place (50 bytes pushed into their headroom),
// overlay frames from the peer reach the tenant decapsulated, and after a run with drops of
// every kind each frame is back where it belongs.
//
//   tenant ns: eth0 ──veth── host ns: tap0 [XDP tenant]   eth1 [XDP underlay] ──veth── peer ns: eth1
//                                     └── XskWorker: one UMEM, sockets {eth1 q0, tap0 q0} ──┘
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <iostream>

#include "andromeda_kern_user.h"
#include "fabric/fabric.hpp"
#include "io/bpf/bpf_instance.hpp"
#include "io/netlink/interfaces.hpp"
#include "io/plan/map_plan.hpp"
#include "io/plan/map_sync.hpp"
#include "io/plan/port_table.hpp"
#include "io/xsk/packet_socket.hpp"
#include "io/xsk/worker_thread.hpp"
#include "io/xsk/xsk_worker.hpp"
#include "io_test_support.hpp"
#include "raw_socket.hpp"
#include "support/fabric_builder.hpp"
#include "support/root.hpp"
#include "wire/bytes.hpp"
#include "wire/checksum.hpp"

namespace andromeda::io {
namespace {

using andromeda::testing::Bytes;
using andromeda::testing::NetnsGuard;
using andromeda::testing::RawSocket;
using andromeda::testing::Topology;
using andromeda::testing::VethOptions;
using namespace std::chrono_literals;

constexpr std::uint32_t kUnderlaySocket = 0;
constexpr std::uint32_t kTenantSocket = 1;
constexpr std::uint16_t kTestEtherType = 0x88B5;  // IEEE local experimental: no stack touches it
const char* kTenantMac = "02:00:00:00:00:10";
const std::uint8_t kMarker[4] = {'A', 'N', 'D', 'R'};

std::array<std::uint8_t, 6> mac_bytes(const char* text) { return wire::MacAddress::parse(text)->bytes(); }

// Ethernet(dst, src, 0x88B5) + marker + sequence number + filler.
Bytes tenant_frame(std::uint32_t seq, const std::array<std::uint8_t, 6>& dst, const std::array<std::uint8_t, 6>& src) {
    Bytes f(14 + 4 + 4 + 56, 0x5a);
    std::copy(dst.begin(), dst.end(), f.begin());
    std::copy(src.begin(), src.end(), f.begin() + 6);
    wire::store_be16(&f[12], kTestEtherType);
    std::copy(std::begin(kMarker), std::end(kMarker), f.begin() + 14);
    wire::store_be32(&f[18], seq);
    return f;
}

bool is_test_frame(const Bytes& f, std::size_t at = 0) {
    return f.size() >= at + 22 && wire::load_be16(&f[at + 12]) == kTestEtherType && std::memcmp(&f[at + 14], kMarker, 4) == 0;
}

std::uint32_t sequence_of(const std::uint8_t* ethernet) { return wire::load_be32(ethernet + 18); }

// What the peer node would send: Ethernet / IPv4 / UDP to the overlay port / Andromeda header
// with `vni` / the inner frame.
Bytes overlay_frame(const Bytes& inner, std::uint32_t vni, const InterfaceInfo& to, const InterfaceInfo& from) {
    Bytes f(50, 0);
    to.mac.copy_to(&f[0]);
    from.mac.copy_to(&f[6]);
    wire::store_be16(&f[12], 0x0800);
    std::uint8_t* ip = &f[14];
    ip[0] = 0x45;
    wire::store_be16(ip + 2, static_cast<std::uint16_t>(20 + 8 + 8 + inner.size()));
    ip[6] = 0x40;
    ip[8] = 64;
    ip[9] = 17;
    wire::store_be32(ip + 12, 0xc0a83202);  // 192.168.50.2
    wire::store_be32(ip + 16, 0xc0a83201);  // 192.168.50.1
    wire::store_be16(ip + 10, wire::internet_checksum({ip, 20}));
    std::uint8_t* udp = ip + 20;
    wire::store_be16(udp, 50000);
    wire::store_be16(udp + 2, ANDROMEDA_OVERLAY_PORT);
    wire::store_be16(udp + 4, static_cast<std::uint16_t>(8 + 8 + inner.size()));
    std::uint8_t* overlay = udp + 8;
    overlay[0] = 0x10;
    overlay[4] = static_cast<std::uint8_t>(vni >> 16);
    overlay[5] = static_cast<std::uint8_t>(vni >> 8);
    overlay[6] = static_cast<std::uint8_t>(vni);
    overlay[7] = 64;
    f.insert(f.end(), inner.begin(), inner.end());
    return f;
}

// The glue a daemon would put around its pipeline, reduced to moving frames: tenant frames get
// a 50-byte outer header pushed into their headroom and go out of the underlay; underlay frames
// lose 50 bytes and go to the tenant.
class ForwardingHandler : public FrameHandler {
public:
    ForwardingHandler(const InterfaceInfo& underlay, const InterfaceInfo& next_hop) {
        next_hop.mac.copy_to(outer_.data());
        underlay.mac.copy_to(outer_.data() + 6);
        wire::store_be16(outer_.data() + 12, kTestEtherType);
        std::memcpy(outer_.data() + 14, "OUTER-HEADER-PUSHED-IN-PLACE", 28);
    }
    void handle(std::uint32_t socket, std::span<Frame> frames, FrameOutput& out) noexcept override {
        for (Frame& f : frames) {
            // Where the kernel put it: both UMEM headrooms, then 64 * (the frame's stagger slot).
            const std::uint32_t stagger = f.headroom() - kUmemHeadrooms;
            if (stagger % UmemConfig::kStaggerStep != 0 || stagger / UmemConfig::kStaggerStep >= 32) staggers_ok = false;
            else staggers.fetch_or(1u << (stagger / UmemConfig::kStaggerStep));
            if (socket == kTenantSocket) {
                const std::uint8_t* inner = f.data();
                const std::uint32_t headroom = f.headroom();
                if (!f.push_front(ANDROMEDA_ENCAP_OVERHEAD)) {
                    out.drop(f);
                    continue;
                }
                in_place = in_place && f.data() + ANDROMEDA_ENCAP_OVERHEAD == inner &&
                           f.headroom() == headroom - ANDROMEDA_ENCAP_OVERHEAD;
                std::memcpy(f.data(), outer_.data(), outer_.size());
                out.transmit(f, kUnderlaySocket);
            } else {
                // As a pipeline would report it: the inner frame's place in the chunk.
                const auto inner_offset = static_cast<std::uint32_t>(f.data() - f.chunk()) + ANDROMEDA_ENCAP_OVERHEAD;
                if (!f.reframe(inner_offset, f.length() - ANDROMEDA_ENCAP_OVERHEAD)) {
                    out.drop(f);
                    continue;
                }
                out.transmit(f, kTenantSocket);
            }
        }
    }
    std::atomic<bool> in_place{true};
    static constexpr std::uint32_t kUmemHeadrooms = UmemConfig{}.frame_headroom + kKernelRxHeadroom;
    std::atomic<std::uint32_t> staggers{0};  // bit k: a frame arrived 64 * k bytes past both headrooms
    std::atomic<bool> staggers_ok{true};     // every frame did, for some k < 32

private:
    std::array<std::uint8_t, ANDROMEDA_ENCAP_OVERHEAD> outer_{};
};

class AfXdp : public ::testing::Test {
protected:
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        testing::sweep_stale_test_pins();
        host_ = &topo_.add_namespace("host");
        tenant_ = &topo_.add_namespace("tenant");
        peer_ = &topo_.add_namespace("peer");
        VethOptions tenant_link;
        tenant_link.mac_b = kTenantMac;
        tenant_link.queues = queues_;
        VethOptions underlay_link;
        underlay_link.queues = queues_;
        topo_.add_veth(*host_, "tap0", *tenant_, "eth0", tenant_link);
        topo_.add_veth(*host_, "eth1", *peer_, "eth1", underlay_link);
        topo_.add_address(*host_, "eth1", "192.168.50.1/24");
        topo_.add_address(*peer_, "eth1", "192.168.50.2/24");
        {
            NetnsGuard in_peer(*peer_);
            peer_eth1_ = require_interface("eth1");
        }
        NetnsGuard in_host(*host_);
        host_eth1_ = require_interface("eth1");
        host_tap0_ = require_interface("tap0");
        bpf_ = std::make_unique<BpfInstance>(testing::instance_config("afxdp"));
        bpf_->attach("eth1");
        bpf_->attach("tap0");
        sync_fabric();
    }

    // The maps a daemon would write for this host: the peer, VNI 100, the tenant's endpoint
    // and both ports.
    void sync_fabric() {
        const std::string& self = bpf_->config().node_name;
        const std::string toml = test_support::FabricBuilder(self, "192.168.50.1")
                                     .peer("peer", "192.168.50.2")
                                     .vpc("blue", 100, "10.0.0.0/24", "10.0.0.1")
                                     .endpoint("10.0.0.10", kTenantMac, self, "tap0")
                                     .toml();
        fabric::LoadOptions options;
        options.ports = fabric::resolve_port_names([](std::string_view port) -> std::optional<std::uint32_t> {
            if (auto link = find_interface(port)) return link->ifindex;
            return std::nullopt;
        });
        auto loaded = fabric::load_fabric_string(toml, "afxdp.toml", options);
        ASSERT_TRUE(loaded.ok()) << fabric::to_string(loaded.errors);
        sync_ = std::make_unique<FabricMapSync>(bpf_->map_writer());
        sync_->reconcile(plan_full(*loaded.snapshot, LocalContext{wire::Ipv4Address(0xc0a83201), {}}));
        underlay_slot_ = slots_.slot_for("eth1");
        PortTable ports = tenant_ports(*loaded.snapshot, slots_);
        ASSERT_EQ(ports.size(), 1u);
        tenant_slot_ = ports.begin()->second.slot;
        ports[host_eth1_.ifindex] = make_port(ANDROMEDA_PORT_UNDERLAY, underlay_slot_);
        sync_->sync_ports(ports);
    }

    // The worker of underlay RX queue `queue`: that queue of eth1 and of tap0, one UMEM.
    std::unique_ptr<XskWorker> start_worker(const UmemConfig& config, std::uint32_t queue = 0) {
        NetnsGuard in_host(*host_);
        auto worker = std::make_unique<XskWorker>(config, std::vector<SocketSpec>{{"eth1", queue}, {"tap0", queue}});
        bpf_->register_socket(underlay_slot_, queue, worker->socket(kUnderlaySocket).fd);
        bpf_->register_socket(tenant_slot_, queue, worker->socket(kTenantSocket).fd);
        return worker;
    }

    static UmemConfig small_umem() {
        UmemConfig config;
        config.frame_count = 1024;
        config.fill_size = 128;
        config.completion_size = 256;
        config.rx_size = 256;
        config.tx_size = 64;
        return config;
    }

    Bytes from_tenant(std::uint32_t seq) const {
        return tenant_frame(seq, mac_bytes("02:00:00:00:00:ff"), mac_bytes(kTenantMac));
    }

    unsigned queues_ = 1;
    Topology topo_;
    andromeda::testing::Netns* host_ = nullptr;
    andromeda::testing::Netns* tenant_ = nullptr;
    andromeda::testing::Netns* peer_ = nullptr;
    InterfaceInfo host_eth1_, host_tap0_, peer_eth1_;
    std::unique_ptr<BpfInstance> bpf_;
    std::unique_ptr<FabricMapSync> sync_;
    PortSlots slots_;
    std::uint32_t underlay_slot_ = 0, tenant_slot_ = 0;
};

TEST_F(AfXdp, TenantFramesLeaveThroughTheUnderlayEncapsulatedInPlace) {
    auto worker = start_worker(small_umem());
    for (std::size_t i = 0; i < worker->socket_count(); ++i) std::cout << "achieved: " << worker->socket(i).message() << "\n";
    if (!worker->zero_copy_refusal().empty()) std::cout << "zero-copy refused: " << worker->zero_copy_refusal() << "\n";
    EXPECT_EQ(worker->bind_mode(), BindMode::copy) << "veth has no AF_XDP zero-copy";
    EXPECT_FALSE(worker->zero_copy_refusal().empty());

    ForwardingHandler handler(host_eth1_, peer_eth1_);
    WorkerThread thread(*worker, handler);
    RawSocket tenant(*tenant_, "eth0");
    RawSocket peer(*peer_, "eth1");
    constexpr std::uint32_t kFrames = 32;
    for (std::uint32_t seq = 0; seq < kFrames; ++seq) tenant.send(from_tenant(seq));
    const auto got = peer.receive(kFrames, 5s, [](const Bytes& f) { return is_test_frame(f, ANDROMEDA_ENCAP_OVERHEAD); });
    ASSERT_EQ(got.size(), kFrames);
    for (std::uint32_t seq = 0; seq < kFrames; ++seq) {
        const Bytes& f = got[seq];
        EXPECT_EQ(f.size(), ANDROMEDA_ENCAP_OVERHEAD + from_tenant(seq).size());
        EXPECT_EQ(Bytes(f.begin() + ANDROMEDA_ENCAP_OVERHEAD, f.end()), from_tenant(seq)) << "inner frame " << seq;
        EXPECT_EQ(wire::MacAddress::from_bytes(&f[0]), peer_eth1_.mac);
        EXPECT_EQ(wire::MacAddress::from_bytes(&f[6]), host_eth1_.mac);
        EXPECT_EQ(std::memcmp(&f[14], "OUTER-HEADER", 12), 0);
    }
    EXPECT_TRUE(handler.in_place.load()) << "the outer header went into the frame's own headroom";
    EXPECT_GE(bpf_->read_stats().totals().redirect_tenant, kFrames);
    // Unaligned chunks: consecutive frames sit 64 bytes further into their chunks, up to 15 steps.
    EXPECT_EQ(worker->stagger_slots(), 16u) << "this kernel takes unaligned chunks in copy mode";
    EXPECT_TRUE(handler.staggers_ok.load());
    EXPECT_EQ(handler.staggers.load() >> 16, 0u) << "no stagger beyond the 16 slots";
    EXPECT_GE(std::popcount(handler.staggers.load()), 8) << std::hex << handler.staggers.load();
}

// Staggered chunks are registered short by the largest stagger, so the kernel drops a frame that
// would run past a chunk's stride into the next frame's, rather than writing it there.
TEST_F(AfXdp, FramesTooLongForAStaggeredChunkAreDroppedNotWrittenIntoTheNext) {
    const UmemConfig config = small_umem();
    auto worker = start_worker(config);
    ASSERT_EQ(worker->stagger_slots(), 16u);
    tenant_->run({"ip", "link", "set", "eth0", "mtu", "3000"});
    host_->run({"ip", "link", "set", "tap0", "mtu", "3000"});
    ForwardingHandler handler(host_eth1_, peer_eth1_);
    WorkerThread thread(*worker, handler);
    RawSocket tenant(*tenant_, "eth0");
    RawSocket peer(*peer_, "eth1");
    constexpr std::uint32_t kLong = 32, kShort = 32;
    const std::size_t too_long = config.max_frame_length() + 1;  // fits the stride unstaggered, not staggered
    for (std::uint32_t seq = 0; seq < kLong; ++seq) {
        // The frame at the front of a too_long buffer of padding (not resize(): gcc 12 at -O3
        // reports a false -Warray-bounds inside vector's reallocation).
        const Bytes frame = from_tenant(1000 + seq);
        Bytes f(too_long, 0xa5);
        std::copy(frame.begin(), frame.end(), f.begin());
        tenant.send(f);
    }
    for (std::uint32_t seq = 0; seq < kShort; ++seq) tenant.send(from_tenant(seq));
    const auto got = peer.receive(kLong + kShort, 3s, [](const Bytes& f) { return is_test_frame(f, ANDROMEDA_ENCAP_OVERHEAD); });
    ASSERT_EQ(got.size(), kShort) << "only the frames that fit arrive";
    for (std::uint32_t seq = 0; seq < kShort; ++seq)
        EXPECT_EQ(Bytes(got[seq].begin() + ANDROMEDA_ENCAP_OVERHEAD, got[seq].end()), from_tenant(seq)) << "frame " << seq;
    EXPECT_GE(worker->socket_statistics(kTenantSocket).rx_dropped, kLong) << "the kernel refused the long ones";
    EXPECT_EQ(worker->counters().drop(DropReason::invalid_descriptor), 0u) << "none reached the worker out of bounds";
}

TEST_F(AfXdp, OverlayFramesReachTheTenantDecapsulated) {
    auto worker = start_worker(small_umem());
    ForwardingHandler handler(host_eth1_, peer_eth1_);
    WorkerThread thread(*worker, handler);
    RawSocket tenant(*tenant_, "eth0");
    RawSocket peer(*peer_, "eth1");
    constexpr std::uint32_t kFrames = 32;
    const auto inner = [&](std::uint32_t seq) {
        return tenant_frame(seq, mac_bytes(kTenantMac), mac_bytes("02:00:00:00:00:20"));
    };
    peer.send(overlay_frame(inner(999), 101, host_eth1_, peer_eth1_));  // unknown VNI: XDP drops it
    for (std::uint32_t seq = 0; seq < kFrames; ++seq) peer.send(overlay_frame(inner(seq), 100, host_eth1_, peer_eth1_));
    // veth keeps order: had the unknown-VNI frame got through, it would arrive first.
    const auto got = tenant.receive(kFrames, 5s, [](const Bytes& f) { return is_test_frame(f); });
    ASSERT_EQ(got.size(), kFrames);
    for (std::uint32_t seq = 0; seq < kFrames; ++seq) EXPECT_EQ(got[seq], inner(seq)) << "frame " << seq;
    const XdpStats stats = bpf_->read_stats();
    EXPECT_GE(stats.totals().redirect_overlay, kFrames);
    EXPECT_EQ(stats.totals().drop_unknown_vni, 1u);
}

// A handler that uses every way of letting go of a frame.
class EveryDropHandler : public FrameHandler {
public:
    void handle(std::uint32_t, std::span<Frame> frames, FrameOutput& out) noexcept override {
        for (Frame& f : frames) {
            switch (sequence_of(f.data()) % 6) {
            case 0:  // the handler's own drop, then a mistaken second fate (ignored, counted)
                out.drop(f);
                out.drop(f);
                break;
            case 1:  // no fate at all
                break;
            case 2:  // a socket that does not exist
                out.transmit(f, 99);
                break;
            case 3:  // sent, plus a generated frame that is forgotten
                (void)out.allocate();
                f.push_front(ANDROMEDA_ENCAP_OVERHEAD);
                out.transmit(f, kUnderlaySocket);
                break;
            case 4:  // an unused spare given back, a copy handed off, the original dropped
                if (Frame* spare = out.allocate()) out.release(*spare);
                out.transmit_copy(f.bytes(), kUnderlaySocket);
                out.drop(f);
                break;
            default:  // a burst bigger than two TX rings: some must find the ring full
                for (Frame* extra = out.allocate(); extra != nullptr; extra = out.allocate()) {
                    extra->set_length(f.length());
                    std::memcpy(extra->data(), f.data(), f.length());
                    out.transmit(*extra, kUnderlaySocket);
                }
                out.transmit(f, kUnderlaySocket);
            }
        }
    }
};

TEST_F(AfXdp, FrameLedgerBalancesAfterDropsOfEveryKind) {
    const UmemConfig config = small_umem();
    auto worker = start_worker(config);
    RawSocket tenant(*tenant_, "eth0");
    constexpr std::uint32_t kFrames = 60;
    {
        EveryDropHandler handler;
        WorkerThread thread(*worker, handler);
        // One frame at a time, so each burst meets a fresh batch and the pool refills between.
        for (std::uint32_t seq = 0; seq < kFrames; ++seq) {
            tenant.send(from_tenant(seq));
            const auto deadline = std::chrono::steady_clock::now() + 5s;
            while (worker->counters().rx_frames <= seq && std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(1ms);
            ASSERT_EQ(worker->counters().rx_frames, seq + 1) << "frame " << seq << " never reached the worker";
        }
    }
    ASSERT_TRUE(worker->drain_tx(5s)) << "the kernel kept TX frames";
    const WorkerCounters c = worker->counters();
    const FrameLedger& ledger = worker->ledger();
    std::cout << "ledger: " << ledger.summary() << "\n";
    for (std::size_t slot = 0; slot < kDropReasonCount; ++slot)
        std::cout << "drop " << to_string(util::drop_of_slot<DropReason>(slot)) << ": " << c.drops[slot] << "\n";
    EXPECT_TRUE(ledger.audit()) << ledger.summary();
    EXPECT_EQ(ledger.count(FrameOwner::worker), 0u);
    EXPECT_EQ(ledger.count(FrameOwner::tx_ring), 0u);
    EXPECT_EQ(ledger.count(FrameOwner::free_pool) + ledger.count(FrameOwner::fill_ring), config.frame_count);
    EXPECT_EQ(c.rx_frames, kFrames);
    EXPECT_GT(c.drop(DropReason::handler), 0u);
    EXPECT_GT(c.drop(DropReason::unhandled), 0u);
    EXPECT_GT(c.drop(DropReason::no_such_socket), 0u);
    EXPECT_GT(c.drop(DropReason::tx_ring_full), 0u);
    EXPECT_EQ(c.drop(DropReason::invalid_descriptor), 0u);
    EXPECT_EQ(c.fate_errors, kFrames / 6);
    // Every frame the worker held left it exactly once: sent or dropped.
    EXPECT_EQ(c.released, kFrames / 6);
    EXPECT_EQ(c.rx_frames + c.allocated, c.tx_frames + c.dropped() + c.released);
    EXPECT_EQ(c.tx_completed, c.tx_frames);
    EXPECT_EQ(c.ledger_violations, 0u);

    // Nothing leaked: many more frames than the fill rings hold still flow end to end.
    ForwardingHandler forward(host_eth1_, peer_eth1_);
    WorkerThread thread(*worker, forward);
    RawSocket peer(*peer_, "eth1");
    const std::uint32_t total = 3 * config.fill_size;
    std::size_t received = 0;
    for (std::uint32_t seq = 0; seq < total; seq += 32) {
        for (std::uint32_t i = seq; i < seq + 32; ++i) tenant.send(from_tenant(i));
        received += peer.receive(32, 5s, [](const Bytes& f) { return is_test_frame(f, ANDROMEDA_ENCAP_OVERHEAD); }).size();
    }
    EXPECT_EQ(received, total);
}

class AfXdpMultiQueue : public AfXdp {
protected:
    AfXdpMultiQueue() { queues_ = 2; }
};

// One worker per underlay RX queue: the peer's kernel sends overlay datagrams from many UDP
// sockets, veth spreads them over both queues, and each queue's worker delivers its share to
// the tenant through its own tenant socket.
TEST_F(AfXdpMultiQueue, OneWorkerPerUnderlayQueue) {
    std::uint32_t queues = 0;
    {
        NetnsGuard in_host(*host_);
        queues = rx_queue_count("eth1");
    }
    ASSERT_EQ(queues, 2u);
    std::vector<std::unique_ptr<XskWorker>> workers;
    std::vector<std::unique_ptr<ForwardingHandler>> handlers;
    std::vector<std::unique_ptr<WorkerThread>> threads;
    for (std::uint32_t q = 0; q < queues; ++q) {
        workers.push_back(start_worker(small_umem(), q));
        handlers.push_back(std::make_unique<ForwardingHandler>(host_eth1_, peer_eth1_));
        threads.push_back(std::make_unique<WorkerThread>(*workers.back(), *handlers.back(), static_cast<int>(q)));
    }
    RawSocket tenant(*tenant_, "eth0");
    constexpr std::uint32_t kFlows = 16, kPerFlow = 4;
    {
        NetnsGuard in_peer(*peer_);
        for (std::uint32_t flow = 0; flow < kFlows; ++flow) {
            const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
            ASSERT_GE(fd, 0);
            sockaddr_in to{};
            to.sin_family = AF_INET;
            to.sin_port = htons(ANDROMEDA_OVERLAY_PORT);
            to.sin_addr.s_addr = htonl(0xc0a83201);
            for (std::uint32_t i = 0; i < kPerFlow; ++i) {
                Bytes datagram = {0x10, 0, 0, 0, 0, 0, 100, 64};
                const Bytes inner = tenant_frame(flow * kPerFlow + i, mac_bytes(kTenantMac), mac_bytes("02:00:00:00:00:20"));
                datagram.insert(datagram.end(), inner.begin(), inner.end());
                ASSERT_EQ(sendto(fd, datagram.data(), datagram.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
                          static_cast<ssize_t>(datagram.size()))
                    << std::strerror(errno);
            }
            close(fd);
        }
    }
    const auto got = tenant.receive(kFlows * kPerFlow, 5s, [](const Bytes& f) { return is_test_frame(f); });
    EXPECT_EQ(got.size(), kFlows * kPerFlow);
    threads.clear();
    std::uint64_t total = 0;
    for (std::uint32_t q = 0; q < queues; ++q) {
        const auto rx = workers[q]->counters().rx_frames;
        std::cout << "queue " << q << ": " << rx << " frames\n";
        EXPECT_GT(rx, 0u) << "queue " << q << " saw no traffic";
        total += rx;
    }
    EXPECT_EQ(total, kFlows * kPerFlow);
}

// What a worker sends by copy (to a port it has no AF_XDP socket on) goes through a packet
// socket, which tells a full queue from a refusal: the first is a frame lost as a full NIC queue
// loses it (handler_tx_copy_busy), the second a frame that could never have gone out
// (handler_tx_copy_failed).
TEST(PacketSocketOnVeths, TellsSentFromAFullQueueFromARefusal) {
    ANDROMEDA_REQUIRE_ROOT();
    Topology topo;
    const auto& ns = topo.add_namespace("pkt");
    topo.add_veth(ns, "open0", ns, "open1");
    topo.add_veth(ns, "full0", ns, "full1");
    // A FIFO with room for no frame (and so no bypass when it is empty) drops everything.
    ns.run({"tc", "qdisc", "replace", "dev", "full0", "root", "pfifo", "limit", "0"});
    NetnsGuard inside(ns);
    PacketSocket socket;
    const std::uint32_t open = if_nametoindex("open0");
    const std::uint32_t full = if_nametoindex("full0");
    ASSERT_NE(open, 0u);
    ASSERT_NE(full, 0u);
    const Bytes frame = tenant_frame(1, mac_bytes("02:00:00:00:00:20"), mac_bytes(kTenantMac));
    EXPECT_EQ(socket.send(open, frame), PacketSocket::Sent::sent);
    EXPECT_EQ(socket.send(full, frame), PacketSocket::Sent::busy) << "pfifo limit 0 drops it: ENOBUFS";
    EXPECT_EQ(socket.send(open, std::span(frame).first(13)), PacketSocket::Sent::refused) << "no Ethernet header";
    Bytes jumbo = frame;
    jumbo.resize(1515, 0x5a);  // one byte past what an MTU of 1500 carries
    EXPECT_EQ(socket.send(open, jumbo), PacketSocket::Sent::refused) << "EMSGSIZE";
    EXPECT_EQ(socket.send(0x7fff0000u, frame), PacketSocket::Sent::refused) << "no such interface";
    ns.run({"ip", "link", "set", "open0", "down"});
    EXPECT_EQ(socket.send(open, frame), PacketSocket::Sent::refused) << "ENETDOWN";
}

}  // namespace
}  // namespace andromeda::io
