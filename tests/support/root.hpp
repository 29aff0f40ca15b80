// Tests that need root (BPF, namespaces) skip with a reason when they cannot run, except where
// ANDROMEDA_REQUIRE_ROOT_TESTS=1 (CI) turns that skip into a failure.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace andromeda::testing {

inline bool root_tests_required() {
    const char* v = std::getenv("ANDROMEDA_REQUIRE_ROOT_TESTS");
    return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace andromeda::testing

// Use at the top of a test body: returns from it (skipped or failed) when not running as root.
#define ANDROMEDA_REQUIRE_ROOT()                                                                 \
    do {                                                                                         \
        if (geteuid() != 0) {                                                                    \
            if (::andromeda::testing::root_tests_required())                                     \
                FAIL() << "needs root, and ANDROMEDA_REQUIRE_ROOT_TESTS=1 forbids skipping";     \
            GTEST_SKIP() << "needs root (BPF/namespaces); run as root or via sudo scripts/test.sh"; \
        }                                                                                        \
    } while (0)
