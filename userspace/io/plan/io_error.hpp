// Errors of the I/O layer. Startup problems (no BPF filesystem, missing interface, XDP refused
// by the driver, no permission) are exceptions whose message says what failed and how to fix it;
// andromedad prints it and exits. The per-packet path never throws.
#pragma once

#include <stdexcept>
#include <string>

namespace andromeda::io {

class IoError : public std::runtime_error {
public:
    // `what_failed` names the operation and object; `how_to_fix` is the hint shown after it.
    IoError(const std::string& what_failed, int error_number, const std::string& how_to_fix = {});

    // The errno behind the failure (0 when there was none), so callers can branch on it.
    [[nodiscard]] int error_number() const noexcept { return error_number_; }

private:
    int error_number_;
};

// "<strerror(e)>" plus a hint for the errnos that mean "run as root".
[[nodiscard]] std::string describe_errno(int error_number);

}  // namespace andromeda::io
