// Element access for the references over every dtype they handle: float16/32/64, int8-64,
// uint8-64 and bool (`compiled_dtype`: elementwise and data movement compile all of them, other
// ops fewer, each refusing the rest by name); the references read any of these as a double or an
// int64, compute, and write back in the tensor's own type (float16 rounded to nearest even,
// integers wrapping).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "anvil/ir/type.h"
#include "anvil/ops/op.h"
#include "anvil/runtime/ndarray.h"
#include "anvil/support/error.h"

namespace anvil::ops::host {

// IEEE binary16 bits to a double (exact).
inline double half_to_double(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(man), -24);  // zero and subnormals
  } else if (exp == 31) {
    v = man == 0 ? INFINITY : NAN;
  } else {
    v = std::ldexp(static_cast<double>(man | 0x400), exp - 25);
  }
  return sign ? -v : v;
}

// A double rounded to the nearest binary16 (ties to even), one rounding step as NumPy does.
inline uint16_t double_to_half(double v) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return static_cast<uint16_t>(sign | 0x7e00);
  double a = std::fabs(v);
  if (a < std::ldexp(1.0, -14)) {
    // Subnormal: units of 2^-24 (a result of 1024 is the smallest normal, encoded alike).
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24))));
  }
  if (std::isinf(a)) return static_cast<uint16_t>(sign | 0x7c00);
  int e2 = 0;
  std::frexp(a, &e2);  // a = f * 2^e2, f in [0.5, 1): a in [2^(e2-1), 2^e2)
  int e = e2 - 1;
  auto m = static_cast<int64_t>(std::nearbyint(std::ldexp(a, 10 - e)));  // in [1024, 2048]
  if (m == 2048) {
    m = 1024;
    ++e;
  }
  if (e > 15) return static_cast<uint16_t>(sign | 0x7c00);
  return static_cast<uint16_t>(sign | ((e + 15) << 10) | (m - 1024));
}

// The dtypes the references handle.
inline bool reference_dtype(ir::DataType t) {
  if (!t.is_scalar()) return false;
  if (t.is_bool()) return true;
  if (t.code() == ir::DataType::Code::kFloat)
    return t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
  return t.is_int_or_uint() &&
         (t.bits() == 8 || t.bits() == 16 || t.bits() == 32 || t.bits() == 64);
}

// The dtypes compiled code handles: those of the references (float16 is stored as half and
// computed in float32, each result rounded back).
inline bool compiled_dtype(ir::DataType t) {
  return reference_dtype(t);
}

// Throws naming `op` when compiled code cannot take `t`.
inline void check_compiled_dtype(const std::string& op, ir::DataType t, const char* what) {
  ANVIL_CHECK(compiled_dtype(t), op, ": ", what, " is ", t,
              ", which compiled code does not take yet (it takes float16/32/64, int8-64, "
              "uint8-64 and bool)");
}

// The float types that the compiled arithmetic ops (convolutions, products, pools,
// normalizations, softmax) compute in natively. float16 reaches them as float32
// (OpDef::float16_via_float32).
inline bool native_float(ir::DataType t) {
  return t == ir::DataType::Float32() || t == ir::DataType::Float(64);
}

// Element k of an integer or bool tensor as an int64 (uint64 keeps its bit pattern).
inline int64_t read_i64(const runtime::NDArray& a, int64_t k) {
  ir::DataType t = from_dlpack(a.dtype());
  bool s = t.is_int();
  switch (t.bits()) {
    case 1:
    case 8:
      return s ? a.data_as<int8_t>()[k] : a.data_as<uint8_t>()[k];
    case 16:
      return s ? a.data_as<int16_t>()[k] : a.data_as<uint16_t>()[k];
    case 32:
      return s ? int64_t{a.data_as<int32_t>()[k]} : int64_t{a.data_as<uint32_t>()[k]};
    default:
      return a.data_as<int64_t>()[k];
  }
}

// Element k of any tensor as a double (uint64 above 2^63 included).
inline double read_f64(const runtime::NDArray& a, int64_t k) {
  ir::DataType t = from_dlpack(a.dtype());
  if (t.code() == ir::DataType::Code::kFloat) {
    if (t.bits() == 16) return half_to_double(a.data_as<uint16_t>()[k]);
    if (t.bits() == 32) return a.data_as<float>()[k];
    return a.data_as<double>()[k];
  }
  if (!t.is_int() && t.bits() == 64) return static_cast<double>(a.data_as<uint64_t>()[k]);
  return static_cast<double>(read_i64(a, k));
}

// Stores the low bits of `v` as element k of an integer or bool tensor (wraps, as NumPy does;
// bool stores v != 0).
inline void write_i64(const runtime::NDArray& a, int64_t k, int64_t v) {
  ir::DataType t = from_dlpack(a.dtype());
  if (t.is_bool()) {
    a.data_as<uint8_t>()[k] = v != 0;
    return;
  }
  switch (t.bits()) {
    case 8:
      a.data_as<uint8_t>()[k] = static_cast<uint8_t>(v);
      break;
    case 16:
      a.data_as<uint16_t>()[k] = static_cast<uint16_t>(v);
      break;
    case 32:
      a.data_as<uint32_t>()[k] = static_cast<uint32_t>(v);
      break;
    default:
      a.data_as<int64_t>()[k] = v;
  }
}

// A double converted to an integer: truncated toward zero; NaN and values outside int64 and
// uint64 (undefined in ONNX) give 0.
inline int64_t f64_to_i64(double v) {
  constexpr double k2p63 = 9223372036854775808.0, k2p64 = 18446744073709551616.0;
  if (std::isnan(v) || v < -k2p63 || v >= k2p64) return 0;
  if (v >= k2p63) return static_cast<int64_t>(static_cast<uint64_t>(v));
  return static_cast<int64_t>(v);
}

// Stores `v` as element k: floats round to the tensor's type, integers truncate and wrap.
inline void write_f64(const runtime::NDArray& a, int64_t k, double v) {
  ir::DataType t = from_dlpack(a.dtype());
  if (t.code() == ir::DataType::Code::kFloat) {
    if (t.bits() == 16) {
      a.data_as<uint16_t>()[k] = double_to_half(v);
    } else if (t.bits() == 32) {
      a.data_as<float>()[k] = static_cast<float>(v);
    } else {
      a.data_as<double>()[k] = v;
    }
    return;
  }
  if (t.is_bool()) {
    a.data_as<uint8_t>()[k] = v != 0;
    return;
  }
  write_i64(a, k, f64_to_i64(v));
}

// Every element of `a` as a double, in order.
inline std::vector<double> read_all_f64(const runtime::NDArray& a) {
  std::vector<double> v(static_cast<size_t>(a.numel()));
  ir::DataType t = from_dlpack(a.dtype());
  if (t == ir::DataType::Float32()) {
    const float* p = a.data_as<float>();
    std::copy(p, p + v.size(), v.begin());
  } else {
    for (size_t k = 0; k < v.size(); ++k) v[k] = read_f64(a, static_cast<int64_t>(k));
  }
  return v;
}

// A new tensor of `shape` and `dtype` holding `values` (rounded as write_f64 rounds).
inline runtime::NDArray from_all_f64(const std::vector<int64_t>& shape, ir::DataType dtype,
                                     const std::vector<double>& values) {
  runtime::NDArray out = runtime::NDArray::empty(shape, to_dlpack(dtype));
  ANVIL_ICHECK(out.numel() == static_cast<int64_t>(values.size()), "from_all_f64: ", values.size(),
               " values for ", out.numel(), " elements");
  for (size_t k = 0; k < values.size(); ++k) write_f64(out, static_cast<int64_t>(k), values[k]);
  return out;
}

// A float tensor's values in another float type (rounded as write_f64 rounds).
inline runtime::NDArray float_converted(const runtime::NDArray& a, ir::DataType to) {
  runtime::NDArray out = runtime::NDArray::empty(a.shape(), to_dlpack(to));
  for (int64_t k = 0, n = a.numel(); k < n; ++k) write_f64(out, k, read_f64(a, k));
  return out;
}

}  // namespace anvil::ops::host
