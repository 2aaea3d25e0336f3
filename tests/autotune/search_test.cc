// The search strategies: each proposes the default first, never a point twice, and every point of
// a small space before running out; on a smooth cost over a 12 x 12 space the genetic search needs
// well under the trials random search needs to reach the optimum.
#include "anvil/autotune/search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "anvil/autotune/task.h"
#include "testing/errors.h"

namespace anvil::autotune {
namespace {

TEST(Search, EveryStrategyVisitsEachPointOnceDefaultFirst) {
  ops::ConfigSpace space = {{"a", {4, 1, 2}}, {"b", {0, 1, 2, 3}}, {"c", {7, 8}}};
  const int64_t size = space_size(space);
  for (const std::string& name : search_names()) {
    SCOPED_TRACE(name);
    std::unique_ptr<Search> s = make_search(name, space, 3);
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
  }
  std::string m = testing::user_error([&] { make_search("annealing", space, 0); });
  EXPECT_NE(m.find("unknown search 'annealing'"), std::string::npos) << m;
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

}  // namespace
}  // namespace anvil::autotune
