// The test VM on its own (issue 31), without andromedad: scripts/vm-image.sh's kernel and
// initramfs boot under QEMU (TCG) on a tap device in a test namespace, and QemuGuest drives the
// guest's console. Proves what the daemon's VM tests stand on: the boot, commands with their
// output and exit status, a hung command interrupted, ping both ways over the tap, 50 MB over TCP
// byte-exact with the guest's virtio-net offloads on (TSO frames seen on the tap), and a DHCP
// lease (busybox udhcpd in the namespace) applied by the image's udhcpc script.
#include "support/qemu_guest.hpp"

#include <gtest/gtest.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "inet_sockets.hpp"
#include "netns_topology.hpp"
#include "support/root.hpp"

namespace andromeda::testing {
namespace {

using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr const char* kHostAddress = "10.31.0.1";
constexpr const char* kGuestAddress = "10.31.0.2";
constexpr std::size_t kTransferBytes = 50u << 20;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Scratch directories are /tmp/aqg-<pid>-<test>; those of a run that was killed (its pid gone)
// are removed by the next, as Topology does with its namespaces.
std::filesystem::path make_temp_dir(const std::string& test) {
    const auto tmp = std::filesystem::temp_directory_path();
    std::error_code ignored;
    for (const auto& entry : std::filesystem::directory_iterator(tmp, ignored)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("aqg-", 0) != 0) continue;
        const pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + 4));
        if (pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH)
            std::filesystem::remove_all(entry.path(), ignored);
    }
    const auto dir = tmp / ("aqg-" + std::to_string(getpid()) + "-" + test);
    std::filesystem::create_directories(dir);
    return dir;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The largest frame the guest handed the tap (a TSO frame is bigger than the MTU), seen by a
// packet socket on the tap while the object lives.
class FrameSizeWatch {
public:
    FrameSizeWatch(const Netns& ns, const std::string& ifname) {
        NetnsGuard inside(ns);
        fd_ = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
        if (fd_ < 0) throw std::runtime_error("packet socket: " + std::string(std::strerror(errno)));
        sockaddr_ll a{};
        a.sll_family = AF_PACKET;
        a.sll_protocol = htons(ETH_P_ALL);
        a.sll_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
        if (a.sll_ifindex == 0 || bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
            throw std::runtime_error("bind packet socket to " + ifname + ": " + std::strerror(errno));
        thread_ = std::thread([this] {
            char frame[256];
            sockaddr_ll from{};
            while (!done_) {
                pollfd p{fd_, POLLIN, 0};
                if (poll(&p, 1, 100) <= 0) continue;
                socklen_t length = sizeof from;
                // MSG_TRUNC: the frame's real length, however little of it is copied.
                const ssize_t n = recvfrom(fd_, frame, sizeof frame, MSG_TRUNC | MSG_DONTWAIT,
                                           reinterpret_cast<sockaddr*>(&from), &length);
                if (n > 0 && from.sll_pkttype != PACKET_OUTGOING && n > largest_) largest_ = n;
            }
        });
    }
    ~FrameSizeWatch() {
        done_ = true;
        thread_.join();
        close(fd_);
    }
    [[nodiscard]] long largest() const { return largest_; }

private:
    int fd_ = -1;
    std::atomic<bool> done_{false};
    std::atomic<long> largest_{0};
    std::thread thread_;
};

// Skips (or fails, where root tests are required) without QEMU or busybox; builds the image
// and reads its kernel release. Callers go on only when !HasFatalFailure() && !IsSkipped().
void prepare_image(std::string& release) {
    if (const std::string missing = missing_vm_tools(); !missing.empty()) {
        if (root_tests_required()) FAIL() << "missing " << missing << " (scripts/install-deps.sh installs them)";
        GTEST_SKIP() << "missing " << missing;
    }
    release = build_vm_image();
}

class QemuGuestTest : public ::testing::Test {
protected:
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        prepare_image(kernel_release_);
        if (HasFatalFailure() || IsSkipped()) return;

        ns_ = &topo_.add_namespace("vm");
        tap_ = "aqg" + std::to_string(getpid());
        ns_->run({"ip", "tuntap", "add", "dev", tap_, "mode", "tap", "vnet_hdr"});
        topo_.add_address(*ns_, tap_, std::string(kHostAddress) + "/24");
        ns_->run({"ip", "link", "set", tap_, "up"});
        temp_dir_ = make_temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());

        QemuGuestOptions options;
        options.tap = tap_;
        options.mac = "52:54:00:31:00:02";
        options.netns = ns_->name();
        const auto start = Clock::now();
        guest_.emplace(options);
        guest_->wait_booted(seconds(120));
        std::printf("boot to the console shell: %.1f s (TCG)\n", seconds_since(start));
    }

    void TearDown() override {
        if (HasFailure() && guest_) std::printf("--- the guest's console ---\n%s\n---\n", guest_->console().c_str());
        guest_.reset();  // QEMU first: it holds the tap
        std::error_code ignored;
        if (!temp_dir_.empty()) std::filesystem::remove_all(temp_dir_, ignored);
    }

    // The guest's eth0 configured by hand.
    void configure_static_address() {
        guest_->run(std::string("ip link set eth0 up && ip addr add ") + kGuestAddress + "/24 dev eth0");
    }

    Topology topo_;
    Netns* ns_ = nullptr;
    std::string tap_;
    std::string kernel_release_;
    std::filesystem::path temp_dir_;
    std::optional<QemuGuest> guest_;
};

TEST_F(QemuGuestTest, PingsBothWaysAndSends50MegabytesByteExactWithOffloadsOn) {
    EXPECT_EQ(guest_->run("uname -r"), kernel_release_ + "\n");

    // The guest negotiated checksum offload and TSO both ways (virtio-net feature bits CSUM 0,
    // GUEST_CSUM 1, GUEST_TSO4 7, HOST_TSO4 11), and QEMU set the tap's offloads to match.
    const std::string features = guest_->run(
        "for d in /sys/bus/virtio/devices/*; do if [ \"$(cat $d/device)\" = 0x0001 ]; then cat $d/features; fi; done");
    ASSERT_GE(features.size(), 16u) << features;
    for (const int bit : {0, 1, 7, 11})
        EXPECT_EQ(features[bit], '1') << "virtio-net feature bit " << bit << ": " << features;
    const std::string offloads = ns_->run({"ethtool", "-k", tap_});
    EXPECT_TRUE(contains(offloads, "tx-tcp-segmentation: on")) << offloads;
    EXPECT_TRUE(contains(offloads, "tx-checksumming: on")) << offloads;

    configure_static_address();
    const auto ping_out = guest_->try_run(std::string("ping -c 3 -i 0.2 -W 5 ") + kHostAddress, seconds(30));
    EXPECT_TRUE(ping_out.ok()) << ping_out.output;
    const auto ping_in = ns_->try_run({"ping", "-c", "3", "-i", "0.2", "-W", "5", kGuestAddress});
    EXPECT_TRUE(ping_in.ok()) << ping_in.output;

    // 50 MB of the guest's random bytes to a listener in the namespace, hashed on both sides.
    auto start = Clock::now();
    const std::string guest_hash =
        guest_->run("dd if=/dev/urandom of=/tmp/blob bs=1M count=50 2>/dev/null && sha256sum /tmp/blob", seconds(120))
            .substr(0, 64);
    std::printf("the guest made and hashed 50 MB in %.1f s\n", seconds_since(start));
    InetSocket listener(*ns_, SOCK_STREAM, kHostAddress, 5031);
    listener.listen_now();
    std::vector<std::uint8_t> received;
    std::thread receiver([&] {
        InetSocket served = listener.accept_one(seconds(60));
        if (served.valid()) received = served.receive_all(kTransferBytes + 1, seconds(180));
    });
    long largest_frame = 0;
    start = Clock::now();
    GuestResult sent;
    {
        FrameSizeWatch watch(*ns_, tap_);
        sent = guest_->try_run(std::string("nc ") + kHostAddress + " 5031 < /tmp/blob", seconds(180));
        largest_frame = watch.largest();
    }
    receiver.join();
    const double transfer_seconds = seconds_since(start);
    std::printf("50 MB guest -> namespace over TCP: %.1f s (%.0f Mbit/s); largest frame on the tap %ld bytes\n",
                transfer_seconds, kTransferBytes * 8 / transfer_seconds / 1e6, largest_frame);
    EXPECT_TRUE(sent.ok()) << sent.output;
    ASSERT_EQ(received.size(), kTransferBytes);
    const auto received_file = temp_dir_ / "received";
    std::ofstream(received_file, std::ios::binary)
        .write(reinterpret_cast<const char*>(received.data()), static_cast<std::streamsize>(received.size()));
    const std::string host_hash = run_command({"sha256sum", received_file.string()}).output.substr(0, 64);
    std::filesystem::remove(received_file);
    EXPECT_EQ(host_hash, guest_hash) << "the bytes that arrived are not the bytes the guest sent";
    EXPECT_GT(largest_frame, 1514) << "the guest sent no TSO frame: its offloads are off";
}

TEST_F(QemuGuestTest, ConsoleCommandsAndADhcpLeaseAppliedByTheImagesScript) {
    // Output exactly as printed (none, no final newline, stderr), exit status, several lines.
    EXPECT_EQ(guest_->run("true"), "");
    EXPECT_EQ(guest_->run("printf 'a\\nb'"), "a\nb");
    const GuestResult failed = guest_->try_run("echo out; echo err >&2; exit_code=3; (exit $exit_code)");
    EXPECT_EQ(failed.exit_status, 3);
    EXPECT_EQ(failed.output, "out\nerr\n");
    EXPECT_EQ(guest_->run("for i in 1 2; do\n  echo line $i\ndone"), "line 1\nline 2\n");
    EXPECT_THROW(guest_->run("false"), QemuGuestError);
    EXPECT_THROW(guest_->run("echo \x03"), std::invalid_argument);
    // A command that hangs: interrupted at its timeout, and the next one runs in a fresh shell.
    try {
        guest_->run("sleep 600", seconds(2));
        ADD_FAILURE() << "sleep 600 returned within 2 s";
    } catch (const QemuGuestError& e) {
        EXPECT_TRUE(contains(e.what(), "did not finish within 2.0 s")) << e.what();
        EXPECT_TRUE(contains(e.what(), "interrupted")) << e.what();
    }
    EXPECT_EQ(guest_->run("echo still here"), "still here\n");

    // busybox udhcpd in the namespace leases the guest an address with a router, DNS, a domain
    // and an MTU; udhcpc applies them through the image's default.script. (-O mtu: udhcpc does
    // not ask for option 26 by default; udhcpd sends it anyway, Andromeda's server would not.)
    const auto conf = temp_dir_ / "udhcpd.conf";
    std::ofstream(conf) << "start 10.31.0.100\nend 10.31.0.110\ninterface " << tap_ << "\n"
                        << "lease_file " << (temp_dir_ / "udhcpd.leases").string() << "\n"
                        << "pidfile " << (temp_dir_ / "udhcpd.pid").string() << "\n"
                        << "option subnet 255.255.255.0\noption router " << kHostAddress << "\n"
                        << "option dns " << kHostAddress << "\noption domain vm.internal\n"
                        << "option mtu 1400\noption lease 3600\n";
    std::ofstream(temp_dir_ / "udhcpd.leases").flush();
    Process& server = topo_.spawn(*ns_, {"busybox", "udhcpd", "-f", conf.string()});
    const auto lease = guest_->try_run("udhcpc -i eth0 -O mtu -n -q -t 5 -T 2", seconds(60));
    ASSERT_TRUE(lease.ok()) << lease.output << "\nudhcpd: " << server.output();
    EXPECT_TRUE(contains(guest_->run("ip -4 addr show dev eth0"), "inet 10.31.0.100/24"));
    EXPECT_TRUE(contains(guest_->run("ip route"), std::string("default via ") + kHostAddress + " dev eth0"));
    EXPECT_EQ(guest_->run("cat /sys/class/net/eth0/mtu"), "1400\n");
    EXPECT_EQ(guest_->run("cat /etc/resolv.conf"),
              std::string("search vm.internal\nnameserver ") + kHostAddress + "\n");
    const auto ping = guest_->try_run(std::string("ping -c 2 -i 0.2 -W 5 ") + kHostAddress, seconds(30));
    EXPECT_TRUE(ping.ok()) << ping.output;

    // A guest that goes away under a command: an error at once, not at the timeout.
    const auto start = Clock::now();
    try {
        guest_->run("poweroff -f", seconds(60));
        ADD_FAILURE() << "poweroff -f returned";
    } catch (const QemuGuestError& e) {
        EXPECT_TRUE(contains(e.what(), "QEMU exited while the guest ran `poweroff -f`")) << e.what();
        EXPECT_TRUE(contains(e.what(), "QEMU exited with status 0")) << e.what();
    }
    EXPECT_LT(seconds_since(start), 20.0);
    EXPECT_FALSE(guest_->running());
}

// What goes wrong before a boot comes back whole and at once: a missing image or tap at once,
// QEMU's own error (here an unknown device) with its stderr.
TEST(QemuGuest, ErrorsBeforeTheBootSayWhatWentWrong) {
    ANDROMEDA_REQUIRE_ROOT();
    std::string release;
    prepare_image(release);
    if (HasFatalFailure() || IsSkipped()) return;
    Topology topo;
    const Netns& ns = topo.add_namespace("vm");
    QemuGuestOptions options;
    options.netns = ns.name();

    QemuGuestOptions no_image = options;
    no_image.image_dir = "/nonexistent";
    EXPECT_THROW(QemuGuest{no_image}, QemuGuestError);
    QemuGuestOptions no_tap = options;
    no_tap.tap = "nosuchtap";
    try {
        QemuGuest guest(no_tap);
        ADD_FAILURE() << "QEMU started on a tap that does not exist";
    } catch (const QemuGuestError& e) {
        EXPECT_TRUE(contains(e.what(), "there is no device nosuchtap in network namespace " + ns.name())) << e.what();
    }

    QemuGuestOptions bad_device = options;
    bad_device.extra_qemu_args = {"-device", "no-such-device"};
    QemuGuest guest(bad_device);
    const auto start = Clock::now();
    try {
        guest.wait_booted(seconds(60));
        ADD_FAILURE() << "a guest booted with a device QEMU does not have";
    } catch (const QemuGuestError& e) {
        EXPECT_TRUE(contains(e.what(), "QEMU exited before the guest booted")) << e.what();
        EXPECT_TRUE(contains(e.what(), "QEMU exited with status 1")) << e.what();
        EXPECT_TRUE(contains(e.what(), "no-such-device")) << e.what();
    }
    EXPECT_LT(seconds_since(start), 20.0);
}

}  // namespace
}  // namespace andromeda::testing
