// Elementwise operators: unary functions, binary operators with NumPy broadcasting.
#include <cmath>

#include "anvil/ir/op.h"
#include "anvil/ops/families.h"
#include "anvil/ops/op.h"
#include "anvil/ops/schedule_util.h"
#include "anvil/support/error.h"

namespace anvil::ops {

using namespace ir;

namespace {

// ---- broadcasting

// The NumPy broadcast of two shapes; throws naming the op and both shapes when they disagree.
std::vector<int64_t> broadcast_shape(const std::string& op, const std::vector<int64_t>& a,
                                     const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    ANVIL_CHECK(x == y || x == 1 || y == 1, op, ": shapes ",
                to_string(TensorType{a, DataType::Float32()}).substr(7), " and ",
                to_string(TensorType{b, DataType::Float32()}).substr(7),
                " do not broadcast (dimension ", i, ": ", x, " vs ", y, ")");
    out[i] = std::max(x, y);
  }
  return out;
}

// The indices into `t` (of lower or equal rank, broadcast) for output indices `idx`.
std::vector<Expr> broadcast_indices(const te::Tensor& t, const std::vector<Var>& idx) {
  std::vector<int64_t> shape = shape_of(t);
  std::vector<Expr> out;
  size_t offset = idx.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    out.push_back(shape[d] == 1 ? Expr(0) : Expr(idx[offset + d]));
  }
  return out;
}

// Flat offset into a tensor of `shape` for output coordinates `coord` (broadcasting).
int64_t broadcast_offset(const std::vector<int64_t>& shape, const std::vector<int64_t>& coord) {
  int64_t off = 0;
  size_t lead = coord.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    off = off * shape[d] + (shape[d] == 1 ? 0 : coord[lead + d]);
  }
  return off;
}

std::vector<int64_t> array_shape(const runtime::NDArray& a) {
  return a.shape();
}

// ---- registration helpers

using ScalarFn = std::function<Expr(Expr)>;
using HostFn = std::function<float(float)>;

void register_unary(const std::string& name, ScalarFn f, HostFn ref) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kInjective;
  def.infer = [name](const std::vector<TensorType>& in, const Attrs&) {
    ANVIL_CHECK(in.size() == 1, name, ": expects 1 input, got ", in.size());
    ANVIL_CHECK(in[0].dtype == DataType::Float32(), name, ": input must be float32, not ",
                in[0].dtype);
    return std::vector<TensorType>{in[0]};
  };
  def.compute = [name, f](const std::vector<te::Tensor>& in, const Attrs&) {
    te::Tensor x = in[0];
    return std::vector<te::Tensor>{te::compute(
        x->shape,
        [&](const std::vector<Var>& i) { return f(x(std::vector<Expr>(i.begin(), i.end()))); },
        name)};
  };
  def.reference = [ref](const std::vector<runtime::NDArray>& in, const Attrs&) {
    runtime::NDArray out = runtime::NDArray::empty(in[0].shape(), runtime::dl_float32());
    for (int64_t i = 0; i < out.numel(); ++i)
      out.data_as<float>()[i] = ref(in[0].data_as<float>()[i]);
    return std::vector<runtime::NDArray>{out};
  };
  def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& t,
                        const Config&) { schedule_injective_x86(s, outs[0], t); };
  register_op(std::move(def));
}

using BinaryFn = std::function<Expr(Expr, Expr)>;
using HostBinaryFn = std::function<float(float, float)>;

void register_binary(const std::string& name, BinaryFn f, HostBinaryFn ref) {
  OpDef def;
  def.name = name;
  def.pattern = Pattern::kInjective;
  def.infer = [name](const std::vector<TensorType>& in, const Attrs&) {
    ANVIL_CHECK(in.size() == 2, name, ": expects 2 inputs, got ", in.size());
    ANVIL_CHECK(in[0].dtype == in[1].dtype, name, ": input types differ: ", to_string(in[0]),
                " and ", to_string(in[1]));
    return std::vector<TensorType>{{broadcast_shape(name, in[0].shape, in[1].shape), in[0].dtype}};
  };
  def.compute = [name, f](const std::vector<te::Tensor>& in, const Attrs&) {
    te::Tensor a = in[0], b = in[1];
    std::vector<int64_t> shape = broadcast_shape(name, shape_of(a), shape_of(b));
    return std::vector<te::Tensor>{te::compute(
        to_exprs(shape),
        [&](const std::vector<Var>& i) {
          return f(a(broadcast_indices(a, i)), b(broadcast_indices(b, i)));
        },
        name)};
  };
  def.reference = [name, ref](const std::vector<runtime::NDArray>& in, const Attrs&) {
    std::vector<int64_t> sa = array_shape(in[0]), sb = array_shape(in[1]);
    std::vector<int64_t> shape = broadcast_shape(name, sa, sb);
    runtime::NDArray out = runtime::NDArray::empty(shape, runtime::dl_float32());
    std::vector<int64_t> coord(shape.size(), 0);
    for (int64_t i = 0; i < out.numel(); ++i) {
      out.data_as<float>()[i] = ref(in[0].data_as<float>()[broadcast_offset(sa, coord)],
                                    in[1].data_as<float>()[broadcast_offset(sb, coord)]);
      for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
        if (++coord[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
        coord[static_cast<size_t>(d)] = 0;
      }
    }
    return std::vector<runtime::NDArray>{out};
  };
  def.schedule_x86 = [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& t,
                        const Config&) { schedule_injective_x86(s, outs[0], t); };
  register_op(std::move(def));
}

}  // namespace

void register_elementwise_ops() {
  register_unary(
      "relu", [](Expr x) { return max(x, 0.0f); }, [](float x) { return std::max(x, 0.0f); });
  register_binary(
      "add", [](Expr a, Expr b) { return a + b; }, [](float a, float b) { return a + b; });
}

}  // namespace anvil::ops
