// ONNX external data: tensors whose bytes live in files beside the model (every model over
// protobuf's 2 GiB, and any model saved with save_as_external_data). Each such TensorProto has
// data_location EXTERNAL and key/value entries "location" (a path relative to the model's
// directory), "offset" and "length" (bytes; absent: from 0, to the end of the file), "checksum"
// (not checked). Loading one makes it an ordinary tensor with raw_data, so the rest of the
// importer never sees the difference.
#include "anvil/frontend/onnx/external_data.h"

#include <onnx/onnx_pb.h>

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "anvil/support/error.h"

namespace anvil::frontend::onnx_detail {

namespace {

namespace fs = std::filesystem;

int64_t parse_bytes(const std::string& text, const std::string& what) {
  int64_t v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  ANVIL_CHECK(ec == std::errc() && end == text.data() + text.size() && v >= 0, what,
              " is not a byte count: '", text, "'");
  return v;
}

void load(::onnx::TensorProto& t, const fs::path& dir, int64_t memory_cap,
          const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const ::onnx::StringStringEntryProto& e : t.external_data()) {
    if (e.key() == "location") location = e.value();
    if (e.key() == "offset") offset = parse_bytes(e.value(), what + ": external data offset");
    if (e.key() == "length") length = parse_bytes(e.value(), what + ": external data length");
  }
  ANVIL_CHECK(!location.empty(), what, " keeps its data in an external file but names none");
  // As ONNX's checker: the file lies under the model's directory.
  fs::path rel(location);
  bool inside = rel.is_relative();
  for (const fs::path& part : rel) inside = inside && part != "..";
  ANVIL_CHECK(inside, what, ": external data location '", location,
              "' must be a relative path inside the model's directory");
  fs::path file = dir / rel;
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  ANVIL_CHECK(!ec && fs::is_regular_file(file), what, ": cannot read its external data file '",
              file.string(), "'", ec ? " (" + ec.message() + ")" : "");
  const int64_t file_bytes = static_cast<int64_t>(size);
  ANVIL_CHECK(offset <= file_bytes, what, ": external data offset ", offset,
              " is past the end of '", file.string(), "' (", file_bytes, " bytes)");
  if (length < 0) length = file_bytes - offset;
  ANVIL_CHECK(length <= file_bytes - offset, what, ": external data [", offset, ", ",
              offset + length, ") is past the end of '", file.string(), "' (", file_bytes,
              " bytes)");
  ANVIL_CHECK(length <= memory_cap, what, ": ", length, " bytes of external data, over the cap of ",
              memory_cap, " bytes per tensor");
  std::string bytes(static_cast<size_t>(length), '\0');
  std::ifstream in(file, std::ios::binary);
  in.seekg(offset);
  in.read(bytes.data(), length);
  ANVIL_CHECK(in.good() || length == 0, what, ": cannot read ", length, " bytes at offset ", offset,
              " of '", file.string(), "'");
  t.set_raw_data(std::move(bytes));
  t.clear_external_data();
  t.set_data_location(::onnx::TensorProto::DEFAULT);
}

bool external(const ::onnx::TensorProto& t) {
  return t.data_location() == ::onnx::TensorProto::EXTERNAL;
}

void load_graph(::onnx::GraphProto& g, const fs::path& dir, int64_t cap, const std::string& origin);

void load_attribute(::onnx::AttributeProto& a, const fs::path& dir, int64_t cap,
                    const std::string& what, const std::string& origin) {
  if (a.has_t() && external(a.t())) load(*a.mutable_t(), dir, cap, what);
  for (::onnx::TensorProto& t : *a.mutable_tensors())
    if (external(t)) load(t, dir, cap, what);
  if (a.has_g()) load_graph(*a.mutable_g(), dir, cap, origin);
  for (::onnx::GraphProto& s : *a.mutable_graphs()) load_graph(s, dir, cap, origin);
}

void load_graph(::onnx::GraphProto& g, const fs::path& dir, int64_t cap,
                const std::string& origin) {
  for (::onnx::TensorProto& t : *g.mutable_initializer())
    if (external(t)) load(t, dir, cap, origin + ": initializer '" + t.name() + "'");
  for (::onnx::NodeProto& n : *g.mutable_node())
    for (::onnx::AttributeProto& a : *n.mutable_attribute())
      load_attribute(a, dir, cap, origin + ": node '" + n.name() + "' attribute '" + a.name() + "'",
                     origin);
}

}  // namespace

void load_external_data(::onnx::ModelProto& model, const std::string& model_path,
                        int64_t memory_cap) {
  fs::path dir = fs::path(model_path).parent_path();
  load_graph(*model.mutable_graph(), dir.empty() ? fs::path(".") : dir, memory_cap, model_path);
}

}  // namespace anvil::frontend::onnx_detail
