#include "anvil/support/temp_dir.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "anvil/support/error.h"

namespace anvil {

TempDir::TempDir(const std::string& prefix, const std::string& what) {
  path_ = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
  ANVIL_CHECK(mkdtemp(path_.data()) != nullptr, what, ": cannot create a temporary directory (",
              std::strerror(errno), ")");
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace anvil
