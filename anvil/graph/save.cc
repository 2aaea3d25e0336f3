// CompiledGraph::save: the artifact (anvil/runtime/artifact.h) of a compiled graph.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "anvil/codegen/llvm/codegen_llvm.h"
#include "anvil/graph/build.h"
#include "anvil/runtime/artifact.h"
#include "anvil/support/error.h"

namespace anvil::graph {

namespace {

namespace fs = std::filesystem;

std::string read_bytes(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  ANVIL_CHECK(f, "save: cannot read '", path.string(), "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Writes `parts` to `path` through a temporary file renamed over it, so that a reader (or a
// model loaded from the old file) never sees half a file.
void write_atomically(const fs::path& path, const std::vector<std::string_view>& parts) {
  fs::path partial = path;
  partial += ".partial" + std::to_string(::getpid());
  {
    std::ofstream f(partial, std::ios::binary | std::ios::trunc);
    for (std::string_view p : parts) f.write(p.data(), static_cast<std::streamsize>(p.size()));
    f.close();
    if (!f.good()) {
      std::error_code ignored;
      fs::remove(partial, ignored);
      ANVIL_FAIL("save: cannot write '", path.string(), "'");
    }
  }
  std::error_code error;
  fs::rename(partial, path, error);
  if (error) {
    std::error_code ignored;
    fs::remove(partial, ignored);
    ANVIL_FAIL("save: cannot move the artifact to '", path.string(), "': ", error.message());
  }
}

}  // namespace

void CompiledGraph::save(const std::string& path, const SaveOptions& options) const {
  fs::path out(path);
  ANVIL_CHECK(!out.filename().empty(), "save: '", path, "' names no file");

  // The kernels as a shared library.
  std::string library;
  if (module_) {
    static std::atomic<int> counter{0};
    fs::path tmp = out;
    tmp += ".lib" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    try {
      module_->save_shared_library(tmp.string());
      library = read_bytes(tmp);
    } catch (...) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw;
    }
    fs::remove(tmp);
  } else {
    library = c_library_;
  }
  ANVIL_ICHECK(!library.empty(), "save: no kernel library to write");

  std::vector<std::pair<std::string, runtime::NDArray>> tensors;
  for (size_t k = 0; k < program_.params.size(); ++k)
    tensors.push_back({program_.param_names[k], program_.params[k]});
  std::string params = runtime::serialize_safetensors(tensors);

  runtime::ParamsFile params_file;
  if (options.separate_params) {
    fs::path params_path = fs::path(out).replace_extension(".safetensors");
    ANVIL_CHECK(params_path != out, "save: '", path,
                "' cannot hold its parameters beside it in a file of the same name");
    params_file.name = params_path.filename().string();
    params_file.bytes = params.size();
    params_file.checksum = runtime::artifact_checksum(params.data(), params.size());
    write_atomically(params_path, {params});
    params.clear();
  }
  std::string program = runtime::program_to_json(program_, params_file);

  runtime::ArtifactTrailer t;
  t.flags = options.separate_params ? runtime::kSeparateParams : 0;
  t.library_bytes = library.size();
  t.program_bytes = program.size();
  t.params_bytes = params.size();
  // The checksum runs over the three parts as one stream of bytes.
  std::string body = library + program + params;
  t.checksum = runtime::artifact_checksum(body.data(), body.size());
  std::string trailer = runtime::encode_trailer(t);
  write_atomically(out, {body, trailer});
}

}  // namespace anvil::graph
