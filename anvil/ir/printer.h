// Human-readable text for IR: infix arithmetic with only the parentheses precedence needs,
// loops and branches as indented blocks.
#pragma once

#include <ostream>
#include <string>

#include "anvil/ir/stmt.h"

namespace anvil::ir {

std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);
std::ostream& operator<<(std::ostream& os, const Range& r);

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);

}  // namespace anvil::ir
