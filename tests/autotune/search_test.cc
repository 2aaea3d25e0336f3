// The search strategies: each proposes the default first (unless told not to), never a point twice,
// and every point of a small space before running out, one at a time or in batches; on a smooth
// cost over a 12 x 12 space the genetic search needs well under the trials random search needs to
// reach the optimum, and on a 3-knob space of 8000 points the model-guided search (xgb) needs well
// under half of random search's trials to get within 5% of it.
#include "anvil/autotune/search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "anvil/autotune/features.h"
#include "anvil/autotune/task.h"
#include "testing/errors.h"

namespace anvil::autotune {
namespace {

// Stand-in features for a synthetic space: the knob values, then zeros.
SearchContext knob_features(const ops::ConfigSpace& space, bool default_first = true) {
  SearchContext c;
  c.default_first = default_first;
  c.features = [space](int64_t i) {
    std::vector<float> f(kNumFeatures, 0.0f);
    ops::Config config = config_at(space, i);
    size_t k = 0;
    for (const ops::Knob& knob : space) f[k++] = static_cast<float>(config.at(knob.name));
    return f;
  };
  return c;
}

TEST(Search, EveryStrategyVisitsEachPointOnceDefaultFirst) {
  ops::ConfigSpace space = {{"a", {4, 1, 2}}, {"b", {0, 1, 2, 3}}, {"c", {7, 8}}};
  const int64_t size = space_size(space);
  for (const std::string& name : search_names()) {
    SCOPED_TRACE(name);
    std::unique_ptr<Search> s = make_search(name, space, 3, knob_features(space));
    std::map<int64_t, double> measured;
    for (int64_t k = 0; k < size; ++k) {
      int64_t i = s->next(measured);
      ASSERT_GE(i, 0);
      ASSERT_LT(i, size);
      if (k == 0) {
        EXPECT_EQ(i, 0);
      }
      EXPECT_FALSE(measured.count(i)) << i;
      measured[i] = 1.0 + static_cast<double>((i * 7) % 5);  // any costs
    }
    EXPECT_EQ(s->next(measured), -1);
    EXPECT_TRUE(s->next_batch(measured, 4).empty());
  }
  std::string m = testing::user_error([&] { make_search("annealing", space, 0); });
  EXPECT_NE(m.find("unknown search 'annealing'"), std::string::npos) << m;
  m = testing::user_error([&] { make_search("xgb", space, 0); });
  EXPECT_NE(m.find("features"), std::string::npos) << m;
}

TEST(Search, BatchesAreDistinctAndUnmeasured) {
  ops::ConfigSpace space = {{"a", {4, 1, 2, 8, 16}}, {"b", {0, 1, 2, 3}}, {"c", {7, 8}}};
  const int64_t size = space_size(space);  // 40
  for (const std::string& name : search_names()) {
    SCOPED_TRACE(name);
    std::unique_ptr<Search> s = make_search(name, space, 5, knob_features(space));
    std::map<int64_t, double> measured;
    bool first = true;
    while (static_cast<int64_t>(measured.size()) < size) {
      std::vector<int64_t> batch = s->next_batch(measured, 6);
      ASSERT_FALSE(batch.empty());
      EXPECT_LE(batch.size(), 6u);
      if (first) {
        EXPECT_EQ(batch[0], 0);
      }
      first = false;
      std::set<int64_t> distinct(batch.begin(), batch.end());
      EXPECT_EQ(distinct.size(), batch.size());
      for (int64_t i : batch) {
        ASSERT_GE(i, 0);
        ASSERT_LT(i, size);
        EXPECT_FALSE(measured.count(i)) << i;
        measured[i] = i % 3 == 0 ? INFINITY : 1.0 + static_cast<double>((i * 5) % 7);
      }
    }
  }
}

TEST(Search, PointsThatDoNotFitAreNeverProposed) {
  // A third of the space does not fit the target: every strategy proposes each other point once,
  // in batches, and asks about each point at most once.
  ops::ConfigSpace space = {{"a", {4, 1, 2, 8, 16}}, {"b", {0, 1, 2, 3}}, {"c", {7, 8}}};
  const int64_t size = space_size(space);  // 40
  for (const std::string& name : search_names()) {
    SCOPED_TRACE(name);
    SearchContext c = knob_features(space);
    std::map<int64_t, int> asked;
    c.fits = [&asked](int64_t i) {
      ++asked[i];
      return i % 3 != 1;
    };
    std::unique_ptr<Search> s = make_search(name, space, 9, c);
    std::map<int64_t, double> measured;
    for (int rounds = 0; rounds < 100; ++rounds) {
      std::vector<int64_t> batch = s->next_batch(measured, 5);
      if (batch.empty()) break;
      for (int64_t i : batch) {
        EXPECT_NE(i % 3, 1) << i;
        EXPECT_FALSE(measured.count(i)) << i;
        measured[i] = 1.0 + static_cast<double>((i * 5) % 7);
      }
    }
    EXPECT_EQ(static_cast<int64_t>(measured.size()), size - size / 3);  // 27 of 40 fit
    for (const auto& [i, n] : asked) EXPECT_EQ(n, 1) << i;
    EXPECT_EQ(s->next(measured), -1);
  }
}

TEST(Search, ALongRunOfPointsThatDoNotFitIsCrossed) {
  // The first 30 of 40 points do not fit: one at a time, every strategy still reaches the other
  // 10 (a batch is empty only when nothing that fits is left).
  ops::ConfigSpace space = {{"a", {4, 1, 2, 8, 16}}, {"b", {0, 1, 2, 3}}, {"c", {7, 8}}};
  for (const std::string& name : search_names()) {
    SCOPED_TRACE(name);
    SearchContext c = knob_features(space);
    c.fits = [](int64_t i) { return i >= 30; };
    std::unique_ptr<Search> s = make_search(name, space, 4, c);
    std::map<int64_t, double> measured;
    for (int64_t i = s->next(measured); i >= 0; i = s->next(measured)) {
      EXPECT_GE(i, 30);
      EXPECT_FALSE(measured.count(i)) << i;
      measured[i] = 1.0 + static_cast<double>(i % 4);
    }
    EXPECT_EQ(measured.size(), 10u);
  }
}

TEST(Search, WithoutTheDefaultFirstRandomStartsAnywhere) {
  ops::ConfigSpace space = {{"a", {0, 1, 2, 3, 4, 5, 6, 7}}, {"b", {0, 1, 2, 3, 4, 5, 6, 7}}};
  std::set<int64_t> firsts;
  for (uint32_t seed = 0; seed < 8; ++seed)
    firsts.insert(make_search("random", space, seed, knob_features(space, false))->next({}));
  EXPECT_GT(firsts.size(), 4u);
}

TEST(Search, GeneticFindsTheOptimumOfASmoothCost) {
  std::vector<int64_t> values;
  for (int64_t v = 0; v < 12; ++v) values.push_back(v);
  ops::ConfigSpace space = {{"x", values}, {"y", values}};
  // Lowest at x = 9, y = 3; failed trials (infinity) in one corner.
  auto cost = [](const ops::Config& c) -> double {
    const double x = static_cast<double>(c.at("x")), y = static_cast<double>(c.at("y"));
    if (x < 2 && y > 9) return INFINITY;
    return 1 + std::abs(x - 9) + std::abs(y - 3);
  };
  // Trials until the optimum, averaged over 20 seeds (the whole space counts when never).
  auto mean_trials = [&](const std::string& name) {
    double total = 0;
    for (uint32_t seed = 0; seed < 20; ++seed) {
      std::unique_ptr<Search> s = make_search(name, space, seed);
      std::map<int64_t, double> measured;
      int k = 0;
      for (; k < 144; ++k) {
        int64_t i = s->next(measured);
        measured[i] = cost(config_at(space, i));
        if (measured[i] == 1) break;
      }
      total += k + 1;
    }
    return total / 20;
  };
  const double genetic = mean_trials("genetic"), random = mean_trials("random");
  std::printf("trials to the optimum of 144 points, mean of 20 seeds: genetic %.1f, random %.1f\n",
              genetic, random);
  EXPECT_LT(genetic, 0.6 * random);
}

TEST(Search, XgbNeedsFarFewerTrialsThanRandom) {
  // 20 x 20 x 20 points; the cost is smooth with one optimum at (13, 4, 17), and a ridge of
  // failed points. Neither strategy is told to start at the default.
  std::vector<int64_t> values;
  for (int64_t v = 0; v < 20; ++v) values.push_back(v);
  ops::ConfigSpace space = {{"x", values}, {"y", values}, {"z", values}};
  auto cost = [](const ops::Config& c) -> double {
    const double x = static_cast<double>(c.at("x")), y = static_cast<double>(c.at("y")),
                 z = static_cast<double>(c.at("z"));
    if (x == 6) return INFINITY;
    return 1 + 0.05 * ((x - 13) * (x - 13) + (y - 4) * (y - 4) + 0.5 * (z - 17) * (z - 17));
  };
  const int limit = 240;
  // Trials until a point within 5% of the optimum (`limit` when never), per seed.
  auto trials = [&](const std::string& name, uint32_t seed) {
    std::unique_ptr<Search> s = make_search(name, space, seed, knob_features(space, false));
    std::map<int64_t, double> measured;
    while (static_cast<int>(measured.size()) < limit) {
      for (int64_t i : s->next_batch(measured, 8)) {
        measured[i] = cost(config_at(space, i));
        if (measured[i] <= 1.05) return static_cast<int>(measured.size());
      }
    }
    return limit;
  };
  double xgb = 0, random = 0;
  for (uint32_t seed = 0; seed < 4; ++seed) {
    xgb += trials("xgb", seed) / 4.0;
    random += trials("random", seed) / 4.0;
  }
  std::printf(
      "trials to within 5%% of the optimum of 8000 points, mean of 4 seeds: xgb %.1f, "
      "random %.1f\n",
      xgb, random);
  EXPECT_LT(xgb, 0.5 * random);

  // Transfer: trained on another task with the same landscape (its costs 3 times as high), the
  // model guides the very first batch.
  auto with_prior = [&](uint32_t seed) {
    SearchContext context = knob_features(space, false);
    std::vector<std::vector<float>> rows;
    std::vector<double> costs;
    std::mt19937 rng(100 + seed);
    for (int k = 0; k < 200; ++k) {
      const int64_t i = std::uniform_int_distribution<int64_t>(0, space_size(space) - 1)(rng);
      rows.push_back(context.features(i));
      costs.push_back(3 * cost(config_at(space, i)));
    }
    context.prior.add_task(rows, costs);
    std::unique_ptr<Search> s = make_search("xgb", space, seed, context);
    std::map<int64_t, double> measured;
    for (int64_t i : s->next_batch(measured, 8)) measured[i] = cost(config_at(space, i));
    double best = INFINITY;
    for (const auto& [i, c] : measured) best = std::min(best, c);
    return best;
  };
  for (uint32_t seed = 0; seed < 3; ++seed) {
    // The first batch of 8 lands near the optimum (random draws: a cost of ~4 on average).
    EXPECT_LT(with_prior(seed), 1.5) << seed;
  }
}

}  // namespace
}  // namespace anvil::autotune
