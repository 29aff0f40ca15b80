// The headers nearly every test TU parses, precompiled once per build (tests/CMakeLists.txt,
// andromeda_test_pch) and reused by every andromeda_test executable: GoogleTest alone is about
// a second of each TU's compile. Only third-party and standard headers belong here: a project
// header would rebuild every test when it changes, and one missing an #include would go unnoticed.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>
