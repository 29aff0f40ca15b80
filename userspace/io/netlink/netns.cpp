#include "io/netlink/netns.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <thread>

#include "io/plan/io_error.hpp"

namespace andromeda::io {

void run_in_netns_thread(const std::filesystem::path& ns, const std::function<void()>& task) {
    const int fd = open(ns.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError("opening network namespace " + ns.string(), errno);
    int setns_error = 0;
    std::exception_ptr failure;
    std::thread worker([&] {
        if (setns(fd, CLONE_NEWNET) != 0) {
            setns_error = errno;
            return;
        }
        try {
            task();
        } catch (...) {
            failure = std::current_exception();
        }
    });
    worker.join();
    close(fd);
    if (setns_error != 0) throw IoError("entering network namespace " + ns.string(), setns_error);
    if (failure) std::rethrow_exception(failure);
}

}  // namespace andromeda::io
