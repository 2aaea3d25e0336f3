// The most complete end-to-end demonstration that exists so far: build a loop nest in the IR,
// print it, and simplify index arithmetic with what the loop bounds prove.
#include <iostream>

#include "anvil/arith/simplify.h"
#include "anvil/ir/op.h"
#include "anvil/ir/printer.h"

int main() {
  using namespace anvil::ir;
  Var i("i"), j("j");
  Buffer a = Buffer::make("A", DataType::Float32(), {64});
  Buffer b = Buffer::make("B", DataType::Float32(), {16, 4});
  Expr index = floordiv(i * 4 + j, 4) * 4 + floormod(i * 4 + j, 4);
  Expr guard = i * 4 + j < 64;
  Stmt body = IfThenElse::make(guard, Store::make(a, Load::make(b, {i, j}) * 2.0f, {index}));
  Stmt loops =
      For::make(i, 0, 16, ForKind::kParallel, For::make(j, 0, 4, ForKind::kVectorized, body));
  std::cout << "before simplification:\n" << loops << "\n";
  std::cout << "after simplification:\n" << anvil::arith::simplify(loops) << "\n";
  return 0;
}
