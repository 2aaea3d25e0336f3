#include "anvil/support/error.h"

namespace anvil::detail {

void throw_user_error(std::string message) {
  throw Error(std::move(message));
}

void throw_internal_error(const char* file, int line, const char* condition, std::string message) {
  std::string what = str("internal error at ", file, ":", line, ": check '", condition, "' failed");
  if (!message.empty()) what += ": " + message;
  throw InternalError(what);
}

}  // namespace anvil::detail
