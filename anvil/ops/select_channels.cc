// select_channels_nchwc (select_channels.h): runs of channels copied from blocked inputs.
#include "anvil/ops/select_channels.h"

#include "anvil/ops/nchwc.h"
#include "anvil/ops/transform_common.h"
#include "anvil/support/int_math.h"

namespace anvil::ops {

namespace {

using namespace transform_detail;

constexpr size_t kRunFields = 6;  // input, out_begin, out_step, in_begin, in_step, count

struct Selection {
  std::vector<ChannelRun> runs;
  int64_t channels = 0, block = 0;
};

// The runs checked against the inputs: in range, and every output channel below C written once.
Selection selection_of(const std::string& op, const std::vector<std::vector<int64_t>>& in,
                       const Attrs& attrs) {
  Selection s{channel_runs(attrs), attrs.get_int("channels"), attrs.get_int("block")};
  ANVIL_CHECK(!in.empty(), op, ": expects at least 1 input, got 0");
  for (size_t k = 0; k < in.size(); ++k) {
    ANVIL_CHECK(
        in[k].size() == 5 && in[k][0] == in[0][0] && in[k][2] == in[0][2] && in[k][3] == in[0][3],
        op, ": input ", k, " ", shape_str(in[k]), " is not NCHW[x]c with input 0's N, H and W ",
        shape_str(in[0]));
  }
  ANVIL_CHECK(!s.runs.empty(), op, ": attribute 'runs' is empty");
  std::vector<int> written(static_cast<size_t>(s.channels), 0);
  for (size_t r = 0; r < s.runs.size(); ++r) {
    const ChannelRun& run = s.runs[r];
    ANVIL_CHECK(run.input >= 0 && run.input < static_cast<int64_t>(in.size()), op, ": run ", r,
                " reads input ", run.input, " of ", in.size());
    ANVIL_CHECK(run.count > 0 && run.out_step > 0 && run.in_step > 0 && run.out_begin >= 0 &&
                    run.in_begin >= 0,
                op, ": run ", r, " has a count or step below 1 or a negative start");
    const std::vector<int64_t>& x = in[static_cast<size_t>(run.input)];
    int64_t last_in = run.in_begin + (run.count - 1) * run.in_step;
    int64_t last_out = run.out_begin + (run.count - 1) * run.out_step;
    ANVIL_CHECK(last_in < x[1] * x[4], op, ": run ", r, " reads channel ", last_in, " of input ",
                run.input, " ", shape_str(x));
    ANVIL_CHECK(last_out < s.channels, op, ": run ", r, " writes channel ", last_out,
                " of an output with ", s.channels);
    for (int64_t t = 0; t < run.count; ++t) {
      ANVIL_CHECK(written[static_cast<size_t>(run.out_begin + t * run.out_step)]++ == 0, op,
                  ": output channel ", run.out_begin + t * run.out_step, " is written twice");
    }
  }
  for (int64_t c = 0; c < s.channels; ++c)
    ANVIL_CHECK(written[static_cast<size_t>(c)], op, ": output channel ", c, " is not written");
  return s;
}

std::vector<int64_t> out_shape(const std::vector<int64_t>& x0, const Selection& s) {
  return {x0[0], nchwc_channels(s.channels, s.block) / s.block, x0[2], x0[3], s.block};
}

}  // namespace

Attrs select_channels_attrs(const std::vector<ChannelRun>& runs, int64_t channels, int64_t block) {
  std::vector<int64_t> flat;
  for (const ChannelRun& r : runs) {
    flat.insert(flat.end(), {r.input, r.out_begin, r.out_step, r.in_begin, r.in_step, r.count});
  }
  return Attrs("select_channels_nchwc", {{"runs", flat}, {"channels", channels}, {"block", block}});
}

std::vector<ChannelRun> channel_runs(const Attrs& attrs) {
  std::vector<int64_t> flat = attrs.get_ints("runs");
  ANVIL_CHECK(
      flat.size() % kRunFields == 0, "select_channels_nchwc: attribute 'runs' has ", flat.size(),
      " values, not a multiple of 6 (input, out_begin, out_step, in_begin, in_step, count)");
  std::vector<ChannelRun> runs;
  for (size_t i = 0; i < flat.size(); i += kRunFields) {
    runs.push_back({flat[i], flat[i + 1], flat[i + 2], flat[i + 3], flat[i + 4], flat[i + 5]});
  }
  return runs;
}

std::vector<ChannelRun> concat_runs(const std::vector<int64_t>& channels) {
  std::vector<ChannelRun> runs;
  int64_t begin = 0;
  for (size_t k = 0; k < channels.size(); ++k) {
    runs.push_back({static_cast<int64_t>(k), begin, 1, 0, 1, channels[k]});
    begin += channels[k];
  }
  return runs;
}

std::optional<ChannelRun> slice_run(const std::vector<int64_t>& in, const Attrs& slice_attrs) {
  if (in.size() != 4) return std::nullopt;
  SliceSpec s = slice_spec(in, slice_attrs);
  for (size_t d : {0, 2, 3})
    if (s.start[d] != 0 || s.step[d] != 1 || s.shape[d] != in[d]) return std::nullopt;
  if (s.step[1] < 1 || s.shape[1] < 1) return std::nullopt;
  return ChannelRun{0, 0, 1, s.start[1], s.step[1], s.shape[1]};
}

std::vector<ChannelRun> shuffle_runs(int64_t channels, int64_t groups) {
  std::vector<ChannelRun> runs;
  int64_t per_group = channels / groups;
  for (int64_t r = 0; r < groups; ++r) runs.push_back({0, r, groups, r * per_group, 1, per_group});
  return runs;
}

std::optional<std::vector<ChannelRun>> compose_runs(const std::vector<ChannelRun>& outer,
                                                    int64_t inner_input,
                                                    const std::vector<ChannelRun>& inner,
                                                    int64_t input_offset) {
  std::vector<ChannelRun> out;
  for (const ChannelRun& o : outer) {
    if (o.input != inner_input) {
      out.push_back(o);
      continue;
    }
    if (o.in_step != 1) return std::nullopt;
    // Inner channels m in [a, a + n) land on output channel o.out_begin + (m - a) * o.out_step.
    const int64_t a = o.in_begin, n = o.count;
    for (const ChannelRun& i : inner) {
      int64_t u0 = std::max<int64_t>(0, ceil_div(a - i.out_begin, i.out_step));
      int64_t u1 = std::min(i.count - 1, floor_div(a + n - 1 - i.out_begin, i.out_step));
      if (u0 > u1) continue;
      out.push_back({i.input + input_offset,
                     o.out_begin + (i.out_begin + u0 * i.out_step - a) * o.out_step,
                     i.out_step * o.out_step, i.in_begin + u0 * i.in_step, i.in_step, u1 - u0 + 1});
    }
  }
  return out;
}

namespace transform_detail {

void register_select_channels() {
  const std::string name = "select_channels_nchwc";
  register_transform(
      name,
      {{"runs",
        AttrType::kInts,
        std::nullopt,
        {},
        "(input, out_begin, out_step, in_begin, in_step, count) per run of channels",
        /*required=*/true},
       {"channels",
        AttrType::kInt,
        std::nullopt,
        {positive()},
        "the output's true channels",
        /*required=*/true},
       {"block",
        AttrType::kInt,
        std::nullopt,
        {positive()},
        "the output's channel block",
        /*required=*/true}},
      [name](const std::vector<TensorType>& in, const Attrs& attrs) {
        std::vector<std::vector<int64_t>> shapes;
        for (const TensorType& t : in) {
          check_data_type(name, t);
          ANVIL_CHECK(t.dtype == in[0].dtype, name, ": input ", to_string(t), " is not ",
                      in[0].dtype, " as input 0");
          shapes.push_back(t.shape);
        }
        Selection s = selection_of(name, shapes, attrs);
        std::vector<int64_t> shape = out_shape(shapes[0], s);
        check_output_shape(name, shape);
        return std::vector<TensorType>{{shape, in[0].dtype}};
      },
      [name](const std::vector<te::Tensor>& in, const Attrs& attrs) {
        std::vector<std::vector<int64_t>> shapes;
        for (const te::Tensor& t : in) shapes.push_back(shape_of(t));
        Selection s = selection_of(name, shapes, attrs);
        return std::vector<te::Tensor>{te::compute(
            to_exprs(out_shape(shapes[0], s)),
            [&](const std::vector<Var>& i) {
              Expr c = i[1] * static_cast<int>(s.block) + i[4];
              Expr value = make_zero(in[0]->dtype);
              for (const ChannelRun& r : s.runs) {
                const te::Tensor& x = in[static_cast<size_t>(r.input)];
                const int xb = static_cast<int>(shape_of(x)[4]);
                Expr d = c - static_cast<int>(r.out_begin);
                Expr t = r.out_step == 1 ? d : floordiv(d, static_cast<int>(r.out_step));
                Expr taken = d >= 0 && t < static_cast<int>(r.count);
                if (r.out_step != 1)
                  taken = taken && floormod(d, static_cast<int>(r.out_step)) == 0;
                // Clamped, so that the load is in bounds where the run is not taken.
                Expr j = clamp_index(t, r.count) * static_cast<int>(r.in_step) +
                         static_cast<int>(r.in_begin);
                value = select(taken, x(i[0], floordiv(j, xb), i[2], i[3], floormod(j, xb)), value);
              }
              return value;
            },
            name)};
      },
      [name](const std::vector<runtime::NDArray>& in, const Attrs& attrs) {
        std::vector<std::vector<int64_t>> shapes;
        for (const runtime::NDArray& x : in) shapes.push_back(x.shape());
        Selection s = selection_of(name, shapes, attrs);
        std::vector<int64_t> shape = out_shape(shapes[0], s);
        runtime::NDArray out = host_empty(shape, in[0].dtype());  // zero-filled
        const int64_t N = shape[0], H = shape[2], W = shape[3];
        auto at = [&](const std::vector<int64_t>& sh, int64_t n, int64_t c, int64_t h, int64_t w) {
          return (((n * sh[1] + c / sh[4]) * H + h) * W + w) * sh[4] + c % sh[4];
        };
        for (const ChannelRun& r : s.runs) {
          const std::vector<int64_t>& xs = shapes[static_cast<size_t>(r.input)];
          for (int64_t t = 0; t < r.count; ++t)
            for (int64_t n = 0; n < N; ++n)
              for (int64_t h = 0; h < H; ++h)
                for (int64_t w = 0; w < W; ++w)
                  copy_elem(in[static_cast<size_t>(r.input)],
                            at(xs, n, r.in_begin + t * r.in_step, h, w), out,
                            at(shape, n, r.out_begin + t * r.out_step, h, w));
        }
        return std::vector<runtime::NDArray>{out};
      },
      [](te::Schedule& s, const std::vector<te::Tensor>& outs, const Target& target) {
        for (const te::Tensor& out : outs) schedule_blocked_copy_x86(s, out, target);
      });
}

}  // namespace transform_detail
}  // namespace anvil::ops
