// The packet playground's engine: JSON requests in, JSON answers out, running the daemon's own
// codecs and pipeline (wire, overlay, fabric, dataplane with its NAT stage, the inspect decoder)
// on one frame at a time. The WebAssembly page calls it through one C function
// (wasm_main.cpp); the native build links it too, so the tests and a fuzz target exercise the
// same code. Every request is independent: a fresh fabric, pipeline and NAT table each time.
//
// Requests (docs/playground.md has the full contract), each {"op": ...}:
//   sample       {"node","encap","vni"}          the sample fabric as node.toml text
//   build        {"packet": {...}}               a tenant frame from form fields, as hex
//   run          {"fabric","port","hex",         the pipeline's verdict and emitted frames, decoded
//                 "underlay_mac"}                 (this host's own MAC, which the daemon reads off
//                                                 the interface; default 02:00 + its address)
//   decode       {"hex"}                         one frame decoded as `andromedactl inspect` does
//   decode_pcap  {"hex"}                         every frame of a pcap/pcapng file
// Answers carry "ok"; when false, "error" says what was wrong and where.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace andromeda::playground {

// The sample fabric (two nodes, VPCs blue and green with the same addresses, VPC orange behind a
// NAT gateway on node1) as node.toml for `local`'s view. `encap` is "andromeda" or "vxlan";
// blue gets `vni`, the others VNIs of their own that differ from it.
[[nodiscard]] std::string sample_fabric(std::string_view local, std::string_view encap = "andromeda",
                                        std::uint32_t vni = 100);

[[nodiscard]] nlohmann::json handle(const nlohmann::json& request);
// Text in, text out: a request that is not JSON gets {"ok": false, "error": ...}.
[[nodiscard]] std::string handle_text(std::string_view request);

}  // namespace andromeda::playground
