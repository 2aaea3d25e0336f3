// Elementwise operators against their references, on random shapes with broadcasting.
#include <gtest/gtest.h>

#include "ops_testing.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

using ir::DataType;
using ops_testing::check_op;

const DataType f32 = DataType::Float32();

TEST(Elementwise, Relu) {
  check_op("relu", {{{3, 17, 5}, f32}}, Attrs("relu", {}));
  check_op("relu", {{{1}, f32}}, Attrs("relu", {}));
}

TEST(Elementwise, AddBroadcasts) {
  check_op("add", {{{4, 1, 7}, f32}, {{3, 1}, f32}}, Attrs("add", {}));
  check_op("add", {{{2, 64, 9, 9}, f32}, {{2, 64, 9, 9}, f32}}, Attrs("add", {}));
}

TEST(Elementwise, AddRejectsShapesThatDoNotBroadcast) {
  std::string msg = testing::user_error([] {
    lookup("add").infer({{{4, 3}, f32}, {{2, 3}, f32}}, Attrs("add", {}));
  });
  EXPECT_NE(msg.find("add: shapes [4, 3] and [2, 3] do not broadcast"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil::ops
