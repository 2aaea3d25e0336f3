// The ONNX backend tests' data layout, shared by the conformance and NaN/Inf tests: a folder
// holds model.onnx and test_data_set_0/input_N.pb, output_N.pb (TensorProto). Outputs compare as
// the conformance test states: same shape and dtype; floats within 1e-4 * |want| + 1e-5, NaN
// matching NaN and infinities equal; integers and bools exactly.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/ops/op.h"
#include "anvil/runtime/ndarray.h"
#include "anvil/support/error.h"

namespace anvil::testing {

namespace fs = std::filesystem;

inline std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The numbered .pb files `prefix`_0, _1, ... of a data set, in order.
inline std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> v;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + "_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    v.push_back(p);
  }
  return v;
}

// A float32 array of `shape` holding `v` (row-major).
inline runtime::NDArray floats(const std::vector<int64_t>& shape, const std::vector<float>& v) {
  runtime::NDArray a = runtime::NDArray::empty(shape, runtime::dl_float32());
  std::copy(v.begin(), v.end(), a.data_as<float>());
  return a;
}

inline double elem(const runtime::NDArray& a, int64_t i) {
  ir::DataType t = ops::from_dlpack(a.dtype());
  if (t == ir::DataType::Float32()) return a.data_as<float>()[i];
  if (t == ir::DataType::Float(64)) return a.data_as<double>()[i];
  if (t == ir::DataType::Float(16)) {
    uint16_t h = a.data_as<uint16_t>()[i];
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0    ? std::ldexp(m, -24)
               : e == 31 ? (m ? NAN : INFINITY)
                         : std::ldexp(m | 0x400, e - 25);
    return (h >> 15) ? -v : v;
  }
  bool s = t.is_int();
  switch (t.bits()) {
    case 64:
      return s ? static_cast<double>(a.data_as<int64_t>()[i])
               : static_cast<double>(a.data_as<uint64_t>()[i]);
    case 32:
      return s ? static_cast<double>(a.data_as<int32_t>()[i]) : a.data_as<uint32_t>()[i];
    case 16:
      return s ? a.data_as<int16_t>()[i] : a.data_as<uint16_t>()[i];
    default:
      return s ? a.data_as<int8_t>()[i] : a.data_as<uint8_t>()[i];  // int8, uint8, bool
  }
}

// "" when `got` matches `want`, else why not.
inline std::string compare(const runtime::NDArray& got, const runtime::NDArray& want, size_t k) {
  if (got.shape() != want.shape())
    return str("output ", k, ": shape ", ops::list_str(got.shape()), ", expected ",
               ops::list_str(want.shape()));
  ir::DataType gt = ops::from_dlpack(got.dtype()), wt = ops::from_dlpack(want.dtype());
  if (!(gt == wt)) return str("output ", k, ": dtype ", gt, ", expected ", wt);
  bool is_float = gt.is_float();
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = elem(got, i), w = elem(want, i);
    bool ok = is_float ? (std::isnan(w)   ? std::isnan(g)
                          : std::isinf(w) ? g == w
                                          : std::fabs(g - w) <= 1e-4 * std::fabs(w) + 1e-5)
                       : g == w;
    if (!ok) return str("output ", k, " element ", i, ": ", g, ", expected ", w);
  }
  return "";
}

}  // namespace anvil::testing
