// The window attributes' schema and parser (window.h).
#include "anvil/ops/window.h"

#include <algorithm>

#include "anvil/support/error.h"

namespace anvil::ops {

std::vector<AttrSpec> window_attrs(size_t dims, unsigned parts) {
  std::vector<int64_t> ones(dims, 1), zeros(dims, 0), pads(2 * dims, 0);
  std::vector<AttrSpec> specs;
  if (parts & kWindowKernel) {
    specs.push_back({"kernel_shape",
                     AttrType::kInts,
                     std::nullopt,
                     {length(dims), positive()},
                     "the window's extent per spatial axis",
                     /*required=*/true});
  }
  specs.push_back(
      {"strides", AttrType::kInts, ones, {length(dims), positive()}, "the step per spatial axis"});
  specs.push_back({"dilations",
                   AttrType::kInts,
                   ones,
                   {length(dims), positive()},
                   "the distance between window taps per spatial axis"});
  specs.push_back({"pads",
                   AttrType::kInts,
                   pads,
                   {length(2 * dims), non_negative()},
                   "zero padding, begins then ends"});
  if (parts & kWindowGroup) {
    specs.push_back({"group",
                     AttrType::kInt,
                     int64_t{1},
                     {positive()},
                     "channel groups (C and O both divide into them)"});
  }
  if (parts & kWindowOutputPadding) {
    specs.push_back({"output_padding",
                     AttrType::kInts,
                     zeros,
                     {length(dims), non_negative()},
                     "extra output at the end of each spatial axis"});
  }
  if (parts & kWindowCeilMode) {
    specs.push_back({"ceil_mode",
                     AttrType::kInt,
                     int64_t{0},
                     {one_of(std::vector<int64_t>{0, 1})},
                     "1: the output size rounds up (a last partial window)"});
  }
  if (parts & kWindowCountIncludePad) {
    specs.push_back({"count_include_pad",
                     AttrType::kInt,
                     int64_t{0},
                     {one_of(std::vector<int64_t>{0, 1})},
                     "1: an average counts the padded positions"});
  }
  return specs;
}

Window parse_window(const Attrs& attrs, size_t dims, unsigned parts) {
  OpDef schema;
  schema.name = attrs.op();
  schema.attrs = window_attrs(dims, parts);
  // Only the window's attributes: the op's own schema checks the rest.
  Attrs window(attrs.op(), {});
  for (const AttrSpec& spec : schema.attrs)
    if (attrs.has(spec.name)) window.set(spec.name, attrs.values().at(spec.name));
  check_attrs(schema, window);
  auto ints = [&](const AttrSpec& spec) {
    return attrs.get_ints(spec.name, std::get<std::vector<int64_t>>(*spec.fallback));
  };
  auto flag = [&](const AttrSpec& spec) {
    return attrs.get_int(spec.name, std::get<int64_t>(*spec.fallback)) == 1;
  };
  Window w;
  for (const AttrSpec& spec : schema.attrs) {
    if (spec.name == "kernel_shape") {
      w.kernel = attrs.get_ints("kernel_shape");
    } else if (spec.name == "strides") {
      w.strides = ints(spec);
    } else if (spec.name == "dilations") {
      w.dilations = ints(spec);
    } else if (spec.name == "pads") {
      std::vector<int64_t> pads = ints(spec);
      w.pad_lo.assign(pads.begin(), pads.begin() + static_cast<long>(dims));
      w.pad_hi.assign(pads.begin() + static_cast<long>(dims), pads.end());
    } else if (spec.name == "group") {
      w.group = attrs.get_int("group", std::get<int64_t>(*spec.fallback));
    } else if (spec.name == "output_padding") {
      w.output_padding = ints(spec);
    } else if (spec.name == "ceil_mode") {
      w.ceil_mode = flag(spec);
    } else if (spec.name == "count_include_pad") {
      w.count_include_pad = flag(spec);
    }
  }
  return w;
}

void check_output_padding(const std::string& op, const Window& w) {
  for (size_t d = 0; d < w.output_padding.size(); ++d) {
    ANVIL_CHECK(w.output_padding[d] < std::max(w.strides[d], w.dilations[d]), op,
                ": attribute 'output_padding' ", list_str(w.output_padding),
                " must be smaller than the stride or the dilation (strides ", list_str(w.strides),
                ", dilations ", list_str(w.dilations), ")");
  }
}

FlopsFn conv_flops(bool transpose) {
  return [transpose](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
                     const Attrs& attrs) {
    const std::string& op = attrs.op();
    const std::vector<int64_t>& w = flops_operand(op, in, true, 1, 3);
    double taps = 1;
    for (size_t d = 1; d < w.size(); ++d) taps *= static_cast<double>(w[d]);
    double scattered =
        numel(TensorType{flops_operand(op, transpose ? in : out, transpose, 0, 3), {}});
    double bias = in.size() > 2 ? numel(TensorType{flops_operand(op, out, false, 0, 0), {}}) : 0.0;
    return 2 * scattered * taps + bias;
  };
}

FlopsFn pool_flops() {
  return [](const std::vector<TensorType>& in, const std::vector<TensorType>& out,
            const Attrs& attrs) {
    (void)in;
    double window = 1;
    for (int64_t k : attrs.get_ints("kernel_shape")) window *= static_cast<double>(k);
    return numel(TensorType{flops_operand(attrs.op(), out, false, 0, 0), {}}) * window;
  };
}

}  // namespace anvil::ops
