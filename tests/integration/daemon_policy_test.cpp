// Security groups end to end (issue 29), on two andromedad hosts with tenants at default offloads,
// on the fast path's registration and the slow path's (.slowpath):
//
//   node1: web 10.0.0.10 (group web)   app 10.0.0.11 (group app)
//   node2: admin 10.0.0.20 (no group)  app2 10.0.0.21 (group app)
//
//   web: ingress allow tcp/80 from group app; tcp/22 from 10.0.0.20/32; icmp from the VPC.
//   The defaults: ingress denied, egress allowed.
//
// Every allowed pair connects with nc, every other is refused and counted as policy_denied at the
// host of the endpoint whose rule refused it; replies need no rule; a reload that revokes the ssh
// rule stops an open ssh-port stream within a second; a tenant sending as another's address gets
// nowhere (port security first).
#include <fstream>
#include <string>

#include "fabric_fixture.hpp"

namespace andromeda::testing {
namespace {

const std::string kGroups = R"([[vpc.security_group]]
name = "web"
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "tcp"
ports = [80]
remote_groups = ["app"]
priority = 100
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "tcp"
ports = [22]
remote_cidrs = ["10.0.0.20/32"]
priority = 110
[[vpc.security_group.rule]]
direction = "ingress"
protocol = "icmp"
remote_cidrs = ["10.0.0.0/24"]
priority = 120
[[vpc.security_group]]
name = "app"
)";

// What both fixtures do: reload every node from the fixture's description, and keep a stream of
// lines flowing over one TCP connection to watch it stop.
class PolicyFabric : public Fabric {
protected:
    void reload_all() {
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            std::ofstream(nodes_[i].config) << with_path_mode(config_text(i));
            const auto r = ctl(i, {"reload"});
            ASSERT_TRUE(r.ok()) << r.output << logs();
        }
    }

    // `from` sends a line every 50 ms to `to`:`port` (nc, for about 10 s); returns once lines arrive.
    void start_stream(const Endpoint& from, const Endpoint& to, int port) {
        const std::string p = std::to_string(port);
        stream_file_ = "/tmp/" + topo_.prefix() + "stream";
        files_.push_back(stream_file_);
        stream_server_ = &topo_.spawn(*to.ns, {"sh", "-c", "exec timeout 12 nc -l " + p + " > " + stream_file_});
        ASSERT_TRUE(listening(*to.ns, port));
        stream_client_ = &topo_.spawn(
            *from.ns, {"sh", "-c", "while :; do echo line; sleep 0.05; done | timeout 10 nc " + to.ip + " " + p});
        ASSERT_TRUE(eventually([&] { return streamed() > 50; }, 5s)) << "the stream never started" << logs();
    }
    std::uintmax_t streamed() const {
        return std::filesystem::exists(stream_file_) ? std::filesystem::file_size(stream_file_) : 0;
    }
    // Nothing more arrives from one second after the change on.
    void expect_stream_stopped(const char* what) {
        std::this_thread::sleep_for(1s);
        const auto after_one_second = streamed();
        std::this_thread::sleep_for(2s);
        EXPECT_EQ(streamed(), after_one_second) << what;
    }
    void stop_stream() {
        if (stream_client_ != nullptr) stream_client_->stop(1s);
        if (stream_server_ != nullptr) stream_server_->stop(1s);
    }

    std::string stream_file_;
    Process* stream_server_ = nullptr;
    Process* stream_client_ = nullptr;
};

class SecurityGroups : public PolicyFabric {
protected:
    void SetUp() override {
        Fabric::SetUp();
        if (IsSkipped()) return;
        add_nodes(2);
        blue_ = add_vpc("blue", 100);
        vpcs_[blue_].extra = kGroups;
        web_ = &add_endpoint(blue_, 0, "10.0.0.10", "02:00:00:00:00:10");
        web_->extra = "groups = [\"web\"]\n";
        app_ = &add_endpoint(blue_, 0, "10.0.0.11", "02:00:00:00:00:11");
        app_->extra = "groups = [\"app\"]\n";
        admin_ = &add_endpoint(blue_, 1, "10.0.0.20", "02:00:00:00:00:20");
        app2_ = &add_endpoint(blue_, 1, "10.0.0.21", "02:00:00:00:00:21");
        app2_->extra = "groups = [\"app\"]\n";
        start_all();
    }

    // Whether `from` opens a TCP connection to `to`:`port` (a listener there answers "hello").
    bool connects(const Endpoint& from, const Endpoint& to, int port) {
        const std::string p = std::to_string(port);
        Process& server = topo_.spawn(*to.ns, {"sh", "-c", "echo hello | timeout 5 nc -l -N " + p});
        if (!listening(*to.ns, port)) {
            ADD_FAILURE() << "no listener on " << to.ip << ":" << p;
            return false;
        }
        const auto r = from.ns->try_run({"sh", "-c", "timeout 3 nc -w 2 " + to.ip + " " + p + " </dev/null"}, 10s);
        server.stop(1s);
        return contains(r.output, "hello");
    }

    std::uint64_t denied(std::size_t node) const { return counter(node, "dataplane", "drop_policy_denied"); }

    void rewrite_and_reload(const std::string& groups) {
        vpcs_[blue_].extra = groups;
        reload_all();
    }

    std::size_t blue_ = 0;
    Endpoint* web_ = nullptr;
    Endpoint* app_ = nullptr;
    Endpoint* admin_ = nullptr;
    Endpoint* app2_ = nullptr;
};

TEST_F(SecurityGroups, AllowedPairsConnectAndEveryOtherIsRefusedWhereItsRuleIs) {
    ASSERT_TRUE(eventually([&] { return ping_once(*admin_->ns, web_->ip); }, 10s)) << logs();
    // tcp/80 from app: the local one and the remote one.
    EXPECT_TRUE(connects(*app_, *web_, 80)) << logs();
    EXPECT_TRUE(connects(*app2_, *web_, 80)) << logs();
    // tcp/22 from 10.0.0.20 only.
    EXPECT_TRUE(connects(*admin_, *web_, 22)) << logs();

    const std::uint64_t node1_before = denied(0);
    const std::uint64_t node2_before = denied(1);
    EXPECT_FALSE(connects(*admin_, *web_, 80));  // admin is in no group
    EXPECT_FALSE(connects(*app_, *web_, 22));    // app is not 10.0.0.20
    EXPECT_FALSE(connects(*app2_, *web_, 443));  // no rule for 443
    // Refused by web's ingress, on web's host; node2 sent them (egress is allowed).
    EXPECT_GE(denied(0), node1_before + 3);
    EXPECT_EQ(denied(1), node2_before);

    // admin has no rules: its ingress default denies web's connection, on admin's host; web's
    // egress (allowed) left node1. And app2 -> admin likewise, both on node2.
    EXPECT_FALSE(connects(*web_, *admin_, 8080));
    EXPECT_FALSE(connects(*app2_, *admin_, 8080));
    EXPECT_GE(denied(1), node2_before + 2);
    // Pings: icmp to web from the VPC; to admin, nothing.
    EXPECT_TRUE(ping_once(*app2_->ns, web_->ip));
    EXPECT_FALSE(ping_once(*web_->ns, admin_->ip));
    // The gateway answers everyone, whatever the groups.
    EXPECT_TRUE(ping_once(*admin_->ns, "10.0.0.1"));

    // The policy view counts the rule that decided.
    const nlohmann::json policy = ctl_json(0, "policy");
    bool found = false;
    for (const auto& rule : policy["rules"])
        if (rule["group"] == "web" && rule["index"] == 1) {
            found = true;
            EXPECT_GE(rule["hits"].get<std::uint64_t>(), 1u) << rule.dump();
        }
    EXPECT_TRUE(found) << policy.dump();
}

TEST_F(SecurityGroups, RepliesFlowBothWaysWithoutRules) {
    // web opens to app2 (egress allowed; app2's ingress default denies new flows, but this is a
    // reply path test: app2 -> web:80 is allowed, and web's answers are replies everywhere).
    const auto [blob, digest] = random_file("blob", 5'000'000);
    ASSERT_NO_FATAL_FAILURE(send_file(*app2_, *web_, 80, blob, digest));
    // And data the other way on a connection app2 opened: web sends the file back over it.
    const std::string received = "/tmp/" + topo_.prefix() + "back";
    files_.push_back(received);
    Process& server = topo_.spawn(*web_->ns, {"sh", "-c", "exec timeout 30 nc -l -N 80 < " + blob});
    ASSERT_TRUE(listening(*web_->ns, 80));
    const auto r = app2_->ns->try_run({"sh", "-c", "nc -w 5 " + web_->ip + " 80 </dev/null > " + received}, 60s);
    server.wait(10s);
    EXPECT_TRUE(contains(run_command({"sha256sum", received}).output, digest)) << r.output << logs();
    if (!fast_path_on()) return;
    // On the fast path the kernel carried the established flows (the flow cache the firewall
    // programs, bpf/lib/policy.h): the pipeline saw their first packets and installed them.
    std::uint64_t kernel = 0, installs = 0;
    for (const std::size_t node : {0u, 1u}) {
        kernel += counter(node, "fastpath", "policy_packets");
        installs += counter(node, "policy_offload", "installs");
    }
    EXPECT_GT(kernel, 100u) << logs();
    EXPECT_GE(installs, 2u) << logs();
}

TEST_F(SecurityGroups, AReloadThatRevokesARuleStopsAnOpenConnectionWithinASecond) {
    ASSERT_TRUE(eventually([&] { return ping_once(*admin_->ns, web_->ip); }, 10s)) << logs();
    ASSERT_NO_FATAL_FAILURE(start_stream(*admin_, *web_, 22));

    std::string revoked = kGroups;
    const auto ssh = revoked.find("ports = [22]");
    revoked.replace(ssh, 12, "ports = [2222]");
    ASSERT_NO_FATAL_FAILURE(rewrite_and_reload(revoked));
    expect_stream_stopped("the revoked connection still carries data");
    EXPECT_GT(counter(0, "dataplane", "drop_policy_denied"), 0u);
    // New connections to 22 are refused too, and the rule's new port is open.
    EXPECT_FALSE(connects(*admin_, *web_, 22));
    EXPECT_TRUE(connects(*admin_, *web_, 2222));
    stop_stream();
}

TEST_F(SecurityGroups, SpoofingAMembersAddressGetsNowhere) {
    ASSERT_TRUE(eventually([&] { return ping_once(*admin_->ns, web_->ip); }, 10s)) << logs();
    // admin claims app2's address (a member of app, which web lets in on 80).
    admin_->ns->run({"ip", "addr", "add", "10.0.0.21/32", "dev", "eth0"});
    // Port security drops it: in the kernel (fast path registration) or in the pipeline.
    auto spoofed = [&] {
        const nlohmann::json s = stats(1);
        return stat(s, "fastpath", "drop_spoofed_ip") + stat(s, "dataplane", "drop_spoofed_source_ip");
    };
    const auto before = spoofed();
    Process& server = topo_.spawn(*web_->ns, {"sh", "-c", "echo hello | timeout 5 nc -l -N 80"});
    ASSERT_TRUE(listening(*web_->ns, 80));
    const auto r = admin_->ns->try_run({"sh", "-c", "timeout 3 nc -w 2 -s 10.0.0.21 " + web_->ip + " 80 </dev/null"}, 10s);
    server.stop(1s);
    EXPECT_FALSE(contains(r.output, "hello"));
    EXPECT_GT(spoofed(), before) << logs();
}

}  // namespace
}  // namespace andromeda::testing

namespace andromeda::testing {
namespace {

// A VPC that was open gets security groups by a reload: its traffic, on the kernel fast path
// until then, is judged from the reload on (the VPC leaves the fast path), open connections
// included.
class OpenVpcGetsGroups : public PolicyFabric {
protected:
    void SetUp() override {
        Fabric::SetUp();
        if (IsSkipped()) return;
        add_nodes(2);
        blue_ = add_vpc("blue", 100);
        web_ = &add_endpoint(blue_, 0, "10.0.0.10", "02:00:00:00:00:10");
        other_ = &add_endpoint(blue_, 1, "10.0.0.20", "02:00:00:00:00:20");
        start_all();
    }
    std::size_t blue_ = 0;
    Endpoint* web_ = nullptr;
    Endpoint* other_ = nullptr;
};

TEST_F(OpenVpcGetsGroups, AReloadThatAddsGroupsStopsWhatTheyDoNotAllow) {
    ASSERT_TRUE(eventually([&] { return ping_once(*other_->ns, web_->ip); }, 10s)) << logs();
    ASSERT_NO_FATAL_FAILURE(start_stream(*other_, *web_, 22));

    // web gets a group that lets only tcp/80 in; nothing else changes.
    vpcs_[blue_].extra = "[[vpc.security_group]]\nname = \"web\"\n[[vpc.security_group.rule]]\ndirection = \"ingress\"\n"
                         "protocol = \"tcp\"\nports = [80]\n";
    web_->extra = "groups = [\"web\"]\n";
    ASSERT_NO_FATAL_FAILURE(reload_all());
    expect_stream_stopped("the connection the new group does not allow still carries data");
    EXPECT_GT(counter(0, "dataplane", "drop_policy_denied"), 0u) << logs();
    EXPECT_FALSE(ping_once(*other_->ns, web_->ip));
    stop_stream();
}

}  // namespace
}  // namespace andromeda::testing
