// The per-thread last error of the C ABI.
#include <string>

#include "anvil/runtime/c_runtime_api.h"

namespace {
thread_local std::string last_error;
}  // namespace

extern "C" {

const char* AnvilGetLastError(void) {
  return last_error.c_str();
}

void AnvilSetLastError(const char* message) {
  last_error = message ? message : "";
}

}  // extern "C"
