// The learned cost model: gradient-boosted trees (XGBoost, through its C API) trained with a
// ranking objective to order the configurations of a task by speed, from feature vectors
// (features.h). Only the order within a task matters to the search, so labels are relative:
// a configuration's throughput over the best of its task (failed trials 0), grouped by task.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace anvil::autotune {

struct TrainingSet {
  std::vector<std::vector<float>> features;  // one row per measured configuration
  std::vector<float> labels;                 // in [0, 1]: best cost / cost (0: failed)
  std::vector<uint32_t> groups;              // row counts of consecutive groups (one per task)

  // Appends one task's measurements: rows with their costs in seconds (infinity: failed), labels
  // relative to the task's lowest cost.
  void add_task(const std::vector<std::vector<float>>& rows, const std::vector<double>& costs_s);
  size_t size() const { return labels.size(); }
};

class CostModel {
 public:
  explicit CostModel(uint32_t seed = 0);
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  // Trains a fresh model on `data` (replacing any earlier one). Throws anvil::Error with
  // XGBoost's message when it fails.
  void fit(const TrainingSet& data);
  bool trained() const { return booster_ != nullptr; }
  // Scores of `rows` (higher: predicted faster; only their order means anything). Requires
  // trained().
  std::vector<float> predict(const std::vector<std::vector<float>>& rows) const;

 private:
  uint32_t seed_;
  void* booster_ = nullptr;  // BoosterHandle
};

}  // namespace anvil::autotune
