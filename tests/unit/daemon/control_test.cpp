#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <future>
#include <random>
#include <thread>
#include <vector>

#include "control/client.hpp"
#include "control/protocol.hpp"
#include "daemon/control_server.hpp"
#include "support/root.hpp"
#include "support/sanitizer_scale.hpp"

namespace andromeda::daemon {
namespace {

using namespace andromeda::control;

ControlRequest request_of(std::string_view line) {
    auto parsed = parse_request(line);
    EXPECT_TRUE(std::holds_alternative<ControlRequest>(parsed)) << line;
    return std::holds_alternative<ControlRequest>(parsed) ? std::get<ControlRequest>(parsed) : ControlRequest{};
}

std::string error_of(std::string_view line) {
    auto parsed = parse_request(line);
    EXPECT_TRUE(std::holds_alternative<ProtocolError>(parsed)) << line;
    return std::holds_alternative<ProtocolError>(parsed) ? std::get<ProtocolError>(parsed).message : "";
}

TEST(ControlProtocol, RequestsRoundTrip) {
    for (auto c : {Command::status, Command::stats, Command::fabric, Command::conntrack, Command::reload,
                   Command::health, Command::log_level}) {
        ControlRequest r{c, std::nullopt};
        EXPECT_EQ(request_of(render_request(r)), r);
    }
    const ControlRequest reload{Command::reload, "/etc/andromeda/node.toml"};
    EXPECT_EQ(request_of(render_request(reload)), reload);
    for (const auto level : kLogLevels) {
        ControlRequest set{Command::log_level, std::nullopt, std::string(level)};
        EXPECT_EQ(request_of(render_request(set)), set);
    }
    ControlRequest flows{Command::conntrack};
    flows.conntrack = {200, 50, "10.0.0.10", 80, "established", "tcp"};
    EXPECT_EQ(render_request(flows),
              R"({"address":"10.0.0.10","command":"conntrack","limit":50,"offset":200,"port":80,"protocol":"tcp","state":"established"})");
    EXPECT_EQ(request_of(render_request(flows)), flows);
    // The defaults are what a request without the keys means.
    EXPECT_EQ(request_of(R"({"command":"conntrack"})").conntrack, ConntrackQuery{});
    EXPECT_EQ(request_of(R"({"command":"conntrack"})").conntrack.limit, kConntrackDefaultLimit);
    EXPECT_EQ(request_of(R"({"command":"conntrack","port":0})").conntrack.port, std::uint16_t{0});
}

TEST(ControlProtocol, ConntrackAndLogLevelKeysAreCheckedWithTheReason) {
    EXPECT_EQ(error_of(R"({"command":"conntrack","limit":0})"), "\"limit\" must be a whole number from 1 to 10000");
    EXPECT_EQ(error_of(R"({"command":"conntrack","limit":10001})"), "\"limit\" must be a whole number from 1 to 10000");
    EXPECT_EQ(error_of(R"({"command":"conntrack","limit":-1})"), "\"limit\" must be a whole number from 1 to 10000");
    EXPECT_EQ(error_of(R"({"command":"conntrack","limit":1.5})"), "\"limit\" must be a whole number from 1 to 10000");
    EXPECT_EQ(error_of(R"({"command":"conntrack","offset":"3"})"), "\"offset\" must be a whole number from 0 to 4294967295");
    EXPECT_EQ(error_of(R"({"command":"conntrack","port":65536})"), "\"port\" must be a whole number from 0 to 65535");
    EXPECT_EQ(error_of(R"({"command":"conntrack","address":""})"), "\"address\" must be a non-empty string");
    EXPECT_EQ(error_of(R"({"command":"conntrack","state":7})"), "\"state\" must be a non-empty string");
    EXPECT_EQ(error_of(R"({"command":"conntrack","protocol":")" + std::string(65, 'x') + "\"}"),
              "\"protocol\" is longer than 64 bytes");
    EXPECT_EQ(error_of(R"({"command":"conntrack","file":"x"})"), "unexpected key \"file\" for command conntrack");
    EXPECT_EQ(error_of(R"({"command":"status","limit":5})"), "unexpected key \"limit\" for command status");
    EXPECT_EQ(error_of(R"({"command":"log-level","level":"verbose"})"),
              "\"level\" must be one of trace, debug, info, warn, error, critical, off");
    EXPECT_EQ(error_of(R"({"command":"log-level","level":3})"),
              "\"level\" must be one of trace, debug, info, warn, error, critical, off");
    EXPECT_EQ(error_of(R"({"command":"health","level":"info"})"), "unexpected key \"level\" for command health");
    EXPECT_EQ(error_of(R"({"command":"reload","level":"info"})"), "unexpected key \"level\" for command reload");
}

TEST(ControlProtocol, MalformedRequestsSayWhy) {
    EXPECT_EQ(error_of("{"), "request is not valid JSON");
    EXPECT_EQ(error_of("[1]"), "request must be a JSON object");
    EXPECT_EQ(error_of("{}"), "request has no \"command\" string");
    EXPECT_EQ(error_of(R"({"command":"reboot"})"),
              "unknown command \"reboot\"; expected status, stats, fabric, conntrack, policy, reload, health or log-level");
    EXPECT_EQ(error_of(R"({"command":"status","file":"x"})"), "unexpected key \"file\" for command status");
    EXPECT_EQ(error_of(R"({"command":"reload","file":""})"), "\"file\" must be a non-empty string");
    EXPECT_EQ(error_of(std::string(kMaxRequestBytes + 1, ' ')), "request is 65537 bytes; the limit is 65536");
    EXPECT_EQ(error_of(std::string(100, '[') + std::string(100, ']')), "request nests deeper than 16 levels");
}

TEST(ControlProtocol, ResponsesRoundTrip) {
    auto ok = std::get<ControlResponse>(parse_response(render_ok({{"uptime_s", 5}})));
    EXPECT_TRUE(ok.ok);
    EXPECT_EQ(ok.result["uptime_s"], 5);
    auto err = std::get<ControlResponse>(parse_response(render_error("nope")));
    EXPECT_FALSE(err.ok);
    EXPECT_EQ(err.error, "nope");
    EXPECT_TRUE(std::holds_alternative<ProtocolError>(parse_response("garbage")));
}

TEST(ControlProtocol, RandomBytesNeverCrash) {
    std::mt19937 rng(6);
    const std::string alphabet = "{}[]\":,\\ abcdefgilmnorstu0123456789";
    for (int i = 0; i < 20000; ++i) {
        std::string s(rng() % 80, ' ');
        for (auto& c : s) c = i % 2 ? static_cast<char>(rng()) : alphabet[rng() % alphabet.size()];
        (void)parse_request(s);
        (void)parse_response(s);
    }
}

// Requests built from the keys the parser knows, with values of every JSON type and size: each
// parses or is refused with a reason, and what parses renders back to the same request.
TEST(ControlProtocol, RandomKeyedRequestsParseOrSayWhyAndRoundTrip) {
    std::mt19937 rng(32);
    const std::vector<std::string> commands = {"status", "stats", "fabric", "conntrack", "reload", "health", "log-level"};
    const std::vector<std::string> keys = {"offset", "limit", "address", "port", "state", "protocol", "level", "file"};
    const std::vector<nlohmann::json> values = {0, 1, 80, 65535, 65536, 10000, 10001, -1, 4294967295ull, 4294967296ull, 1.5,
                                                "", "info", "debug", "10.0.0.10", "established", "tcp", std::string(70, 'a'),
                                                nullptr, true, nlohmann::json::array(), nlohmann::json::object()};
    int accepted = 0;
    const int rounds = andromeda::test::sanitizer_scaled(20000);
    for (int i = 0; i < rounds; ++i) {
        nlohmann::json j = {{"command", commands[rng() % commands.size()]}};
        for (unsigned k = rng() % 3; k > 0; --k) j[keys[rng() % keys.size()]] = values[rng() % values.size()];
        const auto parsed = parse_request(j.dump());
        if (const auto* e = std::get_if<ProtocolError>(&parsed)) {
            EXPECT_FALSE(e->message.empty()) << j.dump();
            continue;
        }
        ++accepted;
        const auto& request = std::get<ControlRequest>(parsed);
        EXPECT_EQ(request_of(render_request(request)), request) << j.dump();
        EXPECT_GE(request.conntrack.limit, 1u);
        EXPECT_LE(request.conntrack.limit, kConntrackMaxLimit);
    }
    EXPECT_GT(accepted, rounds / 20);  // the generator reaches the accepting paths too
}

class ControlSocketTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() / ("andromeda-ctl-" + std::to_string(getpid()) + "-" +
                                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
        path_ = (dir_ / "node.sock").string();
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    // Starts `server` on path_ with a handler that answers ok and records that it ran.
    ::testing::AssertionResult start_recording(ControlServer& server, bool& handler_called) {
        std::string error;
        if (server.start(
                path_,
                [&handler_called](const ControlRequest&) {
                    handler_called = true;
                    return render_ok({});
                },
                error))
            return ::testing::AssertionSuccess();
        return ::testing::AssertionFailure() << error;
    }

    std::filesystem::path dir_;
    std::string path_;
};

TEST_F(ControlSocketTest, ServesRequestsOwnerOnly) {
    ControlServer server;
    std::string error;
    ASSERT_TRUE(server.start(
        path_, [](const ControlRequest& r) { return render_ok({{"command", to_string(r.command)}, {"file", r.file.value_or("")}}); },
        error))
        << error;
    EXPECT_EQ(std::filesystem::status(path_).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    auto r = send_control_request(path_, {Command::reload, "/tmp/x.toml"});
    ASSERT_TRUE(std::holds_alternative<ControlResponse>(r));
    EXPECT_EQ(std::get<ControlResponse>(r).result["command"], "reload");
    EXPECT_EQ(std::get<ControlResponse>(r).result["file"], "/tmp/x.toml");
    server.stop();
    EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(ControlSocketTest, SecondInstanceOnTheSamePathIsRefused) {
    ControlServer a, b;
    std::string error;
    ASSERT_TRUE(a.start(path_, [](const ControlRequest&) { return render_ok({}); }, error)) << error;
    EXPECT_FALSE(b.start(path_, [](const ControlRequest&) { return render_ok({}); }, error));
    EXPECT_NE(error.find("another andromedad already serves"), std::string::npos) << error;
}

// Connects, sends `line` as is, and returns the raw response line.
std::string exchange_raw(const std::string& path, const std::string& line) {
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    std::string response;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size())) {
        char buf[512];
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0) response.append(buf, static_cast<std::size_t>(n));
    }
    close(fd);
    return response;
}

TEST_F(ControlSocketTest, StaleSocketOfACrashedInstanceIsReplaced) {
    // What a SIGKILLed daemon leaves: a bound socket file that nobody listens on.
    std::filesystem::create_directories(dir_);
    const int dead = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(bind(dead, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    close(dead);
    ASSERT_TRUE(std::filesystem::exists(path_));

    ControlServer server;
    std::string error;
    ASSERT_TRUE(server.start(path_, [](const ControlRequest&) { return render_ok({{"alive", true}}); }, error)) << error;
    auto r = send_control_request(path_, {Command::status, std::nullopt});
    ASSERT_TRUE(std::holds_alternative<ControlResponse>(r));
    EXPECT_EQ(std::get<ControlResponse>(r).result["alive"], true);
}

TEST_F(ControlSocketTest, BadRequestGetsAnErrorResponse) {
    ControlServer server;
    bool handler_called = false;
    ASSERT_TRUE(start_recording(server, handler_called));
    const auto response = exchange_raw(path_, "this is not json\n");
    EXPECT_EQ(response, "{\"error\":\"bad request: request is not valid JSON\",\"ok\":false}\n");
    server.stop();
    EXPECT_FALSE(handler_called);
}

TEST_F(ControlSocketTest, NoDaemonIsAClearError) {
    auto r = send_control_request(path_, {Command::status, std::nullopt});
    ASSERT_TRUE(std::holds_alternative<ProtocolError>(r));
    EXPECT_NE(std::get<ProtocolError>(r).message.find("is it running?"), std::string::npos);
}


// Opens a connection and sends nothing: the client a stuck script or a half-open tool leaves.
int connect_silently(const std::string& path) {
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
    return fd;
}

TEST_F(ControlSocketTest, SilentClientsHoldUpNoOneElse) {
    ControlServer server;
    std::string error;
    int served = 0;  // the handler runs on the server's one thread: no lock needed
    ASSERT_TRUE(server.start(path_, [&](const ControlRequest&) { return render_ok({{"served", ++served}}); }, error))
        << error;
    std::vector<int> silent;
    for (int i = 0; i < 4; ++i) silent.push_back(connect_silently(path_));
    // The server closes a silent client after 5 s; a client that waits behind them would need
    // that long. 1.5 s is what a served request may take here, on a loaded machine too.
    auto r = send_control_request(path_, {Command::status, std::nullopt}, 1500);
    ASSERT_TRUE(std::holds_alternative<ControlResponse>(r)) << std::get<ProtocolError>(r).message;
    EXPECT_EQ(std::get<ControlResponse>(r).result["served"], 1);
    // A request sent in pieces, with another client served in between.
    const int slow = connect_silently(path_);
    ASSERT_EQ(write(slow, "{\"command\":", 11), 11);
    auto between = send_control_request(path_, {Command::stats, std::nullopt}, 1500);
    ASSERT_TRUE(std::holds_alternative<ControlResponse>(between));
    EXPECT_EQ(std::get<ControlResponse>(between).result["served"], 2);
    ASSERT_EQ(write(slow, "\"fabric\"}\n", 10), 10);
    char buf[128] = {};
    ssize_t got = 0, n;
    while (got < static_cast<ssize_t>(sizeof buf) - 1 && (n = read(slow, buf + got, sizeof buf - 1 - static_cast<std::size_t>(got))) > 0) got += n;
    EXPECT_STREQ(buf, "{\"ok\":true,\"result\":{\"served\":3}}\n");
    close(slow);
    for (int fd : silent) close(fd);
}

TEST_F(ControlSocketTest, ManyClientsAtOnceEachGetTheirOwnAnswer) {
    ControlServer server;
    std::string error;
    ASSERT_TRUE(server.start(
        path_, [](const ControlRequest& r) { return render_ok({{"file", r.file.value_or("")}}); }, error))
        << error;
    std::vector<std::future<std::string>> answers;
    for (int i = 0; i < 24; ++i) {
        answers.push_back(std::async(std::launch::async, [this, i] {
            auto r = send_control_request(path_, {Command::reload, "/tmp/" + std::to_string(i) + ".toml"});
            if (const auto* e = std::get_if<ProtocolError>(&r)) return "error: " + e->message;
            return std::get<ControlResponse>(r).result.value("file", std::string("?"));
        }));
    }
    for (int i = 0; i < 24; ++i) EXPECT_EQ(answers[static_cast<std::size_t>(i)].get(), "/tmp/" + std::to_string(i) + ".toml");
}

// The socket is owner-only, but the server also checks the peer's credentials (SO_PEERCRED):
// with the socket's mode opened to everyone, a client running as another user is still refused,
// and the handler never runs.
TEST_F(ControlSocketTest, PeerOfAnotherUserIsRefused) {
    ANDROMEDA_REQUIRE_ROOT();
    ControlServer server;
    bool handler_called = false;
    ASSERT_TRUE(start_recording(server, handler_called));
    ASSERT_EQ(chmod(path_.c_str(), 0666), 0);
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);

    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    static constexpr char kRequest[] = "{\"command\":\"status\"}\n";
    static constexpr char kRefusal[] = "{\"error\":\"permission denied: the control socket is for root only\",\"ok\":false}\n";
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        // Only async-signal-safe calls from here: the parent has threads.
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
        const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) _exit(11);
        // The refusal comes on connect, before any request: the server never reads one from a
        // refused peer (and a request written after its close would raise SIGPIPE here).
        (void)!send(fd, kRequest, sizeof kRequest - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        char buf[256];
        ssize_t got = 0, n;
        while (got < static_cast<ssize_t>(sizeof buf) && (n = read(fd, buf + got, sizeof buf - static_cast<std::size_t>(got))) > 0) got += n;
        _exit(got == static_cast<ssize_t>(sizeof kRefusal - 1) && std::memcmp(buf, kRefusal, sizeof kRefusal - 1) == 0 ? 0 : 12);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "10: could not drop to nobody, 11: could not connect, 12: not refused as expected";
    server.stop();
    EXPECT_FALSE(handler_called);
}

}  // namespace
}  // namespace andromeda::daemon
