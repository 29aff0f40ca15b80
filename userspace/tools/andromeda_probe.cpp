// andromeda-probe: what can this interface do for Andromeda? Tries native XDP with the real
// andromeda_xdp program (no fallback), then an AF_XDP bind that prefers zero-copy, and undoes
// both. Prints one JSON object; scripts/hw-validate.sh collects them.
//
//   andromeda-probe --iface IF [--queue N]
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "andromeda_xdp.skel.h"
#include "io/bpf/xdp_attach.hpp"
#include "io/netlink/interfaces.hpp"
#include "io/plan/config.hpp"
#include "io/plan/io_error.hpp"
#include "io/xsk/xsk_worker.hpp"

namespace {

using nlohmann::json;
using namespace andromeda;

json probe_native_xdp(const io::InterfaceInfo& link) {
    std::unique_ptr<andromeda_xdp, void (*)(andromeda_xdp*)> skel(andromeda_xdp::open_and_load(),
                                                                  andromeda_xdp::destroy);
    if (!skel) return {{"native_xdp", nullptr}, {"native_refusal", "could not load andromeda_xdp.bpf.o (root? BTF?)"}};
    try {
        io::XdpAttachment attachment(bpf_program__fd(skel->progs.andromeda_xdp), link,
                                     io::XdpModePreference::native_only, /*replace_foreign=*/false);
        const bool native = attachment.report().mode == io::XdpMode::native;
        attachment.detach();
        return {{"native_xdp", native}, {"native_refusal", ""}};
    } catch (const std::exception& e) {
        return {{"native_xdp", false}, {"native_refusal", e.what()}};
    }
}

json probe_af_xdp(const io::InterfaceInfo& link, std::uint32_t queue) {
    try {
        io::UmemConfig umem;
        umem.frame_count = 256;
        umem.fill_size = umem.completion_size = umem.rx_size = umem.tx_size = 64;
        io::XskWorker worker(umem, {{link.name, queue}}, io::BindPreference::best);
        return {{"af_xdp_bind", io::to_string(worker.bind_mode())},
                {"af_xdp_unaligned_chunks", worker.stagger_slots() > 1},
                {"zero_copy_refusal", worker.zero_copy_refusal()}};
    } catch (const std::exception& e) {
        return {{"af_xdp_bind", nullptr}, {"zero_copy_refusal", e.what()}};
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"andromeda-probe: native XDP and AF_XDP zero-copy support of one interface"};
    std::string iface;
    std::uint32_t queue = 0;
    app.add_option("--iface", iface, "the interface to probe")->required();
    app.add_option("--queue", queue, "the RX queue to bind")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    // stdout carries the JSON report only; the io layer's log goes to stderr.
    spdlog::set_default_logger(spdlog::stderr_color_mt("andromeda-probe"));

    const auto link = io::find_interface(iface);
    if (!link) {
        std::cerr << "andromeda-probe: no interface '" << iface << "' in this network namespace\n";
        return 2;
    }
    json report = {{"iface", link->name}, {"driver", link->driver}, {"mtu", link->mtu},
                   {"rx_queues", link->rx_queues}, {"up", link->up}};
    if (link->xdp_prog_id != 0) {
        report["native_xdp"] = nullptr;
        report["native_refusal"] = "an XDP program is already attached; not touching it";
    } else {
        report.update(probe_native_xdp(*link));
    }
    report.update(probe_af_xdp(*link, queue));
    std::cout << report.dump() << '\n';
    return 0;
}
