// The packet playground's engine: JSON requests in, JSON answers out, running the daemon's own
// codecs and pipeline (wire, overlay, fabric, dataplane with its NAT stage, the inspect decoder)
// on one frame at a time. The WebAssembly page calls it through one C function
// (wasm_main.cpp); the native build links it too, so the tests and a fuzz target exercise the
// same code. Every request is independent: a fresh fabric, pipeline and NAT table each time.
//
// Requests (docs/playground.md has the full contract), each {"op": ...}:
//   sample       {"node","encap","vni"}          the sample fabric (web/playground/sample_fabric.toml)
//                                                 as node.toml text for that view
//   fabric       {"fabric"}                      what the loader read: nodes, VPCs with their
//                                                 gateway MACs, endpoints, ports, the presets' packets
//   build        {"packet": {...}}               a tenant frame from form fields, as hex
//   run          {"fabric","port","hex",         the pipeline's verdict and emitted frames, decoded
//                 "underlay_mac"}                 (this host's own MAC, which the daemon reads off
//                                                 the interface; default 02:00 + its address)
//   decode       {"hex"}                         one frame decoded as `andromedactl inspect` does
//   decode_pcap  {"hex"}                         every frame of a pcap/pcapng file
// Answers carry "ok"; when false, "error" says what was wrong and where (and a fabric that does not
// load adds "errors", the loader's own, one `file:line: key: what; what would be valid` each).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace andromeda::playground {

[[nodiscard]] nlohmann::json handle(const nlohmann::json& request);
// Text in, text out: a request that is not JSON gets {"ok": false, "error": ...}.
[[nodiscard]] std::string handle_text(std::string_view request);

}  // namespace andromeda::playground
