// A real Linux VM for end-to-end tests (issue 31): QEMU (TCG, no KVM needed) boots the kernel and
// busybox initramfs that scripts/vm-image.sh builds, with one virtio-net NIC on an existing tap
// device (offloads at QEMU's defaults: checksums, TSO, mergeable buffers), and the test drives
// the guest's serial console: run a shell command, get its output and exit status.
//
//   build_vm_image();                        // scripts/vm-image.sh <build>/vm, if out of date
//   QemuGuestOptions options;                // image_dir defaults to <build>/vm
//   options.tap = "tap0";                    // already created, in that namespace
//   options.netns = "andro-123-vm";
//   QemuGuest guest(options);
//   guest.wait_booted(std::chrono::seconds(60));
//   guest.run("ip addr add 10.0.0.10/24 dev eth0 && ip link set eth0 up");
//   GuestResult r = guest.try_run("ping -c 1 10.0.0.1", std::chrono::seconds(10));
//
// The console is QEMU's stdio (socket pairs to this process: no socket files, nothing on disk).
// Every wait is bounded, and every error (QemuGuestError) says what the guest printed last. A
// command that runs out of time is interrupted (^C on the console: the guest's init starts a
// fresh shell), so the next command runs; shell state (cd, variables) does not survive that,
// nor `exit`. A command's background jobs (`cmd &`) print into later commands' output unless
// redirected. One thread drives a guest at a time.
// QEMU dies with this object (SIGKILL, reaped) and with the thread that started it
// (PR_SET_PDEATHSIG: the test process killed outright leaves no QEMU behind).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace andromeda::testing {

class QemuGuestError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The image directory this build's tests use (<build dir>/vm).
std::filesystem::path default_vm_image_dir();
// Runs scripts/vm-image.sh into `dir` (a no-op when the image is up to date; the first run
// downloads the kernel package) and returns the image's kernel release (`uname -r`). Throws
// QemuGuestError with the script's output when it fails.
std::string build_vm_image(const std::filesystem::path& dir = default_vm_image_dir());
// What a VM test lacks on this host ("qemu-system-x86_64 (Debian: qemu-system-x86)", ...), or
// empty. A test skips with it (or fails, where root tests are required).
std::string missing_vm_tools();

struct QemuGuestOptions {
    // scripts/vm-image.sh's output directory: vmlinuz, initramfs.cpio.gz.
    std::filesystem::path image_dir = default_vm_image_dir();
    // An existing tap device QEMU attaches to by name (persistent, IFF_TAP | IFF_NO_PI, ideally
    // IFF_VNET_HDR: without it QEMU cannot pass offloads). A name that is not there is an error
    // (QEMU would create it). Empty: the guest has no NIC.
    std::string tap;
    std::string mac = "52:54:00:12:34:56";
    // The network namespace QEMU runs in (and the tap is in): a name under /run/netns (as
    // `ip netns` makes them) or a path. Empty: this process's namespace.
    std::string netns;
    unsigned memory_mb = 512;
    unsigned cpus = 1;
    // The NIC's queue pairs: more than 1 opens that many queues of the tap (`queues=N`, which
    // needs a multi-queue tap) and gives the device mq=on with a vector per queue.
    unsigned queues = 1;
    bool vhost = false;       // vhost-net needs KVM to help; under TCG QEMU's own virtio-net is used
    // Properties appended to the virtio-net-pci device, e.g. "csum=off,guest_csum=off" (the
    // benchmark's guest without offloads). Empty: QEMU's defaults (checksums, TSO, mergeable
    // receive buffers).
    std::string nic_properties;
    std::string kernel_args;  // appended to "console=ttyS0 panic=-1 quiet"
    std::vector<std::string> extra_qemu_args;
    std::string qemu = "qemu-system-x86_64";  // looked up in PATH unless it has a '/'
};

struct GuestResult {
    int exit_status = -1;  // the command's $?
    std::string output;    // its stdout and stderr, interleaved, exactly as printed
    [[nodiscard]] bool ok() const noexcept { return exit_status == 0; }
};

class QemuGuest {
public:
    // Starts QEMU (does not wait for the boot). Throws QemuGuestError when the image, the
    // namespace or the tap is missing, or QEMU cannot be started.
    explicit QemuGuest(QemuGuestOptions options);
    ~QemuGuest();
    QemuGuest(const QemuGuest&) = delete;
    QemuGuest& operator=(const QemuGuest&) = delete;

    // Waits until the guest's console shell is ready; throws QemuGuestError on timeout or when
    // QEMU exits first (with QEMU's stderr and the console's last lines).
    void wait_booted(std::chrono::milliseconds timeout = std::chrono::seconds(60));
    // Runs `command` (sh syntax, may span lines; stdin is /dev/null) in the guest. Waits for the
    // boot first when needed. Throws QemuGuestError on timeout (after interrupting the command)
    // or when QEMU exits, std::invalid_argument for a command the console cannot carry
    // (control characters, a line over 3000 bytes).
    GuestResult try_run(std::string_view command, std::chrono::milliseconds timeout = std::chrono::seconds(30));
    // The same, and a non-zero exit status throws too (with the output). Returns the output.
    std::string run(std::string_view command, std::chrono::milliseconds timeout = std::chrono::seconds(30));
    // Sends ^C to the console and waits for the fresh shell init starts.
    void interrupt(std::chrono::milliseconds timeout = std::chrono::seconds(15));

    [[nodiscard]] bool running();
    [[nodiscard]] pid_t pid() const noexcept { return pid_; }
    // From QEMU's start to the first shell prompt; zero before the boot finished.
    [[nodiscard]] std::chrono::milliseconds boot_time() const;
    // Everything the console printed so far (firmware, kernel, init, commands' output).
    [[nodiscard]] std::string console() const;
    // QEMU's own stderr so far.
    [[nodiscard]] std::string qemu_stderr() const;
    // Kills QEMU and reaps it; the destructor does this too. Idempotent.
    void stop();

private:
    using Clock = std::chrono::steady_clock;

    void read_loop();
    // Waits until `done(console_)` holds or the deadline/QEMU's exit; caller holds `lock`.
    template <typename Predicate>
    bool wait_console(std::unique_lock<std::mutex>& lock, Clock::time_point deadline, Predicate done);
    void send(std::string_view bytes);
    [[noreturn]] void fail(std::string_view what);  // throws, quoting QEMU's stderr and the console

    QemuGuestOptions options_;
    pid_t pid_ = -1;
    int console_fd_ = -1;  // our end of QEMU's stdin and stdout
    int stderr_fd_ = -1;
    int wake_fd_[2] = {-1, -1};  // stop() wakes the reader through it
    std::thread reader_;
    Clock::time_point started_;
    std::size_t next_command_ = 1;
    bool reaped_ = false;
    int exit_status_ = 0;  // waitpid's, once reaped_

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    // Guarded by mutex_ (the reader thread fills them):
    std::string console_;
    std::string stderr_;
    bool console_closed_ = false;     // QEMU's stdout reached its end
    std::size_t shells_started_ = 0;  // "shell ready" lines seen on the console
    std::size_t ready_scan_ = 0;      // where the next search for that line starts
    std::chrono::milliseconds boot_time_{0};
};

}  // namespace andromeda::testing
