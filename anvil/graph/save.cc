// CompiledGraph::save: the artifact (anvil/runtime/artifact.h) of a compiled graph.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "anvil/graph/build.h"
#include "anvil/runtime/artifact.h"
#include "anvil/support/error.h"

namespace anvil::graph {

namespace {

namespace fs = std::filesystem;

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
  ANVIL_CHECK(backend_, "save: '", path, "': nothing was compiled");
  std::string library = backend_->library(out.string());
  ANVIL_ICHECK(!library.empty(), "save: no kernel library to write");

  std::vector<std::pair<std::string, runtime::NDArray>> tensors;
  runtime::for_each_program(program_, [&](const runtime::GraphProgram& p) {
    for (size_t k = 0; k < p.params.size(); ++k) tensors.push_back({p.param_names[k], p.params[k]});
  });
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
