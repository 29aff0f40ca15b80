#include "etcd/client.hpp"

#include <curl/curl.h>
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <mutex>
#include <nlohmann/json.hpp>

#include "etcd/grpc_wire.hpp"

namespace andromeda::etcd {

using nlohmann::json;

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The gateway writes int64 fields as strings ("revision": "42") and leaves zero values out.
std::int64_t int64_of(const json& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return 0;
    if (it->is_number_integer()) return it->get<std::int64_t>();
    if (it->is_string()) {
        const std::string& text = it->get_ref<const std::string&>();
        std::int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error == std::errc() && end == text.data() + text.size() && !text.empty()) return value;
    }
    throw EtcdError(fmt::format("etcd answered a non-numeric {}: {}", key, it->dump()));
}

// A boolean field (absent or null: false); any other type is etcd's error, not a crash.
bool bool_of(const json& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return false;
    if (!it->is_boolean()) throw EtcdError(fmt::format("etcd answered a {} that is not a boolean: {}", key, it->dump()));
    return it->get<bool>();
}

// A string field (absent or null: `fallback`); any other type is etcd's error.
std::string string_of(const json& object, const char* key, const char* fallback = "") {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (!it->is_string()) throw EtcdError(fmt::format("etcd answered a {} that is not a string: {}", key, it->dump()));
    return it->get<std::string>();
}

std::string bytes_of(const json& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_string()) return {};
    auto decoded = base64_decode(it->get<std::string>());
    if (!decoded) throw EtcdError(fmt::format("etcd answered {} that is not base64", key));
    return *decoded;
}

KeyValue key_value_of(const json& kv) {
    return {bytes_of(kv, "key"),           bytes_of(kv, "value"),   int64_of(kv, "create_revision"),
            int64_of(kv, "mod_revision"), int64_of(kv, "version"), int64_of(kv, "lease")};
}

std::int64_t header_revision(const json& response) {
    const auto h = response.find("header");
    return h == response.end() ? 0 : int64_of(*h, "revision");
}

void global_init() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t append_to_string(char* data, size_t size, size_t count, void* out) {
    static_cast<std::string*>(out)->append(data, size * count);
    return size * count;
}

// What every handle gets: TLS files, keepalive, no signals (threads), the token.
void common_options(CURL* c, const Config& config, curl_slist* headers) {
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 2L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(config.timeout.count()));
    if (!config.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, config.ca_file.c_str());
    if (!config.cert_file.empty()) curl_easy_setopt(c, CURLOPT_SSLCERT, config.cert_file.c_str());
    if (!config.key_file.empty()) curl_easy_setopt(c, CURLOPT_SSLKEY, config.key_file.c_str());
}

curl_slist* make_headers(const std::string& token) {
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    if (!token.empty()) headers = curl_slist_append(headers, ("Authorization: " + token).c_str());
    return headers;
}

// An error object of the gateway: {"error": "...", "message": "...", "code": N}.
std::string error_text(const json& reply) {
    if (reply.contains("message") && reply["message"].is_string()) return reply["message"].get<std::string>();
    if (reply.contains("error") && reply["error"].is_string()) return reply["error"].get<std::string>();
    return reply.dump();
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        const auto v = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                       static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
        out += kAlphabet[v >> 18];
        out += kAlphabet[(v >> 12) & 63];
        out += kAlphabet[(v >> 6) & 63];
        out += kAlphabet[v & 63];
    }
    if (i < bytes.size()) {
        auto v = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
        if (i + 1 < bytes.size()) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
        out += kAlphabet[v >> 18];
        out += kAlphabet[(v >> 12) & 63];
        out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (std::size_t i = 0; i < text.size(); i += 4) {
        std::uint32_t v = 0;
        int pad = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            const char c = text[i + k];
            int d;
            if (c >= 'A' && c <= 'Z') d = c - 'A';
            else if (c >= 'a' && c <= 'z') d = c - 'a' + 26;
            else if (c >= '0' && c <= '9') d = c - '0' + 52;
            else if (c == '+') d = 62;
            else if (c == '/') d = 63;
            else if (c == '=' && i + 4 == text.size() && k >= 2) {
                d = 0;
                ++pad;
            } else {
                return std::nullopt;
            }
            if (pad > 0 && c != '=') return std::nullopt;  // data after padding
            v = v << 6 | static_cast<std::uint32_t>(d);
        }
        out += static_cast<char>(v >> 16);
        if (pad < 2) out += static_cast<char>((v >> 8) & 0xff);
        if (pad < 1) out += static_cast<char>(v & 0xff);
    }
    return out;
}

std::string prefix_end(std::string_view prefix) {
    std::string end(prefix);
    while (!end.empty()) {
        auto& last = reinterpret_cast<unsigned char&>(end.back());
        if (last < 0xff) {
            ++last;
            return end;
        }
        end.pop_back();
    }
    return std::string(1, '\0');  // every key
}

struct Client::Curl {
    CURL* handle = curl_easy_init();
    ~Curl() { curl_easy_cleanup(handle); }
};

Client::Client(Config config) : config_(std::move(config)) {
    global_init();
    if (config_.endpoints.empty()) throw EtcdError("no etcd endpoint given");
    curl_ = std::make_unique<Curl>();
    grpc_curl_ = std::make_unique<Curl>();
    if (curl_->handle == nullptr || grpc_curl_->handle == nullptr) throw EtcdError("libcurl could not create a handle");
}

Client::~Client() = default;

// POSTs `body` to `path` with `headers` (and what `setup` adds to the handle), trying each
// endpoint once, the last good one first, on `curl`; the first endpoint that answers at all, with
// any status, gives the answer. Throws when none does.
Client::Answer Client::post(Curl& curl, const std::string& path, std::string_view body, curl_slist* headers,
                            const std::function<void(CURL*)>& setup) {
    std::string failures;
    for (std::size_t attempt = 0; attempt < config_.endpoints.size(); ++attempt) {
        const std::size_t index = (preferred_ + attempt) % config_.endpoints.size();
        const std::string url = config_.endpoints[index] + path;
        Answer answer;
        answer.endpoint = config_.endpoints[index];
        CURL* c = curl.handle;
        curl_easy_reset(c);
        common_options(c, config_, headers);
        if (setup) setup(c);
        curl_easy_setopt(c, CURLOPT_URL, url.c_str());
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(config_.timeout.count()));
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_to_string);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer.body);
        const CURLcode rc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &answer.status);
        if (rc != CURLE_OK) {
            failures += fmt::format("{}{}: {}", failures.empty() ? "" : "; ", config_.endpoints[index], curl_easy_strerror(rc));
            continue;
        }
        preferred_ = index;
        return answer;
    }
    throw EtcdError(fmt::format("no etcd endpoint answered {}: {}", path, failures));
}

// POSTs `body` to `path` on the gateway; returns the body of a 2xx answer. An error answer (etcd
// refused the request) is thrown at once.
std::string Client::call(const std::string& path, const std::string& body) {
    if (!config_.username.empty() && token_.empty() && path != "/v3/auth/authenticate") authenticate();
    const std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(make_headers(token_), curl_slist_free_all);
    Answer answer = post(*curl_, path, body, headers.get(), {});
    if (answer.status / 100 != 2) {
        const json error = json::parse(answer.body, nullptr, false);
        const std::string text = error.is_discarded() ? answer.body : error_text(error);
        if (text.find("invalid auth token") != std::string::npos && !config_.username.empty()) {
            token_.clear();  // expired: the next call authenticates again
        }
        throw EtcdError(fmt::format("etcd {} refused {}: {} (HTTP {})", answer.endpoint, path, text, answer.status));
    }
    return std::move(answer.body);
}

namespace {

// What a gRPC call's response headers and trailers say (libcurl hands both to the header callback).
struct GrpcHeaders {
    std::optional<std::string> status;  // grpc-status
    std::string message;                // grpc-message, percent-decoded
};

bool starts_with_name(std::string_view line, std::string_view name) {
    if (line.size() <= name.size() || line[name.size()] != ':') return false;
    for (std::size_t i = 0; i < name.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
    return true;
}

size_t on_grpc_header(char* data, size_t size, size_t count, void* out) {
    auto& headers = *static_cast<GrpcHeaders*>(out);
    std::string_view line(data, size * count);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    const auto value = [&](std::string_view name) {
        std::string_view v = line.substr(name.size() + 1);
        while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
        return std::string(v);
    };
    if (starts_with_name(line, "grpc-status")) headers.status = value("grpc-status");
    else if (starts_with_name(line, "grpc-message")) headers.message = grpc_wire::percent_decode(value("grpc-message"));
    return size * count;
}

}  // namespace

// A unary gRPC call (HTTP/2: prior knowledge on http://, ALPN on https://) with one framed
// message, on the endpoints as call() does; returns the response body (one frame).
std::string Client::grpc_call(const char* path, const std::string& message) {
    if (!config_.username.empty() && token_.empty()) authenticate();
    curl_slist* list = curl_slist_append(nullptr, "Content-Type: application/grpc");
    list = curl_slist_append(list, "TE: trailers");
    if (!token_.empty()) list = curl_slist_append(list, ("token: " + token_).c_str());
    const std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(list, curl_slist_free_all);
    GrpcHeaders grpc;
    Answer answer = post(*grpc_curl_, path, grpc_wire::frame(message), headers.get(), [&grpc](CURL* c) {
        grpc = {};  // what an endpoint that failed halfway said is not the answer
        curl_easy_setopt(c, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE));
        // A new connection per call: Debian 12's libcurl (7.88) fails every request after the first
        // on a kept HTTP/2 connection ("Error in the HTTP2 framing layer"). Reads are few (the
        // listing, a get), so the handshake costs nothing that shows.
        curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
        // With the default 16 KB receive buffer, about one 100k-key listing in seven stalled for
        // exactly one second (libcurl's poll timeout) and the rest took 0.22 s; with 512 KB none of
        // 90 stalled and each took 0.12 s, decoding included (etcd 3.4.23, loopback).
        curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L * 1024);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_grpc_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &grpc);
    });
    if (!grpc.status)
        throw EtcdError(fmt::format("etcd {} answered {} with HTTP {} and no grpc-status: it does not speak etcd's gRPC "
                                    "API there (is a proxy in the way that passes only HTTP/1.1?)",
                                    answer.endpoint, path, answer.status));
    if (*grpc.status != "0") {
        if (grpc.message.find("invalid auth token") != std::string::npos && !config_.username.empty())
            token_.clear();  // expired: the next call authenticates again
        throw EtcdError(
            fmt::format("etcd {} refused {}: {} (gRPC status {})", answer.endpoint, path, grpc.message, *grpc.status));
    }
    return std::move(answer.body);
}

void Client::authenticate() {
    const json request{{"name", config_.username}, {"password", config_.password}};
    const json reply = json::parse(call("/v3/auth/authenticate", request.dump()), nullptr, false);
    if (reply.is_discarded() || !reply.contains("token") || !reply["token"].is_string())
        throw EtcdError("etcd authentication gave no token for user " + config_.username);
    token_ = reply["token"].get<std::string>();
}

namespace {

json parse_reply(const std::string& text, const char* what) {
    json reply = json::parse(text, nullptr, false);
    if (reply.is_discarded() || !reply.is_object()) throw EtcdError(std::string("etcd's answer to ") + what + " is not JSON");
    return reply;
}

}  // namespace

RangeResult Client::range_prefix(const std::string& prefix, std::int64_t revision) {
    const std::string reply =
        grpc_call(grpc_wire::kRangePath, grpc_wire::range_request(prefix, prefix_end(prefix), revision));
    return grpc_wire::decode_range_response(grpc_wire::unframe(reply));
}

std::optional<KeyValue> Client::get(const std::string& key) {
    const std::string reply = grpc_call(grpc_wire::kRangePath, grpc_wire::range_request(key, {}));
    RangeResult result = grpc_wire::decode_range_response(grpc_wire::unframe(reply));
    if (result.kvs.empty()) return std::nullopt;
    return std::move(result.kvs.front());
}

std::int64_t Client::put(const std::string& key, const std::string& value, std::int64_t lease) {
    json request{{"key", base64_encode(key)}, {"value", base64_encode(value)}};
    if (lease != 0) request["lease"] = lease;
    return header_revision(parse_reply(call("/v3/kv/put", request.dump()), "put"));
}

std::int64_t Client::erase(const std::string& key) {
    const json request{{"key", base64_encode(key)}};
    return header_revision(parse_reply(call("/v3/kv/deleterange", request.dump()), "delete"));
}

std::int64_t Client::erase_prefix(const std::string& prefix) {
    const json request{{"key", base64_encode(prefix)}, {"range_end", base64_encode(prefix_end(prefix))}};
    return header_revision(parse_reply(call("/v3/kv/deleterange", request.dump()), "delete"));
}

std::int64_t Client::put_all(const std::vector<std::pair<std::string, std::string>>& puts,
                             const std::vector<std::string>& erases) {
    json success = json::array();
    for (const auto& key : erases) success.push_back({{"request_delete_range", {{"key", base64_encode(key)}}}});
    for (const auto& [key, value] : puts)
        success.push_back({{"request_put", {{"key", base64_encode(key)}, {"value", base64_encode(value)}}}});
    const json request{{"success", success}};
    const json reply = parse_reply(call("/v3/kv/txn", request.dump()), "txn");
    return header_revision(reply);
}

void Client::compact(std::int64_t revision) {
    const json request{{"revision", revision}, {"physical", true}};
    (void)parse_reply(call("/v3/kv/compaction", request.dump()), "compaction");
}

std::int64_t Client::grant_lease(std::int64_t ttl_seconds) {
    const json request{{"TTL", ttl_seconds}};
    const json reply = parse_reply(call("/v3/lease/grant", request.dump()), "lease grant");
    const std::int64_t id = int64_of(reply, "ID");
    if (id == 0) throw EtcdError("etcd granted no lease: " + error_text(reply));
    return id;
}

std::int64_t Client::keep_alive(std::int64_t lease) {
    const json request{{"ID", lease}};
    const std::string text = call("/v3/lease/keepalive", request.dump());
    // A stream of one message: {"result": {"ID": ..., "TTL": ...}}.
    const json reply = parse_reply(text.substr(0, text.find('\n')), "lease keepalive");
    const auto result = reply.find("result");
    if (result == reply.end()) throw EtcdError("etcd's keepalive answer has no result: " + error_text(reply));
    return int64_of(*result, "TTL");
}

void Client::revoke_lease(std::int64_t lease) {
    const json request{{"ID", lease}};
    (void)parse_reply(call("/v3/lease/revoke", request.dump()), "lease revoke");
}

namespace {

struct WatchState {
    const std::function<void(const WatchBatch&)>* on_batch = nullptr;
    const std::function<void()>* after_batches = nullptr;
    const std::atomic<bool>* stop = nullptr;
    std::string buffer;
    bool created = false;
    std::optional<WatchEnd> end;
};

}  // namespace

std::optional<WatchEnd> read_watch_message(std::string_view line, const std::function<void(const WatchBatch&)>& on_batch,
                                           bool* created) {
    const json message = json::parse(line, nullptr, false);
    if (message.is_discarded() || !message.is_object())
        return WatchEnd{WatchEnd::Why::broken, 0, "etcd sent a watch message that is not JSON"};
    if (const auto error = message.find("error"); error != message.end())
        return WatchEnd{WatchEnd::Why::broken, 0, "etcd ended the watch: " + error_text(*error)};
    const auto result = message.find("result");
    if (result == message.end() || !result->is_object()) return std::nullopt;
    if (bool_of(*result, "created") && created != nullptr) *created = true;
    if (const std::int64_t compacted = int64_of(*result, "compact_revision"); compacted != 0)
        return WatchEnd{WatchEnd::Why::compacted, compacted, ""};
    if (bool_of(*result, "canceled"))
        return WatchEnd{WatchEnd::Why::broken, 0, "etcd canceled the watch: " + string_of(*result, "cancel_reason")};
    const auto events = result->find("events");
    if (events == result->end() || !events->is_array() || events->empty()) return std::nullopt;
    WatchBatch batch;
    batch.revision = header_revision(*result);
    for (const json& e : *events) {
        if (!e.is_object()) throw EtcdError("a watch event is not an object");
        WatchEvent event;
        event.type = string_of(e, "type", "PUT") == "DELETE" ? WatchEvent::Type::erase : WatchEvent::Type::put;
        if (const auto kv = e.find("kv"); kv != e.end() && kv->is_object()) event.kv = key_value_of(*kv);
        batch.events.push_back(std::move(event));
    }
    on_batch(batch);
    return std::nullopt;
}

namespace {

size_t on_watch_data(char* data, size_t size, size_t count, void* user) {
    auto& state = *static_cast<WatchState*>(user);
    state.buffer.append(data, size * count);
    bool delivered = false;
    const std::function<void(const WatchBatch&)> counting = [&](const WatchBatch& b) {
        delivered = true;
        (*state.on_batch)(b);
    };
    for (std::size_t newline; !state.end && (newline = state.buffer.find('\n')) != std::string::npos;) {
        const std::string line = state.buffer.substr(0, newline);
        state.buffer.erase(0, newline + 1);
        if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
        try {
            state.end = read_watch_message(line, counting, &state.created);
        } catch (const std::exception& e) {
            state.end = WatchEnd{WatchEnd::Why::broken, 0, std::string("a watch message could not be read: ") + e.what()};
        }
    }
    if (delivered && state.after_batches != nullptr && *state.after_batches) (*state.after_batches)();
    return state.end ? 0 : size * count;  // 0 aborts the transfer
}

int on_watch_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    const auto& state = *static_cast<WatchState*>(user);
    return state.stop->load() ? 1 : 0;  // non-zero aborts
}

}  // namespace

WatchEnd Client::watch_prefix(const std::string& prefix, std::int64_t start_revision,
                              const std::function<void(const WatchBatch&)>& on_batch, const std::atomic<bool>& stop,
                              const std::function<void()>& after_batches) {
    if (!config_.username.empty() && token_.empty()) {
        try {
            authenticate();
        } catch (const EtcdError& e) {
            return {WatchEnd::Why::broken, 0, e.what()};
        }
    }
    const json request{{"create_request",
                        {{"key", base64_encode(prefix)},
                         {"range_end", base64_encode(prefix_end(prefix))},
                         {"start_revision", start_revision}}}};
    const std::string body = request.dump();
    std::string failures;
    for (std::size_t attempt = 0; attempt < config_.endpoints.size() && !stop.load(); ++attempt) {
        const std::size_t index = (preferred_ + attempt) % config_.endpoints.size();
        const std::string url = config_.endpoints[index] + "/v3/watch";
        WatchState state{&on_batch, &after_batches, &stop, {}, false, std::nullopt};
        Curl curl;
        curl_slist* headers = make_headers(token_);
        common_options(curl.handle, config_, headers);
        curl_easy_setopt(curl.handle, CURLOPT_URL, url.c_str());
        curl_easy_setopt(curl.handle, CURLOPT_POSTFIELDS, body.c_str());
        curl_easy_setopt(curl.handle, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
        curl_easy_setopt(curl.handle, CURLOPT_WRITEFUNCTION, on_watch_data);
        curl_easy_setopt(curl.handle, CURLOPT_WRITEDATA, &state);
        curl_easy_setopt(curl.handle, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(curl.handle, CURLOPT_XFERINFOFUNCTION, on_watch_progress);
        curl_easy_setopt(curl.handle, CURLOPT_XFERINFODATA, &state);
        const CURLcode rc = curl_easy_perform(curl.handle);
        curl_slist_free_all(headers);
        if (state.end) return *state.end;
        if (stop.load()) return {WatchEnd::Why::stopped, 0, ""};
        const std::string why = rc == CURLE_OK ? "etcd closed the watch stream" : curl_easy_strerror(rc);
        if (state.created) {  // it was running: the caller re-lists or resumes from what it saw
            preferred_ = index;
            return {WatchEnd::Why::broken, 0, fmt::format("{}: {}", config_.endpoints[index], why)};
        }
        failures += fmt::format("{}{}: {}", failures.empty() ? "" : "; ", config_.endpoints[index], why);
    }
    if (stop.load()) return {WatchEnd::Why::stopped, 0, ""};
    return {WatchEnd::Why::broken, 0, "no etcd endpoint took the watch: " + failures};
}

}  // namespace andromeda::etcd
