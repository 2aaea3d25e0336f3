// Search strategies over a task's configuration space: each proposes the next points to measure
// from the costs measured so far, never a point twice, and (unless told otherwise) the default,
// point 0, first.
//   grid     index order
//   random   uniform draws without replacement
//   genetic  after 8 random points: a child of two parents picked by tournament (3 contestants)
//            among the measured points, each knob from either parent, then each knob mutated with
//            probability 1/4: to a neighbouring value (3/4) or to any value (1/4)
//   xgb      the paper's method: a cost model (cost_model.h) trained on the measured points'
//            features (features.h), and on other tasks' trials when given (transfer), retrained
//            before each batch; simulated annealing over the space under the model picks the
//            batch's most promising unmeasured points, and a few random ones keep exploring.
//            Random until it has 8 measured points, unless other tasks' trials train it.
// With SearchContext::fits, any strategy skips the points that cannot run on the target (a GPU
// schedule over the threads per block or the shared memory a block may have): they are never
// proposed, and the strategy sees them as failed trials.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "anvil/autotune/cost_model.h"
#include "anvil/ops/op.h"

namespace anvil::autotune {

class Search {
 public:
  virtual ~Search() = default;
  // The next point of the space that is not a key of `measured` (point -> seconds, infinity for a
  // failed trial), or -1 when every point has been measured.
  virtual int64_t next(const std::map<int64_t, double>& measured) = 0;
  // Up to `n` distinct points, none a key of `measured`, to be measured together (fewer when the
  // space runs out). By default next() n times, each proposal counted as a failed trial for the
  // next.
  virtual std::vector<int64_t> next_batch(const std::map<int64_t, double>& measured, int n);
};

// What a strategy may use besides the task's own trials.
struct SearchContext {
  // The features of point i of the space (features.h); the xgb strategy requires it.
  std::function<std::vector<float>(int64_t)> features;
  // Other tasks' trials (transfer): the xgb model trains on them together with the task's own.
  TrainingSet prior;
  // Propose the default first. Off for comparisons of strategies that start from nothing.
  bool default_first = true;
  // Whether point i can run on the target at all; absent: every point can.
  std::function<bool(int64_t)> fits;
};

// The strategies `make_search` knows.
std::vector<std::string> search_names();
// Throws anvil::Error naming the strategy when it is unknown.
std::unique_ptr<Search> make_search(const std::string& name, const ops::ConfigSpace& space,
                                    uint32_t seed, SearchContext context = {});

}  // namespace anvil::autotune
