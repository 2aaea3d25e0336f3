#include "anvil/autotune/search.h"

#include <algorithm>
#include <random>

#include "anvil/autotune/task.h"
#include "anvil/support/error.h"

namespace anvil::autotune {

namespace {

class GridSearch : public Search {
 public:
  explicit GridSearch(int64_t size) : size_(size) {}
  int64_t next(const std::map<int64_t, double>& measured) override {
    for (int64_t i = 0; i < size_; ++i)
      if (!measured.count(i)) return i;
    return -1;
  }

 private:
  int64_t size_;
};

class RandomSearch : public Search {
 public:
  RandomSearch(int64_t size, uint32_t seed) : size_(size), rng_(seed) {}
  int64_t next(const std::map<int64_t, double>& measured) override {
    if (static_cast<int64_t>(measured.size()) >= size_) return -1;
    if (!measured.count(0)) return 0;
    // Draws; once most of the space is measured, the first unmeasured point after a draw.
    std::uniform_int_distribution<int64_t> pick(0, size_ - 1);
    int64_t i = pick(rng_);
    for (int tries = 0; tries < 64 && measured.count(i); ++tries) i = pick(rng_);
    for (int64_t k = 0; k < size_ && measured.count(i); ++k) i = (i + 1) % size_;
    return i;
  }

 protected:
  int64_t size_;
  std::mt19937_64 rng_;
};

class GeneticSearch : public RandomSearch {
 public:
  GeneticSearch(const ops::ConfigSpace& space, uint32_t seed)
      : RandomSearch(space_size(space), seed), space_(space) {}

  int64_t next(const std::map<int64_t, double>& measured) override {
    if (static_cast<int64_t>(measured.size()) >= size_) return -1;
    std::vector<std::pair<int64_t, double>> pool(measured.begin(), measured.end());
    if (pool.size() < 8) return RandomSearch::next(measured);
    for (int tries = 0; tries < 32; ++tries) {
      std::vector<size_t> a = digits(parent(pool)), b = digits(parent(pool));
      std::bernoulli_distribution coin(0.5), mutate(0.25);
      for (size_t k = 0; k < a.size(); ++k) {
        if (coin(rng_)) a[k] = b[k];
        if (!mutate(rng_)) continue;
        // Mostly a step to a neighbouring value (knob values are listed in a meaningful order
        // more often than not), sometimes a jump anywhere.
        const size_t n = space_[k].values.size();
        if (coin(rng_) && coin(rng_)) {
          a[k] = std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
        } else if (coin(rng_)) {
          a[k] = std::min(a[k] + 1, n - 1);
        } else if (a[k] > 0) {
          a[k] -= 1;
        }
      }
      int64_t child = index(a);
      if (!measured.count(child)) return child;
    }
    return RandomSearch::next(measured);  // the neighbourhood is measured: explore
  }

 private:
  // The best of 3 measured points drawn at random.
  int64_t parent(const std::vector<std::pair<int64_t, double>>& pool) {
    std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
    const std::pair<int64_t, double>* best = &pool[pick(rng_)];
    for (int k = 0; k < 2; ++k) {
      const std::pair<int64_t, double>& c = pool[pick(rng_)];
      if (c.second < best->second) best = &c;
    }
    return best->first;
  }
  // A point's position in each knob's values, and back.
  std::vector<size_t> digits(int64_t i) const {
    std::vector<size_t> d;
    for (const ops::Knob& k : space_) {
      d.push_back(static_cast<size_t>(i % static_cast<int64_t>(k.values.size())));
      i /= static_cast<int64_t>(k.values.size());
    }
    return d;
  }
  int64_t index(const std::vector<size_t>& d) const {
    int64_t i = 0, stride = 1;
    for (size_t k = 0; k < space_.size(); ++k) {
      i += static_cast<int64_t>(d[k]) * stride;
      stride *= static_cast<int64_t>(space_[k].values.size());
    }
    return i;
  }

  ops::ConfigSpace space_;
};

}  // namespace

std::vector<std::string> search_names() {
  return {"random", "grid", "genetic"};
}

std::unique_ptr<Search> make_search(const std::string& name, const ops::ConfigSpace& space,
                                    uint32_t seed) {
  if (name == "grid") return std::make_unique<GridSearch>(space_size(space));
  if (name == "random") return std::make_unique<RandomSearch>(space_size(space), seed);
  if (name == "genetic") return std::make_unique<GeneticSearch>(space, seed);
  ANVIL_FAIL("unknown search '", name, "' (expected random, grid or genetic)");
}

}  // namespace anvil::autotune
