// select_channels_nchwc: channel selection and permutation on NCHW[x]c (nchwc.h), the blocked
// form of a channel concat, a channel slice and a channel shuffle (ShuffleNet's reshape,
// transpose, reshape), and of any chain of them.
//
//   select_channels_nchwc  x_0 .. x_k, each [N, C_i'/b_i, H, W, b_i] (any blocks)
//                          -> [N, C'/b, H, W, b]; attrs runs, channels (C), block (b)
//
// The output's channels are a list of runs: run r copies `count` channels, output channel
// out_begin + t * out_step from input `input`'s channel in_begin + t * in_step (t < count).
// Runs cover every output channel below C exactly once; padded channels past C are zero.
// Concat, slice and shuffle are a few runs each (concat_runs, slice_run, shuffle_runs), and a
// selection of a selection is again one (compose_runs), so alter_layout folds a chain into one
// node that reads its sources directly.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "anvil/ops/op.h"

namespace anvil::ops {

struct ChannelRun {
  int64_t input = 0;
  int64_t out_begin = 0, out_step = 1;
  int64_t in_begin = 0, in_step = 1;
  int64_t count = 0;
  friend bool operator==(const ChannelRun&, const ChannelRun&) = default;
};

// The attributes of a select_channels_nchwc node, and its runs back from them.
Attrs select_channels_attrs(const std::vector<ChannelRun>& runs, int64_t channels, int64_t block);
std::vector<ChannelRun> channel_runs(const Attrs& attrs);

// Input i's channels[i] channels laid end to end.
std::vector<ChannelRun> concat_runs(const std::vector<int64_t>& channels);
// The channels a slice node selects from a 4-d input of shape `in`, when it slices the channel
// axis alone (with a positive step); nullopt otherwise.
std::optional<ChannelRun> slice_run(const std::vector<int64_t>& in, const Attrs& slice_attrs);
// A channel shuffle of C channels in `groups` groups: output channel j * groups + r is input
// channel r * (C / groups) + j.
std::vector<ChannelRun> shuffle_runs(int64_t channels, int64_t groups);
// The runs of `outer` (over its input `inner_input`, the output of a selection with runs
// `inner`) rewritten to read the inner selection's inputs, whose indices are shifted by
// `input_offset`; the other runs of `outer` keep their input. nullopt when some run of outer
// reading inner_input steps by more than 1 (not needed so far).
std::optional<std::vector<ChannelRun>> compose_runs(const std::vector<ChannelRun>& outer,
                                                    int64_t inner_input,
                                                    const std::vector<ChannelRun>& inner,
                                                    int64_t input_offset);

}  // namespace anvil::ops
