// The float functions among the elementwise operators: activations, exp and log, the
// trigonometric and hyperbolic functions, rounding, and the class tests (is_nan, is_inf), with
// ONNX semantics. The LLVM back end computes float32 exp, tanh, sigmoid and erf as polynomials
// (relative error about 2e-7); the inverse trigonometric and hyperbolic functions call libm.
#include <cmath>
#include <numbers>

#include "anvil/ir/op.h"
#include "anvil/ops/elementwise_common.h"
#include "anvil/ops/families.h"

namespace anvil::ops {

using namespace ir;
using namespace elementwise;

void register_elementwise_math_ops() {
  unary_float(
      {"leaky_relu", {float_attr("alpha", 0.01, "the slope for x < 0")}, kKeepsBlocked},
      [](Expr x, const Attrs& a) {
        return select(x < 0.0f, x * static_cast<float>(a.get_float("alpha")), x);
      },
      [](double x, const Attrs& a) { return x < 0 ? a.get_float("alpha") * x : x; });
  // elu(x; alpha) = x for x > 0, else alpha * (exp(x) - 1) (ONNX Elu). Finite on the zeros of
  // padded channels, so it keeps the blocked layout.
  unary_float(
      {"elu", {float_attr("alpha", 1.0, "the scale of exp(x) - 1 for x <= 0")}, kKeepsBlocked},
      [](Expr x, const Attrs& a) {
        Expr neg = (call(Intrinsic::kExp, x) - 1.0f) * static_cast<float>(a.get_float("alpha"));
        return select(x > 0.0f, x, neg);
      },
      [](double x, const Attrs& a) {
        return x > 0 ? x : a.get_float("alpha") * (std::exp(x) - 1);
      });
  unary_float(
      {"sigmoid", {}, kKeepsBlocked},
      [](Expr x, const Attrs&) { return call(Intrinsic::kSigmoid, x); },
      [](double x, const Attrs&) { return 1.0 / (1.0 + std::exp(-x)); });
  unary_float(
      {"hard_sigmoid",
       {float_attr("alpha", 0.2, "the slope"), float_attr("beta", 0.5, "the offset")},
       kKeepsBlocked},
      [](Expr x, const Attrs& a) {
        float alpha = static_cast<float>(a.get_float("alpha"));
        float beta = static_cast<float>(a.get_float("beta"));
        return max(min(x * alpha + beta, 1.0f), 0.0f);
      },
      [](double x, const Attrs& a) {
        double y = a.get_float("alpha") * x + a.get_float("beta");
        return y < 0 ? 0.0 : y > 1 ? 1.0 : y;
      });
  unary_float(
      {"hard_swish", {}, kKeepsBlocked},
      [](Expr x, const Attrs&) { return x * max(min(x * (1.0f / 6.0f) + 0.5f, 1.0f), 0.0f); },
      [](double x, const Attrs&) {
        double y = x / 6 + 0.5;
        return x * (y < 0 ? 0.0 : y > 1 ? 1.0 : y);
      });
  unary_float(
      {"tanh", {}, kKeepsBlocked}, [](Expr x, const Attrs&) { return call(Intrinsic::kTanh, x); },
      [](double x, const Attrs&) { return std::tanh(x); });
  unary_float(
      "exp", [](Expr x, const Attrs&) { return call(Intrinsic::kExp, x); },
      [](double x, const Attrs&) { return std::exp(x); });
  unary_float(
      "log", [](Expr x, const Attrs&) { return call(Intrinsic::kLog, x); },
      [](double x, const Attrs&) { return std::log(x); });
  unary_float(
      "sqrt", [](Expr x, const Attrs&) { return call(Intrinsic::kSqrt, x); },
      [](double x, const Attrs&) { return std::sqrt(x); });
  unary_float(
      "reciprocal", [](Expr x, const Attrs&) { return Expr(1.0f) / x; },
      [](double x, const Attrs&) { return 1.0 / x; });
  unary_float(
      {"erf", {}, kKeepsBlocked}, [](Expr x, const Attrs&) { return call(Intrinsic::kErf, x); },
      [](double x, const Attrs&) { return std::erf(x); });
  // gelu: approximate = "none" (the exact erf form, default) or "tanh".
  unary_float(
      {"gelu",
       {{"approximate",
         AttrType::kString,
         std::string("none"),
         {one_of(std::vector<std::string>{"none", "tanh"})},
         "'none': the exact erf form; 'tanh': its tanh approximation"}},
       kKeepsBlocked},
      [](Expr x, const Attrs& a) {
        if (a.get_string("approximate") == "tanh") {
          Expr inner =
              (x + x * x * x * 0.044715f) * static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
          return x * 0.5f * (call(Intrinsic::kTanh, inner) + 1.0f);
        }
        return x * 0.5f *
               (call(Intrinsic::kErf, x * static_cast<float>(1 / std::numbers::sqrt2)) + 1.0f);
      },
      [](double x, const Attrs& a) {
        if (a.get_string("approximate") == "tanh") {
          return 0.5 * x *
                 (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
        }
        return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
      });
  unary_float(
      "floor", [](Expr x, const Attrs&) { return call(Intrinsic::kFloor, x); },
      [](double x, const Attrs&) { return std::floor(x); });
  unary_float(
      "ceil", [](Expr x, const Attrs&) { return call(Intrinsic::kCeil, x); },
      [](double x, const Attrs&) { return std::ceil(x); });
  // Halves to even (ONNX Round, numpy.round).
  unary_float(
      {"round", {}, kKeepsBlocked}, [](Expr x, const Attrs&) { return call(Intrinsic::kRound, x); },
      [](double x, const Attrs&) { return std::nearbyint(x); });

  // selu(x; alpha, gamma) = gamma * x for x > 0, else gamma * alpha * (exp(x) - 1) (ONNX Selu).
  unary_float(
      {"selu",
       {float_attr("alpha", 1.67326319217681884765625, "the scale of exp(x) - 1 for x <= 0"),
        float_attr("gamma", 1.05070102214813232421875, "the scale of the output")},
       kKeepsBlocked},
      [](Expr x, const Attrs& a) {
        float alpha = static_cast<float>(a.get_float("alpha"));
        float gamma = static_cast<float>(a.get_float("gamma"));
        Expr neg = (call(Intrinsic::kExp, x) - 1.0f) * alpha;
        return select(x > 0.0f, x, neg) * gamma;
      },
      [](double x, const Attrs& a) {
        return a.get_float("gamma") * (x > 0 ? x : a.get_float("alpha") * (std::exp(x) - 1));
      });
  // celu(x; alpha) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (ONNX Celu).
  unary_float(
      {"celu", {float_attr("alpha", 1.0, "the scale of the negative part")}, kKeepsBlocked},
      [](Expr x, const Attrs& a) {
        float alpha = static_cast<float>(a.get_float("alpha"));
        Expr neg = (call(Intrinsic::kExp, x * (1.0f / alpha)) - 1.0f) * alpha;
        return max(x, 0.0f) + min(neg, 0.0f);
      },
      [](double x, const Attrs& a) {
        double alpha = a.get_float("alpha");
        return std::max(x, 0.0) + std::min(alpha * (std::exp(x / alpha) - 1), 0.0);
      });
  // softplus(x) = log(1 + exp(x)), as max(x, 0) + log(1 + exp(-|x|)): exp(x) would overflow for
  // large x where the result is x.
  unary_float(
      {"softplus", {}, kKeepsBlocked},
      [](Expr x, const Attrs&) {
        Expr e = call(Intrinsic::kExp, -call(Intrinsic::kFabs, x));
        return max(x, 0.0f) + call(Intrinsic::kLog, e + 1.0f);
      },
      [](double x, const Attrs&) {
        return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)));
      });
  unary_float(
      {"softsign", {}, kKeepsBlocked},
      [](Expr x, const Attrs&) { return x / (call(Intrinsic::kFabs, x) + 1.0f); },
      [](double x, const Attrs&) { return x / (1 + std::fabs(x)); });
  unary_float(
      {"thresholded_relu", {float_attr("alpha", 1.0, "the threshold")}, kKeepsBlocked},
      [](Expr x, const Attrs& a) {
        return select(x > static_cast<float>(a.get_float("alpha")), x, 0.0f);
      },
      [](double x, const Attrs& a) { return x > a.get_float("alpha") ? x : 0.0; });
  // shrink(x; bias, lambd) = x + bias below -lambd, x - bias above lambd, else 0 (ONNX Shrink).
  unary_float(
      {"shrink",
       {float_attr("bias", 0.0, "subtracted from |x| beyond the threshold"),
        float_attr("lambd", 0.5, "the threshold")},
       kKeepsBlocked},
      [](Expr x, const Attrs& a) {
        float bias = static_cast<float>(a.get_float("bias"));
        float lambd = static_cast<float>(a.get_float("lambd"));
        return select(x < -lambd, x + bias, select(x > lambd, x - bias, 0.0f));
      },
      [](double x, const Attrs& a) {
        double bias = a.get_float("bias"), lambd = a.get_float("lambd");
        return x < -lambd ? x + bias : x > lambd ? x - bias : 0.0;
      });

  // Trigonometric and hyperbolic functions.
  struct Fn {
    const char* name;
    Intrinsic op;
    double (*ref)(double);
  };
  for (const Fn& fn :
       {Fn{"sin", Intrinsic::kSin, std::sin}, Fn{"cos", Intrinsic::kCos, std::cos},
        Fn{"tan", Intrinsic::kTan, std::tan}, Fn{"asin", Intrinsic::kAsin, std::asin},
        Fn{"acos", Intrinsic::kAcos, std::acos}, Fn{"atan", Intrinsic::kAtan, std::atan},
        Fn{"sinh", Intrinsic::kSinh, std::sinh}, Fn{"cosh", Intrinsic::kCosh, std::cosh},
        Fn{"asinh", Intrinsic::kAsinh, std::asinh}, Fn{"acosh", Intrinsic::kAcosh, std::acosh},
        Fn{"atanh", Intrinsic::kAtanh, std::atanh}}) {
    unary_float(
        fn.name, [op = fn.op](Expr x, const Attrs&) { return call(op, x); },
        [ref = fn.ref](double x, const Attrs&) { return ref(x); });
  }

  // sign(x): -1, 0 or 1 in x's type (floats: NaN stays NaN, zeros keep their sign).
  register_elementwise(
      "sign", 1, same_type(TypeSet::kNumeric),
      [](const std::vector<Expr>& x, const Attrs&) {
        DataType t = x[0].type();
        Expr zero = make_zero(t), one = make_one(t);
        if (t.is_uint()) return select(x[0] > zero, one, zero);
        Expr minus_one = make_const(t, -1);
        return select(x[0] > zero, one, select(x[0] < zero, minus_one, t.is_float() ? x[0] : zero));
      },
      [](const std::vector<Value>& x, const Attrs&) {
        if (x[0].is_float) return fval(x[0].f > 0 ? 1.0 : x[0].f < 0 ? -1.0 : x[0].f);
        if (x[0].u) return ival(x[0].i != 0, true);
        return ival(x[0].i > 0 ? 1 : x[0].i < 0 ? -1 : 0);
      });
  // is_nan(x), is_inf(x; detect_negative, detect_positive): bool.
  register_elementwise(
      "is_nan", 1, to_bool(TypeSet::kFloat),
      [](const std::vector<Expr>& x, const Attrs&) { return x[0] != x[0]; },
      [](const std::vector<Value>& x, const Attrs&) { return bval(std::isnan(x[0].f)); });
  register_elementwise(
      {"is_inf",
       {{"detect_negative", AttrType::kInt, int64_t{1}, {one_of({0, 1})}, "1: -inf counts"},
        {"detect_positive", AttrType::kInt, int64_t{1}, {one_of({0, 1})}, "1: +inf counts"}}},
      1, to_bool(TypeSet::kFloat),
      [](const std::vector<Expr>& x, const Attrs& a) {
        DataType t = x[0].type();
        Expr r = make_zero(DataType::Bool());
        if (a.get_int("detect_negative")) r = r || x[0] == make_const(t, -INFINITY);
        if (a.get_int("detect_positive")) r = r || x[0] == make_const(t, INFINITY);
        return r;
      },
      [](const std::vector<Value>& x, const Attrs& a) {
        bool neg = a.get_int("detect_negative") && x[0].f == -INFINITY;
        bool pos = a.get_int("detect_positive") && x[0].f == INFINITY;
        return bval(neg || pos);
      });
}

}  // namespace anvil::ops
