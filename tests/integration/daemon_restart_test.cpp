// andromedad restarted after `kill -9` while its tenants' traffic runs in the kernel: what the
// configuration changed while no daemon ran holds from the moment the new one adopts the maps
// (not once its workers run), and the other tenants lose nothing on the way.
#include <bpf/bpf.h>
#include <unistd.h>

#include <string>

#include "andromeda_kern_user.h"
#include "daemon_fixture.hpp"
#include "io/bpf/bpf_instance.hpp"

namespace andromeda::testing {
namespace {

std::size_t replies_in(const std::string& ping_output) {
    std::size_t n = 0;
    for (std::size_t at = ping_output.find("bytes from"); at != std::string::npos;
         at = ping_output.find("bytes from", at + 1))
        ++n;
    return n;
}

// Two endpoints on node2 (10.0.0.20 and 10.0.0.30) pinging 10.0.0.10 on node1; node2's daemon
// is killed and 10.0.0.30 removed from its file. The new daemon first resolves next hops (a
// peer that never answers makes that take its full second) and then starts its workers: from
// the line saying the adopted maps were put right, 10.0.0.30 gets no reply and its port is set
// down (it fails closed); 10.0.0.20's ping, carried by the kernel throughout, loses nothing.
TEST_F(TwoNodesFastPath, EndpointRemovedWhileDeadForwardsNothingOnceTheMapsAreAdopted) {
    for (int i = 0; i < 2; ++i) nodes_[i].config = write_config(i, config_with_third_endpoint(i), "-three");
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t30_, "10.0.0.10"); }, 5s)) << logs();
    ASSERT_TRUE(eventually([&] { return ping_once(*t20_, "10.0.0.10"); }, 5s)) << logs();
    Process& removed = topo_.spawn(*t30_, {"ping", "-i", "0.01", "-W", "1", "10.0.0.10"});
    Process& kept = topo_.spawn(*t20_, {"ping", "-i", "0.01", "-c", "1000", "-W", "1", "10.0.0.10"});
    ASSERT_TRUE(eventually([&] { return replies_in(removed.output()) > 20; }, 5s)) << removed.output();

    Process& first = *nodes_[1].daemon;
    kill(first.pid(), SIGKILL);
    ASSERT_NE(first.wait(5s), -1);
    const std::size_t while_dead = replies_in(removed.output());
    std::this_thread::sleep_for(300ms);
    EXPECT_GT(replies_in(removed.output()), while_dead) << "the kernel forwards while no daemon runs";

    const std::string ghost = "\n[[nodes]]\nname = \"ghost\"\naddress = \"192.168.1.99\"\n";
    nodes_[1].config = write_config(1, base_config(1) + ghost, "-removed");
    Process& second = topo_.spawn(*nodes_[1].host, {kDaemon, "-c", nodes_[1].config});
    nodes_[1].daemon = &second;
    ASSERT_TRUE(second.wait_for_output("adopted maps put right for this configuration", 20s)) << second.output();
    std::this_thread::sleep_for(100ms);  // a reply already on its way
    const std::size_t at_adoption = replies_in(removed.output());
    ASSERT_TRUE(second.wait_for_output(" ready: ", 20s)) << second.output();
    EXPECT_TRUE(contains(second.output(), "fabric +0 -1"))
        << "10.0.0.30's fabric entry went first\n" << second.output();
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(replies_in(removed.output()), at_adoption)
        << "10.0.0.30 was removed while node2's daemon was dead\n" << removed.output() << logs();
    // It fails closed like a port a reload removes: set down, so neither tc nor the host sees it.
    EXPECT_TRUE(contains(second.output(), "set down (a tenant port of the previous instance"))
        << second.output();
    EXPECT_TRUE(eventually([&] { return ping_once(*t20_, "10.0.0.10"); }, 5s)) << logs();
    ASSERT_NE(kept.wait(30s), -1);
    EXPECT_TRUE(contains(kept.output(), "1000 packets transmitted, 1000 received")) << kept.output() << logs();
}

// A daemon killed with its maps stamped with another layout (as a daemon whose maps mean
// something else at the same sizes would leave them): the next start does not adopt them, says
// so at warning level (what it found, what it expected, what happens) and rebuilds them; the
// tenants' traffic flows again afterwards.
TEST_F(TwoNodes, PinsOfAnotherMapLayoutAreRebuiltAndTheLogSaysSo) {
    start_both();
    ASSERT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 5s)) << logs();
    Process& first = *nodes_[0].daemon;
    kill(first.pid(), SIGKILL);
    ASSERT_NE(first.wait(5s), -1);
    const std::string stamp = pin_dir(0) + "/" + io::kLayoutPin;
    const int fd = bpf_obj_get(stamp.c_str());
    ASSERT_GE(fd, 0) << "a daemon stamps its pinned maps: " << stamp;
    const __u32 key = 0, other = 999;
    ASSERT_EQ(bpf_map_update_elem(fd, &key, &other, BPF_ANY), 0);
    close(fd);

    Process& second = start_daemon(0);
    const std::string out = second.output();
    const std::string warning = "warning the maps pinned in " + pin_dir(0) +
                                " carry map layout 999; this andromedad uses layout " +
                                std::to_string(ANDROMEDA_MAP_LAYOUT) + ": not adopting them";
    EXPECT_TRUE(contains(out, warning)) << out;
    EXPECT_TRUE(contains(out, "the tenants' kernel path with them")) << out;
    EXPECT_FALSE(contains(out, "adopted the fast path a previous instance left running")) << out;
    EXPECT_TRUE(eventually([&] { return ping_once(*t10_, "10.0.0.20"); }, 10s)) << logs();
    EXPECT_TRUE(ping_once(*t20_, "10.0.0.10"));
}

}  // namespace
}  // namespace andromeda::testing
