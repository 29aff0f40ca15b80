// XDP attach/detach on real veths in namespaces: the mode achieved, clean detach, recovery
// after a crash, foreign programs, pins and what bpftool prints from them.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <linux/if_link.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "io/bpf/bpf_instance.hpp"
#include "io/netlink/interfaces.hpp"
#include "io/plan/io_error.hpp"
#include "io/plan/port_table.hpp"
#include "io_test_support.hpp"
#include "support/root.hpp"

namespace andromeda::io {
namespace {

using andromeda::testing::NetnsGuard;
using andromeda::testing::Topology;
using andromeda::testing::VethOptions;
using testing::contains;
using testing::instance_config;

namespace fs = std::filesystem;

class XdpAttach : public ::testing::Test {
protected:
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        testing::sweep_stale_test_pins();
        host_ = &topo_.add_namespace("host");
        peer_ = &topo_.add_namespace("peer");
    }
    void connect() { topo_.add_veth(*host_, "eth1", *peer_, "eth1"); }
    // A veth whose peer has more TX queues than it has RX queues: the veth driver refuses native
    // XDP there (the program is xdp.frags, so a large MTU alone no longer makes it refuse).
    void connect_refusing_native() {
        VethOptions options;
        options.peer_queues = 2;
        topo_.add_veth(*host_, "eth1", *peer_, "eth1", options);
    }
    std::uint32_t attached_prog_id() { return require_interface("eth1").xdp_prog_id; }

    Topology topo_;
    andromeda::testing::Netns* host_ = nullptr;
    andromeda::testing::Netns* peer_ = nullptr;
};

TEST_F(XdpAttach, NativeOnVethAndDetachLeavesNoProgram) {
    connect();
    NetnsGuard in_host(*host_);
    BpfInstance bpf(instance_config("native"));
    const AttachReport& report = bpf.attach("eth1");
    std::cout << "achieved: " << report.message() << "\n";
    RecordProperty("xdp_mode", to_string(report.mode));
    EXPECT_EQ(report.mode, XdpMode::native);
    EXPECT_TRUE(report.native_refusal.empty()) << report.native_refusal;
    EXPECT_TRUE(report.replaced.empty());
    const InterfaceInfo link = require_interface("eth1");
    EXPECT_EQ(link.xdp_attached, XDP_ATTACHED_DRV);
    EXPECT_EQ(link.xdp_prog_id, bpf.program_id());
    EXPECT_EQ(&bpf.attach("eth1"), &bpf.attach("eth1")) << "attaching twice returns the first attachment";

    EXPECT_TRUE(bpf.detach("eth1"));
    EXPECT_EQ(attached_prog_id(), 0u);
    EXPECT_EQ(require_interface("eth1").xdp_attached, XDP_ATTACHED_NONE);
    EXPECT_FALSE(bpf.detach("eth1"));
}

std::size_t open_descriptors() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

// The daemon attaches and detaches XDP for every tenant port it plumbs and unplumbs; libxdp
// 1.3's query of an attached port leaked a program descriptor each time (two per port, found
// by the soak). Cycles leave the process with the descriptors it had.
TEST_F(XdpAttach, AttachingAndDetachingLeavesNoDescriptorBehind) {
    connect();
    NetnsGuard in_host(*host_);
    BpfInstance bpf(instance_config("fds"));
    bpf.attach("eth1");
    ASSERT_TRUE(bpf.detach("eth1"));
    const std::size_t before = open_descriptors();
    for (int i = 0; i < 20; ++i) {
        bpf.attach("eth1");
        ASSERT_EQ(attached_prog_id(), bpf.program_id());
        ASSERT_TRUE(bpf.detach("eth1"));
        ASSERT_EQ(attached_prog_id(), 0u);
    }
    EXPECT_EQ(open_descriptors(), before) << "descriptors left behind by 20 attach/detach cycles";
}

TEST_F(XdpAttach, DestructionDetachesEvenFromAnotherNamespace) {
    connect();
    std::unique_ptr<BpfInstance> bpf;
    fs::path pin_dir;
    {
        NetnsGuard in_host(*host_);
        bpf = std::make_unique<BpfInstance>(instance_config("dtor"));
        bpf->attach("eth1");
        pin_dir = bpf->config().pin_dir;
        EXPECT_NE(attached_prog_id(), 0u);
    }
    bpf.reset();  // from the root namespace, where the same ifindex may be another interface
    NetnsGuard in_host(*host_);
    EXPECT_EQ(attached_prog_id(), 0u);
    EXPECT_FALSE(fs::exists(pin_dir)) << "the pin directory is removed on a clean exit";
}

TEST_F(XdpAttach, FallsBackToGenericWhenNativeIsRefused) {
    connect_refusing_native();
    NetnsGuard in_host(*host_);
    BpfInstance bpf(instance_config("generic"));
    const AttachReport& report = bpf.attach("eth1");
    std::cout << "achieved: " << report.message() << "\n";
    EXPECT_EQ(report.mode, XdpMode::generic);
    EXPECT_FALSE(report.native_refusal.empty());
    EXPECT_TRUE(contains(report.message(), "native mode refused")) << report.message();
    EXPECT_EQ(require_interface("eth1").xdp_attached, XDP_ATTACHED_SKB);
}

TEST_F(XdpAttach, NativeOnlySaysWhyItFailed) {
    connect_refusing_native();
    NetnsGuard in_host(*host_);
    auto config = instance_config("native-only");
    config.xdp_mode = XdpModePreference::native_only;
    BpfInstance bpf(config);
    try {
        bpf.attach("eth1");
        FAIL() << "native attach with more peer TX queues than RX queues succeeded";
    } catch (const IoError& e) {
        EXPECT_TRUE(contains(e.what(), "attaching XDP to eth1")) << e.what();
        EXPECT_TRUE(contains(e.what(), "rx queues")) << e.what();
    }
    EXPECT_EQ(attached_prog_id(), 0u);
    EXPECT_THROW(bpf.attach("no-such-if"), IoError);
}

// A previous instance dies (SIGKILL) with XDP attached and its maps pinned, one fabric entry in
// them; the next start adopts the maps with their contents (the entry is still there, and the
// programs it attaches use the same maps) and replaces the program, saying what it took over.
TEST_F(XdpAttach, AdoptsAKilledInstancesMapsWithTheirContents) {
    connect();
    NetnsGuard in_host(*host_);
    const auto config = instance_config("crash");
    andromeda_fabric_key key{};
    key.vni = 100;
    key.ip = htonl(0x0a00000a);
    andromeda_fabric_entry entry{};
    entry.node_ip = htonl(0xc0a80101);
    entry.local = 1;
    entry.mac[5] = 0x10;
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        try {
            BpfInstance bpf(config);
            bpf.attach("eth1");
            if (bpf_map_update_elem(bpf.map_fd(MapId::fabric), &key, &entry, BPF_ANY) != 0) _exit(2);
            raise(SIGKILL);  // while the instance is alive: no destructor runs
        } catch (...) {
        }
        _exit(1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the crashing instance failed to start";
    const std::uint32_t stale_prog = attached_prog_id();
    ASSERT_NE(stale_prog, 0u) << "a crashed instance leaves its program attached";
    ASSERT_TRUE(fs::exists(config.pin_dir / "fabric"));
    bpf_map_info before{};
    __u32 length = sizeof before;
    const int pinned = bpf_obj_get((config.pin_dir / "fabric").c_str());
    ASSERT_GE(pinned, 0);
    ASSERT_EQ(bpf_obj_get_info_by_fd(pinned, &before, &length), 0);
    close(pinned);

    BpfInstance bpf(config);
    EXPECT_EQ(bpf.recovery().adopted_pins.size(), kMapCount);
    EXPECT_TRUE(bpf.recovery().removed_pins.empty());
    EXPECT_TRUE(bpf.recovery().adoption_refused.empty()) << bpf.recovery().adoption_refused;
    bpf_map_info after{};
    length = sizeof after;
    ASSERT_EQ(bpf_obj_get_info_by_fd(bpf.map_fd(MapId::fabric), &after, &length), 0);
    EXPECT_EQ(after.id, before.id) << "the same kernel map, not a copy";
    andromeda_fabric_entry kept{};
    ASSERT_EQ(bpf_map_lookup_elem(bpf.map_fd(MapId::fabric), &key, &kept), 0) << "the entry survived the restart";
    EXPECT_EQ(kept.node_ip, entry.node_ip);
    EXPECT_EQ(kept.mac[5], 0x10);

    const AttachReport& report = bpf.attach("eth1");
    EXPECT_TRUE(contains(report.replaced, "andromeda_xdp prog id " + std::to_string(stale_prog))) << report.replaced;
    const std::string message = bpf.recovery().message();
    std::cout << message << "\n";
    EXPECT_TRUE(contains(message, "recovered from a previous instance: adopted " + std::to_string(kMapCount) +
                                      " pinned maps from " + config.pin_dir.string()))
        << message;
    EXPECT_TRUE(contains(message, "replaced XDP in place on eth1")) << message;
    EXPECT_TRUE(report.replaced_in_place);
    EXPECT_EQ(report.mode, XdpMode::native) << "the leftover's mode is kept";
    EXPECT_EQ(attached_prog_id(), bpf.program_id());
    EXPECT_NE(bpf.program_id(), stale_prog);
}

// Udp NoPorts of this thread's namespace: datagrams the host's UDP stack had no socket for (it
// answers each with a port unreachable, rate limits allowing).
std::uint64_t udp_no_ports() {
    std::ifstream snmp("/proc/thread-self/net/snmp");
    std::string header, values;
    while (std::getline(snmp, header)) {
        if (header.rfind("Udp: ", 0) != 0 || !std::getline(snmp, values)) continue;
        std::istringstream names(header), numbers(values);
        std::string name, number;
        while (names >> name && numbers >> number)
            if (name == "NoPorts") return std::stoull(number);
    }
    ADD_FAILURE() << "no Udp NoPorts in /proc/thread-self/net/snmp";
    return 0;
}

// Starts an instance on eth1 (writing eth1's port entry when `first`) and kills it, leaving its
// program attached and its maps pinned, as `kill -9` of the daemon does.
void start_and_kill(const InstanceConfig& config, bool first) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        try {
            BpfInstance bpf(config);
            if (first) {
                const __u32 ifindex = require_interface("eth1").ifindex;
                const andromeda_port port = make_port(ANDROMEDA_PORT_UNDERLAY, 0);
                if (bpf_map_update_elem(bpf.map_fd(MapId::ports), &ifindex, &port, BPF_ANY) != 0) _exit(2);
            }
            const AttachReport& report = bpf.attach("eth1");
            if (!first && !report.replaced_in_place) _exit(3);
            raise(SIGKILL);
        } catch (...) {
        }
        _exit(1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the instance did not start or did not replace in place: exit "
                                     << WEXITSTATUS(status);
}

// A restart after kill -9 swaps the program in place. A steady UDP stream to the overlay port
// (which the program drops: the sender is no peer) reaches the host's UDP stack not once while
// the program is replaced again and again; a detach and an attach let some through, each
// answered with a port unreachable, as the end of the test shows.
TEST_F(XdpAttach, ReplacingALeftoverLetsNothingThroughToTheHost) {
    connect();
    topo_.add_address(*host_, "eth1", "10.99.0.1/24");
    topo_.add_address(*peer_, "eth1", "10.99.0.2/24");
    NetnsGuard in_host(*host_);
    const auto config = instance_config("swap");
    start_and_kill(config, true);

    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> sent{0};
    std::thread sender([&] {
        NetnsGuard in_peer(*peer_);
        const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_in to{};
        to.sin_family = AF_INET;
        to.sin_port = htons(config.overlay_port);
        to.sin_addr.s_addr = htonl(0x0a630001);
        const char payload[64] = {};
        while (!stop.load()) {
            if (sendto(fd, payload, sizeof payload, 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) > 0) ++sent;
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        close(fd);
    });
    const auto stream_for = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
    stream_for(std::chrono::milliseconds(200));  // ARP resolved, the stream steady
    const std::uint64_t before = udp_no_ports();
    const std::uint64_t sent_before = sent.load();
    constexpr int kRestarts = 10;
    for (int i = 0; i < kRestarts; ++i) start_and_kill(config, false);
    std::unique_ptr<BpfInstance> bpf = std::make_unique<BpfInstance>(config);  // the last one stays
    const AttachReport& report = bpf->attach("eth1");
    EXPECT_TRUE(report.replaced_in_place) << report.message();
    EXPECT_TRUE(contains(bpf->recovery().message(), "replaced XDP in place on eth1")) << bpf->recovery().message();
    stream_for(std::chrono::milliseconds(50));
    const std::uint64_t during = udp_no_ports() - before;
    const std::uint64_t streamed = sent.load() - sent_before;
    std::cout << kRestarts + 1 << " replacements, " << streamed << " datagrams sent meanwhile, " << during
              << " reached the host's UDP stack\n";
    EXPECT_GT(streamed, 100u) << "the stream did not run";
    EXPECT_EQ(during, 0u) << "the port ran without the program for a moment";
    EXPECT_GT(bpf->read_stats().totals().rx_packets, 0u);

    // The measurement sees a port without the program.
    EXPECT_TRUE(bpf->detach("eth1"));
    const std::uint64_t detached_at = udp_no_ports();
    stream_for(std::chrono::milliseconds(100));
    EXPECT_GT(udp_no_ports(), detached_at) << "without a program the stream reaches the host's UDP stack";
    stop = true;
    sender.join();
}

// Pins that match this build's maps in every size but carry another layout stamp (a daemon
// whose maps mean something else), or none (a daemon older than the stamp), are rebuilt, not
// adopted, and the instance says why; the new pins carry this build's stamp.
TEST_F(XdpAttach, PinsOfAnotherMapLayoutAreRebuiltNotAdopted) {
    connect();
    NetnsGuard in_host(*host_);
    const auto config = instance_config("layout");
    const fs::path stamp = config.pin_dir / kLayoutPin;
    const auto read_stamp = [&]() -> std::int64_t {
        const int fd = bpf_obj_get(stamp.c_str());
        if (fd < 0) return -1;
        const __u32 key = 0;
        __u32 value = 0;
        const int rc = bpf_map_lookup_elem(fd, &key, &value);
        close(fd);
        return rc == 0 ? value : -1;
    };
    andromeda_fabric_key key{};
    key.vni = 100;
    key.ip = htonl(0x0a00000a);
    for (const bool stamped : {true, false}) {
        SCOPED_TRACE(stamped ? "another stamp" : "no stamp");
        const pid_t child = fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            try {
                BpfInstance bpf(config);
                const andromeda_fabric_entry entry{};
                if (bpf_map_update_elem(bpf.map_fd(MapId::fabric), &key, &entry, BPF_ANY) != 0) _exit(2);
                raise(SIGKILL);
            } catch (...) {
            }
            _exit(1);
        }
        int status = 0;
        ASSERT_EQ(waitpid(child, &status, 0), child);
        ASSERT_TRUE(WIFSIGNALED(status));
        ASSERT_EQ(read_stamp(), ANDROMEDA_MAP_LAYOUT) << "an instance stamps its pins";
        if (stamped) {
            const int fd = bpf_obj_get(stamp.c_str());
            ASSERT_GE(fd, 0);
            const __u32 zero = 0, other = ANDROMEDA_MAP_LAYOUT + 1;
            ASSERT_EQ(bpf_map_update_elem(fd, &zero, &other, BPF_ANY), 0);
            close(fd);
        } else {
            ASSERT_TRUE(fs::remove(stamp));
        }

        BpfInstance bpf(config);
        const std::string found = stamped ? std::to_string(ANDROMEDA_MAP_LAYOUT + 1) : "none";
        EXPECT_TRUE(bpf.recovery().adopted_pins.empty());
        EXPECT_EQ(bpf.recovery().removed_pins.size(), kMapCount);
        EXPECT_EQ(bpf.recovery().adoption_refused, "they carry map layout " + found +
                                                       ", this andromedad uses layout " +
                                                       std::to_string(ANDROMEDA_MAP_LAYOUT));
        EXPECT_TRUE(contains(bpf.recovery().message(), "could not adopt its maps (they carry map layout " + found))
            << bpf.recovery().message();
        andromeda_fabric_entry kept{};
        EXPECT_NE(bpf_map_lookup_elem(bpf.map_fd(MapId::fabric), &key, &kept), 0) << "a new, empty map";
        EXPECT_EQ(read_stamp(), ANDROMEDA_MAP_LAYOUT);
    }
    EXPECT_FALSE(fs::exists(stamp)) << "a clean stop removes the stamp with the maps";
}

// Pins that do not match this build's maps (another version's, or something else of that name)
// are not adopted: they are removed, the instance starts with fresh maps and says why.
TEST_F(XdpAttach, PinsThatDoNotMatchAreReplacedNotAdopted) {
    connect();
    NetnsGuard in_host(*host_);
    const auto config = instance_config("mismatch");
    fs::create_directories(config.pin_dir);
    const int wrong = bpf_map_create(BPF_MAP_TYPE_HASH, "fabric", 4, 4, 16, nullptr);  // wrong key/value sizes
    ASSERT_GE(wrong, 0);
    ASSERT_EQ(bpf_obj_pin(wrong, (config.pin_dir / "fabric").c_str()), 0);
    ASSERT_EQ(bpf_obj_pin(wrong, (config.pin_dir / "not-ours").c_str()), 0);
    close(wrong);

    BpfInstance bpf(config);
    EXPECT_TRUE(bpf.recovery().adopted_pins.empty());
    EXPECT_FALSE(bpf.recovery().adoption_refused.empty());
    EXPECT_EQ(bpf.recovery().removed_pins, (std::vector<std::string>{"fabric", "not-ours"}));
    const std::string message = bpf.recovery().message();
    EXPECT_TRUE(contains(message, "could not adopt its maps")) << message;
    bpf_map_info info{};
    __u32 length = sizeof info;
    ASSERT_EQ(bpf_obj_get_info_by_fd(bpf.map_fd(MapId::fabric), &info, &length), 0);
    EXPECT_EQ(info.key_size, sizeof(andromeda_fabric_key));
    EXPECT_TRUE(fs::exists(config.pin_dir / "fabric"));
    EXPECT_FALSE(fs::exists(config.pin_dir / "not-ours"));
}

int load_foreign_program() {
    const bpf_insn pass[] = {
        {BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, XDP_PASS},
        {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
    };
    return bpf_prog_load(BPF_PROG_TYPE_XDP, "foreign_pass", "GPL", pass, 2, nullptr);
}

TEST_F(XdpAttach, ForeignProgramIsRefusedUnlessReplacementIsAsked) {
    connect();
    NetnsGuard in_host(*host_);
    const int foreign = load_foreign_program();
    ASSERT_GE(foreign, 0) << std::strerror(errno);
    const auto ifindex = static_cast<int>(require_interface("eth1").ifindex);
    ASSERT_EQ(bpf_xdp_attach(ifindex, foreign, XDP_FLAGS_DRV_MODE, nullptr), 0);
    const std::uint32_t foreign_id = attached_prog_id();

    auto config = instance_config("foreign");
    {
        BpfInstance bpf(config);
        try {
            bpf.attach("eth1");
            FAIL() << "replaced a foreign program without being asked";
        } catch (const IoError& e) {
            EXPECT_TRUE(contains(e.what(), "foreign_pass")) << e.what();
            EXPECT_TRUE(contains(e.what(), "not Andromeda's")) << e.what();
            EXPECT_TRUE(contains(e.what(), "xdp off")) << e.what();
        }
        EXPECT_EQ(attached_prog_id(), foreign_id) << "a refusal leaves the foreign program alone";
    }
    config.replace_foreign_xdp = true;
    BpfInstance bpf(config);
    EXPECT_TRUE(contains(bpf.attach("eth1").replaced, "foreign_pass"));
    EXPECT_EQ(attached_prog_id(), bpf.program_id());
    close(foreign);
}

TEST_F(XdpAttach, MapsArePinnedWithNamedFieldsForBpftool) {
    connect();
    NetnsGuard in_host(*host_);
    BpfInstance bpf(instance_config("pins"));
    for (const MapId id : kAllMaps) EXPECT_TRUE(fs::exists(bpf.pin_path(id))) << bpf.pin_path(id);
    EXPECT_EQ(bpf.config().pin_dir, fs::path("/sys/fs/bpf/andromeda") / bpf.config().node_name);

    const auto stats = andromeda::testing::run_command({"bpftool", "map", "dump", "pinned", bpf.pin_path(MapId::stats)});
    ASSERT_TRUE(stats.ok()) << stats.output;
    EXPECT_TRUE(contains(stats.output, "rx_packets")) << stats.output;
    EXPECT_TRUE(contains(stats.output, "drop_no_socket")) << stats.output;

    andromeda_daemon_stats daemon{};
    daemon.reloads_ok = 4242;
    bpf.publish_daemon_stats(daemon);
    const auto published = andromeda::testing::run_command(
        {"bpftool", "map", "dump", "pinned", bpf.pin_path(MapId::daemon_stats)});
    EXPECT_TRUE(contains(published.output, "\"reloads_ok\": 4242")) << published.output;
    EXPECT_EQ(read_daemon_stats(bpf.map_fd(MapId::daemon_stats)).reloads_ok, 4242u);
    EXPECT_EQ(bpf.read_stats().totals().rx_packets, 0u);
}

TEST_F(XdpAttach, OneNodeNameOneInstanceButNodesCoexist) {
    connect();
    NetnsGuard in_host(*host_);
    const auto config = instance_config("lock");
    BpfInstance first(config);
    try {
        BpfInstance second(config);
        FAIL() << "two instances shared one pin directory";
    } catch (const IoError& e) {
        EXPECT_TRUE(contains(e.what(), "another andromedad for this node is running")) << e.what();
    }
    EXPECT_TRUE(fs::exists(first.pin_path(MapId::fabric))) << "the refused instance removed nothing";
    BpfInstance other_node(instance_config("lock-other"));
    EXPECT_NE(other_node.config().pin_dir, first.config().pin_dir);
}

// In a private mount namespace without bpffs at /sys/fs/bpf, the instance mounts one.
TEST(BpfFs, MountedWhenMissing) {
    ANDROMEDA_REQUIRE_ROOT();
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // Private, recursively: the unmount below must not reach the machine's namespace.
        if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(10);
        while (is_bpffs(kBpffsMountPoint))
            if (umount2(kBpffsMountPoint, MNT_DETACH) != 0) _exit(11);
        try {
            BpfInstance bpf(instance_config("mount"));
            if (!bpf.recovery().mounted_bpffs) _exit(12);
            if (!is_bpffs(kBpffsMountPoint) || !fs::exists(bpf.pin_path(MapId::stats))) _exit(13);
        } catch (...) {
            _exit(14);
        }
        _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    EXPECT_TRUE(is_bpffs(kBpffsMountPoint)) << "the machine's bpffs is untouched";
}

}  // namespace
}  // namespace andromeda::io
