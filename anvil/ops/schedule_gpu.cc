#include "anvil/ops/schedule_gpu.h"

#include <algorithm>
#include <functional>
#include <tuple>
#include <unordered_map>

#include "anvil/ir/op.h"
#include "anvil/support/error.h"
#include "anvil/te/tensor.h"

namespace anvil::ops {

namespace {

constexpr int64_t kThreadsPerBlock = 256;

// A reduction to a scalar over more than `threads` elements of its longest reduction axis:
// `threads` partial results, each reduced by a thread of its own, then reduced by one thread.
void scalar_reduction(te::Schedule& s, te::Tensor t, int64_t threads) {
  te::IterVar longest;
  int64_t extent = 0;
  for (const te::IterVar& r : t->reduce_axis) {
    std::optional<int64_t> n = ir::as_const_int(r->dom.extent);
    if (n && *n > extent) {
      extent = *n;
      longest = r;
    }
  }
  if (extent <= threads) return;
  auto [outer, inner] = s[t].split_nparts(longest, threads);
  (void)inner;
  te::Tensor partial = s.rfactor(t, outer);
  bind_threads(s[partial], s[partial].axis(), threads);
}

// A reduction with few outputs over a long axis (a softmax's row, a mean over a large map): a
// block per output whose threads each reduce a strided share of the longest reduction axis
// (coalesced) into shared memory, then reduce those partial results (every thread alike: they
// write the same value). Returns false, leaving the stage alone, when one thread per output
// suits it better.
bool cross_thread_reduction(te::Schedule& s, te::Tensor t, int64_t threads) {
  constexpr int64_t kMaxOutputs = 4096, kMinExtent = 64;
  int64_t outputs = 1;
  for (const te::IterVar& a : s[t].axis()) outputs *= ir::as_const_int(a->dom.extent).value_or(0);
  te::IterVar longest;
  int64_t extent = 0;
  for (const te::IterVar& r : s[t].reduce_axis()) {
    std::optional<int64_t> n = ir::as_const_int(r->dom.extent);
    if (n && *n > extent) {
      extent = *n;
      longest = r;
    }
  }
  if (outputs == 0 || outputs > kMaxOutputs || extent < kMinExtent) return false;
  // Lanes: a power of two, at least a warp, each summing about 16 elements or more (every
  // thread then reads all the lanes' partial sums, so more lanes than that cost more than they
  // save), at most a block.
  constexpr int64_t kWarp = 32, kPerLane = 16;
  int64_t lanes = 1;
  while (lanes * 2 <= std::min(threads, std::max(kWarp, extent / kPerLane))) lanes *= 2;
  te::Stage st = s[t];
  auto [outer, lane] = st.split(longest, lanes);
  (void)outer;
  te::Tensor part = s.rfactor(t, lane);
  const std::vector<te::IterVar>& axes = st.axis();
  te::IterVar block = axes[0];
  for (size_t d = 1; d < axes.size(); ++d) block = st.fuse(block, axes[d]);
  st.bind(block, "blockIdx.x");
  te::Stage sp = s[part];
  sp.set_scope(ir::MemoryScope::kShared);
  sp.compute_at(st, block);
  sp.bind(sp.axis().back(), "threadIdx.x");
  return true;
}

// How many consecutive elements of its last dimension each thread copies into the shared copy
// `c`: 4 or 2 when `c` reads a tensor in memory (not one inlined into it) along that dimension
// unchanged, in 32-bit elements, and the region copied per step is a multiple of them along it;
// else 1.
int64_t fetch_lanes(const te::Schedule& s, const te::Tensor& c) {
  const te::StageState& st = s.state().stages[static_cast<size_t>(s[c].index())];
  const ir::Load* load = st.body.as<ir::Load>();
  if (!load || load->indices.empty() || c->dtype.bits() != 32 || c->dtype.lanes() != 1) return 1;
  const ir::Variable* last = load->indices.back().as<ir::Variable>();
  if (!last || last != st.axis.back()->var.get()) return 1;
  for (const te::StageState& producer : s.state().stages) {
    if (producer.tensor->buffer.get() == load->buffer.get() &&
        producer.attach == te::AttachKind::kInline)
      return 1;
  }
  std::vector<ir::Range> region = te::computed_region(s, c);
  if (region.empty()) return 1;
  std::optional<int64_t> extent = ir::as_const_int(region.back().extent);
  if (!extent) return 1;
  for (int64_t lanes : {4, 2})
    if (*extent % lanes == 0) return lanes;
  return 1;
}

// The default rule of the tiled schedule: per axis, threads and inner outputs.
struct TileRule {
  std::vector<int64_t> threads, inner;
  int64_t k_tile = 1;
};

TileRule tile_rule(const std::vector<int64_t>& out, int64_t k, const std::vector<GpuTileAxis>& axes,
                   int64_t max_k_tile) {
  TileRule r;
  size_t first = out.size() - axes.size();
  for (size_t j = 0; j < axes.size(); ++j) {
    int64_t e = out[first + j];
    int64_t t = largest_divisor(e, axes[j].max_threads);
    r.threads.push_back(t);
    r.inner.push_back(largest_divisor(e / t, axes[j].max_inner));
  }
  r.k_tile = largest_divisor(k, max_k_tile);
  return r;
}

// Split-K: a reduction split into parts, each part's partial sums in a kernel of their own
// (the parts as another block dimension), then a thread per output adds the parts. Each part
// keeps at least this much of the reduction's first axis.
constexpr int64_t kMinSplitK = 16;

// Tiled axis j of an output of `shape` under `config`: its threads (a divisor of its extent) and
// its outputs per thread (the knob is at most this many: the largest divisor of the thread's
// share, so that every point of the space tiles exactly). Throws naming the knob.
std::pair<int64_t, int64_t> axis_tile(const std::vector<int64_t>& shape,
                                      const std::vector<GpuTileAxis>& axes, size_t j,
                                      const TileRule& rule, const Config& config,
                                      const std::string& out) {
  int64_t e = shape[shape.size() - axes.size() + j];
  int64_t t = knob(config, axes[j].name + "_threads", rule.threads[j]);
  ANVIL_CHECK(t >= 1 && e % t == 0, "tiled GPU schedule of '", out, "': ", axes[j].name,
              "_threads ", t, " does not divide its extent ", e);
  int64_t f = knob(config, axes[j].name + "_inner", rule.inner[j]);
  ANVIL_CHECK(f >= 1, "tiled GPU schedule of '", out, "': ", axes[j].name, "_inner ", f,
              " is not positive");
  return {t, largest_divisor(e / t, f)};
}

// The blocks the default rule's tiling launches: the leading dimensions times each tiled axis's
// blocks.
int64_t grid_blocks(const std::vector<int64_t>& shape, const std::vector<GpuTileAxis>& axes,
                    const TileRule& rule) {
  size_t first = shape.size() - axes.size();
  int64_t blocks = 1;
  for (size_t d = 0; d < first; ++d) blocks *= shape[d];
  for (size_t j = 0; j < axes.size(); ++j) {
    auto [t, f] = axis_tile(shape, axes, j, rule, {}, "");
    blocks *= shape[first + j] / (t * f);
  }
  return blocks;
}

// The parts split-K may take of a reduction whose first axis has extent k: divisors of k from
// {2, 4, 8, 16} leaving each part at least kMinSplitK.
std::vector<int64_t> k_split_values(int64_t k) {
  std::vector<int64_t> v;
  for (int64_t p : {2, 4, 8, 16})
    if (k % p == 0 && k / p >= kMinSplitK) v.push_back(p);
  return v;
}

// The rule: no split when the tiling launches a block per multiprocessor or more (or the
// target's count is unknown), else the fewest parts that reach it (the most allowed when none
// does).
int64_t k_split_rule(int64_t blocks, int64_t k, const Target& target) {
  if (blocks >= target.multiprocessors) return 1;
  int64_t parts = 1;
  for (int64_t p : k_split_values(k)) {
    parts = p;
    if (blocks * p >= target.multiprocessors) break;
  }
  return parts;
}

// The default first, then the candidates that divide `n` (and are at most `cap`).
std::vector<int64_t> divisor_values(int64_t def, int64_t n,
                                    std::initializer_list<int64_t> candidates, int64_t cap) {
  std::vector<int64_t> v = {def};
  for (int64_t c : candidates)
    if (c != def && c <= cap && n % c == 0) v.push_back(c);
  return v;
}

}  // namespace

te::IterVar bind_threads(te::Stage st, const std::vector<te::IterVar>& axes, int64_t threads,
                         int64_t inner) {
  te::IterVar fused = axes[0];
  for (size_t d = 1; d < axes.size(); ++d) fused = st.fuse(fused, axes[d]);
  if (inner == 1) {
    auto [block, thread] = st.split(fused, threads);
    st.bind(block, "blockIdx.x");
    st.bind(thread, "threadIdx.x");
    return thread;
  }
  auto [block, rest] = st.split(fused, threads * inner);
  auto [i, thread] = st.split(rest, threads);
  st.bind(block, "blockIdx.x");
  st.bind(thread, "threadIdx.x");
  st.unroll(i);
  return thread;
}

int64_t gpu_default_threads(const Target& target) {
  return std::min<int64_t>(kThreadsPerBlock, target.max_threads_per_block);
}

int64_t largest_divisor(int64_t n, int64_t cap) {
  for (int64_t d = std::min(n, cap); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

ConfigSpace gpu_tiled_space(const std::vector<int64_t>& out, int64_t k,
                            const std::vector<GpuTileAxis>& axes, int64_t max_k_tile,
                            const Target& target, bool split_k) {
  ANVIL_ICHECK(axes.size() <= out.size(), "gpu_tiled_space: more tiled axes than dimensions");
  TileRule r = tile_rule(out, k, axes, max_k_tile);
  ConfigSpace space;
  size_t first = out.size() - axes.size();
  for (size_t j = 0; j < axes.size(); ++j) {
    int64_t e = out[first + j];
    space.push_back({axes[j].name + "_threads",
                     divisor_values(r.threads[j], e, {1, 2, 4, 8, 16, 32, 64, 128, 256},
                                    target.max_threads_per_block)});
    // Up to 16 outputs per thread along an axis: a big GPU at batch 1 may want more work per
    // thread than the rule gives (the tuner decides; registers bound what pays).
    space.push_back({axes[j].name + "_inner", divisor_values(r.inner[j], e, {1, 2, 4, 8, 16}, e)});
  }
  space.push_back({"k_tile", divisor_values(r.k_tile, k, {1, 2, 4, 8, 16, 32}, k)});
  space.push_back({"double_buffer", {0, 1}});
  space.push_back({"vector_fetch", {1, 0}});
  if (!split_k) return space;
  std::vector<int64_t> parts = {k_split_rule(grid_blocks(out, axes, r), k, target)};
  for (int64_t p : k_split_values(k))
    if (p != parts[0]) parts.push_back(p);
  if (parts[0] != 1) parts.insert(parts.begin() + 1, 1);
  if (parts.size() > 1) space.push_back({"k_split", parts});
  return space;
}

void schedule_gpu_tiled(te::Schedule& s, const std::vector<te::Tensor>& outs,
                        const std::vector<GpuTileAxis>& axes, int64_t max_k_tile,
                        const Target& target, const Config& config,
                        const std::function<bool(const te::Tensor&)>& global) {
  using ir::MemoryScope;
  ANVIL_CHECK(outs.size() == 1, "tiled GPU schedule: ", outs.size(), " outputs (one expected)");
  const te::Tensor& out = outs[0];
  std::vector<int64_t> shape = shape_of(out);
  // The one reduction; an output that is itself the reduction accumulates in a local copy.
  te::Tensor acc;
  for (const te::Stage& st : s.stages()) {
    if (!st.tensor().is_compute() || st.reduce_axis().empty()) continue;
    ANVIL_CHECK(!acc.defined(), "tiled GPU schedule: two reductions ('", acc.name(), "', '",
                st.name(), "')");
    acc = st.tensor();
  }
  ANVIL_CHECK(acc.defined(), "tiled GPU schedule: '", out.name(), "' has no reduction");
  ANVIL_CHECK(shape_of(acc) == shape, "tiled GPU schedule: reduction '", acc.name(), "' is ",
              list_str(shape_of(acc)), ", the output '", out.name(), "' ", list_str(shape));

  // Split-K: the tiling computes the parts' partial sums [parts, out...] (tiled, a root stage),
  // then a thread per output adds them (acc, at the output's thread) and applies the epilogue.
  int64_t k = *ir::as_const_int(s[acc].reduce_axis()[0]->dom.extent);
  TileRule rule = tile_rule(shape, k, axes, max_k_tile);
  // Without a k_split knob: the rule when untuned (no knobs at all); no split for a configuration
  // tuned before the knob existed, so that such records run as they were measured.
  int64_t parts =
      knob(config, "k_split",
           config.empty() ? k_split_rule(grid_blocks(shape, axes, rule), k, target) : 1);
  ANVIL_CHECK(parts >= 1 && k % parts == 0, "tiled GPU schedule of '", out.name(), "': k_split ",
              parts, " does not divide the reduction's extent ", k);
  te::Tensor tiled = out;
  std::vector<te::Tensor> keep = {out};
  Config tile_config = config;
  if (parts > 1) {
    te::Stage sa = s[acc];
    auto [ko, ki] = sa.split_nparts(sa.reduce_axis()[0], parts);
    (void)ki;
    tiled = s.rfactor(acc, ko, te::Schedule::FactorAt::kFirst);
    te::IterVar thread = bind_threads(s[out], s[out].axis(), gpu_default_threads(target));
    if (!acc.same_as(out)) {
      s[acc].set_scope(MemoryScope::kLocal);
      s[acc].compute_at(s[out], thread);
      keep.push_back(acc);
    }
    keep.push_back(tiled);
    acc = tiled;
    // A k_tile that does not divide a part's length takes the largest one that does.
    int64_t k_tile = knob(config, "k_tile", rule.k_tile);
    ANVIL_CHECK(k_tile >= 1, "tiled GPU schedule of '", out.name(), "': k_tile ", k_tile,
                " is not positive");
    tile_config["k_tile"] = largest_divisor(k / parts, k_tile);
  }
  if (acc.same_as(tiled)) {
    acc = s.cache_write(tiled, MemoryScope::kLocal);
  } else {
    s[acc].set_scope(MemoryScope::kLocal);
  }
  keep.push_back(acc);
  // Shared copies of what acc reads (as scheduled: a producer already inlined is not read), made
  // before the remaining producers are inlined into them.
  std::vector<te::Tensor> reads;
  const ir::Expr body = s.state().stages[static_cast<size_t>(s[acc].index())].body;
  for (const te::Stage& st : s.stages())
    if (te::reads_buffer(body, st.tensor()->buffer.get()) && !(global && global(st.tensor())))
      reads.push_back(st.tensor());
  for (const te::Tensor& in : reads) keep.push_back(s.cache_read(in, MemoryScope::kShared, {acc}));
  std::vector<te::Tensor> shared(keep.end() - static_cast<std::ptrdiff_t>(reads.size()),
                                 keep.end());
  for (te::Stage& st : s.stages()) {
    te::Tensor t = st.tensor();
    if (t.is_compute() &&
        std::none_of(keep.begin(), keep.end(), [&](const te::Tensor& c) { return c.same_as(t); }))
      st.compute_inline();
  }
  tile_gpu(s, tiled, acc, shared, axes, max_k_tile, tile_config);
}

void tile_gpu(te::Schedule& s, const te::Tensor& out, const te::Tensor& acc,
              const std::vector<te::Tensor>& shared, const std::vector<GpuTileAxis>& axes,
              int64_t max_k_tile, const Config& config) {
  std::vector<int64_t> shape = shape_of(out);
  ANVIL_CHECK(axes.size() <= 3 && axes.size() <= shape.size(), "tiled GPU schedule: ", axes.size(),
              " tiled axes for output '", out.name(), "' of ", shape.size(), " dimensions");
  int64_t k = *ir::as_const_int(s[acc].reduce_axis()[0]->dom.extent);
  TileRule rule = tile_rule(shape, k, axes, max_k_tile);

  // The output's tiles: blocks, threads, inner outputs.
  te::Stage so = s[out];
  std::vector<te::IterVar> all = so.axis();
  size_t n = axes.size(), first = all.size() - n;
  std::vector<te::IterVar> blocks(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(first));
  std::vector<te::IterVar> threads, inner;
  std::vector<int64_t> thread_counts;
  for (size_t j = 0; j < n; ++j) {
    auto [t, f] = axis_tile(shape, axes, j, rule, config, out.name());
    auto [rest, fi] = so.split(all[first + j], f);
    auto [bo, ti] = so.split(rest, t);
    blocks.push_back(bo);
    threads.push_back(ti);
    inner.push_back(fi);
    thread_counts.push_back(t);
  }
  std::vector<te::IterVar> order = blocks;
  order.insert(order.end(), threads.begin(), threads.end());
  order.insert(order.end(), inner.begin(), inner.end());
  so.reorder(order);
  static const char* kBlock[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
  static const char* kThread[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
  // blockIdx.x and .y the last two, .z all the others fused.
  size_t nb = blocks.size();
  for (size_t j = 0; j < std::min<size_t>(2, nb); ++j) so.bind(blocks[nb - 1 - j], kBlock[j]);
  if (nb > 2) {
    te::IterVar z = blocks[0];
    for (size_t j = 1; j + 2 < nb; ++j) z = so.fuse(z, blocks[j]);
    so.bind(z, kBlock[2]);
  }
  for (size_t j = 0; j < n; ++j) so.bind(threads[n - 1 - j], kThread[j]);
  for (const te::IterVar& f : inner) so.unroll(f);

  // Each thread's accumulators, the reduction split into k_tile steps outside them.
  te::Stage sa = s[acc];
  sa.compute_at(so, threads.back());
  int64_t k_tile = knob(config, "k_tile", rule.k_tile);
  ANVIL_CHECK(k_tile >= 1 && k % k_tile == 0, "tiled GPU schedule of '", out.name(), "': k_tile ",
              k_tile, " does not divide the reduction's extent ", k);
  std::vector<te::IterVar> raxes = sa.reduce_axis();
  auto [ko, ki] = sa.split(raxes[0], k_tile);
  std::vector<te::IterVar> aorder = {ko, ki};
  aorder.insert(aorder.end(), raxes.begin() + 1, raxes.end());
  for (const te::IterVar& a : sa.axis()) aorder.push_back(a);
  sa.reorder(aorder);
  for (const te::IterVar& a : sa.axis()) sa.unroll(a);

  // Cooperative fetching: each copy's elements spread over all threads of the block, a thread
  // taking `lanes` consecutive elements of the last dimension where the copy allows (one 16-byte
  // load and store where the code generator proves them aligned).
  bool double_buffer = knob(config, "double_buffer", 0) != 0;
  bool vector_fetch = knob(config, "vector_fetch", 1) != 0;
  for (const te::Tensor& c : shared) s[c].compute_at(sa, ko);
  for (const te::Tensor& c : shared) {
    te::Stage sc = s[c];
    if (double_buffer) sc.double_buffer();
    int64_t lanes = vector_fetch ? fetch_lanes(s, c) : 1;
    std::vector<te::IterVar> caxes = sc.axis();
    te::IterVar lane;
    if (lanes > 1) std::tie(caxes.back(), lane) = sc.split(caxes.back(), lanes);
    te::IterVar fused = caxes[0];
    for (size_t d = 1; d < caxes.size(); ++d) fused = sc.fuse(fused, caxes[d]);
    for (size_t j = 0; j < n; ++j) {
      auto [o, i] = sc.split(fused, thread_counts[n - 1 - j]);
      sc.bind(i, kThread[j]);
      fused = o;
    }
    if (lane.defined()) sc.vectorize(lane);
  }
}

ConfigSpace gpu_default_space(const std::vector<TensorType>&, const Attrs&, const Target& target) {
  int64_t def = gpu_default_threads(target);
  std::vector<int64_t> threads = {def};
  for (int64_t t : {64, 128, 256, 512, 1024})
    if (t != def && t <= target.max_threads_per_block) threads.push_back(t);
  return {{"threads", threads}, {"inner", {1, 2, 4}}};
}

void schedule_gpu_default(te::Schedule& s, const std::vector<te::Tensor>& outputs,
                          const Target& target, const Config& config,
                          const std::function<bool(const te::Tensor&)>& scheduled) {
  std::vector<te::Stage> stages = s.stages();
  // How many stages read each tensor. Inlining a tensor into several readers would recompute it
  // in each (and a chain of them, as in a recurrent cell, in each reader of each), so only
  // single readers inline.
  std::unordered_map<const te::TensorNode*, int> readers;
  for (const te::Stage& st : stages) {
    for (const auto& in : st.tensor()->inputs) ++readers[in.get()];
  }
  auto is_output = [&](const te::Tensor& t) {
    return std::any_of(outputs.begin(), outputs.end(),
                       [&](const te::Tensor& o) { return o.same_as(t); });
  };
  int64_t threads = knob(config, "threads", gpu_default_threads(target));
  ANVIL_CHECK(threads >= 1 && threads <= target.max_threads_per_block,
              "default GPU schedule: threads ", threads, " is outside [1, ",
              target.max_threads_per_block, "] (the target's threads per block)");
  int64_t inner = knob(config, "inner", 1);
  ANVIL_CHECK(inner >= 1, "default GPU schedule: inner ", inner, " is not positive");
  for (te::Stage& st : stages) {
    te::Tensor t = st.tensor();
    if (!t.is_compute() || (scheduled && scheduled(t))) continue;
    if (!is_output(t) && t->reduce_axis.empty() && readers[t.get()] == 1) {
      st.compute_inline();
      continue;
    }
    if (st.axis().empty()) {
      // A scalar runs on one thread (split_host_device); a large reduction to it is first
      // factored into partial results that many threads compute.
      if (!t->reduce_axis.empty()) scalar_reduction(s, t, threads);
      continue;
    }
    if (!t->reduce_axis.empty() && cross_thread_reduction(s, t, threads)) continue;
    bind_threads(st, st.axis(), threads, inner);
  }
}

}  // namespace anvil::ops