// The cost model on XGBoost's C API (Debian's libxgboost-dev, 1.7): a DMatrix per fit or predict
// call, freed on every path by small owning wrappers; gradient-boosted trees with the pairwise
// ranking objective (the TVM paper's rank loss), grouped by task.
#include "anvil/autotune/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "anvil/support/error.h"

namespace anvil::autotune {

namespace {

// The trees: enough for a few hundred to a few thousand rows of 64 features, with a fixed number
// of rounds so that a fit costs about the same whatever the data (about 150 ms on 1000 rows x 64
// features). "hist" with 64 bins a feature: split finding, most of a fit's time, is linear in the
// bins, and a few thousand rows gain nothing from XGBoost's default of 256. One thread: on this
// 2-core machine, loaded by the tuner's compiles, two OpenMP threads made a fit take seconds
// rather than 80 ms. Histograms are summed in a fixed order, so a fit is deterministic for a
// given seed and data.
constexpr int kRounds = 40;
constexpr int kThreads = 1;
// clang-format off
const std::pair<const char*, const char*> kParams[] = {
    {"booster", "gbtree"},
    {"objective", "rank:pairwise"},
    {"tree_method", "hist"},
    {"max_bin", "64"},
    {"max_depth", "6"},
    {"eta", "0.3"},
    {"min_child_weight", "1"},
    {"subsample", "1"},
    {"verbosity", "0"},
};
// clang-format on

// Throws anvil::Error with XGBoost's message when a C API call failed (returned nonzero).
void check(int rc, const char* call, const char* what) {
  ANVIL_CHECK(rc == 0, "cost model: XGBoost's ", call, " failed while ", what, ": ",
              XGBGetLastError());
}

// An owned DMatrix built from dense rows of `width` features (NaN: missing).
class DMatrix {
 public:
  DMatrix(const std::vector<std::vector<float>>& rows, size_t width, const char* what) {
    std::vector<float> dense;
    dense.reserve(rows.size() * width);
    for (const std::vector<float>& row : rows) dense.insert(dense.end(), row.begin(), row.end());
    check(XGDMatrixCreateFromMat_omp(dense.data(), rows.size(), width,
                                     std::numeric_limits<float>::quiet_NaN(), &handle_, kThreads),
          "XGDMatrixCreateFromMat_omp", what);
  }
  ~DMatrix() {
    if (handle_) XGDMatrixFree(handle_);
  }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

// An owned booster, released to the CostModel once fully trained.
class Booster {
 public:
  Booster(DMatrixHandle train, const char* what) {
    check(XGBoosterCreate(&train, 1, &handle_), "XGBoosterCreate", what);
  }
  ~Booster() {
    if (handle_) XGBoosterFree(handle_);
  }
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  BoosterHandle get() const { return handle_; }
  BoosterHandle release() { return std::exchange(handle_, nullptr); }

 private:
  BoosterHandle handle_ = nullptr;
};

// The width shared by every row; `what` names the rows in the error otherwise.
size_t row_width(const std::vector<std::vector<float>>& rows, const char* what) {
  const size_t width = rows.empty() ? 0 : rows[0].size();
  for (size_t i = 0; i < rows.size(); ++i)
    ANVIL_CHECK(rows[i].size() == width, "cost model: ", what, " row ", i, " has ", rows[i].size(),
                " features, row 0 has ", width);
  return width;
}

}  // namespace

void TrainingSet::add_task(const std::vector<std::vector<float>>& rows,
                           const std::vector<double>& costs_s) {
  ANVIL_CHECK(rows.size() == costs_s.size(), "cost model: a task's measurements have ", rows.size(),
              " feature rows but ", costs_s.size(), " costs");
  if (rows.empty()) return;  // no group of size 0
  const size_t width = row_width(rows, "the task's");
  ANVIL_CHECK(features.empty() || features[0].size() == width, "cost model: the task's rows have ",
              width, " features, the training set's ", features[0].size());
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < costs_s.size(); ++i) {
    const double c = costs_s[i];
    ANVIL_CHECK(!(c <= 0), "cost model: measurement ", i, " of a task has cost ", c,
                " s (a cost is positive; infinity marks a failed trial)");
    if (std::isfinite(c)) best = std::min(best, c);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    features.push_back(rows[i]);
    // Failed (infinite or NaN) trials rank below every success; if all failed, all are 0.
    const double c = costs_s[i];
    labels.push_back(std::isfinite(c) ? static_cast<float>(best / c) : 0.0f);
  }
  groups.push_back(static_cast<uint32_t>(rows.size()));
}

CostModel::CostModel(uint32_t seed) : seed_(seed) {}

CostModel::~CostModel() {
  if (booster_) XGBoosterFree(booster_);
}

void CostModel::fit(const TrainingSet& data) {
  ANVIL_CHECK(data.size() > 0,
              "cost model: cannot fit on an empty training set (nothing measured)");
  ANVIL_CHECK(data.features.size() == data.size(), "cost model: the training set has ",
              data.features.size(), " feature rows but ", data.size(), " labels");
  const size_t width = row_width(data.features, "training");
  ANVIL_CHECK(width > 0, "cost model: the training rows have no features");
  const uint64_t grouped = std::accumulate(data.groups.begin(), data.groups.end(), uint64_t{0});
  ANVIL_CHECK(grouped == data.size(), "cost model: the training set's ", data.groups.size(),
              " groups hold ", grouped, " rows, but it has ", data.size());

  const char* what = "fitting the cost model";
  DMatrix train(data.features, width, what);
  check(XGDMatrixSetFloatInfo(train.get(), "label", data.labels.data(), data.labels.size()),
        "XGDMatrixSetFloatInfo(label)", what);
  check(XGDMatrixSetUIntInfo(train.get(), "group", data.groups.data(), data.groups.size()),
        "XGDMatrixSetUIntInfo(group)", what);
  Booster booster(train.get(), what);
  for (const auto& [name, value] : kParams)
    check(XGBoosterSetParam(booster.get(), name, value), "XGBoosterSetParam", what);
  const std::string threads = std::to_string(kThreads), seed = std::to_string(seed_);
  check(XGBoosterSetParam(booster.get(), "nthread", threads.c_str()), "XGBoosterSetParam(nthread)",
        what);
  check(XGBoosterSetParam(booster.get(), "seed", seed.c_str()), "XGBoosterSetParam(seed)", what);
  for (int round = 0; round < kRounds; ++round)
    check(XGBoosterUpdateOneIter(booster.get(), round, train.get()), "XGBoosterUpdateOneIter",
          what);

  if (booster_) XGBoosterFree(booster_);
  booster_ = booster.release();
}

std::vector<float> CostModel::predict(const std::vector<std::vector<float>>& rows) const {
  ANVIL_CHECK(trained(), "cost model: predict() called before fit()");
  if (rows.empty()) return {};
  const char* what = "predicting with the cost model";
  bst_ulong trained_width = 0;
  check(XGBoosterGetNumFeature(booster_, &trained_width), "XGBoosterGetNumFeature", what);
  const size_t width = row_width(rows, "predicted");
  ANVIL_CHECK(width == trained_width, "cost model: the rows to predict have ", width,
              " features, the model was trained on ", trained_width);

  DMatrix m(rows, width, what);
  // Plain margins (type 0) of every tree; strict_shape off: one score per row.
  const char* config =
      R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, )"
      R"("strict_shape": false})";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* scores = nullptr;
  check(XGBoosterPredictFromDMatrix(booster_, m.get(), config, &shape, &dim, &scores),
        "XGBoosterPredictFromDMatrix", what);
  ANVIL_ICHECK(dim == 1 && shape[0] == rows.size(), "XGBoost returned ", dim, "-d scores for ",
               rows.size(), " rows");
  return std::vector<float>(scores, scores + rows.size());
}

}  // namespace anvil::autotune
