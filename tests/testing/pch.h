// The precompiled header of the test files (tests/CMakeLists.txt): GoogleTest and the standard
// and library headers most tests include. Parsing these was about 2 s of every test file's
// compile; the files still include what they use.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/graph/build.h"
#include "anvil/graph/interpreter.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"
#include "anvil/support/error.h"
