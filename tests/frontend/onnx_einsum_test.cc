// Einsum: small ONNX models over float32 (the batched-matmul form) and float64 (the general
// form), compiled for the host and interpreted, each checked against the equation evaluated
// here by plain loops over every assignment of its labels. Bad equations are errors naming the
// node and what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/build.h"
#include "anvil/graph/interpreter.h"
#include "anvil/support/error.h"
#include "anvil/target/target.h"
#include "frontend/onnx_model_builder.h"
#include "testing/errors.h"

namespace anvil {
namespace {

using anvil::testing::OnnxModel;
using runtime::NDArray;
using V = std::vector<int64_t>;

// The equation (explicit output, letters only) by loops: each label ranges over its size.
std::vector<double> naive_einsum(const std::string& eq, const std::vector<V>& shapes,
                                 const std::vector<std::vector<double>>& values, V* out_shape) {
  size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  std::string lhs = eq.substr(0, arrow), out = eq.substr(arrow + 2);
  for (size_t s = 0;;) {
    size_t comma = lhs.find(',', s);
    terms.push_back(lhs.substr(s, comma == std::string::npos ? comma : comma - s));
    if (comma == std::string::npos) break;
    s = comma + 1;
  }
  std::map<char, int64_t> size;
  std::string labels;
  for (size_t i = 0; i < terms.size(); ++i) {
    for (size_t k = 0; k < terms[i].size(); ++k) {
      size[terms[i][k]] = std::max(size[terms[i][k]], shapes[i][k]);
      if (labels.find(terms[i][k]) == std::string::npos) labels += terms[i][k];
    }
  }
  out_shape->clear();
  for (char ch : out) out_shape->push_back(size[ch]);
  int64_t n = 1;
  for (int64_t d : *out_shape) n *= d;
  std::vector<double> result(static_cast<size_t>(n), 0.0);
  std::map<char, int64_t> at;
  for (char ch : labels) at[ch] = 0;
  while (true) {
    double p = 1;
    for (size_t i = 0; i < terms.size(); ++i) {
      int64_t off = 0;
      for (size_t k = 0; k < terms[i].size(); ++k) {
        off = off * shapes[i][k] + (shapes[i][k] == 1 ? 0 : at[terms[i][k]]);
      }
      p *= values[i][static_cast<size_t>(off)];
    }
    int64_t o = 0;
    for (char ch : out) o = o * size[ch] + at[ch];
    result[static_cast<size_t>(o)] += p;
    size_t k = labels.size();
    while (k-- > 0) {
      if (++at[labels[k]] < size[labels[k]]) break;
      at[labels[k]] = 0;
    }
    if (k == static_cast<size_t>(-1)) break;
  }
  return result;
}

// Compiles and interprets `equation` (as ONNX writes it) on random inputs of `shapes`; checks
// both against naive_einsum(`explicit_eq`).
void check(const std::string& equation, const std::vector<V>& shapes, int type,
           const std::string& explicit_eq = "") {
  SCOPED_TRACE(equation);
  OnnxModel m;
  std::vector<std::string> names;
  std::vector<NDArray> inputs;
  std::vector<std::vector<double>> values;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  bool f64 = type == ::onnx::TensorProto::DOUBLE;
  for (size_t i = 0; i < shapes.size(); ++i) {
    names.push_back("x" + std::to_string(i));
    m.input(names.back(), shapes[i], type);
    NDArray a =
        NDArray::empty(shapes[i], f64 ? DLDataType{kDLFloat, 64, 1} : runtime::dl_float32());
    values.emplace_back();
    for (int64_t k = 0; k < a.numel(); ++k) {
      double v = dist(rng);
      if (f64) {
        a.data_as<double>()[k] = v;
      } else {
        a.data_as<float>()[k] = static_cast<float>(v);
        v = static_cast<float>(v);
      }
      values.back().push_back(v);
    }
    inputs.push_back(a);
  }
  m.output("y");
  ::onnx::NodeProto& n = m.node("Einsum", names, {"y"}, "contract");
  auto* a = n.add_attribute();
  a->set_name("equation");
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(equation);
  graph::Graph g = frontend::import_onnx_bytes(m.bytes());
  graph::CompiledGraph cg = graph::CompiledGraph::build(g, Target::host(), {});
  V want_shape;
  std::vector<double> want =
      naive_einsum(explicit_eq.empty() ? equation : explicit_eq, shapes, values, &want_shape);
  for (const auto& [what, got] : {std::pair{"compiled", cg.run(inputs).at(0)},
                                  {"interpreted", graph::interpret(g, inputs).at(0)}}) {
    ASSERT_EQ(got.shape(), want_shape) << what;
    double scale = 0;
    for (double w : want) scale = std::max(scale, std::fabs(w));
    double tol = (f64 ? 1e-12 : 1e-5) * (1 + scale);
    for (size_t k = 0; k < want.size(); ++k) {
      double v = f64 ? got.data_as<double>()[k] : got.data_as<float>()[k];
      ASSERT_NEAR(v, want[k], tol) << what << " element " << k;
    }
  }
}

constexpr int kF32 = ::onnx::TensorProto::FLOAT;
constexpr int kF64 = ::onnx::TensorProto::DOUBLE;

TEST(Einsum, ContractionsAsBatchedMatmul) {
  check("ij,jk->ik", {{3, 4}, {4, 5}}, kF32);
  check("bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, kF32);
  check("bhid,bhjd->bhij", {{1, 2, 5, 8}, {1, 2, 6, 8}}, kF32);  // attention scores
  check("bhij,bhjd->bhid", {{1, 2, 5, 6}, {1, 2, 6, 8}}, kF32);  // attention output
  check("i,i->", {{7}, {7}}, kF32);
  check("ij,kj", {{3, 4}, {5, 4}}, kF32, "ij,kj->ik");  // implicit output
  check("abc,cd->abd", {{2, 3, 4}, {4, 5}}, kF32);
  check("ji,jk->ki", {{4, 3}, {4, 5}}, kF32);
  check("ijk,jl->il", {{2, 3, 4}, {3, 5}}, kF32);  // k summed in the first operand alone
}

TEST(Einsum, GeneralForm) {
  check("ij->ji", {{3, 4}}, kF32);
  check("ij->", {{3, 4}}, kF64);
  check("i,j->ij", {{3}, {4}}, kF32);  // outer product: nothing summed
  check("ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}, kF64);
  check("ij,jk->ik", {{3, 4}, {4, 5}}, kF64);           // float64: no GEMM
  check("bij,bjk->bik", {{2, 3, 4}, {1, 4, 5}}, kF32);  // a broadcast batch
  check("ii->i", {{4, 4}}, kF32);
  check("iij->j", {{3, 3, 2}}, kF64);
  check("...ii->...i", {{2, 3, 3}}, kF64, "bii->bi");
  check("...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}, kF32, "bij,bjk->bik");
}

TEST(Einsum, BadEquationsAreErrors) {
  auto error = [](const std::string& eq, const std::vector<V>& shapes) {
    OnnxModel m;
    std::vector<std::string> names;
    for (size_t i = 0; i < shapes.size(); ++i) {
      names.push_back("x" + std::to_string(i));
      m.input(names.back(), shapes[i]);
    }
    m.output("y");
    ::onnx::NodeProto& n = m.node("Einsum", names, {"y"}, "contract");
    auto* a = n.add_attribute();
    a->set_name("equation");
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(eq);
    return testing::user_error([&] { frontend::import_onnx_bytes(m.bytes()); });
  };
  auto expect_has = [](const std::string& msg, const std::string& part) {
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
    EXPECT_NE(msg.find("'contract'"), std::string::npos) << msg;
  };
  expect_has(error("ij,jk->ik", {{3, 4}}), "equation 'ij,jk->ik' has 2 operands, the node 1");
  expect_has(error("ijk->i", {{3, 4}}),
             "operand 0 'ijk' names 3 dimensions, but the operand has 2");
  expect_has(error("i1->i", {{3, 4}}), "has '1', which is not a letter");
  expect_has(error("ij,jk->ik", {{3, 4}, {5, 6}}), "a label covers dimensions of sizes 4 and 5");
  expect_has(error("ij->iz", {{3, 4}}), "an output label is in no operand");
  expect_has(error("ij->ii", {{3, 4}}), "the output repeats a label");
}

}  // namespace
}  // namespace anvil
