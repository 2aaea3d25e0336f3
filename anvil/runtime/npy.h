// NumPy .npy files (format versions 1.0 to 3.0): what `anvil run` reads its inputs from and writes
// its outputs to. Little-endian, C order; dtypes float32, float64, float16, int8/16/32/64,
// uint8/16/32/64 and bool. Errors (std::runtime_error) name the file and what was wrong: a missing
// file, a bad magic string, an unsupported dtype or Fortran order, a header that does not parse,
// data shorter than the shape needs.
#pragma once

#include <string>

#include "anvil/runtime/ndarray.h"

namespace anvil::runtime {

NDArray load_npy(const std::string& path);
// Writes format version 1.0; throws naming the path when it cannot be written.
void save_npy(const std::string& path, const NDArray& array);

}  // namespace anvil::runtime
