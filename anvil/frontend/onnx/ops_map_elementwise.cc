// ONNX's elementwise operators onto the library's: the unary and binary tables, activations
// with their attributes, Pow, Clip, and the variadic Max, Min, Sum and Mean.
#include "anvil/frontend/onnx/importer_internal.h"
#include "anvil/support/error.h"

namespace anvil::frontend::onnx_detail {

namespace {

using ir::DataType;
using Vals = std::vector<ValueId>;
using AttrMap = std::map<std::string, ops::AttrValue>;

ops::Attrs A(AttrMap m = {}) {
  return ops::Attrs("", std::move(m));
}

int64_t rank_of(const Ctx& c, ValueId v) {
  return static_cast<int64_t>(c.g.value(v).type.shape.size());
}

// Before opset 7, binary ops broadcast B only with attribute broadcast = 1, aligned at attribute
// 'axis' of A when given (else at the end, as numpy): B gets trailing unit dimensions.
ValueId legacy_broadcast(Ctx& c, ValueId b) {
  if (c.opset() >= 7 || c.attr_int("broadcast", 0) == 0 || !c.has_attr("axis")) return b;
  int64_t ra = rank_of(c, c.in(0)), rb = rank_of(c, b);
  int64_t axis = c.attr_int("axis", 0);
  ANVIL_CHECK(axis >= -ra && axis <= ra, "attribute 'axis' = ", axis, " is outside [", -ra, ", ",
              ra, "] for A ", ops::to_string(c.type(0)));
  if (axis < 0) axis += ra;
  int64_t trailing = ra - axis - rb;
  ANVIL_CHECK(axis >= 0 && trailing >= 0, "attribute 'axis' = ", c.attr_int("axis", 0),
              " does not place B ", ops::to_string(c.g.value(b).type), " inside A ",
              ops::to_string(c.type(0)));
  if (trailing == 0) return b;
  std::vector<int64_t> shape = c.g.value(b).type.shape;
  shape.insert(shape.end(), static_cast<size_t>(trailing), 1);
  return c.emit1("reshape", A({{"shape", shape}}), {b});
}

Vals map_clip(Ctx& c) {
  AttrMap a;
  if (c.opset() < 11) {
    if (c.has_attr("min")) a["min"] = c.attr_float("min", 0);
    if (c.has_attr("max")) a["max"] = c.attr_float("max", 0);
  } else {
    // A bound computed at run time is an operand: max(x, min), then min(that, max) (so a min
    // above the max gives the max, as ONNX defines).
    bool run_time = false;
    for (int i : {1, 2}) run_time = run_time || (c.has_in(i) && !c.is_const(c.in(i)));
    if (run_time) {
      ValueId y = c.in(0);
      if (c.has_in(1)) y = c.emit1("maximum", A(), {y, c.in(1)}, !c.has_in(2));
      if (c.has_in(2)) y = c.emit1("minimum", A(), {y, c.in(2)}, true);
      return {y};
    }
    if (c.has_in(1)) a["min"] = c.float_scalar_in(1, "min");
    if (c.has_in(2)) a["max"] = c.float_scalar_in(2, "max");
  }
  return {c.emit1("clip", A(a), {c.in(0)}, true)};
}

// Max, Min, Sum (and Mean): a chain of the binary op over every input.
Vals map_variadic(Ctx& c, const std::string& op, bool mean) {
  ANVIL_CHECK(c.num_in() >= 1, "needs at least one input");
  if (c.num_in() == 1 && !mean) return {c.in(0)};
  ValueId y = c.in(0);
  for (int i = 1; i < c.num_in(); ++i)
    y = c.emit1(op, A(), {y, c.in(i)}, !mean && i + 1 == c.num_in());
  if (!mean) return {y};
  return {c.emit1("div", A(), {y, c.scalar_f32("count", static_cast<float>(c.num_in()))}, true)};
}

// Pow: the library's pow is on floats; integer bases go through float32 and back (exact for the
// integer results float32 holds), a differently typed exponent is cast to the base's float type.
Vals map_pow(Ctx& c) {
  ValueId base = c.in(0), e = legacy_broadcast(c, c.in(1));
  DataType bt = c.type(0).dtype;
  auto cast = [&](ValueId v, const char* to) {
    return c.emit1("cast", A({{"to", std::string(to)}}), {v});
  };
  DataType ft = bt.is_float() ? bt : DataType::Float32();
  if (c.g.value(e).type.dtype != ft) e = cast(e, ft.to_string().c_str());
  if (bt.is_float()) return {c.emit1("pow", A(), {base, e}, true)};
  ValueId y = c.emit1("pow", A(), {cast(base, "float32"), e});
  return {c.emit1("cast", A({{"to", bt.to_string()}}), {y}, true)};
}

MapFn unary(const std::string& op) {
  return [op](Ctx& c) { return Vals{c.emit1(op, A(), {c.in(0)}, true)}; };
}

MapFn binary(const std::string& op) {
  return [op](Ctx& c) {
    return Vals{c.emit1(op, A(), {c.in(0), legacy_broadcast(c, c.in(1))}, true)};
  };
}

}  // namespace

void add_elementwise_ops(std::map<std::string, MapFn>& t) {
  for (const auto& [onnx_op, op] :
       std::vector<std::pair<const char*, const char*>>{{"Relu", "relu"},
                                                        {"Sigmoid", "sigmoid"},
                                                        {"HardSwish", "hard_swish"},
                                                        {"Tanh", "tanh"},
                                                        {"Exp", "exp"},
                                                        {"Log", "log"},
                                                        {"Sqrt", "sqrt"},
                                                        {"Reciprocal", "reciprocal"},
                                                        {"Erf", "erf"},
                                                        {"Neg", "neg"},
                                                        {"Abs", "abs"},
                                                        {"Floor", "floor"},
                                                        {"Ceil", "ceil"},
                                                        {"Round", "round"},
                                                        {"Sign", "sign"},
                                                        {"IsNaN", "is_nan"},
                                                        {"Softplus", "softplus"},
                                                        {"Softsign", "softsign"},
                                                        {"Sin", "sin"},
                                                        {"Cos", "cos"},
                                                        {"Tan", "tan"},
                                                        {"Asin", "asin"},
                                                        {"Acos", "acos"},
                                                        {"Atan", "atan"},
                                                        {"Sinh", "sinh"},
                                                        {"Cosh", "cosh"},
                                                        {"Asinh", "asinh"},
                                                        {"Acosh", "acosh"},
                                                        {"Atanh", "atanh"},
                                                        {"Not", "logical_not"}})
    t[onnx_op] = unary(op);
  for (const auto& [onnx_op, op] : std::vector<std::pair<const char*, const char*>>{
           {"Add", "add"},
           {"Sub", "sub"},
           {"Mul", "mul"},
           {"Div", "div"},
           {"Equal", "equal"},
           {"Less", "less"},
           {"Greater", "greater"},
           {"LessOrEqual", "less_equal"},
           {"GreaterOrEqual", "greater_equal"},
           {"And", "logical_and"},
           {"Or", "logical_or"},
           {"Xor", "logical_xor"},
       })
    t[onnx_op] = binary(op);
  t["Pow"] = map_pow;
  t["Mod"] = [](Ctx& c) {
    return Vals{c.emit1("mod", A({{"fmod", c.attr_int("fmod", 0)}}), {c.in(0), c.in(1)}, true)};
  };
  t["BitShift"] = [](Ctx& c) {
    std::string d = c.attr_string("direction", "");  // ONNX: "LEFT" or "RIGHT"
    if (d == "LEFT" || d == "RIGHT") d = d == "LEFT" ? "left" : "right";
    return Vals{c.emit1("bit_shift", A({{"direction", d}}), {c.in(0), c.in(1)}, true)};
  };
  t["PRelu"] = [](Ctx& c) {
    // Before opset 7 a 1-D slope of C values applies per channel (dimension 1).
    ValueId slope = legacy_broadcast(c, c.in(1));
    std::vector<int64_t> xs = c.type(0).shape, ss = c.g.value(slope).type.shape;
    if (c.opset() < 7 && ss.size() == 1 && xs.size() > 2 && ss[0] == xs[1] && ss[0] != xs.back()) {
      std::vector<int64_t> shape(xs.size() - 1, 1);
      shape[0] = ss[0];
      slope = c.emit1("reshape", A({{"shape", shape}}), {slope});
    }
    return Vals{c.emit1("prelu", A(), {c.in(0), slope}, true)};
  };
  t["Where"] = [](Ctx& c) {
    return Vals{c.emit1("where", A(), {c.in(0), c.in(1), c.in(2)}, true)};
  };
  t["LeakyRelu"] = [](Ctx& c) {
    return Vals{
        c.emit1("leaky_relu", A({{"alpha", c.attr_float("alpha", 0.01)}}), {c.in(0)}, true)};
  };
  t["Elu"] = [](Ctx& c) {
    AttrMap a;  // alpha absent: the op's default (ONNX's, 1.0)
    if (c.has_attr("alpha")) a["alpha"] = c.attr_float("alpha", 0.0);
    return Vals{c.emit1("elu", A(a), {c.in(0)}, true)};
  };
  // Float attributes passed on when given; absent ones take the op's defaults (ONNX's).
  auto with_floats = [](const char* op, std::vector<const char*> names) {
    return [op, names](Ctx& c) {
      AttrMap a;
      for (const char* n : names)
        if (c.has_attr(n)) a[n] = c.attr_float(n, 0.0);
      return Vals{c.emit1(op, A(a), {c.in(0)}, true)};
    };
  };
  t["Selu"] = with_floats("selu", {"alpha", "gamma"});
  t["Celu"] = with_floats("celu", {"alpha"});
  t["ThresholdedRelu"] = with_floats("thresholded_relu", {"alpha"});
  t["Shrink"] = with_floats("shrink", {"bias", "lambd"});
  t["IsInf"] = [](Ctx& c) {
    return Vals{c.emit1("is_inf",
                        A({{"detect_negative", c.attr_int("detect_negative", 1)},
                           {"detect_positive", c.attr_int("detect_positive", 1)}}),
                        {c.in(0)}, true)};
  };
  t["HardSigmoid"] = [](Ctx& c) {
    return Vals{
        c.emit1("hard_sigmoid",
                A({{"alpha", c.attr_float("alpha", 0.2)}, {"beta", c.attr_float("beta", 0.5)}}),
                {c.in(0)}, true)};
  };
  t["Gelu"] = [](Ctx& c) {
    return Vals{c.emit1("gelu", A({{"approximate", c.attr_string("approximate", "none")}}),
                        {c.in(0)}, true)};
  };
  t["Clip"] = map_clip;
  t["Max"] = [](Ctx& c) { return map_variadic(c, "maximum", false); };
  t["Min"] = [](Ctx& c) { return map_variadic(c, "minimum", false); };
  t["Sum"] = [](Ctx& c) { return map_variadic(c, "add", false); };
  t["Mean"] = [](Ctx& c) { return map_variadic(c, "add", true); };
}

}  // namespace anvil::frontend::onnx_detail
