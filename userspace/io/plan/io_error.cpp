#include "io/plan/io_error.hpp"

#include <cerrno>
#include <cstring>

namespace andromeda::io {

namespace {

std::string compose(const std::string& what_failed, int error_number, const std::string& how_to_fix) {
    std::string message = what_failed;
    if (error_number != 0) message += ": " + describe_errno(error_number);
    if (!how_to_fix.empty()) message += " (" + how_to_fix + ")";
    return message;
}

}  // namespace

IoError::IoError(const std::string& what_failed, int error_number, const std::string& how_to_fix)
    : std::runtime_error(compose(what_failed, error_number, how_to_fix)), error_number_(error_number) {}

std::string describe_errno(int error_number) {
    std::string text = std::strerror(error_number);
    if (error_number == EPERM || error_number == EACCES)
        text += "; andromedad needs root (CAP_NET_ADMIN, CAP_BPF, CAP_SYS_ADMIN for bpffs)";
    return text;
}

}  // namespace andromeda::io
