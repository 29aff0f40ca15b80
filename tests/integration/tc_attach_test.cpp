// The fast path's tc programs on real veths in namespaces: tcx links by default, clsact when
// asked, a killed instance's links taken over in place (the device never runs without the
// program), links no port claims released, and an upgrade across the two ways of attaching
// leaving one program per device.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <memory>

#include "io/bpf/bpf_instance.hpp"
#include "io/bpf/tc_attach.hpp"
#include "io/netlink/interfaces.hpp"
#include "io_test_support.hpp"
#include "support/root.hpp"

namespace andromeda::io {
namespace {

using andromeda::testing::NetnsGuard;
using andromeda::testing::Topology;
using testing::contains;
using testing::instance_config;

namespace fs = std::filesystem;

class TcAttach : public ::testing::Test {
protected:
    void SetUp() override {
        ANDROMEDA_REQUIRE_ROOT();
        testing::sweep_stale_test_pins();
        host_ = &topo_.add_namespace("host");
        peer_ = &topo_.add_namespace("peer");
        topo_.add_veth(*host_, "eth1", *peer_, "eth1");
        topo_.add_veth(*host_, "eth2", *peer_, "eth2");
    }
    // What runs on `ifname`'s tc ingress (call inside the host namespace).
    static std::vector<TcProgramInfo> programs(const std::string& ifname) {
        return tc_ingress_programs(require_interface(ifname).ifindex);
    }
    // Runs `body` in a child that is then SIGKILLed with the instance `body` made alive: no
    // destructor runs.
    static void crash_after(const std::function<std::unique_ptr<BpfInstance>()>& body) {
        const pid_t child = fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            try {
                const auto alive = body();
                raise(SIGKILL);
            } catch (...) {
            }
            _exit(1);
        }
        int status = 0;
        ASSERT_EQ(waitpid(child, &status, 0), child);
        ASSERT_TRUE(WIFSIGNALED(status)) << "the crashing instance failed to start";
    }

    Topology topo_;
    andromeda::testing::Netns* host_ = nullptr;
    andromeda::testing::Netns* peer_ = nullptr;
};

TEST_F(TcAttach, TcxLinkByDefaultPinnedAndGoneAfterDestruction) {
    NetnsGuard in_host(*host_);
    const auto config = instance_config("tcx");
    const fs::path pin = config.pin_dir / kTcLinkDirectory / "tc_eth1";
    {
        BpfInstance bpf(config);
        const TcAttachment& tc = bpf.attach_tc("eth1", BpfInstance::TcProgram::underlay);
        EXPECT_EQ(tc.mode(), TcAttachMode::tcx) << "this kernel has tcx (6.6 and later)";
        EXPECT_FALSE(tc.adopted());
        EXPECT_EQ(tc.message(), "eth1: tc ingress andromeda_tc_underlay (tcx)");
        const auto on = programs("eth1");
        ASSERT_EQ(on.size(), 1u);
        EXPECT_EQ(on[0].name, "andromeda_tc_un");
        EXPECT_EQ(on[0].mode, TcAttachMode::tcx);
        EXPECT_TRUE(fs::exists(pin)) << "the link outlives a killed daemon through its pin";
        EXPECT_TRUE(programs("eth2").empty());
        EXPECT_TRUE(bpf.detach_tc("eth1"));
        EXPECT_TRUE(programs("eth1").empty());
        EXPECT_FALSE(fs::exists(pin));
        bpf.attach_tc("eth2", BpfInstance::TcProgram::tenant);
        ASSERT_EQ(programs("eth2").size(), 1u);
    }
    EXPECT_TRUE(programs("eth2").empty()) << "a clean stop detaches";
    EXPECT_FALSE(fs::exists(config.pin_dir)) << "and removes the pin directory, links included";
}

TEST_F(TcAttach, ClsactWhenAsked) {
    NetnsGuard in_host(*host_);
    auto config = instance_config("clsact");
    config.tc_attach = TcAttachPreference::clsact_only;
    {
        BpfInstance bpf(config);
        const TcAttachment& tc = bpf.attach_tc("eth1", BpfInstance::TcProgram::tenant);
        EXPECT_EQ(tc.mode(), TcAttachMode::clsact);
        EXPECT_EQ(tc.message(), "eth1: tc ingress andromeda_tc_tenant (clsact)");
        const auto on = programs("eth1");
        ASSERT_EQ(on.size(), 1u);
        EXPECT_EQ(on[0].mode, TcAttachMode::clsact);
        EXPECT_EQ(on[0].name, "andromeda_tc_te");
        EXPECT_FALSE(fs::exists(config.pin_dir / kTcLinkDirectory / "tc_eth1")) << "no link to pin";
    }
    EXPECT_TRUE(programs("eth1").empty());
}

// kill -9: the link stays (pinned) and keeps running the dead instance's program; the next
// instance swaps its own in through the link, so the device is never without one, and releases
// the links of ports it does not attach.
TEST_F(TcAttach, KilledInstancesLinksAreTakenOverOrReleased) {
    NetnsGuard in_host(*host_);
    const auto config = instance_config("tcx-crash");
    crash_after([&] {
        auto bpf = std::make_unique<BpfInstance>(config);
        bpf->attach_tc("eth1", BpfInstance::TcProgram::underlay);
        bpf->attach_tc("eth2", BpfInstance::TcProgram::tenant);
        return bpf;
    });
    const auto before = programs("eth1");
    ASSERT_EQ(before.size(), 1u) << "a killed instance's program stays attached";
    ASSERT_EQ(programs("eth2").size(), 1u);

    BpfInstance bpf(config);
    const TcAttachment& tc = bpf.attach_tc("eth1", BpfInstance::TcProgram::underlay);
    EXPECT_TRUE(tc.adopted());
    EXPECT_EQ(tc.mode(), TcAttachMode::tcx);
    const auto after = programs("eth1");
    ASSERT_EQ(after.size(), 1u) << "the program replaced, not a second one added";
    EXPECT_NE(after[0].id, before[0].id) << "this instance's program now";
    EXPECT_EQ(programs("eth2").size(), 1u) << "still the dead instance's, until released";

    EXPECT_EQ(bpf.release_unclaimed_tc_links(), std::vector<std::string>{"eth2"});
    EXPECT_TRUE(programs("eth2").empty());
    EXPECT_FALSE(fs::exists(config.pin_dir / kTcLinkDirectory / "tc_eth2"));
    EXPECT_EQ(programs("eth1").size(), 1u);
    const std::string message = bpf.recovery().message();
    EXPECT_TRUE(contains(message, "took over the tc link of eth1")) << message;
    EXPECT_TRUE(contains(message, "released the tc link of eth2 (no longer a port)")) << message;
}

// A link pinned for a device that has since been recreated (same name, new ifindex) is not taken
// over: it is removed, and a link of this instance's own is made.
TEST_F(TcAttach, LinkOfARecreatedDeviceIsReplaced) {
    NetnsGuard in_host(*host_);
    const auto config = instance_config("tcx-recreated");
    crash_after([&] {
        auto bpf = std::make_unique<BpfInstance>(config);
        bpf->attach_tc("eth1", BpfInstance::TcProgram::underlay);
        return bpf;
    });
    const std::uint32_t old_ifindex = require_interface("eth1").ifindex;
    host_->run({"ip", "link", "del", "eth1"});
    topo_.add_veth(*host_, "eth1", *peer_, "eth9");
    ASSERT_NE(require_interface("eth1").ifindex, old_ifindex);

    BpfInstance bpf(config);
    const TcAttachment& tc = bpf.attach_tc("eth1", BpfInstance::TcProgram::underlay);
    EXPECT_FALSE(tc.adopted());
    EXPECT_EQ(programs("eth1").size(), 1u);
}

// An instance of a build that attached with clsact was killed; this one attaches with tcx, and
// the old filter is removed (it would run after tcx on whatever ours passes on). And back.
TEST_F(TcAttach, AcrossTheTwoWaysOneProgramPerDevice) {
    NetnsGuard in_host(*host_);
    auto clsact = instance_config("tc-upgrade");
    clsact.tc_attach = TcAttachPreference::clsact_only;
    crash_after([&] {
        auto bpf = std::make_unique<BpfInstance>(clsact);
        bpf->attach_tc("eth1", BpfInstance::TcProgram::underlay);
        return bpf;
    });
    ASSERT_EQ(programs("eth1").size(), 1u);
    ASSERT_EQ(programs("eth1")[0].mode, TcAttachMode::clsact);

    auto tcx = clsact;
    tcx.tc_attach = TcAttachPreference::best;
    crash_after([&] {
        auto bpf = std::make_unique<BpfInstance>(tcx);
        bpf->attach_tc("eth1", BpfInstance::TcProgram::underlay);
        return bpf;
    });
    auto on = programs("eth1");
    ASSERT_EQ(on.size(), 1u) << "the clsact filter was removed";
    EXPECT_EQ(on[0].mode, TcAttachMode::tcx);

    BpfInstance bpf(clsact);
    bpf.attach_tc("eth1", BpfInstance::TcProgram::underlay);
    on = programs("eth1");
    ASSERT_EQ(on.size(), 1u) << "the tcx link was removed";
    EXPECT_EQ(on[0].mode, TcAttachMode::clsact);
    EXPECT_FALSE(fs::exists(clsact.pin_dir / kTcLinkDirectory / "tc_eth1"));
}

}  // namespace
}  // namespace andromeda::io
