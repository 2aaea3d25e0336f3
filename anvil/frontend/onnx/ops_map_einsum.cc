// Einsum onto the library's operators. The equation is parsed into labels (letters, and one label
// per dimension an ellipsis covers, right-aligned across operands as numpy broadcasts them).
// A label repeated within one operand (a diagonal, "ii->i") is that operand times an identity
// mask, summed over one of the two axes; a label only one operand has and the output lacks is
// summed there first. Two operands that share a summed label are a batched matmul: each is
// transposed to [batch, kept, summed] (or [batch, summed, kept]) and reshaped to three
// dimensions, so the contraction runs as the library's GEMM (float32; float64 takes the general
// form). Anything else (one operand, three
// or more, broadcast batch dimensions) is every operand transposed and reshaped onto all the
// labels, multiplied, and summed over the labels the output lacks: one fused reduction.
#include <algorithm>
#include <cctype>
#include <numeric>

#include "anvil/frontend/onnx/importer_internal.h"
#include "anvil/support/error.h"

namespace anvil::frontend::onnx_detail {

namespace {

using AttrMap = std::map<std::string, ops::AttrValue>;
using Labels = std::vector<int>;  // letters as their char codes; ellipsis dimensions from 256

ops::Attrs A(AttrMap m = {}) {
  return ops::Attrs("", std::move(m));
}

constexpr int kEllipsisBase = 256;

// One term of the equation ("ij", "...ij", "b...") for an operand of `rank` dimensions (-1: the
// output), with `ellipsis` the widest ellipsis of all operands: an operand's ellipsis covers its
// last dimensions of that width.
Labels parse_term(const std::string& term, int64_t rank, int64_t ellipsis,
                  const std::string& what) {
  size_t dots = term.find("...");
  ANVIL_CHECK(dots == std::string::npos || term.find("...", dots + 3) == std::string::npos,
              "equation: ", what, " '", term, "' has more than one ellipsis");
  std::string letters = term;
  if (dots != std::string::npos) letters.erase(dots, 3);
  for (char ch : letters) {
    ANVIL_CHECK(std::isalpha(static_cast<unsigned char>(ch)), "equation: ", what, " '", term,
                "' has '", std::string(1, ch), "', which is not a letter");
  }
  int64_t named = static_cast<int64_t>(letters.size());
  int64_t e = 0;  // dimensions the ellipsis covers
  if (dots != std::string::npos) e = rank < 0 ? ellipsis : rank - named;
  ANVIL_CHECK(rank < 0 || e >= 0, "equation: ", what, " '", term, "' names ", named,
              " dimensions, but the operand has ", rank);
  ANVIL_CHECK(rank < 0 || dots != std::string::npos || named == rank, "equation: ", what, " '",
              term, "' names ", named, " dimensions, but the operand has ", rank);
  Labels out;
  for (size_t k = 0; k < term.size();) {
    if (k == dots) {
      for (int64_t d = 0; d < e; ++d)
        out.push_back(kEllipsisBase + static_cast<int>(ellipsis - e + d));
      k += 3;
    } else {
      out.push_back(static_cast<unsigned char>(term[k++]));
    }
  }
  return out;
}

struct Operand {
  ValueId v;
  Labels labels;
  std::vector<int64_t> shape;
};

bool has(const Labels& l, int x) {
  return std::find(l.begin(), l.end(), x) != l.end();
}

int64_t position(const Labels& l, int x) {
  return std::find(l.begin(), l.end(), x) - l.begin();
}

int64_t dim_of(const Operand& op, int x) {
  return op.shape[static_cast<size_t>(position(op.labels, x))];
}

// op's axes permuted so that its labels follow `order`.
void transpose_to(Ctx& c, Operand& op, const Labels& order) {
  std::vector<int64_t> perm(op.labels.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    return position(order, op.labels[static_cast<size_t>(a)]) <
           position(order, op.labels[static_cast<size_t>(b)]);
  });
  bool identity = true;
  for (size_t k = 0; k < perm.size(); ++k)
    identity = identity && perm[k] == static_cast<int64_t>(k);
  if (identity) return;
  op.v = c.emit1("transpose", A({{"perm", perm}}), {op.v});
  Operand t{op.v, {}, {}};
  for (int64_t p : perm) {
    t.labels.push_back(op.labels[static_cast<size_t>(p)]);
    t.shape.push_back(op.shape[static_cast<size_t>(p)]);
  }
  op = t;
}

// A label repeated in op: x times an identity mask over the two axes, summed over the second.
void take_diagonals(Ctx& c, Operand& op) {
  for (size_t a = 0; a < op.labels.size(); ++a) {
    for (size_t b = a + 1; b < op.labels.size(); ++b) {
      if (op.labels[a] != op.labels[b]) continue;
      int64_t n = op.shape[a];
      ANVIL_CHECK(op.shape[b] == n, "a label repeated in one operand covers dimensions of sizes ",
                  n, " and ", op.shape[b]);
      std::vector<int64_t> mshape(op.shape.size(), 1);
      mshape[a] = mshape[b] = n;
      ir::DataType t = c.g.value(op.v).type.dtype;
      runtime::NDArray eye = runtime::NDArray::empty(mshape, ops::to_dlpack(t));
      std::memset(eye.data(), 0, eye.nbytes());
      int64_t sa = 1, sb = 1;  // row-major strides of the two axes in the mask
      for (size_t d = a + 1; d < mshape.size(); ++d) sa *= mshape[d];
      for (size_t d = b + 1; d < mshape.size(); ++d) sb *= mshape[d];
      for (int64_t i = 0; i < n; ++i) {
        if (t == ir::DataType::Float(64))
          eye.data_as<double>()[i * (sa + sb)] = 1.0;
        else
          eye.data_as<float>()[i * (sa + sb)] = 1.0f;
      }
      ValueId masked = c.emit1("mul", A(), {op.v, c.constant("einsum_eye", eye)});
      op.v = c.emit1(
          "reduce_sum",
          A({{"axes", std::vector<int64_t>{static_cast<int64_t>(b)}}, {"keepdims", int64_t{0}}}),
          {masked});
      op.labels.erase(op.labels.begin() + static_cast<ptrdiff_t>(b));
      op.shape.erase(op.shape.begin() + static_cast<ptrdiff_t>(b));
      --b;
    }
  }
}

// op summed over the labels in `drop`.
void sum_out(Ctx& c, Operand& op, const Labels& drop) {
  std::vector<int64_t> axes;
  Operand kept{op.v, {}, {}};
  for (size_t k = 0; k < op.labels.size(); ++k) {
    if (has(drop, op.labels[k])) {
      axes.push_back(static_cast<int64_t>(k));
    } else {
      kept.labels.push_back(op.labels[k]);
      kept.shape.push_back(op.shape[k]);
    }
  }
  if (axes.empty()) return;
  kept.v = c.emit1("reduce_sum", A({{"axes", axes}, {"keepdims", int64_t{0}}}), {op.v});
  op = kept;
}

int64_t dims_product(const Operand& op, const Labels& which) {
  int64_t n = 1;
  for (int x : which) n *= dim_of(op, x);
  return n;
}

ValueId reshape(Ctx& c, ValueId v, std::vector<int64_t> shape) {
  return c.emit1("reshape", A({{"shape", std::move(shape)}}), {v});
}

// Two float32 operands with a shared summed label and equal batch sizes: a batched matmul; else
// -1.
ValueId as_matmul(Ctx& c, Operand a, Operand b, const Labels& out) {
  if (c.g.value(a.v).type.dtype != ir::DataType::Float32()) return -1;  // the GEMM is float32
  Labels batch, left, right, summed;
  for (int x : a.labels) {
    if (!has(b.labels, x)) {
      left.push_back(x);
      continue;
    }
    if (dim_of(a, x) != dim_of(b, x)) return -1;  // broadcast: the general form
    (has(out, x) ? batch : summed).push_back(x);
  }
  for (int x : b.labels)
    if (!has(a.labels, x)) right.push_back(x);
  if (summed.empty()) return -1;
  std::stable_sort(batch.begin(), batch.end(),
                   [&](int x, int y) { return position(out, x) < position(out, y); });
  Labels a_order = batch, b_order = batch;
  a_order.insert(a_order.end(), left.begin(), left.end());
  a_order.insert(a_order.end(), summed.begin(), summed.end());
  b_order.insert(b_order.end(), summed.begin(), summed.end());
  b_order.insert(b_order.end(), right.begin(), right.end());
  transpose_to(c, a, a_order);
  transpose_to(c, b, b_order);
  int64_t nb = dims_product(a, batch), ni = dims_product(a, left), ns = dims_product(a, summed),
          nk = dims_product(b, right);
  ValueId prod =
      c.emit1("matmul", A(), {reshape(c, a.v, {nb, ni, ns}), reshape(c, b.v, {nb, ns, nk})});
  Operand r{prod, {}, {}};
  for (const auto& [from, labels] : {std::pair{&a, &batch}, {&a, &left}, {&b, &right}}) {
    for (int x : *labels) {
      r.labels.push_back(x);
      r.shape.push_back(dim_of(*from, x));
    }
  }
  r.v = reshape(c, prod, r.shape);
  transpose_to(c, r, out);
  return r.v;
}

}  // namespace

std::vector<ValueId> map_einsum(Ctx& c) {
  std::string eq;
  for (char ch : c.attr_string("equation", "")) {
    if (!std::isspace(static_cast<unsigned char>(ch))) eq += ch;
  }
  ANVIL_CHECK(!eq.empty(), "attribute 'equation' is missing or empty");
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  ANVIL_CHECK(static_cast<int>(terms.size()) == c.num_in(), "equation '", eq, "' has ",
              terms.size(), " operands, the node ", c.num_in(), " inputs");
  std::vector<Operand> ops;
  int64_t ellipsis = 0;
  for (int i = 0; i < c.num_in(); ++i) {
    std::vector<int64_t> shape = c.type(i).shape;
    ir::DataType t = c.type(i).dtype;
    ANVIL_CHECK(t == ir::DataType::Float32() || t == ir::DataType::Float(64), "input ", i, " is ",
                t, ", which Einsum takes only as float32 or float64 here");
    const std::string& term = terms[static_cast<size_t>(i)];
    if (term.find("...") != std::string::npos) {
      int64_t named = static_cast<int64_t>(term.size()) - 3;
      ellipsis = std::max(ellipsis, static_cast<int64_t>(shape.size()) - named);
    }
    ops.push_back({c.in(i), {}, shape});
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    ops[i].labels = parse_term(terms[i], static_cast<int64_t>(ops[i].shape.size()), ellipsis,
                               "operand " + std::to_string(i));
  }
  Labels out;
  if (arrow != std::string::npos) {
    out = parse_term(eq.substr(arrow + 2), -1, ellipsis, "output");
    for (int x : out) {
      ANVIL_CHECK(std::count(out.begin(), out.end(), x) == 1, "equation '", eq,
                  "': the output repeats a label");
      bool known = false;
      for (const Operand& op : ops) known = known || has(op.labels, x);
      ANVIL_CHECK(known, "equation '", eq, "': an output label is in no operand");
    }
  } else {  // implicit: the ellipsis, then the letters used once, in alphabetical order
    for (int64_t d = 0; d < ellipsis; ++d) out.push_back(kEllipsisBase + static_cast<int>(d));
    std::map<int, int> uses;
    for (const Operand& op : ops)
      for (int x : op.labels)
        if (x < kEllipsisBase) ++uses[x];
    for (const auto& [x, n] : uses)
      if (n == 1) out.push_back(x);
  }
  // The sizes of a label agree (1 broadcasts).
  std::map<int, int64_t> size;
  for (const Operand& op : ops) {
    for (size_t k = 0; k < op.labels.size(); ++k) {
      int64_t& s = size[op.labels[k]];
      int64_t d = op.shape[k];
      ANVIL_CHECK(s <= 1 || d == 1 || d == s, "equation '", eq,
                  "': a label covers dimensions of sizes ", s, " and ", d);
      s = std::max(s, d);
    }
  }

  for (Operand& op : ops) take_diagonals(c, op);
  for (size_t i = 0; i < ops.size(); ++i) {
    Labels drop;
    for (int x : ops[i].labels) {
      bool elsewhere = has(out, x);
      for (size_t j = 0; j < ops.size(); ++j) {
        elsewhere = elsewhere || (j != i && has(ops[j].labels, x));
      }
      if (!elsewhere) drop.push_back(x);
    }
    sum_out(c, ops[i], drop);
  }
  if (ops.size() == 2) {
    ValueId v = as_matmul(c, ops[0], ops[1], out);
    if (v >= 0) return {v};
  }

  // The general form: every operand over all labels (the output's first), multiplied, summed.
  Labels all = out;
  for (const Operand& op : ops)
    for (int x : op.labels)
      if (!has(all, x)) all.push_back(x);
  ValueId product = -1;
  for (Operand& op : ops) {
    transpose_to(c, op, all);
    std::vector<int64_t> shape;
    for (int x : all) shape.push_back(has(op.labels, x) ? dim_of(op, x) : 1);
    ValueId v = shape == op.shape ? op.v : reshape(c, op.v, shape);
    product = product < 0 ? v : c.emit1("mul", A(), {product, v});
  }
  std::vector<int64_t> summed_axes;
  for (size_t k = out.size(); k < all.size(); ++k) summed_axes.push_back(static_cast<int64_t>(k));
  if (!summed_axes.empty()) {
    product =
        c.emit1("reduce_sum", A({{"axes", summed_axes}, {"keepdims", int64_t{0}}}), {product});
  }
  // An output label every operand has at size 1 but the equation broadcasts: expanded.
  std::vector<int64_t> want;
  for (int x : out) want.push_back(size[x]);
  if (c.g.value(product).type.shape != want) {
    product = c.emit1("expand", A({{"shape", want}}), {product});
  }
  return {product};
}

}  // namespace anvil::frontend::onnx_detail
