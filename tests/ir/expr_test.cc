// Expression and statement nodes: every kind builds with the right type, and every typing rule
// rejects ill-typed nodes with a user error that names the offending types. Also the builders
// of op.h: literal matching, constants and node counting.
#include "anvil/ir/expr.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "anvil/ir/op.h"
#include "anvil/ir/stmt.h"
#include "anvil/support/error.h"
#include "testing/errors.h"

namespace anvil::ir {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

using testing::user_error;

const DataType i8 = DataType::Int(8);
const DataType i32 = DataType::Int32();
const DataType i64 = DataType::Int64();
const DataType u8 = DataType::UInt(8);
const DataType u32 = DataType::UInt(32);
const DataType f16 = DataType::Float(16);
const DataType f32 = DataType::Float32();
const DataType f64 = DataType::Float(64);
const DataType bf16 = DataType::BFloat16();
const DataType b1 = DataType::Bool();
const DataType handle = DataType::Handle();

Stmt nop() {
  return Evaluate::make(0);
}

// ---------------------------------------------------------------------------------------------
// Immediates

TEST(IntImm, BuildsEveryIntegerAndBoolType) {
  for (DataType t :
       {i8, DataType::Int(16), i32, i64, u8, DataType::UInt(16), u32, DataType::UInt(64), b1}) {
    SCOPED_TRACE(t.to_string());
    Expr e = IntImm::make(t, 1);
    ASSERT_NE(e.as<IntImm>(), nullptr);
    EXPECT_EQ(e.type(), t);
    EXPECT_EQ(e.node_type(), IRNodeType::IntImm);
    EXPECT_EQ(e.as<IntImm>()->value, 1);
  }
}

TEST(IntImm, AcceptsTheEndsOfEachRange) {
  EXPECT_EQ(IntImm::make(i8, -128).as<IntImm>()->value, -128);
  EXPECT_EQ(IntImm::make(i8, 127).as<IntImm>()->value, 127);
  EXPECT_EQ(IntImm::make(u8, 255).as<IntImm>()->value, 255);
  EXPECT_EQ(IntImm::make(u8, 0).as<IntImm>()->value, 0);
  EXPECT_EQ(IntImm::make(i64, std::numeric_limits<int64_t>::min()).as<IntImm>()->value,
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(
      IntImm::make(DataType::UInt(64), std::numeric_limits<int64_t>::max()).as<IntImm>()->value,
      std::numeric_limits<int64_t>::max());
  EXPECT_EQ(IntImm::make(b1, 0).as<IntImm>()->value, 0);
}

TEST(IntImm, RejectsValuesOutOfRange) {
  struct Case {
    DataType type;
    int64_t value;
    const char* expected;
  };
  const Case cases[] = {
      {i8, 128, "IntImm: value 128 does not fit in int8"},
      {i8, -129, "IntImm: value -129 does not fit in int8"},
      {u8, 256, "IntImm: value 256 does not fit in uint8"},
      {u8, -1, "IntImm: value -1 does not fit in uint8"},
      {i32, int64_t{1} << 31, "IntImm: value 2147483648 does not fit in int32"},
      {u32, int64_t{1} << 32, "IntImm: value 4294967296 does not fit in uint32"},
      {DataType::UInt(64), -1, "IntImm: value -1 does not fit in uint64"},
      {b1, 2, "IntImm: value 2 does not fit in bool"},
      {b1, -1, "IntImm: value -1 does not fit in bool"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    EXPECT_THAT(user_error([&] { IntImm::make(c.type, c.value); }), HasSubstr(c.expected));
  }
}

TEST(IntImm, RejectsNonIntegerAndVectorTypes) {
  EXPECT_THAT(user_error([] { IntImm::make(f32, 1); }),
              HasSubstr("IntImm: type must be a scalar integer or bool, not float32"));
  EXPECT_THAT(user_error([] { IntImm::make(handle, 0); }), HasSubstr("not handle"));
  EXPECT_THAT(user_error([] { IntImm::make(DataType::Int32(4), 1); }), HasSubstr("int32x4"));
}

TEST(FloatImm, BuildsEveryFloatType) {
  for (DataType t : {f16, f32, f64, bf16}) {
    SCOPED_TRACE(t.to_string());
    Expr e = FloatImm::make(t, 0.5);
    ASSERT_NE(e.as<FloatImm>(), nullptr);
    EXPECT_EQ(e.type(), t);
    EXPECT_EQ(e.as<FloatImm>()->value, 0.5);
  }
  EXPECT_TRUE(std::isinf(FloatImm::make(f32, INFINITY).as<FloatImm>()->value));
  EXPECT_TRUE(std::isnan(FloatImm::make(f64, NAN).as<FloatImm>()->value));
}

TEST(FloatImm, RejectsNonFloatAndVectorTypes) {
  EXPECT_THAT(user_error([] { FloatImm::make(i32, 1.0); }),
              HasSubstr("FloatImm: type must be a scalar float, not int32"));
  EXPECT_THAT(user_error([] { FloatImm::make(b1, 1.0); }), HasSubstr("not bool"));
  EXPECT_THAT(user_error([] { FloatImm::make(DataType::Float32(4), 1.0); }),
              HasSubstr("not float32x4"));
}

TEST(Literals, IntAndFloatConvertToInt32AndFloat32Immediates) {
  Expr i = 7;
  ASSERT_NE(i.as<IntImm>(), nullptr);
  EXPECT_EQ(i.type(), i32);
  EXPECT_EQ(i.as<IntImm>()->value, 7);
  Expr f = 2.5f;
  ASSERT_NE(f.as<FloatImm>(), nullptr);
  EXPECT_EQ(f.type(), f32);
  EXPECT_EQ(f.as<FloatImm>()->value, 2.5);
  Expr zero = 0;  // not a null pointer
  ASSERT_TRUE(zero.defined());
  EXPECT_NE(zero.as<IntImm>(), nullptr);
}

// ---------------------------------------------------------------------------------------------
// Handles and variables

TEST(Handles, UndefinedByDefault) {
  Expr e;
  Stmt s;
  EXPECT_FALSE(e.defined());
  EXPECT_FALSE(static_cast<bool>(e));
  EXPECT_FALSE(s.defined());
  EXPECT_EQ(e.as<IntImm>(), nullptr);
  EXPECT_EQ(s.as<Seq>(), nullptr);
}

TEST(Handles, AsChecksTheNodeKind) {
  Var x("x");
  Expr e = Add::make(x, 1);
  EXPECT_NE(e.as<Add>(), nullptr);
  EXPECT_EQ(e.as<Sub>(), nullptr);
  EXPECT_EQ(e.as<Variable>(), nullptr);
  EXPECT_EQ(e.as<Add>()->a.as<Variable>(), x.get());
  Stmt s = Evaluate::make(e);
  EXPECT_NE(s.as<Evaluate>(), nullptr);
  EXPECT_EQ(s.as<Store>(), nullptr);
}

TEST(Handles, CopiesShareTheNode) {
  Expr a = Add::make(Var("x"), 1);
  Expr b = a;
  EXPECT_TRUE(a.same_as(b));
  Expr c = Add::make(a.as<Add>()->a, 1);
  EXPECT_FALSE(a.same_as(c));
  b = c;
  EXPECT_TRUE(b.same_as(c));
  Expr moved = std::move(b);
  EXPECT_TRUE(moved.same_as(c));
  EXPECT_FALSE(b.defined());  // NOLINT: testing the moved-from state
}

TEST(Handles, NodeOutlivesTheHandleThatMadeIt) {
  Expr sum;
  {
    Var x("x");
    sum = Add::make(x, Mul::make(x, 2));
  }
  const Add* add = sum.as<Add>();
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->a.as<Variable>()->name, "x");
  EXPECT_TRUE(add->b.as<Mul>()->a.same_as(add->a));
}

TEST(Var, HasNameTypeAndIdentity) {
  Var x("x"), y("x"), z("z", f32);
  EXPECT_EQ(x.name(), "x");
  EXPECT_EQ(x.type(), i32);
  EXPECT_EQ(z.type(), f32);
  EXPECT_EQ(x->name, "x");
  EXPECT_EQ(x.node_type(), IRNodeType::Variable);
  // Same name, different variables: identity is the node.
  EXPECT_FALSE(x.same_as(y));
  EXPECT_LT(x->id, y->id);  // creation order
  EXPECT_LT(y->id, z->id);
  Var copy(x.get());
  EXPECT_TRUE(copy.same_as(x));
}

TEST(Var, DefaultsToInt32NamedV) {
  Var v;
  EXPECT_EQ(v.name(), "v");
  EXPECT_EQ(v.type(), i32);
}

TEST(Var, HandleVariablesAreAllowed) {
  EXPECT_EQ(Var("p", handle).type(), handle);
}

TEST(Var, VectorVariablesAreAllowed) {
  // Vectorization binds lets to vector values.
  EXPECT_EQ(Var("vec", DataType::Float32(4)).type(), DataType::Float32(4));
}

TEST(NodeTypeName, NamesEveryKind) {
  EXPECT_STREQ(node_type_name(IRNodeType::IntImm), "IntImm");
  EXPECT_STREQ(node_type_name(IRNodeType::FloorDiv), "FloorDiv");
  EXPECT_STREQ(node_type_name(IRNodeType::Reduce), "Reduce");
  EXPECT_STREQ(node_type_name(IRNodeType::LetStmt), "LetStmt");
  EXPECT_STREQ(node_type_name(IRNodeType::Barrier), "Barrier");
}

// ---------------------------------------------------------------------------------------------
// Cast

TEST(Cast, ChangesTheType) {
  Var x("x");
  Expr c = Cast::make(f32, x);
  ASSERT_NE(c.as<Cast>(), nullptr);
  EXPECT_EQ(c.type(), f32);
  EXPECT_TRUE(c.as<Cast>()->value.same_as(x));
  EXPECT_EQ(Cast::make(b1, x).type(), b1);
  EXPECT_EQ(Cast::make(DataType::Int(8, 4), Broadcast::make(1.0f, 4)).type(), DataType::Int(8, 4));
  EXPECT_EQ(Cast::make(i32, x).type(), i32);  // a no-op cast is still a node
}

TEST(Cast, RejectsLaneChangesNamingBothTypes) {
  EXPECT_THAT(user_error([] { Cast::make(DataType::Float32(4), Var("x")); }),
              HasSubstr("Cast: cannot cast int32 to float32x4 (lane counts differ)"));
  EXPECT_THAT(user_error([] { Cast::make(f32, Broadcast::make(1, 8)); }),
              AllOf(HasSubstr("int32x8"), HasSubstr("float32")));
}

TEST(Cast, RejectsHandles) {
  EXPECT_THAT(user_error([] { Cast::make(handle, Var("x")); }),
              HasSubstr("Cast: cannot cast int32 to handle"));
  EXPECT_THAT(user_error([] { Cast::make(i64, Var("p", handle)); }),
              HasSubstr("Cast: cannot cast handle to int64"));
}

TEST(Cast, RejectsUndefinedValue) {
  EXPECT_THAT(user_error([] { Cast::make(f32, Expr()); }),
              HasSubstr("Cast: operand 'value' is undefined"));
}

// ---------------------------------------------------------------------------------------------
// Binary operators

using BinaryMaker = Expr (*)(Expr, Expr);
struct BinaryOp {
  const char* name;
  BinaryMaker make;
  IRNodeType kind;
};

const BinaryOp kArith[] = {
    {"Add", &Add::make, IRNodeType::Add}, {"Sub", &Sub::make, IRNodeType::Sub},
    {"Mul", &Mul::make, IRNodeType::Mul}, {"Min", &Min::make, IRNodeType::Min},
    {"Max", &Max::make, IRNodeType::Max},
};
const BinaryOp kIntDivision[] = {
    {"FloorDiv", &FloorDiv::make, IRNodeType::FloorDiv},
    {"FloorMod", &FloorMod::make, IRNodeType::FloorMod},
    {"TruncDiv", &TruncDiv::make, IRNodeType::TruncDiv},
    {"TruncMod", &TruncMod::make, IRNodeType::TruncMod},
};
const std::vector<BinaryOp> kEquality = {
    {"EQ", &EQ::make, IRNodeType::EQ},
    {"NE", &NE::make, IRNodeType::NE},
};
const std::vector<BinaryOp> kOrdering = {
    {"LT", &LT::make, IRNodeType::LT},
    {"LE", &LE::make, IRNodeType::LE},
    {"GT", &GT::make, IRNodeType::GT},
    {"GE", &GE::make, IRNodeType::GE},
};
const BinaryOp kLogic[] = {
    {"And", &And::make, IRNodeType::And},
    {"Or", &Or::make, IRNodeType::Or},
};

// Builds op(a, b) and checks its kind, operands and type.
void expect_binary(const BinaryOp& op, const Expr& a, const Expr& b, DataType expected) {
  SCOPED_TRACE(std::string(op.name) + " on " + a.type().to_string());
  Expr e = op.make(a, b);
  ASSERT_TRUE(e.defined());
  EXPECT_EQ(e.node_type(), op.kind);
  EXPECT_STREQ(node_type_name(e.node_type()), op.name);
  EXPECT_EQ(e.type(), expected);
}

// op(a, b) is rejected with a message that starts with the node name and names both types.
void expect_mismatch_rejected(const BinaryOp& op, const Expr& a, const Expr& b) {
  SCOPED_TRACE(std::string(op.name) + " on " + a.type().to_string() + " and " +
               b.type().to_string());
  EXPECT_THAT(user_error([&] { op.make(a, b); }),
              AllOf(HasSubstr(std::string(op.name) + ": operand types differ"),
                    HasSubstr(a.type().to_string()), HasSubstr(b.type().to_string())));
}

TEST(Arithmetic, BuildsOnEveryNumericTypeWithTheOperandType) {
  for (const BinaryOp& op : kArith) {
    for (DataType t :
         {i8, i32, i64, u8, u32, f16, f32, f64, bf16, DataType::Int32(4), DataType::Float32(8)}) {
      Expr a = make_const(t, int64_t{3}), b = make_const(t, int64_t{2});
      expect_binary(op, a, b, t);
    }
  }
}

TEST(Arithmetic, RejectsMismatchedTypesNamingBoth) {
  for (const BinaryOp& op : kArith) {
    expect_mismatch_rejected(op, Var("x", i32), Var("y", f32));
    expect_mismatch_rejected(op, Var("x", i32), Var("y", i64));
    expect_mismatch_rejected(op, Var("x", i32), Var("y", u32));
    expect_mismatch_rejected(op, Var("x", f16), Var("y", bf16));
    expect_mismatch_rejected(op, Broadcast::make(1, 4), Broadcast::make(1, 8));
    expect_mismatch_rejected(op, Var("x", f32), Broadcast::make(1.0f, 4));
  }
}

TEST(Arithmetic, AddOfInt32AndFloat32NamesBoth) {
  Var x("x"), y("y", f32);
  EXPECT_THAT(user_error([&] { Add::make(x, y); }),
              HasSubstr("Add: operand types differ: x is int32 but y is float32"));
}

TEST(Arithmetic, RejectsBoolAndHandleOperands) {
  for (const BinaryOp& op : kArith) {
    SCOPED_TRACE(op.name);
    EXPECT_THAT(user_error([&] { op.make(Var("p", b1), Var("q", b1)); }),
                HasSubstr(std::string(op.name) + ": operands must be numbers, not bool"));
    EXPECT_THAT(user_error([&] { op.make(Var("p", handle), Var("q", handle)); }),
                HasSubstr("not handle"));
  }
}

TEST(Arithmetic, RejectsUndefinedOperands) {
  EXPECT_THAT(user_error([] { Add::make(Expr(), 1); }), HasSubstr("Add: operand 'a' is undefined"));
  EXPECT_THAT(user_error([] { Mul::make(1, Expr()); }), HasSubstr("Mul: operand 'b' is undefined"));
}

TEST(Div, IsTrueDivisionOnFloats) {
  const BinaryOp div{"Div", &Div::make, IRNodeType::Div};
  for (DataType t : {f16, f32, f64, bf16, DataType::Float32(4)}) {
    expect_binary(div, make_const(t, 1.0), make_const(t, 2.0), t);
  }
  expect_mismatch_rejected(div, Var("x", f32), Var("y", f64));
  expect_mismatch_rejected(div, Var("x", i32), Var("y", f32));
}

TEST(Div, RejectsIntegersPointingToFloorDiv) {
  for (DataType t : {i32, i64, u8}) {
    SCOPED_TRACE(t.to_string());
    EXPECT_THAT(user_error([&] { Div::make(Var("x", t), Var("y", t)); }),
                AllOf(HasSubstr("Div: true division is for floats, not " + t.to_string()),
                      HasSubstr("use FloorDiv or TruncDiv")));
  }
  EXPECT_THAT(user_error([] { Div::make(Var("p", b1), Var("q", b1)); }), HasSubstr("not bool"));
}

TEST(IntegerDivision, BuildsOnIntegers) {
  for (const BinaryOp& op : kIntDivision) {
    for (DataType t : {i8, i32, i64, u8, u32, DataType::Int32(4)}) {
      expect_binary(op, make_const(t, int64_t{7}), make_const(t, int64_t{2}), t);
    }
  }
}

TEST(IntegerDivision, RejectsFloatsPointingToDiv) {
  for (const BinaryOp& op : kIntDivision) {
    for (DataType t : {f32, f64, f16, DataType::Float32(4)}) {
      SCOPED_TRACE(std::string(op.name) + " on " + t.to_string());
      EXPECT_THAT(user_error([&] { op.make(make_const(t, 7.0), make_const(t, 2.0)); }),
                  HasSubstr(std::string(op.name) + ": operands must be integers, not " +
                            t.to_string() + " (use Div for floats)"));
    }
    EXPECT_THAT(user_error([&] { op.make(Var("p", b1), Var("q", b1)); }), HasSubstr("not bool"));
  }
}

TEST(IntegerDivision, RejectsMismatchedTypesNamingBoth) {
  for (const BinaryOp& op : kIntDivision) {
    expect_mismatch_rejected(op, Var("x", i32), Var("y", i64));
    expect_mismatch_rejected(op, Var("x", i32), Var("y", f32));
    expect_mismatch_rejected(op, Var("x", u8), Var("y", i8));
  }
}

TEST(Comparison, YieldsBoolWithTheOperandLanes) {
  for (const std::vector<BinaryOp>* ops : {&kEquality, &kOrdering}) {
    for (const BinaryOp& op : *ops) {
      for (DataType t : {i8, i32, u32, f16, f32, f64}) {
        expect_binary(op, make_const(t, int64_t{1}), make_const(t, int64_t{2}), b1);
      }
      expect_binary(op, Broadcast::make(1, 4), Broadcast::make(2, 4), DataType::Bool(4));
      expect_binary(op, Broadcast::make(1.0f, 16), Broadcast::make(2.0f, 16), DataType::Bool(16));
    }
  }
}

TEST(Comparison, EqualityAlsoComparesBoolsAndHandles) {
  for (const BinaryOp& op : kEquality) {
    expect_binary(op, Var("p", b1), Var("q", b1), b1);
    expect_binary(op, Broadcast::make(Var("p", b1), 4), Broadcast::make(Var("q", b1), 4),
                  DataType::Bool(4));
    expect_binary(op, Var("p", handle), Var("q", handle), b1);
  }
}

TEST(Comparison, OrderingRejectsBoolsAndHandles) {
  for (const BinaryOp& op : kOrdering) {
    SCOPED_TRACE(op.name);
    EXPECT_THAT(user_error([&] { op.make(Var("p", b1), Var("q", b1)); }),
                HasSubstr(std::string(op.name) + ": cannot compare values of type bool"));
    EXPECT_THAT(user_error([&] { op.make(Var("p", handle), Var("q", handle)); }),
                HasSubstr("cannot compare values of type handle"));
  }
}

TEST(Comparison, RejectsMismatchedTypesNamingBoth) {
  for (const std::vector<BinaryOp>* ops : {&kEquality, &kOrdering}) {
    for (const BinaryOp& op : *ops) {
      expect_mismatch_rejected(op, Var("x", i32), Var("y", f32));
      expect_mismatch_rejected(op, Var("x", i64), Var("y", u32));
      expect_mismatch_rejected(op, Broadcast::make(1, 4), Var("y", i32));
    }
  }
  expect_mismatch_rejected(kEquality[0], Var("p", b1), Var("x", i32));
}

TEST(Logic, BuildsOnBoolsOfAnyLanes) {
  for (const BinaryOp& op : kLogic) {
    expect_binary(op, Var("p", b1), Var("q", b1), b1);
    expect_binary(op, make_bool(true, 4), make_bool(false, 4), DataType::Bool(4));
  }
}

TEST(Logic, RejectsNonBools) {
  for (const BinaryOp& op : kLogic) {
    SCOPED_TRACE(op.name);
    EXPECT_THAT(user_error([&] { op.make(Var("x", i32), Var("y", i32)); }),
                HasSubstr(std::string(op.name) + ": operands must be bool, not int32"));
    EXPECT_THAT(user_error([&] { op.make(Var("x", f32), Var("y", f32)); }),
                HasSubstr("not float32"));
    expect_mismatch_rejected(op, Var("p", b1), Var("x", i32));
    expect_mismatch_rejected(op, Var("p", b1), make_bool(true, 4));
  }
}

TEST(Not, NegatesBools) {
  Expr n = Not::make(Var("p", b1));
  ASSERT_NE(n.as<Not>(), nullptr);
  EXPECT_EQ(n.type(), b1);
  EXPECT_EQ(Not::make(make_bool(true, 8)).type(), DataType::Bool(8));
}

TEST(Not, RejectsNonBools) {
  EXPECT_THAT(user_error([] { Not::make(Var("x")); }),
              HasSubstr("Not: operand must be bool, not int32"));
  EXPECT_THAT(user_error([] { Not::make(Expr()); }), HasSubstr("Not: operand 'a' is undefined"));
}

// ---------------------------------------------------------------------------------------------
// Select

TEST(Select, HasTheValuesType) {
  Var p("p", b1), x("x", f32), y("y", f32);
  Expr s = Select::make(p, x, y);
  ASSERT_NE(s.as<Select>(), nullptr);
  EXPECT_EQ(s.type(), f32);
  EXPECT_TRUE(s.as<Select>()->condition.same_as(p));
  EXPECT_TRUE(s.as<Select>()->true_value.same_as(x));
  EXPECT_TRUE(s.as<Select>()->false_value.same_as(y));
}

TEST(Select, AcceptsAScalarOrALaneWiseCondition) {
  Expr v = Broadcast::make(1.0f, 4), w = Broadcast::make(2.0f, 4);
  EXPECT_EQ(Select::make(Var("p", b1), v, w).type(), DataType::Float32(4));
  EXPECT_EQ(Select::make(make_bool(true, 4), v, w).type(), DataType::Float32(4));
}

TEST(Select, RejectsConditionOfWrongLanes) {
  Expr v = Broadcast::make(1.0f, 4), w = Broadcast::make(2.0f, 4);
  EXPECT_THAT(user_error([&] { Select::make(make_bool(true, 2), v, w); }),
              HasSubstr("Select: condition must be bool with 1 or 4 lanes, not boolx2 (the values "
                        "are float32x4)"));
  // A vector condition cannot choose between scalars either.
  EXPECT_THAT(user_error([] { Select::make(make_bool(true, 4), 1, 2); }),
              AllOf(HasSubstr("boolx4"), HasSubstr("int32")));
}

TEST(Select, RejectsNonBoolCondition) {
  EXPECT_THAT(
      user_error([] { Select::make(Var("c"), 1, 2); }),
      HasSubstr("Select: condition must be a scalar bool, not int32 (the values are int32)"));
  EXPECT_THAT(user_error([] { Select::make(Expr(), 1, 2); }),
              HasSubstr("Select: operand 'condition' is undefined"));
}

TEST(Select, RejectsValuesOfDifferentTypesNamingBoth) {
  EXPECT_THAT(
      user_error([] { Select::make(Var("p", b1), Var("x"), Var("y", f32)); }),
      AllOf(HasSubstr("Select: operand types differ"), HasSubstr("int32"), HasSubstr("float32")));
}

// ---------------------------------------------------------------------------------------------
// Vectors

TEST(Ramp, IsAVectorOfTheBaseType) {
  Var x("x"), l("l", i64);
  Expr r = Ramp::make(x, 1, 8);
  ASSERT_NE(r.as<Ramp>(), nullptr);
  EXPECT_EQ(r.type(), DataType::Int32(8));
  EXPECT_EQ(r.as<Ramp>()->lanes, 8);
  EXPECT_EQ(Ramp::make(l, IntImm::make(i64, 2), 4).type(), DataType::Int64(4));
  EXPECT_EQ(Ramp::make(IntImm::make(u8, 0), IntImm::make(u8, 1), 2).type(), DataType::UInt(8, 2));
  EXPECT_EQ(Ramp::make(0, 1, 65535).type(), DataType::Int32(65535));
}

TEST(Ramp, RejectsMismatchedBaseAndStrideNamingBoth) {
  Var l("l", i64);
  EXPECT_THAT(user_error([&] { Ramp::make(l, 1, 4); }),
              HasSubstr("Ramp: base is int64 but stride is int32"));
  EXPECT_THAT(user_error([] { Ramp::make(IntImm::make(u32, 0), 1, 4); }),
              AllOf(HasSubstr("uint32"), HasSubstr("int32")));
}

TEST(Ramp, RejectsNonIntegerOrVectorBaseAndStride) {
  EXPECT_THAT(user_error([] { Ramp::make(0.0f, 1.0f, 4); }),
              HasSubstr("Ramp: 'base' must be a scalar integer, but 0.0f has type float32"));
  EXPECT_THAT(user_error([] { Ramp::make(0, Var("p", b1), 4); }),
              HasSubstr("Ramp: 'stride' must be a scalar integer, but p has type bool"));
  EXPECT_THAT(user_error([] { Ramp::make(Broadcast::make(0, 4), 1, 4); }),
              HasSubstr("has type int32x4"));
  EXPECT_THAT(user_error([] { Ramp::make(Expr(), 1, 4); }),
              HasSubstr("Ramp: operand 'base' is undefined"));
}

TEST(Ramp, RejectsBadLaneCounts) {
  for (int lanes : {-1, 0, 1, 65536}) {
    SCOPED_TRACE(lanes);
    EXPECT_THAT(user_error([&] { Ramp::make(0, 1, lanes); }),
                HasSubstr("Ramp: lanes must be in [2, 65535], not " + std::to_string(lanes)));
  }
}

TEST(Broadcast, RepeatsAScalar) {
  Expr b = Broadcast::make(Var("x", f32), 4);
  ASSERT_NE(b.as<Broadcast>(), nullptr);
  EXPECT_EQ(b.type(), DataType::Float32(4));
  EXPECT_EQ(b.as<Broadcast>()->lanes, 4);
  EXPECT_EQ(Broadcast::make(Var("p", b1), 16).type(), DataType::Bool(16));
  EXPECT_EQ(Broadcast::make(Var("p", handle), 2).type(), handle.with_lanes(2));
}

TEST(Broadcast, RejectsAVectorValue) {
  EXPECT_THAT(user_error([] { Broadcast::make(Broadcast::make(1, 4), 2); }),
              HasSubstr("Broadcast: value must be a scalar, not int32x4"));
  EXPECT_THAT(user_error([] { Broadcast::make(Ramp::make(0, 1, 4), 4); }),
              HasSubstr("not int32x4"));
}

TEST(Broadcast, RejectsBadLaneCounts) {
  for (int lanes : {0, 1, 65536}) {
    SCOPED_TRACE(lanes);
    EXPECT_THAT(user_error([&] { Broadcast::make(1, lanes); }),
                HasSubstr("Broadcast: lanes must be in [2, 65535], not " + std::to_string(lanes)));
  }
  EXPECT_THAT(user_error([] { Broadcast::make(Expr(), 4); }),
              HasSubstr("Broadcast: operand 'value' is undefined"));
}

// ---------------------------------------------------------------------------------------------
// Buffers, loads and stores

TEST(Buffer, HoldsShapeStridesScopeAndADataHandle) {
  Var n("n");
  Buffer b = Buffer::make("B", f32, {n, 16}, {16, 1}, MemoryScope::kShared);
  EXPECT_EQ(b->name, "B");
  EXPECT_EQ(b->dtype, f32);
  EXPECT_EQ(b.ndim(), 2);
  EXPECT_TRUE(b->shape[0].same_as(n));
  EXPECT_EQ(b->strides.size(), 2u);
  EXPECT_EQ(b->scope, MemoryScope::kShared);
  EXPECT_EQ(b->data.name(), "B");
  EXPECT_EQ(b->data.type(), handle);
  Buffer c = Buffer::make("C", i8, {});
  EXPECT_EQ(c.ndim(), 0);
  EXPECT_EQ(c->scope, MemoryScope::kGlobal);
  EXPECT_TRUE(c->strides.empty());
}

TEST(Buffer, IdentityIsTheNode) {
  Buffer a = Buffer::make("A", f32, {4}), b = Buffer::make("A", f32, {4});
  EXPECT_FALSE(a.same_as(b));
  EXPECT_FALSE(a->data.same_as(b->data));
}

TEST(Buffer, MemoryScopeNames) {
  EXPECT_STREQ(memory_scope_name(MemoryScope::kGlobal), "global");
  EXPECT_STREQ(memory_scope_name(MemoryScope::kShared), "shared");
  EXPECT_STREQ(memory_scope_name(MemoryScope::kLocal), "local");
}

TEST(Buffer, RejectsBadShapesStridesAndElementTypes) {
  EXPECT_THAT(user_error([] {
                Buffer::make("B", f32, {4, 4}, {1});
              }),
              HasSubstr("Buffer 'B' has 2 dimensions but 1 strides"));
  EXPECT_THAT(user_error([] { Buffer::make("B", f32, {4.0f}); }),
              HasSubstr("Buffer: 'shape' must be a scalar integer, but 4.0f has type float32"));
  EXPECT_THAT(user_error([] { Buffer::make("B", f32, {4}, {Broadcast::make(1, 2)}); }),
              HasSubstr("Buffer: 'strides' must be a scalar integer"));
  EXPECT_THAT(user_error([] { Buffer::make("B", f32, {Expr()}); }),
              HasSubstr("Buffer: operand 'shape' is undefined"));
  EXPECT_THAT(user_error([] { Buffer::make("P", handle, {4}); }),
              HasSubstr("Buffer 'P': elements cannot be handles"));
}

TEST(Load, ScalarLoadHasTheElementType) {
  Buffer a = Buffer::make("A", f32, {64});
  Var i("i");
  Expr e = Load::make(a, {i});
  ASSERT_NE(e.as<Load>(), nullptr);
  EXPECT_EQ(e.type(), f32);
  EXPECT_TRUE(e.as<Load>()->buffer.same_as(a));
  EXPECT_FALSE(e.as<Load>()->predicate.defined());
  Buffer m = Buffer::make("M", u8, {4, 4});
  EXPECT_EQ(Load::make(m, {1, IntImm::make(i64, 2)}).type(), u8);     // index types may differ
  EXPECT_EQ(Load::make(Buffer::make("S", i32, {}), {}).type(), i32);  // 0-d buffer
}

TEST(Load, VectorIndexMakesAVectorLoad) {
  Buffer a = Buffer::make("A", f32, {64});
  EXPECT_EQ(Load::make(a, {Ramp::make(0, 1, 8)}).type(), DataType::Float32(8));
  Buffer m = Buffer::make("M", i8, {16, 16});
  // One vector index among scalars; several vector indices with the same lanes.
  EXPECT_EQ(Load::make(m, {Var("i"), Ramp::make(0, 1, 4)}).type(), DataType::Int(8, 4));
  EXPECT_EQ(Load::make(m, {Broadcast::make(3, 4), Ramp::make(0, 1, 4)}).type(),
            DataType::Int(8, 4));
  // A buffer of vectors: lanes multiply.
  Buffer v = Buffer::make("V", DataType::Float32(4), {16});
  EXPECT_EQ(Load::make(v, {1}).type(), DataType::Float32(4));
  EXPECT_EQ(Load::make(v, {Ramp::make(0, 1, 2)}).type(), DataType::Float32(8));
}

TEST(Load, PredicateMasksLanes) {
  Buffer a = Buffer::make("A", f32, {64});
  Expr p = make_bool(true, 4);
  Expr e = Load::make(a, {Ramp::make(0, 1, 4)}, p);
  EXPECT_EQ(e.type(), DataType::Float32(4));
  EXPECT_TRUE(e.as<Load>()->predicate.same_as(p));
  EXPECT_EQ(Load::make(a, {0}, Var("p", b1)).type(), f32);
}

TEST(Load, RejectsWrongIndexCount) {
  Buffer m = Buffer::make("M", f32, {4, 4});
  EXPECT_THAT(user_error([&] { Load::make(m, {1}); }),
              HasSubstr("Load of 'M': 1 indices for a 2-dimensional buffer"));
  EXPECT_THAT(user_error([&] {
                Load::make(m, {1, 2, 3});
              }),
              HasSubstr("Load of 'M': 3 indices for a 2-dimensional buffer"));
  EXPECT_THAT(user_error([&] { Load::make(m, {}); }), HasSubstr("0 indices"));
}

TEST(Load, RejectsNonIntegerIndices) {
  Buffer a = Buffer::make("A", f32, {4});
  EXPECT_THAT(user_error([&] { Load::make(a, {Var("f", f32)}); }),
              HasSubstr("Load of 'A': index f has type float32, not an integer"));
  EXPECT_THAT(user_error([&] { Load::make(a, {Var("p", b1)}); }), HasSubstr("has type bool"));
  EXPECT_THAT(user_error([&] { Load::make(a, {Expr()}); }),
              HasSubstr("Load: operand 'index' is undefined"));
}

TEST(Load, RejectsIndicesOfDifferentLanes) {
  Buffer m = Buffer::make("M", f32, {16, 16});
  EXPECT_THAT(user_error([&] {
                Load::make(m, {Ramp::make(0, 1, 4), Ramp::make(0, 1, 8)});
              }),
              HasSubstr("Load of 'M': indices have different lane counts (4 and 8)"));
}

TEST(Load, RejectsPredicateOfWrongTypeNamingBoth) {
  Buffer a = Buffer::make("A", f32, {64});
  EXPECT_THAT(user_error([&] { Load::make(a, {Ramp::make(0, 1, 4)}, make_bool(true, 8)); }),
              HasSubstr("Load of 'A': predicate must be boolx4, not boolx8"));
  EXPECT_THAT(user_error([&] { Load::make(a, {0}, make_bool(true, 4)); }),
              HasSubstr("predicate must be bool, not boolx4"));
  EXPECT_THAT(user_error([&] { Load::make(a, {Ramp::make(0, 1, 4)}, Broadcast::make(1, 4)); }),
              HasSubstr("predicate must be boolx4, not int32x4"));
}

TEST(Load, RejectsUndefinedBuffer) {
  EXPECT_THAT(user_error([] { Load::make(Buffer(), {}); }), HasSubstr("Load: buffer is undefined"));
}

// ---------------------------------------------------------------------------------------------
// Let, Call, Reduce

TEST(Let, HasTheBodyType) {
  Var x("x");
  Expr e = Let::make(x, 3, Cast::make(f32, x));
  ASSERT_NE(e.as<Let>(), nullptr);
  EXPECT_EQ(e.type(), f32);
  EXPECT_TRUE(e.as<Let>()->var.same_as(x));
}

TEST(Let, RejectsValueTypeMismatchNamingBoth) {
  Var x("x");
  EXPECT_THAT(user_error([&] { Let::make(x, 1.0f, x); }),
              HasSubstr("Let: 'x' has type int32 but its value 1.0f has type float32"));
  Var l("l", i64);
  EXPECT_THAT(user_error([&] { Let::make(l, 1, l); }),
              AllOf(HasSubstr("int64"), HasSubstr("int32")));
}

TEST(Let, RejectsUndefinedParts) {
  Var x("x");
  EXPECT_THAT(user_error([&] { Let::make(x, Expr(), x); }),
              HasSubstr("Let: operand 'value' is undefined"));
  EXPECT_THAT(user_error([&] { Let::make(x, 1, Expr()); }),
              HasSubstr("Let: operand 'body' is undefined"));
  EXPECT_THAT(user_error([] { Let::make(Var(static_cast<const Variable*>(nullptr)), 1, 2); }),
              HasSubstr("Let: variable is undefined"));
}

TEST(Call, IntrinsicNamesAndArities) {
  struct Case {
    Intrinsic op;
    const char* name;
    int arity;
  };
  const Case cases[] = {
      {Intrinsic::kExp, "exp", 1},     {Intrinsic::kExp2, "exp2", 1},
      {Intrinsic::kLog, "log", 1},     {Intrinsic::kLog2, "log2", 1},
      {Intrinsic::kSqrt, "sqrt", 1},   {Intrinsic::kRsqrt, "rsqrt", 1},
      {Intrinsic::kTanh, "tanh", 1},   {Intrinsic::kSigmoid, "sigmoid", 1},
      {Intrinsic::kErf, "erf", 1},     {Intrinsic::kPow, "pow", 2},
      {Intrinsic::kFabs, "fabs", 1},   {Intrinsic::kFloor, "floor", 1},
      {Intrinsic::kCeil, "ceil", 1},   {Intrinsic::kRound, "round", 1},
      {Intrinsic::kTrunc, "trunc", 1}, {Intrinsic::kFma, "fma", 3},
      {Intrinsic::kSin, "sin", 1},     {Intrinsic::kCos, "cos", 1},
      {Intrinsic::kTan, "tan", 1},     {Intrinsic::kAsin, "asin", 1},
      {Intrinsic::kAcos, "acos", 1},   {Intrinsic::kAtan, "atan", 1},
      {Intrinsic::kSinh, "sinh", 1},   {Intrinsic::kCosh, "cosh", 1},
      {Intrinsic::kAsinh, "asinh", 1}, {Intrinsic::kAcosh, "acosh", 1},
      {Intrinsic::kAtanh, "atanh", 1}, {Intrinsic::kFmod, "fmod", 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_STREQ(intrinsic_name(c.op), c.name);
    EXPECT_EQ(intrinsic_arity(c.op), c.arity);
    // Every intrinsic builds with its arity, on scalars and vectors, with the argument type.
    for (DataType t : {f32, f64, f16, DataType::Float32(4)}) {
      std::vector<Expr> args(c.arity, make_const(t, 0.5));
      Expr e = Call::make(c.op, args);
      ASSERT_NE(e.as<Call>(), nullptr);
      EXPECT_EQ(e.type(), t);
      EXPECT_EQ(e.as<Call>()->op, c.op);
      EXPECT_EQ(e.as<Call>()->args.size(), static_cast<size_t>(c.arity));
    }
  }
}

// The int8 dot products: int32 accumulators, 4 uint8 activations, 4 int8 weights per lane.
TEST(Call, Int8DotTypes) {
  Var acc("acc", DataType::Int32(8)), a("a", DataType::UInt(8, 4)), b("b", DataType::Int(8, 32));
  for (Intrinsic op : {Intrinsic::kDotU8S8, Intrinsic::kDotU8S8Sat16}) {
    SCOPED_TRACE(intrinsic_name(op));
    EXPECT_TRUE(is_int8_dot(op));
    EXPECT_EQ(Call::make(op, {acc, a, b}).type(), DataType::Int32(8));
    EXPECT_THAT(user_error([&] { Call::make(op, {b, a, b}); }), HasSubstr("is int8x32, not int32"));
    EXPECT_THAT(user_error([&] {
                  Call::make(op, {acc, Var("s", DataType::Int(8, 4)), b});
                }),
                HasSubstr("a s is int8x4, not uint8x4"));
    EXPECT_THAT(user_error([&] {
                  Call::make(op, {acc, a, Var("w", DataType::Int(8, 16))});
                }),
                HasSubstr("not int8x32 (4 per accumulator lane)"));
  }
  EXPECT_FALSE(is_int8_dot(Intrinsic::kFma));
}

TEST(Call, RejectsWrongArity) {
  Var x("x", f32);
  EXPECT_THAT(user_error([&] {
                Call::make(Intrinsic::kExp, {x, x});
              }),
              HasSubstr("Call exp: expects 1 arguments, got 2"));
  EXPECT_THAT(user_error([&] { Call::make(Intrinsic::kPow, {x}); }),
              HasSubstr("Call pow: expects 2 arguments, got 1"));
  EXPECT_THAT(user_error([&] { Call::make(Intrinsic::kFma, {}); }),
              HasSubstr("Call fma: expects 3 arguments, got 0"));
}

TEST(Call, RejectsIntegerArguments) {
  Var i("i"), x("x", f32);
  EXPECT_THAT(user_error([&] { Call::make(Intrinsic::kSqrt, {i}); }),
              HasSubstr("Call sqrt: arguments must be floats, but i is int32"));
  EXPECT_THAT(user_error([&] {
                Call::make(Intrinsic::kPow, {x, i});
              }),
              HasSubstr("Call pow: arguments must be floats, but i is int32"));
  EXPECT_THAT(user_error([&] { Call::make(Intrinsic::kExp, {Var("p", b1)}); }), HasSubstr("bool"));
}

TEST(Call, RejectsMixedFloatTypesNamingBoth) {
  Var x("x", f32), y("y", f64);
  EXPECT_THAT(user_error([&] {
                Call::make(Intrinsic::kPow, {x, y});
              }),
              HasSubstr("Call pow: argument types differ: float32 and float64"));
  EXPECT_THAT(user_error([&] {
                Call::make(Intrinsic::kFma, {x, x, Broadcast::make(x, 4)});
              }),
              HasSubstr("float32 and float32x4"));
  EXPECT_THAT(user_error([&] { Call::make(Intrinsic::kExp, {Expr()}); }),
              HasSubstr("Call: operand 'exp' is undefined"));
}

TEST(Range, BothEndsScalarIntegersOfOneType) {
  Range r = Range::make(0, Var("n"));
  EXPECT_EQ(r.min.type(), i32);
  EXPECT_THAT(user_error([] { Range::make(0, Var("n", i64)); }),
              HasSubstr("Range: min is int32 but extent is int64"));
  EXPECT_THAT(user_error([] { Range::make(0.0f, 4); }),
              HasSubstr("Range: 'min' must be a scalar integer, but 0.0f has type float32"));
  EXPECT_THAT(user_error([] { Range::make(0, Broadcast::make(4, 2)); }),
              HasSubstr("'extent' must be a scalar integer"));
}

TEST(IterVar, KindsAndThreadTags) {
  Var k("k");
  IterVar r = IterVar::make(k, Range::make(0, 16), IterKind::kReduce);
  EXPECT_TRUE(r->var.same_as(k));
  EXPECT_EQ(r->kind, IterKind::kReduce);
  EXPECT_TRUE(r->thread_tag.empty());
  IterVar t = IterVar::make(Var("tx"), Range::make(0, 32), IterKind::kThread, "threadIdx.x");
  EXPECT_EQ(t->thread_tag, "threadIdx.x");
  EXPECT_THAT(user_error([] {
                IterVar::make(Var("i"), Range::make(0, 4), IterKind::kDataPar, "threadIdx.x");
              }),
              HasSubstr("IterVar 'i': a thread tag is given exactly for thread axes"));
  EXPECT_THAT(user_error([] { IterVar::make(Var("tx"), Range::make(0, 4), IterKind::kThread); }),
              HasSubstr("IterVar 'tx': a thread tag is given exactly for thread axes"));
}

TEST(IterVar, RejectsNonIntegerVariableAndMismatchedDomain) {
  EXPECT_THAT(user_error([] { IterVar::make(Var("f", f32), Range(), IterKind::kDataPar); }),
              HasSubstr("IterVar: variable must be an integer"));
  EXPECT_THAT(
      user_error([] { IterVar::make(Var("l", i64), Range::make(0, 4), IterKind::kDataPar); }),
      HasSubstr("IterVar 'l' is int64 but its domain is int32"));
}

TEST(CommReducer, BuiltinsHaveTheRightIdentities) {
  CommReducer sum = CommReducer::sum(f32);
  EXPECT_NE(sum->result.as<Add>(), nullptr);
  EXPECT_EQ(as_const_float(sum->identity), 0.0);
  EXPECT_EQ(sum->identity.type(), f32);
  EXPECT_EQ(as_const_int(CommReducer::sum(i64)->identity), 0);

  CommReducer mx = CommReducer::max(i32);
  EXPECT_NE(mx->result.as<Max>(), nullptr);
  EXPECT_EQ(as_const_int(mx->identity), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(as_const_int(CommReducer::max(u8)->identity), 0);
  EXPECT_EQ(as_const_float(CommReducer::max(f32)->identity), -INFINITY);

  CommReducer mn = CommReducer::min(i8);
  EXPECT_NE(mn->result.as<Min>(), nullptr);
  EXPECT_EQ(as_const_int(mn->identity), 127);
  EXPECT_EQ(mn->identity.type(), i8);
  EXPECT_EQ(as_const_float(CommReducer::min(f64)->identity), INFINITY);

  // result combines exactly lhs and rhs.
  const Add* add = sum->result.as<Add>();
  EXPECT_TRUE(add->a.same_as(sum->lhs));
  EXPECT_TRUE(add->b.same_as(sum->rhs));
}

TEST(CommReducer, RejectsPartsOfDifferentTypes) {
  Var x("x"), y("y"), f("f", f32);
  EXPECT_THAT(user_error([&] { CommReducer::make(x, y, Add::make(x, y), 0.0f); }),
              AllOf(HasSubstr("identity (float32)"), HasSubstr("lhs (int32)")));
  EXPECT_THAT(user_error([&] { CommReducer::make(x, f, x, 0); }), HasSubstr("rhs (float32)"));
  EXPECT_THAT(user_error([&] { CommReducer::make(x, y, Expr(), 0); }),
              HasSubstr("CommReducer: every part must be defined"));
  EXPECT_THAT(user_error([] { CommReducer::sum(b1); }), HasSubstr("not bool"));
}

TEST(Reduce, HasTheSourceTypeAndDefaultsToAlwaysCombining) {
  Buffer a = Buffer::make("A", f32, {16});
  Var k("k");
  IterVar axis = IterVar::make(k, Range::make(0, 16), IterKind::kReduce);
  Expr r = Reduce::make(CommReducer::sum(f32), Load::make(a, {k}), {axis});
  ASSERT_NE(r.as<Reduce>(), nullptr);
  EXPECT_EQ(r.type(), f32);
  EXPECT_EQ(r.as<Reduce>()->axis.size(), 1u);
  EXPECT_EQ(r.as<Reduce>()->condition.type(), b1);
  EXPECT_EQ(as_const_int(r.as<Reduce>()->condition), 1);
  Var p("p", b1);
  EXPECT_TRUE(Reduce::make(CommReducer::sum(f32), Load::make(a, {k}), {axis}, p)
                  .as<Reduce>()
                  ->condition.same_as(p));
}

TEST(Reduce, RejectsIllTypedParts) {
  IterVar axis = IterVar::make(Var("k"), Range::make(0, 16), IterKind::kReduce);
  EXPECT_THAT(user_error([&] { Reduce::make(CommReducer::sum(f32), Var("x"), {axis}); }),
              HasSubstr("Reduce: source is int32 but the combiner reduces float32"));
  EXPECT_THAT(user_error([&] { Reduce::make(CommReducer::sum(i32), 1, {axis}, Var("c")); }),
              HasSubstr("Reduce: condition must be bool, not int32"));
  EXPECT_THAT(user_error([&] { Reduce::make(CommReducer::sum(i32), 1, {axis}, make_bool(1, 4)); }),
              HasSubstr("not boolx4"));
  IterVar data = IterVar::make(Var("i"), Range::make(0, 16), IterKind::kDataPar);
  EXPECT_THAT(user_error([&] { Reduce::make(CommReducer::sum(i32), 1, {data}); }),
              HasSubstr("Reduce: every axis must be a reduction axis"));
  EXPECT_THAT(user_error([&] { Reduce::make(CommReducer(), 1, {axis}); }),
              HasSubstr("Reduce: combiner is undefined"));
}

// ---------------------------------------------------------------------------------------------
// Statements

TEST(LetStmt, BindsAVariable) {
  Var x("x");
  Stmt s = LetStmt::make(x, 4, Evaluate::make(x));
  ASSERT_NE(s.as<LetStmt>(), nullptr);
  EXPECT_EQ(s.node_type(), IRNodeType::LetStmt);
  EXPECT_TRUE(s.as<LetStmt>()->var.same_as(x));
  EXPECT_THAT(user_error([&] { LetStmt::make(x, 1.5f, nop()); }),
              HasSubstr("LetStmt: 'x' has type int32 but its value 1.5f has type float32"));
  EXPECT_THAT(user_error([&] { LetStmt::make(x, Expr(), nop()); }),
              HasSubstr("LetStmt: variable and value must be defined"));
  EXPECT_THAT(user_error([&] { LetStmt::make(x, 1, Stmt()); }),
              HasSubstr("LetStmt: body is undefined"));
}

TEST(AttrStmt, AnnotatesABody) {
  Var x("x");
  Stmt s = AttrStmt::make("pragma_unroll", x, 1, nop());
  ASSERT_NE(s.as<AttrStmt>(), nullptr);
  EXPECT_EQ(s.as<AttrStmt>()->key, "pragma_unroll");
  EXPECT_TRUE(s.as<AttrStmt>()->node.same_as(x));
  EXPECT_FALSE(AttrStmt::make("k", Expr(), 1, nop()).as<AttrStmt>()->node.defined());
  EXPECT_THAT(user_error([] { AttrStmt::make("", Expr(), 1, nop()); }),
              HasSubstr("AttrStmt: key is empty"));
  EXPECT_THAT(user_error([] { AttrStmt::make("k", Expr(), Expr(), nop()); }),
              HasSubstr("AttrStmt 'k': value is undefined"));
  EXPECT_THAT(user_error([] { AttrStmt::make("k", Expr(), 1, Stmt()); }),
              HasSubstr("AttrStmt: body is undefined"));
}

TEST(AssertStmt, NeedsAScalarBoolCondition) {
  Var x("x");
  Stmt s = AssertStmt::make(x > 0, "x must be positive", nop());
  ASSERT_NE(s.as<AssertStmt>(), nullptr);
  EXPECT_EQ(s.as<AssertStmt>()->message, "x must be positive");
  EXPECT_THAT(user_error([&] { AssertStmt::make(x, "m", nop()); }),
              HasSubstr("AssertStmt: condition must be a scalar bool, not int32"));
  EXPECT_THAT(user_error([] { AssertStmt::make(make_bool(true, 4), "m", nop()); }),
              HasSubstr("AssertStmt: condition must be a scalar bool, not boolx4"));
  EXPECT_THAT(user_error([] { AssertStmt::make(Expr(), "m", nop()); }),
              HasSubstr("AssertStmt: condition is undefined"));
  EXPECT_THAT(user_error([] { AssertStmt::make(make_bool(true), "m", Stmt()); }),
              HasSubstr("AssertStmt: body is undefined"));
}

TEST(Store, WritesAValueOfTheElementType) {
  Buffer a = Buffer::make("A", f32, {64});
  Var i("i");
  Stmt s = Store::make(a, 1.0f, {i});
  ASSERT_NE(s.as<Store>(), nullptr);
  EXPECT_TRUE(s.as<Store>()->buffer.same_as(a));
  EXPECT_FALSE(s.as<Store>()->predicate.defined());
  Expr v = Broadcast::make(1.0f, 4), p = make_bool(true, 4);
  Stmt vs = Store::make(a, v, {Ramp::make(0, 1, 4)}, p);
  EXPECT_TRUE(vs.as<Store>()->value.same_as(v));
  EXPECT_TRUE(vs.as<Store>()->predicate.same_as(p));
}

TEST(Store, RejectsAValueOfTheWrongTypeNamingBoth) {
  Buffer a = Buffer::make("A", f32, {64});
  EXPECT_THAT(user_error([&] { Store::make(a, 1, {0}); }),
              HasSubstr("Store to 'A': value 1 has type int32 but the buffer expects float32"));
  EXPECT_THAT(user_error([&] { Store::make(a, 1.0f, {Ramp::make(0, 1, 4)}); }),
              HasSubstr("has type float32 but the buffer expects float32x4"));
  EXPECT_THAT(user_error([&] { Store::make(a, Broadcast::make(1.0f, 4), {0}); }),
              HasSubstr("has type float32x4 but the buffer expects float32"));
  EXPECT_THAT(user_error([&] { Store::make(a, Expr(), {0}); }),
              HasSubstr("Store to 'A': value is undefined"));
}

TEST(Store, ChecksIndicesAndPredicateLikeLoad) {
  Buffer m = Buffer::make("M", f32, {4, 4});
  EXPECT_THAT(user_error([&] { Store::make(m, 1.0f, {0}); }),
              HasSubstr("Store of 'M': 1 indices for a 2-dimensional buffer"));
  EXPECT_THAT(user_error([&] {
                Store::make(m, 1.0f, {0, 0.0f});
              }),
              HasSubstr("index 0.0f has type float32, not an integer"));
  EXPECT_THAT(user_error([&] {
                Store::make(m, 1.0f, {0, 0}, make_bool(true, 2));
              }),
              HasSubstr("Store of 'M': predicate must be bool, not boolx2"));
}

TEST(Allocate, ScopesABuffer) {
  Buffer b = Buffer::make("B", f32, {16}, {}, MemoryScope::kLocal);
  Stmt s = Allocate::make(b, Store::make(b, 0.0f, {0}));
  ASSERT_NE(s.as<Allocate>(), nullptr);
  EXPECT_TRUE(s.as<Allocate>()->buffer.same_as(b));
  EXPECT_THAT(user_error([] { Allocate::make(Buffer(), nop()); }),
              HasSubstr("Allocate: buffer is undefined"));
  EXPECT_THAT(user_error([&] { Allocate::make(b, Stmt()); }),
              HasSubstr("Allocate: body is undefined"));
}

TEST(For, EveryKind) {
  struct Case {
    ForKind kind;
    const char* name;
    const char* tag;
  };
  const Case cases[] = {
      {ForKind::kSerial, "serial", ""},
      {ForKind::kParallel, "parallel", ""},
      {ForKind::kVectorized, "vectorized", ""},
      {ForKind::kUnrolled, "unrolled", ""},
      {ForKind::kThreadBinding, "thread_binding", "threadIdx.x"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_STREQ(for_kind_name(c.kind), c.name);
    Var i("i");
    Stmt s = For::make(i, 0, 16, c.kind, nop(), c.tag);
    const For* f = s.as<For>();
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->var.same_as(i));
    EXPECT_EQ(f->kind, c.kind);
    EXPECT_EQ(f->thread_tag, c.tag);
    EXPECT_EQ(as_const_int(f->min), 0);
    EXPECT_EQ(as_const_int(f->extent), 16);
  }
  Var l("l", i64);
  EXPECT_NE(For::make(l, IntImm::make(i64, 0), Var("n", i64), ForKind::kSerial, nop()).as<For>(),
            nullptr);
}

TEST(For, RejectsAThreadTagOnANonThreadLoop) {
  EXPECT_THAT(user_error([] { For::make(Var("i"), 0, 4, ForKind::kSerial, nop(), "threadIdx.x"); }),
              HasSubstr("For 'i': a thread tag is given exactly for thread-bound loops, but this "
                        "serial loop has thread tag 'threadIdx.x'"));
  EXPECT_THAT(
      user_error([] { For::make(Var("i"), 0, 4, ForKind::kParallel, nop(), "blockIdx.x"); }),
      HasSubstr("but this parallel loop has thread tag 'blockIdx.x'"));
  EXPECT_THAT(user_error([] { For::make(Var("tx"), 0, 4, ForKind::kThreadBinding, nop()); }),
              HasSubstr("For 'tx': a thread tag is given exactly for thread-bound loops, but "
                        "this thread_binding loop has none"));
}

TEST(For, RejectsBoundsOfAnotherTypeNamingAll) {
  Var i("i");
  EXPECT_THAT(user_error([&] { For::make(i, IntImm::make(i64, 0), 4, ForKind::kSerial, nop()); }),
              HasSubstr("For 'i': variable is int32 but min is int64 and extent is int32"));
  EXPECT_THAT(user_error([&] { For::make(i, 0, 4.0f, ForKind::kSerial, nop()); }),
              HasSubstr("extent is float32"));
  EXPECT_THAT(user_error([] { For::make(Var("f", f32), 0.0f, 4.0f, ForKind::kSerial, nop()); }),
              HasSubstr("For: loop variable must be an integer"));
  EXPECT_THAT(user_error([&] { For::make(i, Expr(), 4, ForKind::kSerial, nop()); }),
              HasSubstr("For 'i': min and extent must be defined"));
  EXPECT_THAT(user_error([&] { For::make(i, 0, 4, ForKind::kSerial, Stmt()); }),
              HasSubstr("For: body is undefined"));
}

TEST(IfThenElse, ElseIsOptional) {
  Var x("x");
  Stmt s = IfThenElse::make(x < 4, nop());
  ASSERT_NE(s.as<IfThenElse>(), nullptr);
  EXPECT_FALSE(s.as<IfThenElse>()->else_case.defined());
  Stmt e = nop();
  EXPECT_TRUE(IfThenElse::make(x < 4, nop(), e).as<IfThenElse>()->else_case.same_as(e));
}

TEST(IfThenElse, NeedsAScalarBoolCondition) {
  EXPECT_THAT(user_error([] { IfThenElse::make(Var("x"), nop()); }),
              HasSubstr("IfThenElse: condition must be a scalar bool, not int32"));
  EXPECT_THAT(user_error([] { IfThenElse::make(make_bool(true, 4), nop()); }),
              HasSubstr("not boolx4"));
  EXPECT_THAT(user_error([] { IfThenElse::make(Expr(), nop()); }),
              HasSubstr("IfThenElse: condition is undefined"));
  EXPECT_THAT(user_error([] { IfThenElse::make(make_bool(true), Stmt()); }),
              HasSubstr("IfThenElse: then branch is undefined"));
}

TEST(Seq, KeepsOrder) {
  Stmt a = Evaluate::make(1), b = Evaluate::make(2), c = Evaluate::make(3);
  Stmt s = Seq::make({a, b, c});
  const Seq* seq = s.as<Seq>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->stmts.size(), 3u);
  EXPECT_TRUE(seq->stmts[0].same_as(a));
  EXPECT_TRUE(seq->stmts[1].same_as(b));
  EXPECT_TRUE(seq->stmts[2].same_as(c));
  EXPECT_EQ(Seq::make(a, b).as<Seq>()->stmts.size(), 2u);
}

TEST(Seq, FlattensNestedSequences) {
  Stmt a = Evaluate::make(1), b = Evaluate::make(2), c = Evaluate::make(3), d = Evaluate::make(4);
  Stmt nested = Seq::make(Seq::make(a, b), Seq::make(c, d));
  const Seq* seq = nested.as<Seq>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->stmts.size(), 4u);
  EXPECT_TRUE(seq->stmts[0].same_as(a));
  EXPECT_TRUE(seq->stmts[3].same_as(d));
  for (const Stmt& s : seq->stmts) EXPECT_EQ(s.as<Seq>(), nullptr);
  // Deeper nesting flattens too, and keeps the order.
  Stmt deep = Seq::make({a, Seq::make(b, Seq::make(c, d)), a});
  ASSERT_EQ(deep.as<Seq>()->stmts.size(), 5u);
  EXPECT_TRUE(deep.as<Seq>()->stmts[2].same_as(c));
  EXPECT_TRUE(deep.as<Seq>()->stmts[4].same_as(a));
}

TEST(Seq, DoesNotFlattenSequencesInsideOtherStatements) {
  Stmt inner = Seq::make(Evaluate::make(1), Evaluate::make(2));
  Stmt loop = For::make(Var("i"), 0, 4, ForKind::kSerial, inner);
  Stmt s = Seq::make(loop, Evaluate::make(3));
  ASSERT_EQ(s.as<Seq>()->stmts.size(), 2u);
  EXPECT_TRUE(s.as<Seq>()->stmts[0].as<For>()->body.same_as(inner));
}

TEST(Seq, ALoneStatementIsReturnedAsIs) {
  Stmt a = Evaluate::make(1);
  EXPECT_TRUE(Seq::make({a}).same_as(a));
  // A lone sequence is flattened into a sequence of the same statements.
  Stmt pair = Seq::make(a, Evaluate::make(2));
  Stmt again = Seq::make({pair});
  ASSERT_NE(again.as<Seq>(), nullptr);
  ASSERT_EQ(again.as<Seq>()->stmts.size(), 2u);
  EXPECT_TRUE(again.as<Seq>()->stmts[0].same_as(a));
  EXPECT_TRUE(again.as<Seq>()->stmts[1].same_as(pair.as<Seq>()->stmts[1]));
}

TEST(Seq, RejectsEmptyAndUndefined) {
  EXPECT_THAT(user_error([] { Seq::make(std::vector<Stmt>{}); }), HasSubstr("Seq: no statements"));
  EXPECT_THAT(user_error([] { Seq::make(nop(), Stmt()); }),
              HasSubstr("Seq: statement is undefined"));
}

TEST(Evaluate, WrapsAnExpression) {
  Var x("x");
  Stmt s = Evaluate::make(x);
  ASSERT_NE(s.as<Evaluate>(), nullptr);
  EXPECT_TRUE(s.as<Evaluate>()->value.same_as(x));
  EXPECT_THAT(user_error([] { Evaluate::make(Expr()); }),
              HasSubstr("Evaluate: value is undefined"));
}

TEST(Barrier, HasAScope) {
  for (MemoryScope scope : {MemoryScope::kGlobal, MemoryScope::kShared, MemoryScope::kLocal}) {
    Stmt s = Barrier::make(scope);
    ASSERT_NE(s.as<Barrier>(), nullptr);
    EXPECT_EQ(s.as<Barrier>()->scope, scope);
  }
}

// ---------------------------------------------------------------------------------------------
// op.h: literals take the other operand's type

TEST(MatchTypes, IntLiteralTakesTheVariableType) {
  Var x("x", i64);
  for (Expr e : {x + 1, 1 + x}) {
    const Add* add = e.as<Add>();
    ASSERT_NE(add, nullptr);
    EXPECT_EQ(e.type(), i64);
    EXPECT_EQ(add->a.type(), i64);
    EXPECT_EQ(add->b.type(), i64);
  }
  Expr e = x + 1;
  ASSERT_NE(e.as<Add>()->b.as<IntImm>(), nullptr);
  EXPECT_EQ(e.as<Add>()->b.as<IntImm>()->value, 1);
  EXPECT_TRUE(e.as<Add>()->a.same_as(x));
  EXPECT_EQ((Var("u", u8) * 3).type(), u8);
}

TEST(MatchTypes, IntLiteralBecomesAFloatOfTheOtherType) {
  Var f("f", f64);
  Expr e = f * 2;
  EXPECT_EQ(e.type(), f64);
  ASSERT_NE(e.as<Mul>()->b.as<FloatImm>(), nullptr);
  EXPECT_EQ(e.as<Mul>()->b.as<FloatImm>()->value, 2.0);
  EXPECT_EQ((Var("h", f16) + 1.5f).type(), f16);
}

TEST(MatchTypes, FloatLiteralNeverBecomesAnInteger) {
  Var x("x");
  EXPECT_THAT(
      user_error([&] { (void)(x + 1.5f); }),
      AllOf(HasSubstr("Add: operand types differ"), HasSubstr("int32"), HasSubstr("float32")));
}

TEST(MatchTypes, LiteralIsBroadcastToAVector) {
  Expr v = Ramp::make(0, 1, 4);
  Expr e = v + 1;
  EXPECT_EQ(e.type(), DataType::Int32(4));
  const Broadcast* b = e.as<Add>()->b.as<Broadcast>();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(as_const_int(b->value), 1);
  EXPECT_EQ((2.0f * Broadcast::make(Var("f", f32), 8)).type(), DataType::Float32(8));
}

TEST(MatchTypes, ScalarIsBroadcastToAVectorOfItsType) {
  Var x("x");
  Expr v = Ramp::make(0, 1, 4);
  Expr e = x + v;
  EXPECT_EQ(e.type(), DataType::Int32(4));
  ASSERT_NE(e.as<Add>()->a.as<Broadcast>(), nullptr);
  EXPECT_TRUE(e.as<Add>()->a.as<Broadcast>()->value.same_as(x));
  EXPECT_EQ((v * x).type(), DataType::Int32(4));
}

TEST(MatchTypes, VectorLiteralKeepsItsLanes) {
  // The literal takes the element type of the other side, but never loses lanes: the scalar
  // side is broadcast instead.
  Var x("x", i64);
  Expr ones = make_const(DataType::Int32(4), int64_t{1});
  Expr e = x + ones;
  EXPECT_EQ(e.type(), DataType::Int64(4));
  EXPECT_EQ((ones + x).type(), DataType::Int64(4));
  EXPECT_EQ((Var("f", f32) * make_const(DataType::Float32(8), 2.0)).type(), DataType::Float32(8));
  // Lanes that cannot agree are left for make() to reject, naming both types.
  EXPECT_THAT(
      user_error([] { (void)(Ramp::make(0, 1, 4) + make_const(DataType::Int32(8), int64_t{1})); }),
      AllOf(HasSubstr("int32x4"), HasSubstr("int32x8")));
}

TEST(MatchTypes, LiteralThatDoesNotFitIsAnError) {
  Var u("u", u8);
  EXPECT_THAT(user_error([&] { (void)(u + 300); }),
              HasSubstr("IntImm: value 300 does not fit in uint8"));
  EXPECT_THAT(user_error([&] { (void)(u + -1); }), HasSubstr("value -1 does not fit in uint8"));
}

TEST(MatchTypes, BoolLiteralStaysBool) {
  Var x("x");
  EXPECT_THAT(user_error([&] { (void)(x + make_bool(true)); }),
              AllOf(HasSubstr("int32"), HasSubstr("bool")));
  Var p("p", b1);
  EXPECT_EQ((p && make_bool(true)).type(), b1);
  EXPECT_EQ((p == 1).type(), b1);  // an int literal may become a bool
}

TEST(MatchTypes, TwoNonLiteralsAreLeftAlone) {
  Expr a = Var("a"), b = Var("b", i64);
  Expr a0 = a, b0 = b;
  match_types(a, b);
  EXPECT_TRUE(a.same_as(a0));
  EXPECT_TRUE(b.same_as(b0));
  EXPECT_THAT(user_error([&] { (void)(a - b); }),
              HasSubstr("Sub: operand types differ: a is int32 but b is int64"));
}

TEST(MatchTypes, SameTypesAreLeftAlone) {
  Expr a = 1, b = 2;
  Expr a0 = a, b0 = b;
  match_types(a, b);
  EXPECT_TRUE(a.same_as(a0));
  EXPECT_TRUE(b.same_as(b0));
}

TEST(MatchTypes, HandleOperandKeepsTheLiteral) {
  Expr p = Var("p", handle), zero = 0;
  match_types(p, zero);
  EXPECT_EQ(zero.type(), i32);
}

TEST(MatchTypes, RejectsUndefinedOperands) {
  Expr a = 1, b;
  EXPECT_THAT(user_error([&] { match_types(a, b); }), HasSubstr("operand is undefined"));
}

TEST(Operators, BuildTheMatchingNodes) {
  Var x("x"), y("y"), f("f", f32), g("g", f32), p("p", b1), q("q", b1);
  EXPECT_EQ((x + y).node_type(), IRNodeType::Add);
  EXPECT_EQ((x - y).node_type(), IRNodeType::Sub);
  EXPECT_EQ((x * y).node_type(), IRNodeType::Mul);
  EXPECT_EQ((f / g).node_type(), IRNodeType::Div);
  EXPECT_EQ((x < y).node_type(), IRNodeType::LT);
  EXPECT_EQ((x <= y).node_type(), IRNodeType::LE);
  EXPECT_EQ((x > y).node_type(), IRNodeType::GT);
  EXPECT_EQ((x >= y).node_type(), IRNodeType::GE);
  EXPECT_EQ((x == y).node_type(), IRNodeType::EQ);
  EXPECT_EQ((x != y).node_type(), IRNodeType::NE);
  EXPECT_EQ((p && q).node_type(), IRNodeType::And);
  EXPECT_EQ((p || q).node_type(), IRNodeType::Or);
  EXPECT_EQ((!p).node_type(), IRNodeType::Not);
  EXPECT_EQ(floordiv(x, 4).node_type(), IRNodeType::FloorDiv);
  EXPECT_EQ(floormod(x, 4).node_type(), IRNodeType::FloorMod);
  EXPECT_EQ(truncdiv(x, 4).node_type(), IRNodeType::TruncDiv);
  EXPECT_EQ(truncmod(x, 4).node_type(), IRNodeType::TruncMod);
  EXPECT_EQ(min(x, 4).node_type(), IRNodeType::Min);
  EXPECT_EQ(max(4, x).node_type(), IRNodeType::Max);
  EXPECT_EQ(select(p, x, 0).node_type(), IRNodeType::Select);
  EXPECT_EQ(select(p, 1.0f, f).type(), f32);
  EXPECT_EQ(cast(f32, x).node_type(), IRNodeType::Cast);
  EXPECT_TRUE(cast(i32, x).same_as(x));  // no cast to the same type
  EXPECT_EQ((x * 4 + 1 < y).type(), b1);
}

TEST(Operators, Negation) {
  Expr five = -Expr(5);
  ASSERT_NE(five.as<IntImm>(), nullptr);
  EXPECT_EQ(five.as<IntImm>()->value, -5);
  EXPECT_EQ(five.type(), i32);

  Expr l = -IntImm::make(i64, 7);
  ASSERT_NE(l.as<IntImm>(), nullptr);
  EXPECT_EQ(l.as<IntImm>()->value, -7);
  EXPECT_EQ(l.type(), i64);

  Expr f = -Expr(1.5f);
  ASSERT_NE(f.as<FloatImm>(), nullptr);
  EXPECT_EQ(f.as<FloatImm>()->value, -1.5);
  EXPECT_EQ(f.type(), f32);

  Expr v = -make_const(DataType::Int32(4), int64_t{3});
  ASSERT_NE(v.as<Broadcast>(), nullptr);
  EXPECT_EQ(v.type(), DataType::Int32(4));
  EXPECT_EQ(as_const_int(v), -3);

  Var x("x");
  Expr nx = -x;
  const Sub* sub = nx.as<Sub>();
  ASSERT_NE(sub, nullptr);
  EXPECT_TRUE(is_zero(sub->a));
  EXPECT_TRUE(sub->b.same_as(x));
  EXPECT_EQ((-Var("g", f64)).type(), f64);

  EXPECT_THAT(user_error([] { (void)(-make_bool(true)); }), HasSubstr("not bool"));
}

TEST(Operators, NegatingAConstantThatHasNoNegationKeepsASubtraction) {
  // -INT64_MIN and -INT32_MIN do not fit their types, and an unsigned constant has no negative:
  // the negation stays a (wrapping) subtraction, exactly as for a variable.
  for (DataType t : {i64, i32, u8}) {
    SCOPED_TRACE(t.to_string());
    Expr c = IntImm::make(t, t.is_uint() ? 5 : t.min_value());
    Expr n = -c;
    ASSERT_NE(n.as<Sub>(), nullptr);
    EXPECT_EQ(n.type(), t);
    EXPECT_TRUE(n.as<Sub>()->b.same_as(c));
  }
  EXPECT_EQ(as_const_int(-IntImm::make(i32, -std::numeric_limits<int32_t>::max())),
            std::numeric_limits<int32_t>::max());
}

// ---------------------------------------------------------------------------------------------
// op.h: constants

TEST(MakeConst, Scalars) {
  Expr a = make_const(i8, int64_t{-3});
  ASSERT_NE(a.as<IntImm>(), nullptr);
  EXPECT_EQ(a.type(), i8);
  EXPECT_EQ(a.as<IntImm>()->value, -3);
  Expr f = make_const(f64, int64_t{2});
  ASSERT_NE(f.as<FloatImm>(), nullptr);
  EXPECT_EQ(f.type(), f64);
  EXPECT_EQ(f.as<FloatImm>()->value, 2.0);
  Expr g = make_const(bf16, 0.25);
  EXPECT_EQ(g.type(), bf16);
  EXPECT_EQ(as_const_float(g), 0.25);
  Expr i = make_const(u32, 7.0);  // an integral double
  ASSERT_NE(i.as<IntImm>(), nullptr);
  EXPECT_EQ(i.as<IntImm>()->value, 7);
  EXPECT_EQ(make_const(b1, int64_t{1}).type(), b1);
}

TEST(MakeConst, VectorsAreBroadcasts) {
  Expr v = make_const(DataType::Int32(8), int64_t{5});
  const Broadcast* b = v.as<Broadcast>();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(v.type(), DataType::Int32(8));
  EXPECT_EQ(b->lanes, 8);
  EXPECT_EQ(b->value.type(), i32);
  EXPECT_EQ(b->value.as<IntImm>()->value, 5);
  Expr f = make_const(DataType::Float32(4), 0.5);
  ASSERT_NE(f.as<Broadcast>(), nullptr);
  EXPECT_EQ(f.type(), DataType::Float32(4));
  EXPECT_EQ(as_const_float(f), 0.5);
  Expr g = make_const(DataType::Float(16, 2), int64_t{3});
  EXPECT_EQ(g.type(), DataType::Float(16, 2));
  EXPECT_EQ(as_const_float(g), 3.0);
}

TEST(MakeConst, ZeroOneAndBool) {
  EXPECT_TRUE(is_zero(make_zero(i64)));
  EXPECT_EQ(make_zero(i64).type(), i64);
  EXPECT_EQ(as_const_float(make_zero(f32)), 0.0);
  EXPECT_TRUE(is_one(make_one(u8)));
  EXPECT_EQ(make_one(DataType::Float32(4)).type(), DataType::Float32(4));
  EXPECT_EQ(as_const_float(make_one(DataType::Float32(4))), 1.0);
  EXPECT_EQ(make_bool(true).type(), b1);
  EXPECT_EQ(as_const_int(make_bool(true)), 1);
  EXPECT_EQ(as_const_int(make_bool(false)), 0);
  EXPECT_EQ(make_bool(false, 4).type(), DataType::Bool(4));
  EXPECT_NE(make_bool(false, 4).as<Broadcast>(), nullptr);
}

TEST(MakeConst, RejectsValuesTheTypeCannotHold) {
  EXPECT_THAT(user_error([] { make_const(i8, int64_t{1000}); }),
              HasSubstr("value 1000 does not fit in int8"));
  EXPECT_THAT(user_error([] { make_const(DataType::Int(8, 4), int64_t{1000}); }),
              HasSubstr("value 1000 does not fit in int8"));
  EXPECT_THAT(user_error([] { make_const(i32, 2.5); }),
              HasSubstr("make_const: 2.5 is not an integer, so it cannot be a constant of type "
                        "int32"));
  EXPECT_THAT(user_error([] { make_const(i32, double{NAN}); }), HasSubstr("not an integer"));
  EXPECT_THAT(user_error([] { make_const(handle, int64_t{0}); }), HasSubstr("handle"));
}

TEST(MakeConst, RejectsHugeIntegralDoublesInsteadOfWrapping) {
  // 1e30 is integral but fits no integer type; it must not become INT64_MIN.
  EXPECT_THAT(user_error([] { make_const(i64, 1e30); }),
              HasSubstr("make_const: 1e+30 does not fit in int64"));
  EXPECT_THAT(user_error([] { make_const(i32, 1e30); }), HasSubstr("does not fit in int32"));
  EXPECT_THAT(user_error([] { make_const(i64, double{INFINITY}); }),
              HasSubstr("does not fit in int64"));
  EXPECT_THAT(user_error([] { make_const(i64, 9223372036854775808.0); }),
              HasSubstr("does not fit in int64"));
  EXPECT_EQ(as_const_int(make_const(i64, -9223372036854775808.0)),
            std::numeric_limits<int64_t>::min());
}

TEST(ConstQueries, AsConstIntLooksThroughBroadcast) {
  EXPECT_EQ(as_const_int(Expr(3)), 3);
  EXPECT_EQ(as_const_int(IntImm::make(i64, -9)), -9);
  EXPECT_EQ(as_const_int(make_const(DataType::Int32(4), int64_t{6})), 6);
  EXPECT_EQ(as_const_int(make_bool(true)), 1);
  EXPECT_EQ(as_const_int(Expr(1.0f)), std::nullopt);
  EXPECT_EQ(as_const_int(Var("x")), std::nullopt);
  EXPECT_EQ(as_const_int(Var("x") + 1), std::nullopt);
  EXPECT_EQ(as_const_int(Broadcast::make(Var("x"), 4)), std::nullopt);
  EXPECT_EQ(as_const_int(Expr()), std::nullopt);
}

TEST(ConstQueries, AsConstFloatLooksThroughBroadcast) {
  EXPECT_EQ(as_const_float(Expr(2.5f)), 2.5);
  EXPECT_EQ(as_const_float(make_const(DataType::Float(64, 2), 0.75)), 0.75);
  EXPECT_EQ(as_const_float(Expr(1)), std::nullopt);
  EXPECT_EQ(as_const_float(Var("f", f32)), std::nullopt);
}

TEST(ConstQueries, IsConstIntZeroOneAndIsConst) {
  EXPECT_TRUE(is_const_int(Expr(4), 4));
  EXPECT_FALSE(is_const_int(Expr(4), 5));
  EXPECT_FALSE(is_const_int(Expr(4.0f), 4));
  EXPECT_TRUE(is_zero(IntImm::make(u8, 0)));
  EXPECT_TRUE(is_zero(make_const(DataType::Int32(4), int64_t{0})));
  EXPECT_FALSE(is_zero(Expr(0.0f)));  // integer constants only
  EXPECT_TRUE(is_one(Expr(1)));
  EXPECT_TRUE(is_one(make_bool(true)));
  EXPECT_FALSE(is_one(Var("x")));
  EXPECT_TRUE(is_const(Expr(1)));
  EXPECT_TRUE(is_const(Expr(1.0f)));
  EXPECT_TRUE(is_const(make_bool(false, 4)));
  EXPECT_TRUE(is_const(make_const(DataType::Float32(8), 1.0)));
  EXPECT_FALSE(is_const(Var("x")));
  EXPECT_FALSE(is_const(Ramp::make(0, 1, 4)));
  EXPECT_FALSE(is_const(Expr(1) + 2));  // not folded
  EXPECT_FALSE(is_const(Expr()));
}

TEST(NodeCount, CountsEveryExpressionNode) {
  Var x("x"), y("y");
  EXPECT_EQ(node_count(x), 1);
  EXPECT_EQ(node_count(x + 1), 3);
  EXPECT_EQ(node_count((x + 1) * (y - 2)), 7);
  EXPECT_EQ(node_count(Ramp::make(x, 1, 4)), 3);
  EXPECT_EQ(node_count(Broadcast::make(x, 4)), 2);
  EXPECT_EQ(node_count(select(x < y, x, y)), 6);
  EXPECT_EQ(node_count(Call::make(Intrinsic::kFma, {1.0f, 2.0f, 3.0f})), 4);
  // Let: the node, its value and its body (the bound variable is not a child).
  EXPECT_EQ(node_count(Let::make(x, 1, x + y)), 5);
  Buffer a = Buffer::make("A", DataType::Float32(), {64});
  EXPECT_EQ(node_count(Load::make(a, {x})), 2);
  EXPECT_EQ(node_count(Load::make(a, {Ramp::make(x, 1, 4)}, make_bool(true, 4))), 6);
  // Reduce: the node, each axis's min and extent, the source and the condition.
  IterVar k = IterVar::make(Var("k"), Range::make(0, 16), IterKind::kReduce);
  EXPECT_EQ(node_count(Reduce::make(CommReducer::sum(f32), Load::make(a, {k->var}), {k})), 6);
  // Shared subtrees count once per use.
  Expr s = x + y;
  EXPECT_EQ(node_count(s * s), 7);
  EXPECT_EQ(node_count(Expr()), 0);
}

}  // namespace
}  // namespace anvil::ir

namespace anvil::ir {
namespace {

TEST(FloatImm, Float32ConstantsHoldFloat32Values) {
  EXPECT_EQ(FloatImm::make(DataType::Float32(), 0.1).as<FloatImm>()->value,
            static_cast<double>(0.1f));
  EXPECT_EQ(FloatImm::make(DataType::Float(64), 0.1).as<FloatImm>()->value, 0.1);
}

TEST(MatchTypes, RightLiteralFollowsLeftLiteral) {
  Expr sum = make_zero(DataType::Int64()) + 1;
  EXPECT_EQ(sum.type(), DataType::Int64());
  EXPECT_EQ(make_const(DataType::Int32(), 7).type(), DataType::Int32());
}

TEST(IterVar, ExtentTypeMustMatchTheVariable) {
  Var k("k");
  Range dom{Expr(0), make_const(DataType::Int64(), 8)};
  EXPECT_THAT(testing::user_error([&] { IterVar::make(k, dom, IterKind::kReduce); }),
              ::testing::AllOf(::testing::HasSubstr("'k'"), ::testing::HasSubstr("int64")));
}

}  // namespace
}  // namespace anvil::ir
