// DataType: constructors, predicates, text round trips, parse diagnostics, integer ranges.
#include "anvil/ir/type.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/support/error.h"
#include "testing/errors.h"

namespace anvil::ir {
namespace {

using ::testing::HasSubstr;

using testing::user_error;

// Every scalar type there is, with its text.
struct Named {
  DataType type;
  const char* text;
};
const std::vector<Named> kScalarTypes = {
    {DataType::Int(8), "int8"},       {DataType::Int(16), "int16"},
    {DataType::Int(32), "int32"},     {DataType::Int(64), "int64"},
    {DataType::UInt(8), "uint8"},     {DataType::UInt(16), "uint16"},
    {DataType::UInt(32), "uint32"},   {DataType::UInt(64), "uint64"},
    {DataType::Float(16), "float16"}, {DataType::Float(32), "float32"},
    {DataType::Float(64), "float64"}, {DataType::BFloat16(), "bfloat16"},
    {DataType::Bool(), "bool"},       {DataType::Handle(), "handle"},
};

// ---------------------------------------------------------------------------------------------
// Constructors and predicates

TEST(DataType, DefaultIsScalarInt32) {
  DataType t;
  EXPECT_EQ(t, DataType::Int32());
  EXPECT_EQ(t.code(), DataType::Code::kInt);
  EXPECT_EQ(t.bits(), 32);
  EXPECT_EQ(t.lanes(), 1);
}

TEST(DataType, IsUsableInConstantExpressions) {
  static_assert(DataType::Int32().bits() == 32);
  static_assert(DataType::Float32(8).lanes() == 8);
  static_assert(DataType::Bool(4).element_of() == DataType::Bool());
  static_assert(DataType::Int(8) != DataType::UInt(8));
  SUCCEED();
}

TEST(DataType, ConstructorsSetCodeBitsAndLanes) {
  struct Case {
    DataType type;
    DataType::Code code;
    int bits, lanes;
  };
  const Case cases[] = {
      {DataType::Int(8), DataType::Code::kInt, 8, 1},
      {DataType::Int(16, 4), DataType::Code::kInt, 16, 4},
      {DataType::UInt(32, 2), DataType::Code::kUInt, 32, 2},
      {DataType::UInt(64), DataType::Code::kUInt, 64, 1},
      {DataType::Float(16), DataType::Code::kFloat, 16, 1},
      {DataType::Float(64, 8), DataType::Code::kFloat, 64, 8},
      {DataType::BFloat16(), DataType::Code::kBFloat, 16, 1},
      {DataType::BFloat16(16), DataType::Code::kBFloat, 16, 16},
      {DataType::Bool(), DataType::Code::kBool, 1, 1},
      {DataType::Bool(32), DataType::Code::kBool, 1, 32},
      {DataType::Handle(), DataType::Code::kHandle, 64, 1},
      {DataType::Int32(), DataType::Code::kInt, 32, 1},
      {DataType::Int32(4), DataType::Code::kInt, 32, 4},
      {DataType::Int64(), DataType::Code::kInt, 64, 1},
      {DataType::Int64(2), DataType::Code::kInt, 64, 2},
      {DataType::Float32(), DataType::Code::kFloat, 32, 1},
      {DataType::Float32(8), DataType::Code::kFloat, 32, 8},
      {DataType(DataType::Code::kUInt, 16, 3), DataType::Code::kUInt, 16, 3},
      {DataType(DataType::Code::kFloat, 32), DataType::Code::kFloat, 32, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.type.to_string());
    EXPECT_EQ(c.type.code(), c.code);
    EXPECT_EQ(c.type.bits(), c.bits);
    EXPECT_EQ(c.type.lanes(), c.lanes);
  }
}

TEST(DataType, CodesFollowDLPack) {
  EXPECT_EQ(static_cast<int>(DataType::Code::kInt), 0);
  EXPECT_EQ(static_cast<int>(DataType::Code::kUInt), 1);
  EXPECT_EQ(static_cast<int>(DataType::Code::kFloat), 2);
  EXPECT_EQ(static_cast<int>(DataType::Code::kHandle), 3);
  EXPECT_EQ(static_cast<int>(DataType::Code::kBFloat), 4);
  EXPECT_EQ(static_cast<int>(DataType::Code::kBool), 6);
}

TEST(DataType, BytesRoundBitsUpAndIgnoreLanes) {
  EXPECT_EQ(DataType::Int(8).bytes(), 1);
  EXPECT_EQ(DataType::Int(16).bytes(), 2);
  EXPECT_EQ(DataType::Int32().bytes(), 4);
  EXPECT_EQ(DataType::UInt(64).bytes(), 8);
  EXPECT_EQ(DataType::Float(16).bytes(), 2);
  EXPECT_EQ(DataType::BFloat16().bytes(), 2);
  EXPECT_EQ(DataType::Float(64).bytes(), 8);
  EXPECT_EQ(DataType::Bool().bytes(), 1);  // a bool is stored as one byte
  EXPECT_EQ(DataType::Handle().bytes(), 8);
  EXPECT_EQ(DataType::Float32(8).bytes(), 4);
}

TEST(DataType, KindPredicates) {
  struct Case {
    DataType type;
    bool is_int, is_uint, is_float, is_bool, is_handle;
  };
  const Case cases[] = {
      {DataType::Int(8), true, false, false, false, false},
      {DataType::Int64(4), true, false, false, false, false},
      {DataType::UInt(16), false, true, false, false, false},
      {DataType::Float(16), false, false, true, false, false},
      {DataType::Float(64, 2), false, false, true, false, false},
      {DataType::BFloat16(), false, false, true, false, false},
      {DataType::Bool(), false, false, false, true, false},
      {DataType::Handle(), false, false, false, false, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.type.to_string());
    EXPECT_EQ(c.type.is_int(), c.is_int);
    EXPECT_EQ(c.type.is_uint(), c.is_uint);
    EXPECT_EQ(c.type.is_int_or_uint(), c.is_int || c.is_uint);
    EXPECT_EQ(c.type.is_float(), c.is_float);
    EXPECT_EQ(c.type.is_bool(), c.is_bool);
    EXPECT_EQ(c.type.is_handle(), c.is_handle);
    EXPECT_EQ(c.type.is_numeric(), c.is_int || c.is_uint || c.is_float);
  }
}

TEST(DataType, BoolIsNeitherIntegerNorNumeric) {
  EXPECT_FALSE(DataType::Bool().is_int_or_uint());
  EXPECT_FALSE(DataType::Bool().is_numeric());
  EXPECT_FALSE(DataType::Handle().is_numeric());
}

TEST(DataType, ScalarAndVector) {
  EXPECT_TRUE(DataType::Int32().is_scalar());
  EXPECT_FALSE(DataType::Int32().is_vector());
  EXPECT_FALSE(DataType::Int32(2).is_scalar());
  EXPECT_TRUE(DataType::Int32(2).is_vector());
  EXPECT_TRUE(DataType::Bool(65535).is_vector());
}

TEST(DataType, WithLanesAndElementOf) {
  EXPECT_EQ(DataType::Float32().with_lanes(8), DataType::Float32(8));
  EXPECT_EQ(DataType::Float32(8).with_lanes(4), DataType::Float32(4));
  EXPECT_EQ(DataType::Float32(8).with_lanes(1), DataType::Float32());
  EXPECT_EQ(DataType::UInt(8, 16).element_of(), DataType::UInt(8));
  EXPECT_EQ(DataType::Bool(4).element_of(), DataType::Bool());
  EXPECT_EQ(DataType::BFloat16(4).element_of(), DataType::BFloat16());
  EXPECT_EQ(DataType::Int64().element_of(), DataType::Int64());
}

TEST(DataType, EqualityComparesCodeBitsAndLanes) {
  EXPECT_EQ(DataType::Int(32), DataType::Int32());
  EXPECT_NE(DataType::Int(32), DataType::UInt(32));
  EXPECT_NE(DataType::Int(32), DataType::Int(64));
  EXPECT_NE(DataType::Int(32), DataType::Int(32, 4));
  EXPECT_NE(DataType::Float(16), DataType::BFloat16());
  EXPECT_NE(DataType::Float(32), DataType::Int(32));
  EXPECT_NE(DataType::Bool(), DataType::UInt(8));
  EXPECT_NE(DataType::Handle(), DataType::UInt(64));
}

// ---------------------------------------------------------------------------------------------
// Text

TEST(DataTypeText, ScalarNames) {
  for (const Named& n : kScalarTypes) {
    EXPECT_EQ(n.type.to_string(), n.text);
  }
}

TEST(DataTypeText, VectorNamesAppendLanes) {
  EXPECT_EQ(DataType::Float32(4).to_string(), "float32x4");
  EXPECT_EQ(DataType::Int(8, 16).to_string(), "int8x16");
  EXPECT_EQ(DataType::UInt(64, 2).to_string(), "uint64x2");
  EXPECT_EQ(DataType::BFloat16(8).to_string(), "bfloat16x8");
  EXPECT_EQ(DataType::Bool(4).to_string(), "boolx4");
  EXPECT_EQ(DataType::Float(16, 65535).to_string(), "float16x65535");
}

TEST(DataTypeText, StreamOperatorMatchesToString) {
  std::ostringstream os;
  os << DataType::Int(16, 8) << " " << DataType::Handle() << " " << DataType::Bool();
  EXPECT_EQ(os.str(), "int16x8 handle bool");
}

TEST(DataTypeText, ParseKnownScalarNames) {
  for (const Named& n : kScalarTypes) {
    SCOPED_TRACE(n.text);
    EXPECT_EQ(DataType::parse(n.text), n.type);
  }
}

TEST(DataTypeText, RoundTripEveryTypeWithLanes) {
  for (const Named& n : kScalarTypes) {
    for (int lanes : {1, 2, 3, 4, 8, 16, 64, 1024, 65535}) {
      if (n.type.is_handle() && lanes > 1) continue;  // handles are scalars
      DataType t = n.type.with_lanes(lanes);
      std::string text = t.to_string();
      SCOPED_TRACE(text);
      EXPECT_EQ(DataType::parse(text), t);
      EXPECT_EQ(DataType::parse(text).to_string(), text);
    }
  }
}

TEST(DataTypeText, ParseVectorTypes) {
  EXPECT_EQ(DataType::parse("float32x8"), DataType::Float32(8));
  EXPECT_EQ(DataType::parse("int8x1"), DataType::Int(8));  // one lane is a scalar
  EXPECT_EQ(DataType::parse("boolx16"), DataType::Bool(16));
  EXPECT_EQ(DataType::parse("uint16x65535"), DataType::UInt(16, 65535));
  EXPECT_EQ(DataType::parse("bfloat16x2"), DataType::BFloat16(2));
}

TEST(DataTypeText, ParseErrorsNameTheText) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"", "'' is not a data type (expected e.g. int32, float32x8, bool)"},
      {"i32", "'i32' is not a data type"},
      {"Int32", "'Int32' is not a data type"},
      {" int32", "' int32' is not a data type"},
      {"double", "'double' is not a data type"},
      {"int", "'int' has an invalid bit width"},
      {"uint", "'uint' has an invalid bit width"},
      {"float", "'float' has an invalid bit width"},
      {"int7", "'int7' has an invalid bit width"},
      {"int1", "'int1' has an invalid bit width"},
      {"int128", "'int128' has an invalid bit width"},
      {"uint4", "'uint4' has an invalid bit width"},
      {"float8", "'float8' has an invalid bit width"},
      {"float128", "'float128' has an invalid bit width"},
      {"bfloat32", "'bfloat32' has an invalid bit width"},
      {"bfloat", "'bfloat' has an invalid bit width"},
      {"intx4", "'intx4' has an invalid bit width"},
      {"int-32", "'int-32' has an invalid bit width"},
      {"int32x", "'int32x' has an invalid lane count"},
      {"int32x0", "'int32x0' has an invalid lane count"},
      {"int32x-4", "'int32x-4' has an invalid lane count"},
      {"float32x65536", "'float32x65536' has an invalid lane count"},
      {"float32x99999999999999999999", "has an invalid lane count"},
      {"boolxx", "'boolxx' has an invalid lane count"},
      {"int32 ", "'int32 ' is not a data type (unexpected ' ')"},
      {"int32x4x2", "'int32x4x2' is not a data type (unexpected 'x2')"},
      {"int32_t", "'int32_t' is not a data type (unexpected '_t')"},
      {"bool8", "'bool8' is not a data type (unexpected '8')"},
      {"handle64", "'handle64' is not a data type (unexpected '64')"},
      {"float32y4", "'float32y4' is not a data type (unexpected 'y4')"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_THAT(user_error([&] { DataType::parse(c.text); }), HasSubstr(c.expected));
  }
}

// ---------------------------------------------------------------------------------------------
// Integer ranges

TEST(DataTypeRange, SignedIntegers) {
  EXPECT_EQ(DataType::Int(8).min_value(), -128);
  EXPECT_EQ(DataType::Int(8).max_value(), 127);
  EXPECT_EQ(DataType::Int(16).min_value(), -32768);
  EXPECT_EQ(DataType::Int(16).max_value(), 32767);
  EXPECT_EQ(DataType::Int(32).min_value(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(DataType::Int(32).max_value(), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(DataType::Int(64).min_value(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(DataType::Int(64).max_value(), std::numeric_limits<int64_t>::max());
}

TEST(DataTypeRange, UnsignedIntegers) {
  EXPECT_EQ(DataType::UInt(8).min_value(), 0);
  EXPECT_EQ(DataType::UInt(8).max_value(), 255);
  EXPECT_EQ(DataType::UInt(16).min_value(), 0);
  EXPECT_EQ(DataType::UInt(16).max_value(), 65535);
  EXPECT_EQ(DataType::UInt(32).min_value(), 0);
  EXPECT_EQ(DataType::UInt(32).max_value(), int64_t{4294967295});
  EXPECT_EQ(DataType::UInt(64).min_value(), 0);
  // uint64's true maximum does not fit in int64: it saturates.
  EXPECT_EQ(DataType::UInt(64).max_value(), std::numeric_limits<int64_t>::max());
}

TEST(DataTypeRange, Bool) {
  EXPECT_EQ(DataType::Bool().min_value(), 0);
  EXPECT_EQ(DataType::Bool().max_value(), 1);
}

TEST(DataTypeRange, VectorsHaveTheirElementRange) {
  EXPECT_EQ(DataType::Int(8, 16).min_value(), -128);
  EXPECT_EQ(DataType::Int(8, 16).max_value(), 127);
  EXPECT_EQ(DataType::UInt(16, 4).max_value(), 65535);
  EXPECT_EQ(DataType::Bool(8).max_value(), 1);
}

TEST(DataTypeRange, NonIntegerTypesAreAnInternalError) {
  for (DataType t : {DataType::Float32(), DataType::Float(64), DataType::Float(16),
                     DataType::BFloat16(), DataType::Handle()}) {
    SCOPED_TRACE(t.to_string());
    try {
      (void)t.min_value();
      ADD_FAILURE() << "min_value did not throw";
    } catch (const InternalError& e) {
      EXPECT_THAT(e.what(), HasSubstr("min_value of " + t.to_string()));
    }
    try {
      (void)t.max_value();
      ADD_FAILURE() << "max_value did not throw";
    } catch (const InternalError& e) {
      EXPECT_THAT(e.what(), HasSubstr("max_value of " + t.to_string()));
    }
  }
}

}  // namespace
}  // namespace anvil::ir
