// Search strategies over a task's configuration space: each proposes the next point to measure
// from the costs measured so far. Every strategy proposes the default (point 0) first and never a
// point twice.
//   grid     index order
//   random   uniform draws without replacement
//   genetic  after 8 random points: a child of two parents picked by tournament (3 contestants)
//            among the measured points, each knob from either parent, then each knob mutated with
//            probability 1/4: to a neighbouring value (3/4) or to any value (1/4)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "anvil/ops/op.h"

namespace anvil::autotune {

class Search {
 public:
  virtual ~Search() = default;
  // The next point of the space that is not a key of `measured` (point -> seconds, infinity for a
  // failed trial), or -1 when every point has been measured.
  virtual int64_t next(const std::map<int64_t, double>& measured) = 0;
};

// The strategies `make_search` knows.
std::vector<std::string> search_names();
// Throws anvil::Error naming the strategy when it is unknown.
std::unique_ptr<Search> make_search(const std::string& name, const ops::ConfigSpace& space,
                                    uint32_t seed);

}  // namespace anvil::autotune
