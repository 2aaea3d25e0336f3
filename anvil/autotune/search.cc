#include "anvil/autotune/search.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <unordered_map>

#include "anvil/autotune/features.h"
#include "anvil/autotune/task.h"
#include "anvil/support/error.h"

namespace anvil::autotune {

namespace {

// A point's position in each knob's values (mixed radix, the first knob fastest), and back.
std::vector<size_t> digits(const ops::ConfigSpace& space, int64_t i) {
  std::vector<size_t> d;
  for (const ops::Knob& k : space) {
    d.push_back(static_cast<size_t>(i % static_cast<int64_t>(k.values.size())));
    i /= static_cast<int64_t>(k.values.size());
  }
  return d;
}

int64_t index_of_digits(const ops::ConfigSpace& space, const std::vector<size_t>& d) {
  int64_t i = 0, stride = 1;
  for (size_t k = 0; k < space.size(); ++k) {
    i += static_cast<int64_t>(d[k]) * stride;
    stride *= static_cast<int64_t>(space[k].values.size());
  }
  return i;
}

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
  RandomSearch(int64_t size, uint32_t seed, bool default_first)
      : size_(size), default_first_(default_first), rng_(seed) {}
  int64_t next(const std::map<int64_t, double>& measured) override {
    if (static_cast<int64_t>(measured.size()) >= size_) return -1;
    if (default_first_ && !measured.count(0)) return 0;
    // Draws; once most of the space is measured, the first unmeasured point after a draw.
    std::uniform_int_distribution<int64_t> pick(0, size_ - 1);
    int64_t i = pick(rng_);
    for (int tries = 0; tries < 64 && measured.count(i); ++tries) i = pick(rng_);
    for (int64_t k = 0; k < size_ && measured.count(i); ++k) i = (i + 1) % size_;
    return i;
  }

 protected:
  int64_t size_;
  bool default_first_;
  std::mt19937_64 rng_;
};

class GeneticSearch : public RandomSearch {
 public:
  GeneticSearch(const ops::ConfigSpace& space, uint32_t seed, bool default_first)
      : RandomSearch(space_size(space), seed, default_first), space_(space) {}

  int64_t next(const std::map<int64_t, double>& measured) override {
    if (static_cast<int64_t>(measured.size()) >= size_) return -1;
    std::vector<std::pair<int64_t, double>> pool(measured.begin(), measured.end());
    if (pool.size() < 8) return RandomSearch::next(measured);
    for (int tries = 0; tries < 32; ++tries) {
      std::vector<size_t> a = digits(space_, parent(pool)), b = digits(space_, parent(pool));
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
      int64_t child = index_of_digits(space_, a);
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

  ops::ConfigSpace space_;
};

// The paper's model-guided search. Before each batch the model is retrained on every measured
// point of the task (and the context's other tasks); then `kChains` simulated-annealing walks,
// started from the best measured points and from random ones, each take `kSteps` steps of one knob
// changed (to a neighbouring value or any), accepting a worse predicted score with probability
// exp(delta / (scale * temperature)), the temperature falling linearly to nearly 0. The batch is
// the unmeasured points the walks visited with the highest scores, but one in 8 is drawn at random
// so that a model that is wrong about a region still gets to see it.
class XgbSearch : public RandomSearch {
 public:
  XgbSearch(const ops::ConfigSpace& space, uint32_t seed, SearchContext context)
      : RandomSearch(space_size(space), seed, context.default_first),
        space_(space),
        context_(std::move(context)),
        model_(seed) {
    ANVIL_CHECK(context_.features, "the xgb search needs the features of the space's points");
  }

  int64_t next(const std::map<int64_t, double>& measured) override {
    std::vector<int64_t> b = next_batch(measured, 1);
    return b.empty() ? -1 : b[0];
  }

  std::vector<int64_t> next_batch(const std::map<int64_t, double>& measured, int n) override {
    std::vector<int64_t> batch;
    std::map<int64_t, double> taken = measured;  // measured or already in the batch
    auto take = [&](int64_t i) {
      batch.push_back(i);
      taken.emplace(i, INFINITY);
    };
    if (default_first_ && !measured.count(0) && size_ > 0) take(0);
    if (!train(measured)) {
      while (static_cast<int>(batch.size()) < n) {
        int64_t i = RandomSearch::next(taken);
        if (i < 0) break;
        take(i);
      }
      return batch;
    }
    const int explore = n >= 4 ? n / 8 + 1 : 0;
    for (int64_t i : anneal(measured)) {
      if (static_cast<int>(batch.size()) >= n - explore) break;
      if (!taken.count(i)) take(i);
    }
    while (static_cast<int>(batch.size()) < n) {
      int64_t i = RandomSearch::next(taken);
      if (i < 0) break;
      take(i);
    }
    return batch;
  }

 private:
  static constexpr int kMinTrials = 8;     // measured points before the model guides the search
  static constexpr size_t kMinPrior = 32;  // or other tasks' trials
  static constexpr int kChains = 16;
  static constexpr int kSteps = 40;

  // Retrains the model; false when there is too little to learn from.
  bool train(const std::map<int64_t, double>& measured) {
    int finite = 0;
    for (const auto& [i, c] : measured) finite += std::isfinite(c) ? 1 : 0;
    // Other tasks' trials can guide the search from its first batch, if there are enough.
    if (finite < kMinTrials && context_.prior.size() < kMinPrior) return false;
    TrainingSet data = context_.prior;
    std::vector<std::vector<float>> rows;
    std::vector<double> costs;
    for (const auto& [i, c] : measured) {
      rows.push_back(features(i));
      costs.push_back(c);
    }
    data.add_task(rows, costs);
    model_.fit(data);
    return true;
  }

  const std::vector<float>& features(int64_t i) {
    auto it = cache_.find(i);
    if (it != cache_.end()) return it->second;
    std::vector<float> f;
    try {
      f = context_.features(i);
    } catch (const Error&) {
      // A point that cannot be lowered: unknown features (it will fail to compile anyway).
      f.assign(kNumFeatures, std::nanf(""));
    }
    return cache_.emplace(i, std::move(f)).first->second;
  }

  std::vector<float> predict(const std::vector<int64_t>& points) {
    std::vector<std::vector<float>> rows;
    for (int64_t i : points) rows.push_back(features(i));
    return model_.predict(rows);
  }

  // The unmeasured points the walks visited, best predicted first.
  std::vector<int64_t> anneal(const std::map<int64_t, double>& measured) {
    std::vector<std::pair<double, int64_t>> by_cost;
    for (const auto& [i, c] : measured)
      if (std::isfinite(c)) by_cost.push_back({c, i});
    std::sort(by_cost.begin(), by_cost.end());
    std::vector<int64_t> current;
    std::uniform_int_distribution<int64_t> any(0, size_ - 1);
    for (size_t k = 0; k < by_cost.size() && current.size() < kChains / 2; ++k)
      current.push_back(by_cost[k].second);
    while (current.size() < kChains) current.push_back(any(rng_));
    std::vector<float> score = predict(current);
    // The spread of the scores sets the temperature's scale (the ranking model's scores have
    // no unit).
    double mean = 0, var = 0;
    for (float x : score) mean += x / score.size();
    for (float x : score) var += (x - mean) * (x - mean) / score.size();
    const double scale = std::max(1e-6, std::sqrt(var));
    std::map<int64_t, float> visited;
    auto note = [&](int64_t i, float sc) {
      if (!measured.count(i)) visited[i] = sc;
    };
    for (size_t c = 0; c < current.size(); ++c) note(current[c], score[c]);
    std::uniform_real_distribution<double> u(0, 1);
    for (int step = 0; step < kSteps; ++step) {
      const double temperature = std::max(0.02, 1.0 - static_cast<double>(step) / kSteps);
      std::vector<int64_t> proposal;
      for (int64_t p : current) proposal.push_back(neighbour(p));
      std::vector<float> ps = predict(proposal);
      for (size_t c = 0; c < current.size(); ++c) {
        note(proposal[c], ps[c]);
        if (ps[c] >= score[c] || u(rng_) < std::exp((ps[c] - score[c]) / (scale * temperature))) {
          current[c] = proposal[c];
          score[c] = ps[c];
        }
      }
    }
    std::vector<std::pair<float, int64_t>> ranked;
    for (const auto& [i, sc] : visited) ranked.push_back({-sc, i});
    std::sort(ranked.begin(), ranked.end());
    std::vector<int64_t> out;
    for (const auto& r : ranked) out.push_back(r.second);
    return out;
  }

  // One knob changed: to a neighbouring value or to any other.
  int64_t neighbour(int64_t point) {
    std::vector<size_t> d = digits(space_, point);
    if (d.empty()) return point;
    const size_t k = std::uniform_int_distribution<size_t>(0, d.size() - 1)(rng_);
    const size_t n = space_[k].values.size();
    if (n < 2) return point;
    if (std::bernoulli_distribution(0.5)(rng_)) {
      d[k] = d[k] + 1 < n && (d[k] == 0 || std::bernoulli_distribution(0.5)(rng_)) ? d[k] + 1
                                                                                   : d[k] - 1;
    } else {
      d[k] = std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
    }
    return index_of_digits(space_, d);
  }

  ops::ConfigSpace space_;
  SearchContext context_;
  CostModel model_;
  std::unordered_map<int64_t, std::vector<float>> cache_;
};

// Any strategy, without the points that do not fit the target: those the inner strategy proposes
// are checked, refused ones kept out of every batch and shown to it as failed trials (which they
// are), and it is asked again until the batch is full or it proposes nothing new. Each round asks
// for the points accepted so far too (they are not measured yet, so it may propose them again),
// so that even a deterministic strategy gets past them.
class FittingSearch : public Search {
 public:
  FittingSearch(std::unique_ptr<Search> inner, std::function<bool(int64_t)> fits)
      : inner_(std::move(inner)), fits_(std::move(fits)) {}

  int64_t next(const std::map<int64_t, double>& measured) override {
    std::vector<int64_t> b = next_batch(measured, 1);
    return b.empty() ? -1 : b[0];
  }

  std::vector<int64_t> next_batch(const std::map<int64_t, double>& measured, int n) override {
    std::map<int64_t, double> seen = measured;
    for (int64_t i : refused_) seen.emplace(i, INFINITY);
    std::vector<int64_t> batch;
    std::set<int64_t> in_batch;
    while (static_cast<int>(batch.size()) < n) {
      bool progress = false;
      for (int64_t i : inner_->next_batch(seen, n + static_cast<int>(batch.size()))) {
        if (static_cast<int>(batch.size()) >= n) break;
        if (in_batch.count(i)) continue;
        progress = true;
        if (fits_(i)) {
          batch.push_back(i);
          in_batch.insert(i);
        } else {
          refused_.insert(i);
          seen.emplace(i, INFINITY);
        }
      }
      if (!progress) break;  // nothing left but what the batch holds
    }
    return batch;
  }

 private:
  std::unique_ptr<Search> inner_;
  std::function<bool(int64_t)> fits_;
  std::set<int64_t> refused_;
};

}  // namespace

std::vector<int64_t> Search::next_batch(const std::map<int64_t, double>& measured, int n) {
  std::map<int64_t, double> taken = measured;
  std::vector<int64_t> batch;
  for (int k = 0; k < n; ++k) {
    int64_t i = next(taken);
    if (i < 0) break;
    batch.push_back(i);
    taken.emplace(i, INFINITY);
  }
  return batch;
}

std::vector<std::string> search_names() {
  return {"random", "grid", "genetic", "xgb"};
}

std::unique_ptr<Search> make_search(const std::string& name, const ops::ConfigSpace& space,
                                    uint32_t seed, SearchContext context) {
  std::function<bool(int64_t)> fits = context.fits;
  std::unique_ptr<Search> s;
  if (name == "grid") {
    s = std::make_unique<GridSearch>(space_size(space));
  } else if (name == "random") {
    s = std::make_unique<RandomSearch>(space_size(space), seed, context.default_first);
  } else if (name == "genetic") {
    s = std::make_unique<GeneticSearch>(space, seed, context.default_first);
  } else if (name == "xgb") {
    s = std::make_unique<XgbSearch>(space, seed, std::move(context));
  } else {
    ANVIL_FAIL("unknown search '", name, "' (expected random, grid, genetic or xgb)");
  }
  if (fits) s = std::make_unique<FittingSearch>(std::move(s), std::move(fits));
  return s;
}

}  // namespace anvil::autotune
