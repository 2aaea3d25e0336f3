// The ONNX importer's fuzz target. Each input is a serialized ModelProto, imported under a 64 MiB
// memory cap: a user error (anvil::Error) is the expected outcome of a bad model; anything else (a
// crash, a sanitizer report, an InternalError, any other exception, a hang) is a finding.
//
// Byte-level mutation of a protobuf mostly breaks its framing, so the importer would rarely see
// anything but parse errors. The custom mutator parses the model and changes its structure (shapes,
// element types, attributes, op types, edges, initializers, node order, the opset) before
// serializing it again; one mutation in eight is libFuzzer's own byte mutation, which also covers
// inputs that do not parse.
//
// Built twice (CMakeLists.txt): with libFuzzer in the sanitizer build, and with standalone_main.cc
// elsewhere, where it replays files (tests/fuzz/crashes/).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>  // onnx-ml.pb.h with ONNX_ML=1

#include "anvil/frontend/onnx/importer.h"
#include "anvil/support/error.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using Rng = std::mt19937_64;

size_t below(Rng& rng, size_t n) {
  return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng);
}

// Values that sit on the edges importers get wrong: zero, negative, one past a rank, huge.
int64_t interesting_int(Rng& rng) {
  static const int64_t kValues[] = {
      0,         1,         2,         3,        4,       7,       16,
      -1,        -2,        -3,        -1000,    1 << 16, 1 << 30, int64_t{1} << 40,
      INT64_MAX, INT64_MIN, INT32_MAX, INT32_MIN};
  if (below(rng, 4) == 0) return static_cast<int64_t>(below(rng, 64)) - 8;
  return kValues[below(rng, std::size(kValues))];
}

float interesting_float(Rng& rng) {
  static const float kValues[] = {0.0f,
                                  -0.0f,
                                  1.0f,
                                  -1.0f,
                                  0.5f,
                                  1e-30f,
                                  1e30f,
                                  3.4e38f,
                                  std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN()};
  return kValues[below(rng, std::size(kValues))];
}

// Every graph of the model: the main graph and the subgraphs of its nodes' attributes.
void collect_graphs(onnx::GraphProto* g, std::vector<onnx::GraphProto*>& out) {
  out.push_back(g);
  for (onnx::NodeProto& n : *g->mutable_node()) {
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      if (a.has_g()) collect_graphs(a.mutable_g(), out);
      for (onnx::GraphProto& sub : *a.mutable_graphs()) collect_graphs(&sub, out);
    }
  }
}

// The names a node input can refer to in `g`, plus two that no value has.
std::vector<std::string> value_names(const onnx::GraphProto& g) {
  std::vector<std::string> names = {"", "no_such_value"};
  for (const onnx::ValueInfoProto& v : g.input()) names.push_back(v.name());
  for (const onnx::TensorProto& t : g.initializer()) names.push_back(t.name());
  for (const onnx::NodeProto& n : g.node())
    for (const std::string& o : n.output()) names.push_back(o);
  return names;
}

void mutate_dims(Rng& rng, google::protobuf::RepeatedField<int64_t>* dims) {
  switch (below(rng, 4)) {
    case 0:
      dims->Add(interesting_int(rng));
      break;
    case 1:
      if (!dims->empty()) dims->RemoveLast();
      break;
    default:
      if (!dims->empty())
        dims->Set(static_cast<int>(below(rng, dims->size())), interesting_int(rng));
      break;
  }
}

void mutate_shape(Rng& rng, onnx::TensorShapeProto* shape) {
  switch (below(rng, 5)) {
    case 0:
      shape->add_dim()->set_dim_value(interesting_int(rng));
      break;
    case 1:
      if (shape->dim_size() > 0) shape->mutable_dim()->RemoveLast();
      break;
    case 2:
      if (shape->dim_size() > 0)
        shape->mutable_dim(static_cast<int>(below(rng, shape->dim_size())))->set_dim_param("N");
      break;
    default:
      if (shape->dim_size() > 0)
        shape->mutable_dim(static_cast<int>(below(rng, shape->dim_size())))
            ->set_dim_value(interesting_int(rng));
      break;
  }
}

// A graph input or output: its element type, rank or one dimension.
void mutate_value_info(Rng& rng, onnx::ValueInfoProto* v) {
  onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
  switch (below(rng, 4)) {
    case 0:
      t->set_elem_type(static_cast<int32_t>(below(rng, 24)));
      break;
    case 1:
      t->clear_shape();
      break;
    default:
      mutate_shape(rng, t->mutable_shape());
      break;
  }
}

// An initializer: its dimensions alone (the data no longer matches), its element type, or a
// consistent new shape with fresh raw data.
void mutate_initializer(Rng& rng, onnx::TensorProto* t) {
  switch (below(rng, 4)) {
    case 0:
      mutate_dims(rng, t->mutable_dims());
      break;
    case 1:
      t->set_data_type(static_cast<int32_t>(below(rng, 24)));
      break;
    case 2:
      t->set_data_location(below(rng, 2) ? onnx::TensorProto::EXTERNAL
                                         : onnx::TensorProto::DEFAULT);
      break;
    default: {
      // A small consistent tensor: 0 to 3 dimensions of 0 to 4, raw bytes of its element size.
      t->clear_dims();
      int64_t n = 1;
      for (size_t r = below(rng, 4); r > 0; --r) {
        int64_t d = static_cast<int64_t>(below(rng, 5));
        t->add_dims(d);
        n *= d;
      }
      static const int kElemBytes[] = {4, 4, 1, 1, 2, 2, 4, 8, 1, 1, 2, 8, 4, 8};
      int type = t->data_type();
      size_t elem = type >= 0 && type < 14 ? static_cast<size_t>(kElemBytes[type]) : 4;
      std::string raw(static_cast<size_t>(n) * elem, '\0');
      for (char& c : raw) c = static_cast<char>(below(rng, 256));
      t->clear_float_data();
      t->clear_int32_data();
      t->clear_int64_data();
      t->clear_double_data();
      t->clear_uint64_data();
      t->set_raw_data(raw);
      break;
    }
  }
}

// One attribute of `n`: a value changed, an element of a list changed, added or removed, its type
// field changed, or a new attribute under a common name.
void mutate_attribute(Rng& rng, onnx::NodeProto* n) {
  static const char* kNames[] = {
      "axis",           "axes",     "perm",      "kernel_shape", "strides", "pads",     "dilations",
      "group",          "keepdims", "alpha",     "beta",         "epsilon", "transA",   "transB",
      "mode",           "to",       "direction", "hidden_size",  "shape",   "auto_pad", "ceil_mode",
      "output_padding", "value",    "split",     "largest"};
  if (n->attribute_size() == 0 || below(rng, 4) == 0) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(kNames[below(rng, std::size(kNames))]);
    switch (below(rng, 4)) {
      case 0:
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(interesting_int(rng));
        break;
      case 1:
        a->set_type(onnx::AttributeProto::INTS);
        for (size_t k = below(rng, 6); k > 0; --k) a->add_ints(interesting_int(rng));
        break;
      case 2:
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(interesting_float(rng));
        break;
      default:
        a->set_type(onnx::AttributeProto::STRING);
        a->set_s(below(rng, 2) ? "SAME_UPPER" : "bogus");
        break;
    }
    return;
  }
  onnx::AttributeProto* a = n->mutable_attribute(static_cast<int>(below(rng, n->attribute_size())));
  switch (below(rng, 6)) {
    case 0:
      a->set_i(interesting_int(rng));
      break;
    case 1:
      if (a->ints_size() > 0 && below(rng, 2))
        a->set_ints(static_cast<int>(below(rng, a->ints_size())), interesting_int(rng));
      else if (below(rng, 2))
        a->add_ints(interesting_int(rng));
      else
        a->clear_ints();
      break;
    case 2:
      a->set_f(interesting_float(rng));
      if (a->floats_size() > 0)
        a->set_floats(static_cast<int>(below(rng, a->floats_size())), interesting_float(rng));
      break;
    case 3:
      a->set_type(static_cast<onnx::AttributeProto::AttributeType>(below(rng, 15)));
      break;
    case 4:
      if (a->has_t())
        mutate_initializer(rng, a->mutable_t());
      else
        a->set_s(below(rng, 2) ? "" : "constant");
      break;
    default:
      n->mutable_attribute()->DeleteSubrange(static_cast<int>(below(rng, n->attribute_size())), 1);
      break;
  }
}

// One edge of `g`: a node input rewired (to another value, an empty name or an unknown one), an
// input added or dropped, or an output renamed onto another value's name.
void mutate_edge(Rng& rng, onnx::GraphProto* g) {
  if (g->node_size() == 0) return;
  onnx::NodeProto* n = g->mutable_node(static_cast<int>(below(rng, g->node_size())));
  std::vector<std::string> names = value_names(*g);
  const std::string& pick = names[below(rng, names.size())];
  switch (below(rng, 4)) {
    case 0:
      n->add_input(pick);
      break;
    case 1:
      if (n->input_size() > 0) n->mutable_input()->RemoveLast();
      break;
    case 2:
      if (n->output_size() > 0) n->set_output(static_cast<int>(below(rng, n->output_size())), pick);
      break;
    default:
      if (n->input_size() > 0) n->set_input(static_cast<int>(below(rng, n->input_size())), pick);
      break;
  }
}

// The node list: two nodes swapped, one dropped, or one duplicated.
void mutate_nodes(Rng& rng, onnx::GraphProto* g) {
  if (g->node_size() == 0) return;
  int a = static_cast<int>(below(rng, g->node_size()));
  int b = static_cast<int>(below(rng, g->node_size()));
  switch (below(rng, 3)) {
    case 0:
      g->mutable_node()->SwapElements(a, b);
      break;
    case 1:
      g->mutable_node()->DeleteSubrange(a, 1);
      break;
    default:
      *g->add_node() = g->node(a);
      break;
  }
}

bool mutate_model(Rng& rng, onnx::ModelProto& model) {
  std::vector<onnx::GraphProto*> graphs;
  collect_graphs(model.mutable_graph(), graphs);
  onnx::GraphProto* g = graphs[below(rng, graphs.size())];
  switch (below(rng, 9)) {
    case 0:
      if (g->input_size() == 0) return false;
      mutate_value_info(rng, g->mutable_input(static_cast<int>(below(rng, g->input_size()))));
      return true;
    case 1:
      if (g->initializer_size() == 0) return false;
      mutate_initializer(
          rng, g->mutable_initializer(static_cast<int>(below(rng, g->initializer_size()))));
      return true;
    case 2:
    case 3:
      if (g->node_size() == 0) return false;
      mutate_attribute(rng, g->mutable_node(static_cast<int>(below(rng, g->node_size()))));
      return true;
    case 4: {
      if (g->node_size() == 0) return false;
      static const std::vector<std::string> ops = anvil::frontend::mapped_onnx_ops();
      g->mutable_node(static_cast<int>(below(rng, g->node_size())))
          ->set_op_type(ops[below(rng, ops.size())]);
      return true;
    }
    case 5:
      mutate_edge(rng, g);
      return true;
    case 6:
      mutate_nodes(rng, g);
      return true;
    case 7:
      if (g->output_size() == 0) return false;
      if (below(rng, 2))
        g->mutable_output(static_cast<int>(below(rng, g->output_size())))
            ->set_name("no_such_value");
      else
        mutate_value_info(rng, g->mutable_output(static_cast<int>(below(rng, g->output_size()))));
      return true;
    default: {
      onnx::OperatorSetIdProto* o =
          model.opset_import_size() ? model.mutable_opset_import(0) : model.add_opset_import();
      o->set_version(static_cast<int64_t>(below(rng, 21)));
      return true;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  anvil::frontend::ImportOptions options;
  options.memory_cap = int64_t{64} << 20;
  try {
    anvil::frontend::import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size),
                                       options, "<fuzz>");
  } catch (const anvil::InternalError&) {
    throw;  // a broken invariant is a bug: let it abort
  } catch (const anvil::Error&) {
    // The refusal of a bad model: expected.
  }
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto model;
  if (below(rng, 8) == 0 || !model.ParseFromArray(data, static_cast<int>(size)) ||
      !model.has_graph())
    return LLVMFuzzerMutate(data, size, max_size);
  // One to three structural changes, then serialize; a model that grew past max_size falls back
  // to byte mutation.
  bool changed = false;
  for (size_t k = 1 + below(rng, 3); k > 0; --k) changed |= mutate_model(rng, model);
  std::string out;
  if (!changed || !model.SerializeToString(&out) || out.size() > max_size)
    return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
