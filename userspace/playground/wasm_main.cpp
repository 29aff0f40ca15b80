// The WebAssembly entry point: the page calls playground_call(request JSON) through
// Module.cwrap and gets the answer JSON (playground.hpp). The answer lives until the next call.
#include <emscripten/emscripten.h>

#include <string>

#include "playground/playground.hpp"

extern "C" EMSCRIPTEN_KEEPALIVE const char* playground_call(const char* request) {
    static std::string answer;
    answer = andromeda::playground::handle_text(request == nullptr ? "" : request);
    return answer.c_str();
}
