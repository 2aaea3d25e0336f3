// ONNX external data: initializers and Constant values whose bytes live in files beside the model
// are read from there (offset and length honoured, subdirectories allowed); a location outside
// the model's directory, a missing or short file, or a model parsed from bytes with no directory
// is refused with an error naming the tensor and the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "anvil/frontend/onnx/importer.h"
#include "anvil/graph/interpreter.h"
#include "anvil/support/error.h"
#include "frontend/onnx_model_builder.h"
#include "testing/errors.h"

namespace anvil {
namespace {

namespace fs = std::filesystem;
using anvil::testing::OnnxModel;

void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "anvil_external_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `bytes` to `rel` under the model's directory.
  void write(const std::string& rel, const std::string& bytes) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel, std::ios::binary) << bytes;
  }
  static std::string float_bytes(const std::vector<float>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  }
  // y = x + w (w a [4] float initializer kept in `location` at `offset`, `length` bytes; a
  // negative value leaves the entry out), saved as model.onnx in the directory.
  std::string model(const std::string& location, int64_t offset, int64_t length) {
    OnnxModel m;
    m.input("x", {4});
    ::onnx::TensorProto* w = m.graph().add_initializer();
    w->set_name("w");
    w->set_data_type(::onnx::TensorProto::FLOAT);
    w->add_dims(4);
    w->set_data_location(::onnx::TensorProto::EXTERNAL);
    auto entry = [&](const std::string& key, const std::string& value) {
      ::onnx::StringStringEntryProto* e = w->add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    entry("location", location);
    if (offset >= 0) entry("offset", std::to_string(offset));
    if (length >= 0) entry("length", std::to_string(length));
    m.node("Add", {"x", "w"}, {"y"}, "add");
    m.output("y");
    std::string path = (dir_ / "model.onnx").string();
    std::ofstream(path, std::ios::binary) << m.bytes();
    return path;
  }
  static std::vector<float> run(const graph::Graph& g) {
    runtime::NDArray x = runtime::NDArray::empty({4}, runtime::dl_float32());
    for (int i = 0; i < 4; ++i) x.data_as<float>()[i] = 10.0f * static_cast<float>(i);
    runtime::NDArray y = graph::interpret(g, {x}).at(0);
    return std::vector<float>(y.data_as<float>(), y.data_as<float>() + 4);
  }

  fs::path dir_;
};

TEST_F(ExternalData, ReadsTheWholeFile) {
  write("weights.bin", float_bytes({1, 2, 3, 4}));
  graph::Graph g = frontend::import_onnx(model("weights.bin", -1, -1));
  EXPECT_EQ(run(g), (std::vector<float>{1, 12, 23, 34}));
}

TEST_F(ExternalData, ReadsARangeOfAFileInASubdirectory) {
  // Two tensors' worth in one file; this one is the second, after 8 bytes of padding.
  write("data/all.bin", float_bytes({9, 9}) + float_bytes({-1, -2, -3, -4}) + float_bytes({7}));
  graph::Graph g = frontend::import_onnx(model("data/all.bin", 8, 16));
  EXPECT_EQ(run(g), (std::vector<float>{-1, 8, 17, 26}));
}

TEST_F(ExternalData, RefusesWhatCannotBeRead) {
  write("weights.bin", float_bytes({1, 2, 3, 4}));
  expect_has(testing::user_error([&] { frontend::import_onnx(model("missing.bin", -1, -1)); }),
             "initializer 'w': cannot read its external data file");
  expect_has(testing::user_error([&] { frontend::import_onnx(model("../weights.bin", -1, -1)); }),
             "must be a relative path inside the model's directory");
  expect_has(testing::user_error(
                 [&] { frontend::import_onnx(model((dir_ / "weights.bin").string(), -1, -1)); }),
             "must be a relative path inside the model's directory");
  expect_has(testing::user_error([&] { frontend::import_onnx(model("weights.bin", 8, 16)); }),
             "is past the end of");
  expect_has(testing::user_error([&] { frontend::import_onnx(model("weights.bin", 0, 12)); }),
             "has 12 bytes of raw data, but [4] float32 needs 16");
  // Parsed from bytes, the model has no directory to read its data from.
  std::ifstream f(model("weights.bin", -1, -1), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  expect_has(testing::user_error([&] { frontend::import_onnx_bytes(bytes); }),
             "keeps its data in an external file, which only a model imported from its file");
}

}  // namespace
}  // namespace anvil
