// Replaces variables by expressions.
#pragma once

#include <unordered_map>

#include "anvil/ir/stmt.h"

namespace anvil::ir {

using VarMap = std::unordered_map<const Variable*, Expr>;

// Every use of a variable in `map` replaced by its expression. Variables are unique nodes, so
// no binder inside can capture a replacement.
Expr substitute(const Expr& e, const VarMap& map);
Stmt substitute(const Stmt& s, const VarMap& map);

// True when `e` (or `s`) uses `var`.
bool uses_var(const Expr& e, const Variable* var);
bool uses_var(const Stmt& s, const Variable* var);

}  // namespace anvil::ir
