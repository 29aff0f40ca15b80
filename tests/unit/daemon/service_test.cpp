// What andromedad does as a system service, in memory: the conntrack query (filters, paging,
// totals), the journal's priority prefixes, the log level at run time, and health's verdicts.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <set>
#include <sstream>

#include "daemon/conntrack_query.hpp"
#include "daemon/health.hpp"
#include "daemon/logging.hpp"

namespace andromeda::daemon {
namespace {

using namespace std::chrono_literals;

wire::Ipv4Address ip(const char* text) { return *wire::Ipv4Address::parse(text); }

nat::FlowInfo flow(nat::Protocol protocol, const char* tenant, std::uint16_t tenant_port, const char* remote,
                   std::uint16_t remote_port, nat::FlowState state, std::uint16_t nat_port) {
    nat::FlowInfo f;
    f.vni = 100;
    f.protocol = protocol;
    f.state = state;
    f.original = {ip(tenant), tenant_port, ip(remote), remote_port};
    f.translated = {ip("203.0.113.10"), nat_port, ip(remote), remote_port};
    f.age = 2s;
    f.expires_in = 30s;
    return f;
}

std::vector<nat::FlowInfo> table() {
    using nat::FlowState;
    using nat::Protocol;
    return {flow(Protocol::tcp, "10.0.0.20", 40000, "198.51.100.7", 443, FlowState::tcp_established, 1024),
            flow(Protocol::udp, "10.0.0.10", 5353, "198.51.100.53", 53, FlowState::replied, 1025),
            flow(Protocol::tcp, "10.0.0.10", 40001, "198.51.100.7", 80, FlowState::tcp_syn_sent, 1026),
            flow(Protocol::icmp, "10.0.0.10", 7, "198.51.100.7", 0, FlowState::unreplied, 1027),
            flow(Protocol::tcp, "10.0.0.10", 40002, "198.51.100.7", 443, FlowState::tcp_established, 1028)};
}

control::ConntrackReply select(std::vector<nat::FlowInfo> flows, const control::ConntrackQuery& q) {
    auto r = select_flows(std::move(flows), q);
    EXPECT_TRUE(std::holds_alternative<control::ConntrackReply>(r)) << std::get<std::string>(r);
    return std::holds_alternative<control::ConntrackReply>(r) ? std::get<control::ConntrackReply>(r)
                                                              : control::ConntrackReply{};
}

std::string select_error(const control::ConntrackQuery& q) {
    auto r = select_flows(table(), q);
    EXPECT_TRUE(std::holds_alternative<std::string>(r));
    return std::holds_alternative<std::string>(r) ? std::get<std::string>(r) : "";
}

TEST(ConntrackQuery, FiltersMatchOnEitherSideAndTheTotalsSayWhatWasLeftOut) {
    control::ConntrackQuery q;
    const auto all = select(table(), q);
    EXPECT_EQ(all.in_table, 5u);
    EXPECT_EQ(all.total, 5u);
    EXPECT_EQ(all.count, 5u);
    // A stable order: by VNI, protocol (icmp 1, tcp 6, udp 17), then the original tuple.
    ASSERT_EQ(all.flows.size(), 5u);
    EXPECT_EQ(all.flows[0].protocol, "icmp");
    EXPECT_EQ(all.flows[1].original.source_port, 40001);
    EXPECT_EQ(all.flows[2].original.source_port, 40002);
    EXPECT_EQ(all.flows[3].original.source, "10.0.0.20");
    EXPECT_EQ(all.flows[4].protocol, "udp");

    q.address = "10.0.0.10";
    EXPECT_EQ(select(table(), q).total, 4u);
    q.port = 443;  // 10.0.0.10's port 443: none (its port-443 flow has 443 on the remote side)
    EXPECT_EQ(select(table(), q).total, 0u);
    q.address = "198.51.100.7";  // the remote's port 443: two flows
    const auto https = select(table(), q);
    EXPECT_EQ(https.total, 2u);
    EXPECT_EQ(https.in_table, 5u);
    q = {};
    q.address = "203.0.113.10";  // the NAT address is on the translated side of every flow
    q.port = 1026;
    const auto by_nat_port = select(table(), q);
    ASSERT_EQ(by_nat_port.flows.size(), 1u);
    EXPECT_EQ(by_nat_port.flows[0].original.source_port, 40001);
    q = {};
    q.state = "established";
    EXPECT_EQ(select(table(), q).total, 2u);
    q.protocol = "udp";
    EXPECT_EQ(select(table(), q).total, 0u);
    q = {};
    q.protocol = "udp";
    EXPECT_EQ(select(table(), q).total, 1u);
}

TEST(ConntrackQuery, PagesCoverEveryFlowOnceAndAreBounded) {
    std::vector<nat::FlowInfo> many;
    std::mt19937 rng(4);
    for (std::uint16_t i = 0; i < 2500; ++i)
        many.push_back(flow(nat::Protocol::udp, "10.0.0.10", static_cast<std::uint16_t>(10000 + i), "198.51.100.9",
                            static_cast<std::uint16_t>(rng() % 3 + 1), nat::FlowState::replied,
                            static_cast<std::uint16_t>(i)));
    std::shuffle(many.begin(), many.end(), rng);
    control::ConntrackQuery q;
    const auto first = select(many, q);
    EXPECT_EQ(first.count, control::kConntrackDefaultLimit);  // bounded by default, never silently
    EXPECT_EQ(first.total, 2500u);
    std::set<std::uint16_t> seen;
    q.limit = 700;
    for (q.offset = 0; q.offset < 2500; q.offset += q.limit) {
        const auto page = select(many, q);
        EXPECT_EQ(page.total, 2500u);
        EXPECT_EQ(page.offset, q.offset);
        EXPECT_EQ(page.count, std::min<std::uint64_t>(700, 2500 - q.offset));
        for (const auto& f : page.flows) EXPECT_TRUE(seen.insert(f.original.source_port).second);
    }
    EXPECT_EQ(seen.size(), 2500u);
    q.offset = 9999;
    const auto past = select(many, q);
    EXPECT_EQ(past.count, 0u);
    EXPECT_EQ(past.total, 2500u);
}

TEST(ConntrackQuery, AFilterThatCannotMatchSaysWhy) {
    control::ConntrackQuery q;
    q.address = "10.0.0";
    EXPECT_EQ(select_error(q), "address \"10.0.0\" is not an IPv4 address (e.g. 10.0.0.10)");
    q = {};
    q.state = "open";
    EXPECT_EQ(select_error(q),
              "state \"open\" is none of syn_sent, syn_received, established, fin_wait, closing, reset, "
              "unreplied, replied");
    q = {};
    q.protocol = "sctp";
    EXPECT_EQ(select_error(q), "protocol \"sctp\" is none of tcp, udp, icmp");
}

TEST(JournalLogging, EveryLineCarriesItsSyslogPriority) {
    EXPECT_EQ(syslog_priority(spdlog::level::critical), 2);
    EXPECT_EQ(syslog_priority(spdlog::level::err), 3);
    EXPECT_EQ(syslog_priority(spdlog::level::warn), 4);
    EXPECT_EQ(syslog_priority(spdlog::level::info), 6);
    EXPECT_EQ(syslog_priority(spdlog::level::debug), 7);
    EXPECT_EQ(with_priority("reload refused:\n  node.toml:3: bad", 3), "<3>reload refused:\n<3>  node.toml:3: bad\n");
    EXPECT_EQ(with_priority("one", 6), "<6>one\n");
    EXPECT_EQ(with_priority("", 4), "<4>\n");
}

TEST(JournalLogging, JournalStreamNamesTheStreamByDeviceAndInode) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    struct stat st {};
    ASSERT_EQ(fstat(fds[1], &st), 0);
    const std::string mine = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
    EXPECT_TRUE(is_journal_stream(fds[1], mine.c_str()));
    EXPECT_FALSE(is_journal_stream(fds[1], nullptr));
    EXPECT_FALSE(is_journal_stream(fds[1], (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1)).c_str()));
    EXPECT_FALSE(is_journal_stream(fds[1], (mine + "x").c_str()));
    EXPECT_FALSE(is_journal_stream(fds[1], "garbage"));
    int other[2];
    ASSERT_EQ(pipe(other), 0);
    EXPECT_FALSE(is_journal_stream(other[1], mine.c_str()));  // another pipe: another inode
    for (const int fd : {fds[0], fds[1], other[0], other[1]}) close(fd);
}

TEST(JournalLogging, TheLevelChangesAtRunTime) {
    std::ostringstream out;
    auto logger =
        std::make_shared<spdlog::logger>("service_test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
    logger->set_pattern("%l %v");
    const auto previous = spdlog::default_logger();
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::info);
    spdlog::debug("hidden");
    EXPECT_EQ(set_log_level(std::nullopt).level, "info");
    const auto to_debug = set_log_level("debug");
    EXPECT_EQ(to_debug.previous, "info");
    EXPECT_EQ(to_debug.level, "debug");
    spdlog::debug("shown");
    const auto to_warn = set_log_level("warn");
    EXPECT_EQ(to_warn.previous, "debug");
    EXPECT_EQ(to_warn.level, "warn");
    spdlog::info("hidden again");
    spdlog::warn("a warning");
    const std::string text = out.str();
    EXPECT_EQ(text.find("hidden"), std::string::npos) << text;
    EXPECT_NE(text.find("debug shown"), std::string::npos) << text;
    EXPECT_NE(text.find("info log level debug (was info)"), std::string::npos) << text;
    EXPECT_NE(text.find("info log level warn (was debug)"), std::string::npos) << text;
    EXPECT_NE(text.find("warning a warning"), std::string::npos) << text;
    spdlog::set_default_logger(previous);
}

TEST(Health, EachFactIsAProblemNamedForWhatToCheck) {
    EXPECT_TRUE(evaluate_health({}).healthy);
    EXPECT_TRUE(evaluate_health({}).problems.empty());
    HealthFacts etcd_up;
    etcd_up.etcd_configured = true;
    etcd_up.etcd_connected = true;
    EXPECT_TRUE(evaluate_health(etcd_up).healthy);

    HealthFacts f;
    f.etcd_configured = true;
    f.etcd_error = "connecting to http://10.0.0.5:2379: Connection refused";
    f.detached_programs = {"eth1: its XDP program is no longer attached to eth1"};
    f.unserved_tenant_ports = {"endpoint 10.0.0.10 (vni 100): its tenant port tap1 is not served"};
    f.last_reload_error = "node.toml:4: vni: 0 is not a VNI";
    f.worker_failures = {"worker 0: gone"};
    const auto r = evaluate_health(f);
    EXPECT_FALSE(r.healthy);
    ASSERT_EQ(r.problems.size(), 5u);
    EXPECT_EQ(r.problems[0].check, "etcd");
    EXPECT_EQ(r.problems[0].detail,
              "etcd unreachable, forwarding with the last fabric it gave: connecting to http://10.0.0.5:2379: "
              "Connection refused");
    EXPECT_EQ(r.problems[1].check, "port");
    EXPECT_EQ(r.problems[2].check, "port");
    EXPECT_EQ(r.problems[3].check, "reload");
    EXPECT_NE(r.problems[3].detail.find("node.toml:4: vni"), std::string::npos);
    EXPECT_EQ(r.problems[4].check, "worker");
}

TEST(Health, TheKernelIsAskedAboutInterfacesThatAreGone) {
    // No interface has index 0x7ffffff0 in this namespace: the query says so, it does not guess.
    EXPECT_EQ(xdp_attached_now(0x7ffffff0u), std::nullopt);
    EXPECT_EQ(tc_ingress_attached_now(0x7ffffff0u), std::nullopt);
    // Loopback exists and runs no XDP program of ours.
    EXPECT_EQ(xdp_attached_now(1), std::optional<bool>(false));
}

}  // namespace
}  // namespace andromeda::daemon
