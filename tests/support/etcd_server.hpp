// A real etcd for the tests that need one: Debian's /usr/bin/etcd started on free loopback ports
// (or, with a command prefix such as `ip netns exec NS`, inside a namespace on a given address),
// its data in a fresh temporary directory; killed and the directory removed on destruction. It
// can be killed (SIGKILL, as a crash) and started again on the same ports and data.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "etcd/client.hpp"
#include "support/root.hpp"

extern char** environ;

namespace andromeda::testing {

inline constexpr const char* kEtcdBinary = "/usr/bin/etcd";

// A TCP port nothing listens on right now (bound to port 0, then closed).
inline std::uint16_t free_port(const std::string& ip = "127.0.0.1") {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
    socklen_t length = sizeof a;
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) != 0)
        throw std::runtime_error("cannot find a free port on " + ip);
    close(fd);
    return ntohs(a.sin_port);
}

// TLS for the client port: etcd's certificate and key, the CA that signed both sides, and the
// client certificate the server demands (--client-cert-auth) and the probe presents.
struct EtcdTls {
    std::string ca_file;
    std::string server_cert, server_key;
    std::string client_cert, client_key;
};

// A CA, a server certificate for `ip` and a client certificate, made with openssl in `dir`.
inline EtcdTls make_test_certificates(const std::string& dir, const std::string& ip = "127.0.0.1") {
    const std::string script =
        "set -e; cd '" + dir + "'; "
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem -days 2 -subj /CN=test-ca 2>/dev/null; "
        "for who in server client; do "
        "  openssl req -newkey rsa:2048 -nodes -keyout $who-key.pem -out $who.csr -subj /CN=$who 2>/dev/null; "
        "  printf 'subjectAltName=IP:" + ip + "\nextendedKeyUsage=serverAuth,clientAuth\n' > $who.ext; "
        "  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -out $who.pem -days 2 "
        "    -extfile $who.ext 2>/dev/null; "
        "done";
    if (std::system(script.c_str()) != 0) throw std::runtime_error("openssl could not make the test certificates");
    return {dir + "/ca.pem", dir + "/server.pem", dir + "/server-key.pem", dir + "/client.pem", dir + "/client-key.pem"};
}

class EtcdServer {
public:
    // `prefix` runs etcd through another command (e.g. {"ip", "netns", "exec", "ns"}); `ip` is
    // the address it listens on there (the ports are picked free in this namespace).
    explicit EtcdServer(std::vector<std::string> prefix = {}, std::string ip = "127.0.0.1",
                        std::optional<EtcdTls> tls = std::nullopt)
        : prefix_(std::move(prefix)), ip_(std::move(ip)), tls_(std::move(tls)) {
        char dir[] = "/tmp/andromeda-etcd-XXXXXX";
        if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
        dir_ = dir;
        client_port_ = free_port(prefix_.empty() ? ip_ : "127.0.0.1");
        peer_port_ = free_port(prefix_.empty() ? ip_ : "127.0.0.1");
        start();
    }
    ~EtcdServer() {
        kill_now();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    EtcdServer(const EtcdServer&) = delete;
    EtcdServer& operator=(const EtcdServer&) = delete;

    [[nodiscard]] std::string endpoint() const {
        return (tls_ ? "https://" : "http://") + ip_ + ":" + std::to_string(client_port_);
    }
    [[nodiscard]] const std::string& log_path() const { return log_; }
    [[nodiscard]] std::string log() const {
        std::string text;
        if (FILE* f = std::fopen(log_.c_str(), "r")) {
            char buffer[4096];
            for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
            std::fclose(f);
        }
        return text;
    }

    // Starts etcd and waits until it answers (throws after 60 s). A port taken meanwhile by
    // someone else (they are picked free, then etcd binds them) means new ports and another try.
    void start() {
        if (pid_ > 0) return;
        for (int attempt = 0;; ++attempt) {
            if (launch_and_wait()) {
                ports_may_change_ = false;
                return;
            }
            const bool port_taken = log().find("address already in use") != std::string::npos;
            if (!port_taken || attempt == 3 || !ports_may_change_) throw std::runtime_error("etcd did not come up: " + log());
            client_port_ = free_port(ip_);
            peer_port_ = free_port(ip_);
        }
    }

    // SIGKILL, as a crash; start() brings it back with its data.
    void kill_now() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }

    [[nodiscard]] etcd::Config client_config() const {
        etcd::Config config;
        config.endpoints = {endpoint()};
        if (tls_) {
            config.ca_file = tls_->ca_file;
            config.cert_file = tls_->client_cert;
            config.key_file = tls_->client_key;
        }
        return config;
    }
    [[nodiscard]] const std::string& directory() const { return dir_; }

private:
    // Spawns etcd; true once it answers, false when it exits first (its log says why).
    bool launch_and_wait() {
        const std::string client = endpoint();
        const std::string peer = "http://" + ip_ + ":" + std::to_string(peer_port_);
        std::vector<std::string> argv = prefix_;
        for (const std::string& a :
             {std::string(kEtcdBinary), std::string("--name"), std::string("test"), std::string("--data-dir"), dir_ + "/data",
              std::string("--listen-client-urls"), client, std::string("--advertise-client-urls"), client,
              std::string("--listen-peer-urls"), peer, std::string("--initial-advertise-peer-urls"), peer,
              std::string("--initial-cluster"), "test=" + peer, std::string("--log-level"), std::string("warn")})
            argv.push_back(a);
        if (tls_) {
            for (const char* a : {"--cert-file", tls_->server_cert.c_str(), "--key-file", tls_->server_key.c_str(),
                                  "--trusted-ca-file", tls_->ca_file.c_str(), "--client-cert-auth"})
                argv.push_back(a);
        }
        log_ = dir_ + "/etcd.log";
        std::vector<char*> args;
        for (auto& a : argv) args.push_back(a.data());
        args.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
        const int rc = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) throw std::runtime_error(std::string("cannot start etcd: ") + std::strerror(rc));
        etcd::Config config = client_config();
        config.timeout = std::chrono::milliseconds(500);
        etcd::Client probe(config);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        for (;;) {
            try {
                (void)probe.get("/");
                return true;
            } catch (const etcd::EtcdError&) {
            }
            if (waitpid(pid_, nullptr, WNOHANG) == pid_) {  // it gave up (a port in use, say)
                pid_ = -1;
                return false;
            }
            if (std::chrono::steady_clock::now() > deadline) {
                kill_now();
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }

    std::vector<std::string> prefix_;
    std::string ip_;
    std::optional<EtcdTls> tls_;
    std::string dir_;
    std::string log_;
    std::uint16_t client_port_ = 0;
    std::uint16_t peer_port_ = 0;
    pid_t pid_ = -1;
    bool ports_may_change_ = true;  // until etcd has run once: a restart must keep its ports
};

}  // namespace andromeda::testing

// At the top of a test body: skips (or, with ANDROMEDA_REQUIRE_ROOT_TESTS=1, fails) when Debian's
// etcd-server is not installed.
#define ANDROMEDA_REQUIRE_ETCD()                                                                        \
    do {                                                                                                \
        if (access(::andromeda::testing::kEtcdBinary, X_OK) != 0) {                                     \
            if (::andromeda::testing::root_tests_required())                                            \
                FAIL() << "needs /usr/bin/etcd (Debian etcd-server), and ANDROMEDA_REQUIRE_ROOT_TESTS=1 " \
                          "forbids skipping";                                                           \
            GTEST_SKIP() << "needs /usr/bin/etcd: apt-get install etcd-server (scripts/install-deps.sh)";   \
        }                                                                                               \
    } while (0)
