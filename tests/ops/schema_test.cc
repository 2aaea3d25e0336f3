// What every OpDef declares beside its functions (op.h): the attribute schema (validation names
// op, attribute and value; defaults resolved on read, never stored), the FLOP rule and the layout
// rule; and the one window parser (window.h) every convolution and pool shares.
#include <gtest/gtest.h>

#include <set>

#include "anvil/graph/graph.h"
#include "anvil/ops/op.h"
#include "anvil/ops/window.h"
#include "testing/errors.h"

namespace anvil::ops {
namespace {

const TensorType kX{{1, 8, 6, 6}, ir::DataType::Float32()};

std::string infer_error(const std::string& op, const std::vector<TensorType>& in,
                        std::map<std::string, AttrValue> attrs) {
  return testing::user_error([&] { lookup(op).infer(in, Attrs(op, std::move(attrs))); });
}

void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

TEST(Schema, EveryOpWithAComputeHasAFlopRule) {
  for (const std::string& name : registered_ops()) {
    const OpDef& def = lookup(name);
    EXPECT_TRUE(def.flops || !def.compute) << name << " has a compute but no FLOP rule";
  }
}

TEST(Schema, DeclaredAttributesAreWellFormed) {
  for (const std::string& name : registered_ops()) {
    const OpDef& def = lookup(name);
    std::set<std::string> seen;
    for (const AttrSpec& spec : def.attrs) {
      EXPECT_TRUE(seen.insert(spec.name).second) << name << ": '" << spec.name << "' twice";
      EXPECT_FALSE(spec.doc.empty()) << name << ": '" << spec.name << "' has no doc";
      EXPECT_FALSE(spec.required && spec.fallback)
          << name << ": '" << spec.name << "' is required but has a default";
      // A default must pass its own schema.
      if (spec.fallback) {
        OpDef one;
        one.name = name;
        one.attrs = std::vector<AttrSpec>{spec};
        EXPECT_NO_THROW(check_attrs(one, Attrs(name, {{spec.name, *spec.fallback}})))
            << name << ": default of '" << spec.name << "'";
      }
    }
  }
}

TEST(Schema, ValidationNamesOpAttributeAndValue) {
  expect_has(infer_error("relu", {kX}, {{"alpha", 0.5}}),
             "relu: unknown attribute 'alpha' (= 0.5); it takes none");
  expect_has(infer_error("leaky_relu", {kX}, {{"slope", 0.5}}),
             "leaky_relu: unknown attribute 'slope' (= 0.5); it takes 'alpha'");
  expect_has(infer_error("gelu", {kX}, {{"approximate", int64_t{1}}}),
             "gelu: attribute 'approximate' must be a string, got 1");
  expect_has(infer_error("gelu", {kX}, {{"approximate", std::string("fast")}}),
             "gelu: attribute 'approximate' must be 'none' or 'tanh', got 'fast'");
  expect_has(infer_error("cast", {kX}, {}), "cast: missing attribute 'to' (required: ");
  expect_has(infer_error("max_pool2d", {kX},
                         {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"ceil_mode", int64_t{2}}}),
             "max_pool2d: attribute 'ceil_mode' must be 0 or 1, got 2");
}

TEST(Schema, DefaultsAreReadFromTheSchemaAndNeverStored) {
  EXPECT_EQ(Attrs("leaky_relu", {}).get_float("alpha"), 0.01);
  EXPECT_EQ(Attrs("hard_sigmoid", {}).get_float("beta"), 0.5);
  EXPECT_EQ(Attrs("conv2d", {}).get_int("group"), 1);
  EXPECT_EQ(Attrs("conv1d", {}).get_ints("strides"), std::vector<int64_t>{1});
  EXPECT_EQ(Attrs("gelu", {}).get_string("approximate"), "none");
  // A given value wins; an op without the attribute still says it is missing.
  EXPECT_EQ(Attrs("leaky_relu", {{"alpha", 0.2}}).get_float("alpha"), 0.2);
  expect_has(testing::user_error([] { Attrs("relu", {}).get_float("alpha"); }),
             "relu: missing attribute 'alpha'");
  // A node keeps the attributes it was given (tuning records key on them).
  graph::Graph g;
  graph::ValueId x = g.add_input("x", kX);
  g.add("y", "leaky_relu", Attrs(), {x});
  EXPECT_TRUE(g.node(0).attrs.values().empty());
}

TEST(Schema, BlockedLayoutRules) {
  std::set<std::string> keeps;
  for (const std::string& name : registered_ops()) {
    const OpDef& def = lookup(name);
    if (!def.keeps_blocked_layout) continue;
    keeps.insert(name);
    EXPECT_EQ(def.pattern, Pattern::kInjective) << name << " keeps the blocked layout";
  }
  // alter_layout's list before the rule moved onto the OpDef (ops added since may join it).
  // Then the activations of the models beyond the five (hard-swish, GELU, PRelu, ...).
  for (const char* op :
       {"add", "clip", "maximum", "minimum", "mul", "relu", "sigmoid", "sub", "tanh", "leaky_relu",
        "hard_sigmoid", "hard_swish", "gelu", "erf", "prelu"})
    EXPECT_TRUE(keeps.count(op)) << op;
  // Not those that make an infinity or a NaN of a zero in a padded channel (log 0, 1/0, 0/0).
  for (const char* op : {"log", "reciprocal", "div", "cast"}) EXPECT_FALSE(keeps.count(op)) << op;
  for (const char* pool : {"max_pool2d", "avg_pool2d", "global_max_pool2d", "global_avg_pool2d"})
    EXPECT_EQ(lookup(pool).blocked_form, std::string(pool) + "_nchwc");
  EXPECT_EQ(lookup("max_pool2d_nchwc").blocked_form, "");
  EXPECT_EQ(lookup("conv2d").blocked_form, "");
}

// One parser, one set of messages: the same bad window is refused alike by every op.
TEST(Schema, WindowAttributesShareOneParserAndItsMessages) {
  TensorType x4{{1, 4, 8, 8}, ir::DataType::Float32()}, w4{{4, 4, 3, 3}, ir::DataType::Float32()};
  TensorType x5{{1, 1, 8, 8, 4}, ir::DataType::Float32()};
  TensorType w6{{1, 1, 3, 3, 4, 4}, ir::DataType::Float32()};
  std::vector<int64_t> k{3, 3};
  struct Case {
    std::string op;
    std::vector<TensorType> in;
    std::map<std::string, AttrValue> base;
  };
  for (const Case& c : std::vector<Case>{{"conv2d", {x4, w4}, {}},
                                         {"conv2d_nchwc", {x5, w6}, {}},
                                         {"max_pool2d", {x4}, {{"kernel_shape", k}}},
                                         {"avg_pool2d_nchwc", {x5}, {{"kernel_shape", k}}}}) {
    auto with = [&](const std::string& name, AttrValue v) {
      std::map<std::string, AttrValue> a = c.base;
      a[name] = std::move(v);
      return a;
    };
    expect_has(infer_error(c.op, c.in, with("strides", std::vector<int64_t>{0, 1})),
               c.op + ": attribute 'strides' must be positive, got [0, 1]");
    expect_has(infer_error(c.op, c.in, with("pads", std::vector<int64_t>{1, 1})),
               c.op + ": attribute 'pads' must have 4 values, got [1, 1]");
    expect_has(infer_error(c.op, c.in, with("dilations", std::vector<int64_t>{1, -1})),
               c.op + ": attribute 'dilations' must be positive, got [1, -1]");
  }
  Window w = parse_window(Attrs("conv3d", {{"pads", std::vector<int64_t>{0, 1, 2, 3, 4, 5}}}), 3,
                          kWindowGroup);
  EXPECT_EQ(w.strides, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(w.pad_lo, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(w.pad_hi, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(w.group, 1);
  expect_has(testing::user_error([] { parse_window(Attrs("max_pool3d", {}), 3, kWindowKernel); }),
             "max_pool3d: missing attribute 'kernel_shape'");
}

}  // namespace
}  // namespace anvil::ops
