#include "support/qemu_guest.hpp"

#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

#include "netns_topology.hpp"  // run_command

namespace andromeda::testing {

namespace {

// What scripts/vm-guest/init prints each time a console shell starts reading commands.
constexpr std::string_view kShellReady = "andromeda-vm: shell ready\n";
constexpr std::size_t kMaxLine = 3000;  // the guest tty's line buffer holds 4095 bytes
constexpr std::size_t kTail = 2500;     // console bytes an error quotes
constexpr int kNoSuchTap = -1;          // the child's report when the tap is not there

std::string seconds_text(std::chrono::milliseconds d) {
    const auto ms = d.count();
    return std::to_string(ms / 1000) + "." + std::to_string(ms % 1000 / 100) + " s";
}

std::string find_in_path(const std::string& program) {
    if (program.find('/') != std::string::npos) return program;
    const char* path = std::getenv("PATH");
    std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
    while (!dirs.empty()) {
        const auto colon = dirs.find(':');
        const std::string dir(dirs.substr(0, colon));
        dirs = colon == std::string_view::npos ? std::string_view{} : dirs.substr(colon + 1);
        const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
        if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return {};
}

void close_fd(int& fd) noexcept {
    if (fd >= 0) close(fd);
    fd = -1;
}

// The console carries text lines to a shell: no control characters (^C, ^D, ^U would act on
// the guest's terminal), no line its line buffer would cut.
void check_command(std::string_view command) {
    if (command.find_first_not_of(" \t\n") == std::string_view::npos)
        throw std::invalid_argument("QemuGuest: empty command");
    std::size_t line = 0;
    for (const char c : command) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '\n') {
            line = 0;
            continue;
        }
        if ((u < 0x20 && c != '\t') || u == 0x7f)
            throw std::invalid_argument("QemuGuest: command has control character " + std::to_string(u) +
                                        ", which the guest's terminal would act on: " + std::string(command));
        if (++line > kMaxLine)
            throw std::invalid_argument("QemuGuest: a command line over " + std::to_string(kMaxLine) +
                                        " bytes does not fit the guest terminal's line buffer");
    }
}

}  // namespace

std::filesystem::path default_vm_image_dir() { return ANDROMEDA_VM_IMAGE_DIR; }

std::string build_vm_image(const std::filesystem::path& dir) {
    const auto built = run_command({ANDROMEDA_VM_IMAGE_SCRIPT, dir.string()}, std::chrono::minutes(10));
    if (!built.ok())
        throw QemuGuestError("scripts/vm-image.sh " + dir.string() + " failed (exit " +
                             std::to_string(built.exit_code) + "):\n" + built.output);
    std::ifstream file(dir / "kernel-release");
    std::string release;
    std::getline(file, release);
    if (release.empty()) throw QemuGuestError("scripts/vm-image.sh left no kernel release in " + dir.string());
    return release;
}

std::string missing_vm_tools() {
    std::string missing;
    const auto need = [&](const char* program, const char* package) {
        if (find_in_path(program).empty())
            missing += (missing.empty() ? "" : ", ") + std::string(program) + " (Debian: " + package + ")";
    };
    need("qemu-system-x86_64", "qemu-system-x86");
    if (access("/bin/busybox", X_OK) != 0)
        missing += std::string(missing.empty() ? "" : ", ") + "/bin/busybox (Debian: busybox-static)";
    return missing;
}

namespace {

std::vector<std::string> qemu_command(const QemuGuestOptions& o, const std::string& qemu) {
    // quiet: the kernel writes its log to the emulated UART synchronously, about 2 s of a TCG boot.
    std::string append = "console=ttyS0 panic=-1 quiet";
    if (!o.kernel_args.empty()) append += " " + o.kernel_args;
    std::vector<std::string> args = {
        qemu, "-accel", "tcg", "-m", std::to_string(o.memory_mb), "-smp", std::to_string(o.cpus), "-nographic"};
    args.insert(args.end(), {"-nodefaults", "-no-reboot", "-serial", "stdio", "-monitor", "none"});
    args.insert(args.end(), {"-kernel", (o.image_dir / "vmlinuz").string()});
    args.insert(args.end(), {"-initrd", (o.image_dir / "initramfs.cpio.gz").string(), "-append", append});
    if (o.tap.empty()) {
        args.insert(args.end(), {"-nic", "none"});
    } else {
        const std::string vhost = o.vhost ? "on" : "off";
        const std::string queues = o.queues > 1 ? ",queues=" + std::to_string(o.queues) : "";
        args.insert(args.end(),
                    {"-netdev", "tap,id=n0,ifname=" + o.tap + ",script=no,downscript=no,vhost=" + vhost + queues});
        // romfile=: no iPXE ROM; the kernel is given, nothing boots from the network. A vector
        // per queue, one for the configuration and one for the control queue.
        const std::string mq = o.queues > 1 ? ",mq=on,vectors=" + std::to_string(2 * o.queues + 2) : "";
        args.insert(args.end(), {"-device", "virtio-net-pci,netdev=n0,mac=" + o.mac + ",romfile=" + mq +
                                                (o.nic_properties.empty() ? "" : "," + o.nic_properties)});
    }
    args.insert(args.end(), o.extra_qemu_args.begin(), o.extra_qemu_args.end());
    return args;
}

// The forked child, until exec: system calls only (the parent may have threads). Enters the
// namespace, checks the tap is there, wires the console and execs QEMU; on failure writes the
// errno (or kNoSuchTap) to `status_fd`.
[[noreturn]] void exec_qemu(char* const* argv, pid_t parent, int netns_fd, const std::string& tap, int console_fd,
                            int stderr_fd, int status_fd) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // QEMU never outlives the test
    if (getppid() != parent) _exit(127);
    int e = 0;
    if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) != 0) e = errno;
    // QEMU would create a missing tap itself (a typo would give the guest a link to nowhere).
    if (e == 0 && !tap.empty()) {
        ifreq request{};
        std::memcpy(request.ifr_name, tap.c_str(), std::min(tap.size(), sizeof request.ifr_name - 1));
        const int probe = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (probe < 0)
            e = errno;
        else if (ioctl(probe, SIOCGIFINDEX, &request) != 0)
            e = kNoSuchTap;
        if (probe >= 0) close(probe);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (e == 0 && (dup2(console_fd, STDIN_FILENO) < 0 || dup2(console_fd, STDOUT_FILENO) < 0 ||
                   dup2(stderr_fd, STDERR_FILENO) < 0))
        e = errno;
    if (e == 0) {
        execv(argv[0], argv);
        e = errno;
    }
    (void)!write(status_fd, &e, sizeof e);
    _exit(127);
}

}  // namespace

QemuGuest::QemuGuest(QemuGuestOptions options) : options_(std::move(options)) {
    for (const char* file : {"vmlinuz", "initramfs.cpio.gz"})
        if (!std::filesystem::exists(options_.image_dir / file))
            throw QemuGuestError("QemuGuest: no " + (options_.image_dir / file).string() +
                                 ": build the image with scripts/vm-image.sh " + options_.image_dir.string());
    const std::string qemu = find_in_path(options_.qemu);
    if (qemu.empty())
        throw QemuGuestError("QemuGuest: " + options_.qemu +
                             " is not in PATH (Debian: apt-get install qemu-system-x86, or scripts/install-deps.sh)");
    std::vector<std::string> args = qemu_command(options_, qemu);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    int netns_fd = -1;
    if (!options_.netns.empty()) {
        const std::string path =
            options_.netns.find('/') != std::string::npos ? options_.netns : "/run/netns/" + options_.netns;
        netns_fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (netns_fd < 0)
            throw QemuGuestError("QemuGuest: cannot open network namespace " + path + ": " + std::strerror(errno));
    }
    int console[2] = {-1, -1};  // [0] ours, [1] QEMU's stdin and stdout
    int err[2] = {-1, -1};
    int status[2] = {-1, -1};  // the child's errno when exec fails; a successful exec closes it
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, console) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
        pipe2(status, O_CLOEXEC) != 0 || pipe2(wake_fd_, O_CLOEXEC) != 0) {
        const int e = errno;
        for (int fd : {netns_fd, console[0], console[1], err[0], err[1], status[0], status[1]})
            if (fd >= 0) close(fd);
        stop();
        throw QemuGuestError(std::string("QemuGuest: pipes: ") + std::strerror(e));
    }
    const pid_t parent = getpid();
    started_ = Clock::now();
    pid_ = fork();
    if (pid_ == 0) exec_qemu(argv.data(), parent, netns_fd, options_.tap, console[1], err[1], status[1]);
    const int fork_errno = errno;
    for (int fd : {netns_fd, console[1], err[1], status[1]})
        if (fd >= 0) close(fd);
    console_fd_ = console[0];
    stderr_fd_ = err[0];
    int child_errno = 0;
    ssize_t n = -1;
    if (pid_ > 0) {
        do n = read(status[0], &child_errno, sizeof child_errno);
        while (n < 0 && errno == EINTR);
    }
    close(status[0]);
    if (pid_ < 0) {
        stop();
        throw QemuGuestError(std::string("QemuGuest: fork: ") + std::strerror(fork_errno));
    }
    if (n == static_cast<ssize_t>(sizeof child_errno)) {
        stop();
        const std::string where =
            options_.netns.empty() ? "this network namespace" : "network namespace " + options_.netns;
        if (child_errno == kNoSuchTap)
            throw QemuGuestError("QemuGuest: there is no device " + options_.tap + " in " + where +
                                 ": create the tap first (ip tuntap add dev " + options_.tap + " mode tap vnet_hdr)");
        throw QemuGuestError("QemuGuest: cannot start " + qemu + " in " + where + ": " + std::strerror(child_errno));
    }
    reader_ = std::thread([this] { read_loop(); });
}

QemuGuest::~QemuGuest() {
    try {
        stop();
    } catch (...) {
    }
}

void QemuGuest::read_loop() {
    char buffer[16384];
    bool console_open = true;
    bool stderr_open = true;
    while (console_open || stderr_open) {
        pollfd fds[3] = {{console_open ? console_fd_ : -1, POLLIN, 0},
                         {stderr_open ? stderr_fd_ : -1, POLLIN, 0},
                         {wake_fd_[0], POLLIN, 0}};
        if (poll(fds, 3, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (fds[2].revents != 0) break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].revents == 0) continue;
            const ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            std::lock_guard lock(mutex_);
            if (n <= 0) {
                (i == 0 ? console_open : stderr_open) = false;
                if (i == 0) console_closed_ = true;
            } else if (i == 0) {
                console_.append(buffer, static_cast<std::size_t>(n));
                // Count the shells the guest started; a marker may straddle two reads.
                for (std::size_t at; (at = console_.find(kShellReady, ready_scan_)) != std::string::npos;) {
                    if (shells_started_++ == 0)
                        boot_time_ = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_);
                    ready_scan_ = at + kShellReady.size();
                }
                ready_scan_ = std::max(ready_scan_, console_.size() - std::min(console_.size(), kShellReady.size()));
            } else {
                stderr_.append(buffer, static_cast<std::size_t>(n));
            }
            changed_.notify_all();
        }
    }
    std::lock_guard lock(mutex_);
    console_closed_ = true;
    changed_.notify_all();
}

template <typename Predicate>
bool QemuGuest::wait_console(std::unique_lock<std::mutex>& lock, Clock::time_point deadline, Predicate done) {
    for (;;) {
        if (done()) return true;
        if (console_closed_ || Clock::now() >= deadline) return false;
        changed_.wait_until(lock, deadline);
    }
}

void QemuGuest::wait_booted(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (wait_console(lock, Clock::now() + timeout, [&] { return shells_started_ > 0; })) return;
    const bool closed = console_closed_;
    lock.unlock();
    fail(closed ? "QEMU exited before the guest booted"
                : "the guest did not boot within " + seconds_text(timeout) + " (no shell on its console)");
}

void QemuGuest::send(std::string_view bytes) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!bytes.empty()) {
        const ssize_t n = ::send(console_fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            bytes.remove_prefix(static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            pollfd p{console_fd_, POLLOUT, 0};
            if (left.count() > 0 && poll(&p, 1, static_cast<int>(left.count())) >= 0) continue;
            fail("QEMU did not take console input for 10 s");
        }
        fail(std::string("cannot write to QEMU's console: ") + std::strerror(errno));
    }
}

GuestResult QemuGuest::try_run(std::string_view command, std::chrono::milliseconds timeout) {
    check_command(command);
    const auto deadline = Clock::now() + timeout;
    {
        std::unique_lock lock(mutex_);
        if (shells_started_ == 0) {
            lock.unlock();
            wait_booted(timeout);
        }
    }
    // Markers carry the command's number; the text sent spells them with printf's %s, so an echo
    // of the command line (were the terminal to echo) never matches them.
    const std::string id = std::to_string(next_command_++);
    const std::string begin = "__AQG_B_" + id + "__\n";
    const std::string end = "\n__AQG_E_" + id + "_";
    std::string line = "printf '__AQG_B_%s__\\n' " + id + "; { ";
    line.append(command);
    line += "\n} </dev/null 2>&1; printf '\\n__AQG_E_%s_%s__\\n' " + id + " \"$?\"\n";

    std::size_t from = 0;
    std::size_t shell = 0;
    {
        std::lock_guard lock(mutex_);
        from = console_.size();
        shell = shells_started_;
    }
    send(line);

    GuestResult result;
    std::unique_lock lock(mutex_);
    const bool finished = wait_console(lock, deadline, [&] {
        if (shells_started_ != shell) return true;  // the shell died under the command
        const auto b = console_.find(begin, from);
        if (b == std::string::npos) return false;
        const auto e = console_.find(end, b + begin.size());
        if (e == std::string::npos) return false;
        const auto close = console_.find("__\n", e + end.size());
        if (close == std::string::npos) return false;
        const std::string status = console_.substr(e + end.size(), close - e - end.size());
        if (status.empty() || status.find_first_not_of("0123456789") != std::string::npos) return false;
        result.exit_status = std::atoi(status.c_str());
        result.output = console_.substr(b + begin.size(), e - b - begin.size());
        return true;
    });
    const bool shell_died = shells_started_ != shell;
    const bool closed = console_closed_;
    lock.unlock();
    const std::string quoted = "`" + std::string(command) + "`";
    if (finished && !shell_died) return result;
    if (shell_died) fail("the guest's shell exited while running " + quoted + " (init started another)");
    if (closed) fail("QEMU exited while the guest ran " + quoted);
    std::string what = quoted + " did not finish within " + seconds_text(timeout) + " in the guest";
    try {
        interrupt();
        what += " (interrupted; a fresh shell is ready)";
    } catch (const QemuGuestError&) {
        what += " (and ^C brought no fresh shell)";
    }
    fail(what);
}

std::string QemuGuest::run(std::string_view command, std::chrono::milliseconds timeout) {
    GuestResult r = try_run(command, timeout);
    if (!r.ok())
        throw QemuGuestError("guest command `" + std::string(command) + "` failed (exit " +
                             std::to_string(r.exit_status) + "): " + r.output);
    return std::move(r.output);
}

void QemuGuest::interrupt(std::chrono::milliseconds timeout) {
    std::size_t shell = 0;
    {
        std::lock_guard lock(mutex_);
        shell = shells_started_;
    }
    send("\x03");
    std::unique_lock lock(mutex_);
    if (wait_console(lock, Clock::now() + timeout, [&] { return shells_started_ > shell; })) return;
    lock.unlock();
    fail("^C on the console brought no fresh shell within " + seconds_text(timeout));
}

bool QemuGuest::running() {
    if (pid_ <= 0 || reaped_) return false;
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
        reaped_ = true;
        exit_status_ = status;
        return false;
    }
    return r == 0;
}

std::chrono::milliseconds QemuGuest::boot_time() const {
    std::lock_guard lock(mutex_);
    return boot_time_;
}

std::string QemuGuest::console() const {
    std::lock_guard lock(mutex_);
    return console_;
}

std::string QemuGuest::qemu_stderr() const {
    std::lock_guard lock(mutex_);
    return stderr_;
}

void QemuGuest::fail(std::string_view what) {
    std::string message = "QemuGuest: " + std::string(what);
    // QEMU closes its console as it exits: give it a moment, so its exit status is known.
    bool closed = false;
    {
        std::lock_guard lock(mutex_);
        closed = console_closed_;
    }
    for (int i = 0; closed && i < 50 && running(); ++i) usleep(10'000);
    if (reaped_) {
        if (WIFEXITED(exit_status_))
            message += "\nQEMU exited with status " + std::to_string(WEXITSTATUS(exit_status_));
        else if (WIFSIGNALED(exit_status_))
            message += "\nQEMU was killed by signal " + std::to_string(WTERMSIG(exit_status_));
    }
    std::lock_guard lock(mutex_);
    if (!stderr_.empty()) message += "\nQEMU's stderr:\n" + stderr_;
    if (console_.empty()) {
        message += "\nthe console printed nothing";
    } else {
        const std::size_t from = console_.size() > kTail ? console_.size() - kTail : 0;
        message +=
            "\nthe console's last " + std::to_string(console_.size() - from) + " bytes:\n" + console_.substr(from);
    }
    throw QemuGuestError(message);
}

void QemuGuest::stop() {
    if (pid_ > 0 && !reaped_) {
        kill(pid_, SIGKILL);
        int status = 0;
        pid_t r;
        do r = waitpid(pid_, &status, 0);
        while (r < 0 && errno == EINTR);
        reaped_ = true;
        exit_status_ = status;
    }
    if (reader_.joinable()) {
        const char byte = 0;
        (void)!write(wake_fd_[1], &byte, 1);
        reader_.join();
    }
    close_fd(console_fd_);
    close_fd(stderr_fd_);
    close_fd(wake_fd_[0]);
    close_fd(wake_fd_[1]);
}

}  // namespace andromeda::testing
