#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <filesystem>
#include <random>

#include "daemon/control_protocol.hpp"
#include "daemon/control_socket.hpp"

namespace andromeda::daemon {
namespace {

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
    for (auto c : {Command::status, Command::stats, Command::fabric, Command::conntrack, Command::reload}) {
        ControlRequest r{c, std::nullopt};
        EXPECT_EQ(request_of(render_request(r)), r);
    }
    const ControlRequest reload{Command::reload, "/etc/andromeda/node.toml"};
    EXPECT_EQ(request_of(render_request(reload)), reload);
}

TEST(ControlProtocol, MalformedRequestsSayWhy) {
    EXPECT_EQ(error_of("{"), "request is not valid JSON");
    EXPECT_EQ(error_of("[1]"), "request must be a JSON object");
    EXPECT_EQ(error_of("{}"), "request has no \"command\" string");
    EXPECT_EQ(error_of(R"({"command":"reboot"})"),
              "unknown command \"reboot\"; expected status, stats, fabric, conntrack or reload");
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

class ControlSocketTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() / ("andromeda-ctl-" + std::to_string(getpid()) + "-" +
                                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
        path_ = (dir_ / "node.sock").string();
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

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
    std::string error;
    bool handler_called = false;
    ASSERT_TRUE(server.start(
        path_,
        [&](const ControlRequest&) {
            handler_called = true;
            return render_ok({});
        },
        error));
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

}  // namespace
}  // namespace andromeda::daemon
