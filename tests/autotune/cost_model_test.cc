// The XGBoost cost model: on synthetic tasks whose cost is a smooth function of 3 of 10 features
// plus noise, it orders held-out configurations nearly as the truth does (and a model trained on
// shuffled labels does not); add_task's relative labels, failed trials included; the errors of
// predicting untrained and of fitting nothing; the same seed and data give the same model.
#include "anvil/autotune/cost_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "testing/errors.h"

namespace anvil::autotune {
namespace {

constexpr int kFeatures = 10;
constexpr double kInf = std::numeric_limits<double>::infinity();

// A synthetic task: configurations with kFeatures features in [0, 1), of which only 0, 3 and 7
// matter; the task's `scale` multiplies every cost (tasks differ in size, not in what is fast).
struct Synthetic {
  std::vector<std::vector<float>> rows;
  std::vector<double> costs_s;
};

double true_cost(const std::vector<float>& x, double scale) {
  return scale *
         (1.0 + 2.0 * x[0] + 4.0 * (x[3] - 0.4) * (x[3] - 0.4) + 0.8 * std::sin(3.0 * x[7]));
}

Synthetic make_task(int n, double scale, double noise, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::normal_distribution<double> eps(0.0, noise);
  Synthetic t;
  for (int i = 0; i < n; ++i) {
    std::vector<float> x(kFeatures);
    for (float& v : x) v = u(rng);
    t.costs_s.push_back(true_cost(x, scale) * std::exp(eps(rng)));
    t.rows.push_back(std::move(x));
  }
  return t;
}

// Ranks (0-based; the values are continuous, so ties are not worth averaging).
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t k = 0; k < order.size(); ++k) r[order[k]] = static_cast<double>(k);
  return r;
}

// Spearman's rank correlation: Pearson's correlation of the ranks.
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double mean = (n - 1) / 2;
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - mean) * (rb[i] - mean);
    va += (ra[i] - mean) * (ra[i] - mean);
    vb += (rb[i] - mean) * (rb[i] - mean);
  }
  return cov / std::sqrt(va * vb);
}

// Three tasks of 100 configurations each, the held-out rows from a fourth task of another scale.
struct Experiment {
  TrainingSet train;
  Synthetic held_out;
};

Experiment make_experiment(uint32_t seed) {
  std::mt19937 rng(seed);
  Experiment e;
  for (double scale : {1e-4, 3e-3, 5e-2}) {
    Synthetic t = make_task(100, scale, 0.05, rng);
    e.train.add_task(t.rows, t.costs_s);
  }
  e.held_out = make_task(300, 7e-3, 0.0, rng);
  return e;
}

// How well `model`'s scores order the held-out rows: the rank correlation of score with speed.
double held_out_correlation(const CostModel& model, const Synthetic& held_out) {
  std::vector<float> scores = model.predict(held_out.rows);
  EXPECT_EQ(scores.size(), held_out.rows.size());
  std::vector<double> s(scores.begin(), scores.end()), speed;
  for (double c : held_out.costs_s) speed.push_back(1.0 / c);
  return spearman(s, speed);
}

TEST(CostModel, RanksHeldOutConfigurationsLikeTheTruth) {
  Experiment e = make_experiment(11);
  ASSERT_EQ(e.train.size(), 300u);
  ASSERT_EQ(e.train.groups, (std::vector<uint32_t>{100, 100, 100}));
  CostModel model(3);
  EXPECT_FALSE(model.trained());
  model.fit(e.train);
  EXPECT_TRUE(model.trained());
  const double rho = held_out_correlation(model, e.held_out);
  EXPECT_GT(rho, 0.8);

  // The same rows with their labels shuffled within each task carry no signal: the model learns
  // noise, and its order of the held-out rows is far from the truth.
  TrainingSet shuffled = e.train;
  std::mt19937 rng(5);
  for (size_t g = 0, begin = 0; g < shuffled.groups.size(); begin += shuffled.groups[g++])
    std::shuffle(shuffled.labels.begin() + static_cast<std::ptrdiff_t>(begin),
                 shuffled.labels.begin() + static_cast<std::ptrdiff_t>(begin + shuffled.groups[g]),
                 rng);
  CostModel noise_model(3);
  noise_model.fit(shuffled);
  const double rho_noise = held_out_correlation(noise_model, e.held_out);
  EXPECT_LT(std::abs(rho_noise), 0.4);
  EXPECT_GT(rho - rho_noise, 0.4) << rho << " " << rho_noise;

  // Refitting replaces the model: on the shuffled data, `model` now predicts as noise_model.
  model.fit(shuffled);
  EXPECT_EQ(model.predict(e.held_out.rows), noise_model.predict(e.held_out.rows));
}

TEST(CostModel, LabelsAreRelativeToTheTasksBestFailedTrialsZero) {
  TrainingSet set;
  std::vector<std::vector<float>> rows = {{1, 2}, {3, 4}, {5, 6}, {7, 8}};
  set.add_task(rows, {2e-3, 1e-3, kInf, 4e-3});
  EXPECT_EQ(set.size(), 4u);
  EXPECT_EQ(set.groups, (std::vector<uint32_t>{4}));
  ASSERT_EQ(set.labels.size(), 4u);
  EXPECT_FLOAT_EQ(set.labels[0], 0.5f);
  EXPECT_FLOAT_EQ(set.labels[1], 1.0f);
  EXPECT_EQ(set.labels[2], 0.0f);
  EXPECT_FLOAT_EQ(set.labels[3], 0.25f);
  EXPECT_EQ(set.features[2], (std::vector<float>{5, 6}));

  // A task whose every trial failed: all labels 0, as its own group after the first.
  set.add_task({{0, 0}, {1, 1}}, {kInf, kInf});
  EXPECT_EQ(set.groups, (std::vector<uint32_t>{4, 2}));
  EXPECT_EQ(set.labels[4], 0.0f);
  EXPECT_EQ(set.labels[5], 0.0f);
  // A task without measurements adds no (empty) group.
  set.add_task({}, {});
  EXPECT_EQ(set.groups.size(), 2u);

  // The model trains on it and scores the best configuration above the failed one.
  CostModel model;
  model.fit(set);
  std::vector<float> s = model.predict(rows);
  EXPECT_GT(s[1], s[2]);

  std::string m = testing::user_error([&] { set.add_task({{1, 2}}, {1.0, 2.0}); });
  EXPECT_NE(m.find("1 feature rows but 2 costs"), std::string::npos) << m;
  m = testing::user_error([&] { set.add_task({{1, 2, 3}}, {1.0}); });
  EXPECT_NE(m.find("3 features, the training set's 2"), std::string::npos) << m;
  m = testing::user_error([&] { set.add_task({{1, 2}}, {0.0}); });
  EXPECT_NE(m.find("cost 0 s"), std::string::npos) << m;
  EXPECT_EQ(set.size(), 6u);
}

TEST(CostModel, PredictBeforeFitAndFitOnNothingThrow) {
  CostModel model;
  std::string m = testing::user_error([&] { model.predict({{1, 2}}); });
  EXPECT_NE(m.find("predict() called before fit()"), std::string::npos) << m;
  m = testing::user_error([&] { model.fit(TrainingSet{}); });
  EXPECT_NE(m.find("cannot fit on an empty training set"), std::string::npos) << m;
  EXPECT_FALSE(model.trained());

  // Rows whose groups do not add up, and predicting rows of another width.
  TrainingSet bad;
  bad.add_task({{1, 2}, {3, 4}}, {1.0, 2.0});
  bad.groups = {3};
  m = testing::user_error([&] { model.fit(bad); });
  EXPECT_NE(m.find("1 groups hold 3 rows, but it has 2"), std::string::npos) << m;
  bad.groups = {2};
  model.fit(bad);
  m = testing::user_error([&] { model.predict({{1, 2, 3}}); });
  EXPECT_NE(m.find("3 features, the model was trained on 2"), std::string::npos) << m;
  EXPECT_TRUE(model.predict({}).empty());
}

TEST(CostModel, SameSeedAndDataGiveTheSameScores) {
  Experiment e = make_experiment(23);
  CostModel a(7), b(7);
  a.fit(e.train);
  b.fit(e.train);
  std::vector<float> pa = a.predict(e.held_out.rows);
  EXPECT_EQ(pa, b.predict(e.held_out.rows));
  a.fit(e.train);  // and again, on a model that held one already
  EXPECT_EQ(a.predict(e.held_out.rows), pa);
}

}  // namespace
}  // namespace anvil::autotune
