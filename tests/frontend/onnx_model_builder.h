// Builds tiny ONNX models in tests with ONNX's generated protobuf classes.
#pragma once

#include <onnx/onnx_pb.h>  // onnx-ml.pb.h with ONNX_ML=1 (Debian ships no onnx.pb.h)

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace anvil::testing {

class OnnxModel {
 public:
  explicit OnnxModel(int64_t opset = 13) {
    model_.set_ir_version(7);
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  ::onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  ::onnx::ModelProto& model() { return model_; }

  // A float32 (or `type`) input; a negative dim is symbolic ("N<d>") unless `sym` names it.
  void input(const std::string& name, const std::vector<int64_t>& dims,
             int type = ::onnx::TensorProto::FLOAT, const std::string& sym = "N") {
    value_info(graph().add_input(), name, dims, type, sym);
  }
  void output(const std::string& name) {
    auto* vi = graph().add_output();
    vi->set_name(name);
  }
  void init_floats(const std::string& name, const std::vector<int64_t>& dims,
                   const std::vector<float>& v, bool raw = false) {
    ::onnx::TensorProto* t = graph().add_initializer();
    floats(t, name, dims, v, raw);
  }
  void init_ints(const std::string& name, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& v, bool raw = false) {
    ::onnx::TensorProto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    if (raw) {
      t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8));
    } else {
      for (int64_t x : v) t->add_int64_data(x);
    }
  }
  static void floats(::onnx::TensorProto* t, const std::string& name,
                     const std::vector<int64_t>& dims, const std::vector<float>& v, bool raw) {
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    if (raw) {
      t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
    } else {
      for (float x : v) t->add_float_data(x);
    }
  }
  ::onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name = "") {
    ::onnx::NodeProto* n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& i : inputs) n->add_input(i);
    for (const std::string& o : outputs) n->add_output(o);
    return *n;
  }
  static void attr(::onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_f(::onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr(::onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static ::onnx::AttributeProto* attr_t(::onnx::NodeProto& n, const std::string& name) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::TENSOR);
    return a;
  }
  static ::onnx::GraphProto* attr_g(::onnx::NodeProto& n, const std::string& name) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::GRAPH);
    return a->mutable_g();
  }

  std::string bytes() const { return model_.SerializeAsString(); }
  // Writes the model to a temp file and returns its path.
  std::string save(const std::string& stem) const { return write(stem, bytes()); }
  static std::string write(const std::string& stem, const std::string& bytes) {
    const char* dir = std::getenv("TMPDIR");
    std::string path = std::string(dir ? dir : "/tmp") + "/anvil_onnx_test_" + stem + ".onnx";
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

 private:
  static void value_info(::onnx::ValueInfoProto* vi, const std::string& name,
                         const std::vector<int64_t>& dims, int type, const std::string& sym) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d >= 0) {
        dim->set_dim_value(d);
      } else {
        dim->set_dim_param(sym);
      }
    }
  }

  ::onnx::ModelProto model_;
};

}  // namespace anvil::testing
