// Checking diagnostics: the message of the user error a piece of code throws.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "anvil/support/error.h"

namespace anvil::testing {

// The message of the user error `fn` throws; fails the test when it throws none (or an internal
// error, which would be a bug in Anvil rather than a diagnostic).
template <typename F>
std::string user_error(F&& fn) {
  try {
    fn();
  } catch (const InternalError& e) {
    ADD_FAILURE() << "expected a user error, got an internal error: " << e.what();
    return e.what();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an anvil::Error, but nothing was thrown";
  return "";
}

// Checks that diagnostic `msg` contains `part`.
inline void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

}  // namespace anvil::testing
