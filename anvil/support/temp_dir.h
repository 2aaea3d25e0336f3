// A fresh directory under the system's temporary directory, removed with everything in it when
// the object is destroyed.
#pragma once

#include <string>

namespace anvil {

class TempDir {
 public:
  // Creates "<tmp>/<prefix>XXXXXX"; throws anvil::Error naming `what` (the caller's purpose) and
  // the reason when it cannot.
  TempDir(const std::string& prefix, const std::string& what);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace anvil
