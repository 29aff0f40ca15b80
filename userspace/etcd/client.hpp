// A client of etcd's v3 API over libcurl: the key-value calls andromedad and andromedactl need,
// leases, and a streaming watch. Most calls go through etcd's JSON gateway (POST /v3/kv/put,
// /v3/watch, ...); reads (range_prefix, get) are gRPC calls to KV.Range over HTTP/2, on the same
// endpoints, encoded by hand (grpc_wire.hpp says why: a 100k-key listing is 7x faster).
//
// Why the gateway and not gRPC for the rest: etcd's .proto files are not packaged for Debian and
// grpc++ would be a large dependency for calls whose size does not matter; the streaming watch is
// one chunked HTTP response, and libcurl brings TLS (CA, client certificate and key) and endpoint
// failover for both. Keys and values are base64 on the gateway's wire and plain strings here;
// revisions are int64.
//
// Every call but watch() is bounded by Config::timeout and tries the endpoints in turn, starting
// with the last one that answered. Failures throw EtcdError, which says which endpoint(s) and why.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

using CURL = void;  // libcurl's easy handle (curl/curl.h), without including it here
struct curl_slist;

namespace andromeda::etcd {

struct Config {
    std::vector<std::string> endpoints;  // "http://127.0.0.1:2379", "https://etcd1:2379"
    std::string ca_file;                 // TLS: the CA that signed the servers' certificates
    std::string cert_file;               // TLS client certificate and its key, when etcd asks for one
    std::string key_file;
    std::string username;  // etcd authentication, when enabled
    std::string password;
    std::chrono::milliseconds timeout{3000};  // per call (not the watch)
};

class EtcdError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct KeyValue {
    std::string key;
    std::string value;
    std::int64_t create_revision = 0;
    std::int64_t mod_revision = 0;
    std::int64_t version = 0;
    std::int64_t lease = 0;
};

struct RangeResult {
    std::vector<KeyValue> kvs;
    std::int64_t revision = 0;  // the store's revision the range was read at
};

struct WatchEvent {
    enum class Type { put, erase } type = Type::put;
    KeyValue kv;  // for erase: the key, and the revision it was deleted at (mod_revision)
};

// One watch response: the events of one or more revisions, in order.
struct WatchBatch {
    std::int64_t revision = 0;
    std::vector<WatchEvent> events;
};

struct WatchEnd {
    enum class Why { stopped, compacted, broken } why = Why::stopped;
    std::int64_t compact_revision = 0;  // compacted: the oldest revision still available
    std::string error;                  // broken: what happened
};

// Base64 (RFC 4648, with padding), as the gateway carries bytes. decode: nullopt on bad input.
[[nodiscard]] std::string base64_encode(std::string_view bytes);
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);
// The end of the key range that holds every key starting with `prefix` (etcd's "prefix + 1").
[[nodiscard]] std::string prefix_end(std::string_view prefix);

// One message of a watch stream ({"result": WatchResponse} or {"error": ...}, one line): calls
// on_batch when it carries events; returns how the watch ended when it says so. Sets *created
// when it confirms the watch. Throws EtcdError for a malformed event or a field of the wrong JSON
// type (and passes on what on_batch throws). (Exposed for the fuzzer.)
std::optional<WatchEnd> read_watch_message(std::string_view line, const std::function<void(const WatchBatch&)>& on_batch,
                                           bool* created = nullptr);

class Client {
public:
    explicit Client(Config config);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    [[nodiscard]] const Config& config() const noexcept { return config_; }

    // Every key under `prefix`, sorted by key, at `revision` (0: the latest).
    [[nodiscard]] RangeResult range_prefix(const std::string& prefix, std::int64_t revision = 0);
    [[nodiscard]] std::optional<KeyValue> get(const std::string& key);
    // Return the store's revision after the change.
    std::int64_t put(const std::string& key, const std::string& value, std::int64_t lease = 0);
    std::int64_t erase(const std::string& key);
    std::int64_t erase_prefix(const std::string& prefix);
    // All of it, or nothing: one transaction (etcd's --max-txn-ops bounds its size, 128 by
    // default; callers split larger imports).
    std::int64_t put_all(const std::vector<std::pair<std::string, std::string>>& puts,
                         const std::vector<std::string>& erases = {});
    // Compacts the history up to `revision` (tests and operators).
    void compact(std::int64_t revision);

    // Leases: grant returns the lease id; keep_alive the TTL left (0: it had expired).
    std::int64_t grant_lease(std::int64_t ttl_seconds);
    std::int64_t keep_alive(std::int64_t lease);
    void revoke_lease(std::int64_t lease);

    // Watches every key under `prefix` from `start_revision`, calling on_batch for each response
    // that carries events, until `stop` is set (libcurl checks about once a second), the revision is
    // compacted, or the stream breaks (etcd down, connection lost: a dead peer is noticed by TCP
    // keepalive within seconds). Returns why it ended; never throws for those.
    // `after_batches`, when given, is called once the batches of one read from the stream were
    // handed over: a caller that applies there, not per batch, applies a backlog at once.
    WatchEnd watch_prefix(const std::string& prefix, std::int64_t start_revision,
                          const std::function<void(const WatchBatch&)>& on_batch, const std::atomic<bool>& stop,
                          const std::function<void()>& after_batches = {});

private:
    struct Curl;
    struct Answer {
        std::string body;
        long status = 0;       // HTTP
        std::string endpoint;  // the one that answered
    };
    Answer post(Curl& curl, const std::string& path, std::string_view body, curl_slist* headers,
                const std::function<void(CURL*)>& setup);
    std::string call(const std::string& path, const std::string& body);
    std::string grpc_call(const char* path, const std::string& message);
    void authenticate();

    Config config_;
    std::size_t preferred_ = 0;  // the endpoint that answered last
    std::string token_;          // from /v3/auth/authenticate, when a username is set
    std::unique_ptr<Curl> curl_;       // the gateway's calls (HTTP/1.1)
    std::unique_ptr<Curl> grpc_curl_;  // range and get: gRPC (HTTP/2), its own connections
};

}  // namespace andromeda::etcd
