// Errors with context. A user error names what was wrong (which node, which tensor, which
// shape) and what was expected; an internal error marks a broken invariant of Anvil itself
// and carries the source location and the failed condition.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace anvil {

// Everything Anvil throws derives from Error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A broken invariant inside Anvil: a bug in Anvil, not in the user's program.
class InternalError : public Error {
 public:
  using Error::Error;
};

// Concatenates any streamable values into one string: str("expected ", n, " lanes").
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

namespace detail {
[[noreturn]] void throw_user_error(std::string message);
[[noreturn]] void throw_internal_error(const char* file, int line, const char* condition,
                                       std::string message);
}  // namespace detail

}  // namespace anvil

// ANVIL_CHECK(cond, message parts...): a user-facing check. The parts are only evaluated
// when the check fails.
#define ANVIL_CHECK(cond, ...)                                                 \
  do {                                                                         \
    if (!(cond)) ::anvil::detail::throw_user_error(::anvil::str(__VA_ARGS__)); \
  } while (0)

// ANVIL_FAIL(message parts...): an unconditional user error.
#define ANVIL_FAIL(...) ::anvil::detail::throw_user_error(::anvil::str(__VA_ARGS__))

// ANVIL_ICHECK(cond, message parts...): an internal invariant.
#define ANVIL_ICHECK(cond, ...)                                                           \
  do {                                                                                    \
    if (!(cond))                                                                          \
      ::anvil::detail::throw_internal_error(__FILE__, __LINE__, #cond,                    \
                                            ::anvil::str("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)

// ANVIL_UNREACHABLE(message parts...): an internal error on a path that must not be taken.
#define ANVIL_UNREACHABLE(...)                                             \
  ::anvil::detail::throw_internal_error(__FILE__, __LINE__, "unreachable", \
                                        ::anvil::str("" __VA_OPT__(, ) __VA_ARGS__))
