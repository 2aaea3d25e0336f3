// Errors carry context: user errors say what was wrong; internal errors add where.
#include "anvil/support/error.h"

#include <gtest/gtest.h>

namespace anvil {
namespace {

TEST(Error, CheckPassesWithoutEvaluatingTheMessage) {
  int evaluated = 0;
  auto message = [&] {
    ++evaluated;
    return "never";
  };
  ANVIL_CHECK(1 + 1 == 2, message());
  EXPECT_EQ(evaluated, 0);
}

TEST(Error, CheckFailureCarriesTheMessage) {
  try {
    int channels = 3;
    ANVIL_CHECK(channels == 64, "conv2d node 'conv3': input has ", channels,
                " channels, but the weight expects 64");
    FAIL() << "no error thrown";
  } catch (const InternalError&) {
    FAIL() << "a user error must not be an internal error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "conv2d node 'conv3': input has 3 channels, but the weight expects 64");
  }
}

TEST(Error, InternalErrorNamesLocationAndCondition) {
  try {
    int lanes = 3;
    ANVIL_ICHECK(lanes % 2 == 0, "odd lane count ", lanes);
    FAIL() << "no error thrown";
  } catch (const InternalError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("error_test.cc"), std::string::npos) << what;
    EXPECT_NE(what.find("lanes % 2 == 0"), std::string::npos) << what;
    EXPECT_NE(what.find("odd lane count 3"), std::string::npos) << what;
  }
}

TEST(Error, FailAlwaysThrows) {
  EXPECT_THROW(ANVIL_FAIL("unsupported operator '", "Foo", "'"), Error);
}

TEST(Error, StrConcatenates) {
  EXPECT_EQ(str("a", 1, '-', 2.5), "a1-2.5");
}

}  // namespace
}  // namespace anvil
