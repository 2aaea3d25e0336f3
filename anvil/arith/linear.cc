#include "anvil/arith/linear.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "anvil/ir/equal.h"
#include "anvil/ir/op.h"

namespace anvil::arith {

using namespace ir;

namespace {

bool mul_ok(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
bool add_ok(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

// Accumulates scale * e into terms/constant, descending through +, - and products by constants.
class Linearizer {
 public:
  bool add(const Expr& e, int64_t scale) {
    if (const IntImm* imm = e.as<IntImm>()) {
      int64_t v;
      return mul_ok(imm->value, scale, &v) && add_ok(constant, v, &constant);
    }
    if (const Add* op = e.as<Add>()) return add(op->a, scale) && add(op->b, scale);
    if (const Sub* op = e.as<Sub>()) {
      int64_t neg;
      return mul_ok(scale, -1, &neg) && add(op->a, scale) && add(op->b, neg);
    }
    if (const Mul* op = e.as<Mul>()) {
      int64_t s;
      if (const IntImm* k = op->b.as<IntImm>()) return mul_ok(scale, k->value, &s) && add(op->a, s);
      if (const IntImm* k = op->a.as<IntImm>()) return mul_ok(scale, k->value, &s) && add(op->b, s);
    }
    terms.push_back({e, scale});
    return true;
  }

  std::vector<LinearTerm> terms;
  int64_t constant = 0;
};

// Sorts terms by atom and merges equal atoms; drops zero coefficients.
bool normalize(std::vector<LinearTerm>& terms) {
  std::stable_sort(terms.begin(), terms.end(), [](const LinearTerm& x, const LinearTerm& y) {
    return structural_compare(x.atom, y.atom) < 0;
  });
  std::vector<LinearTerm> merged;
  for (LinearTerm& t : terms) {
    if (!merged.empty() && structural_compare(merged.back().atom, t.atom) == 0) {
      if (!add_ok(merged.back().coeff, t.coeff, &merged.back().coeff)) return false;
    } else {
      merged.push_back(std::move(t));
    }
  }
  std::erase_if(merged, [](const LinearTerm& t) { return t.coeff == 0; });
  terms = std::move(merged);
  return true;
}

// floordiv(x, c)*c*k + floormod(x, c)*k is x*k. Finds one such pair and folds it; returns
// whether it did.
bool fold_div_mod_pair(LinearSum& sum, bool* ok) {
  for (size_t i = 0; i < sum.terms.size(); ++i) {
    const FloorMod* mod = sum.terms[i].atom.as<FloorMod>();
    if (!mod) continue;
    const IntImm* c = mod->b.as<IntImm>();
    if (!c) continue;
    int64_t want;
    if (!mul_ok(sum.terms[i].coeff, c->value, &want)) continue;
    for (size_t j = 0; j < sum.terms.size(); ++j) {
      const FloorDiv* div = sum.terms[j].atom.as<FloorDiv>();
      if (!div || sum.terms[j].coeff != want || structural_compare(div->b, mod->b) != 0 ||
          structural_compare(div->a, mod->a) != 0) {
        continue;
      }
      std::optional<LinearSum> x = linearize(mod->a);
      if (!x) return false;
      int64_t k = sum.terms[i].coeff;
      sum.terms.erase(sum.terms.begin() + static_cast<std::ptrdiff_t>(std::max(i, j)));
      sum.terms.erase(sum.terms.begin() + static_cast<std::ptrdiff_t>(std::min(i, j)));
      std::optional<LinearSum> folded = LinearSum::combine(sum, *x, k);
      if (!folded) {
        *ok = false;
        return false;
      }
      sum = std::move(*folded);
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<LinearSum> LinearSum::combine(const LinearSum& a, const LinearSum& b, int64_t scale) {
  LinearSum out{a.type, a.terms, a.constant};
  int64_t c;
  if (!mul_ok(b.constant, scale, &c) || !add_ok(out.constant, c, &out.constant)) {
    return std::nullopt;
  }
  for (const LinearTerm& t : b.terms) {
    int64_t coeff;
    if (!mul_ok(t.coeff, scale, &coeff)) return std::nullopt;
    out.terms.push_back({t.atom, coeff});
  }
  if (!normalize(out.terms)) return std::nullopt;
  return out;
}

std::optional<LinearSum> linearize(const Expr& e) {
  if (!e.defined() || !e.type().is_int() || !e.type().is_scalar()) return std::nullopt;
  Linearizer lin;
  if (!lin.add(e, 1)) return std::nullopt;
  LinearSum sum{e.type(), std::move(lin.terms), lin.constant};
  if (!normalize(sum.terms)) return std::nullopt;
  bool ok = true;
  while (fold_div_mod_pair(sum, &ok)) {
  }
  if (!ok) return std::nullopt;
  return sum;
}

int64_t coeff_gcd(const LinearSum& sum) {
  int64_t g = 0;
  for (const LinearTerm& t : sum.terms) g = std::gcd(g, t.coeff);
  return g;
}

Expr rebuild(const LinearSum& sum) {
  const DataType t = sum.type;
  auto fits = [&](int64_t v) { return v >= t.min_value() && v <= t.max_value(); };
  // A negative constant is emitted as a subtraction of its negation, which must fit too.
  if (sum.constant == std::numeric_limits<int64_t>::min() || !fits(sum.constant) ||
      (sum.constant < 0 && !fits(-sum.constant))) {
    return Expr();
  }
  for (const LinearTerm& term : sum.terms) {
    if (term.coeff == std::numeric_limits<int64_t>::min() || !fits(term.coeff) ||
        !fits(-term.coeff)) {
      return Expr();
    }
  }

  struct Group {
    int64_t abs;
    std::vector<Expr> pos, neg;
  };
  std::vector<Group> groups;
  for (const LinearTerm& term : sum.terms) {
    int64_t abs = term.coeff < 0 ? -term.coeff : term.coeff;
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.abs == abs; });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{abs, {}, {}});
    (term.coeff > 0 ? it->pos : it->neg).push_back(term.atom);
  }

  auto add_all = [](Expr acc, const std::vector<Expr>& xs) {
    for (const Expr& x : xs) acc = acc.defined() ? Add::make(acc, x) : x;
    return acc;
  };
  auto scale = [&](Expr x, int64_t k) { return k == 1 ? x : Mul::make(x, make_const(t, k)); };

  std::vector<Expr> added, subtracted;
  for (const Group& g : groups) {
    if (!g.pos.empty()) {
      Expr inner = add_all(Expr(), g.pos);
      for (const Expr& x : g.neg) inner = Sub::make(inner, x);
      added.push_back(scale(inner, g.abs));
    } else {
      subtracted.push_back(scale(add_all(Expr(), g.neg), g.abs));
    }
  }

  int64_t constant = sum.constant;
  Expr result = add_all(Expr(), added);
  size_t first_sub = 0;
  if (!result.defined() && !subtracted.empty()) {
    if (constant > 0) {
      result = make_const(t, constant);
      constant = 0;
    } else {
      // Only negative terms: lead with the first one negated.
      const Group& g =
          *std::find_if(groups.begin(), groups.end(), [](const Group& x) { return x.pos.empty(); });
      Expr inner = add_all(Expr(), g.neg);
      result =
          g.abs == 1 ? Sub::make(make_zero(t), inner) : Mul::make(inner, make_const(t, -g.abs));
      first_sub = 1;
    }
  }
  for (size_t i = first_sub; i < subtracted.size(); ++i) result = Sub::make(result, subtracted[i]);
  if (!result.defined()) return make_const(t, constant);
  if (constant > 0) return Add::make(result, make_const(t, constant));
  if (constant < 0) return Sub::make(result, make_const(t, -constant));
  return result;
}

}  // namespace anvil::arith
