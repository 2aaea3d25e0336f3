#include "onednn_layers.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <dnnl.hpp>
#include <stdexcept>

namespace anvil::bench {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

struct OnednnLayer::State {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::primitive primitive;
  memory src, weights, dst;
  memory::desc dst_plain;  // the output in NCHW (or [1, o])
  std::string impl;
};

namespace {

// A memory in layout `want`, filled from the plain `data` laid out as `plain`.
memory reordered(const std::vector<float>& data, const memory::desc& plain,
                 const memory::desc& want, dnnl::engine& engine, dnnl::stream& stream) {
  memory user(plain, engine);
  std::memcpy(user.get_data_handle(), data.data(), plain.get_size());
  if (plain == want) return user;
  memory out(want, engine);
  dnnl::reorder(user, out).execute(stream, user, out);
  stream.wait();
  return out;
}

}  // namespace

OnednnLayer::OnednnLayer(const Layer& l, int threads, const std::vector<float>& x,
                         const std::vector<float>& weight)
    : state_(std::make_unique<State>()), threads_(threads) {
  omp_set_num_threads(threads);
  State& s = *state_;
  const auto fwd = dnnl::prop_kind::forward_inference;
  memory::desc src_plain, w_plain;
  memory::desc src_any, w_any, dst_any;
  if (l.kind == LayerKind::kDense) {
    src_plain = memory::desc({1, l.c}, dt::f32, tag::nc);
    w_plain = memory::desc({l.o, l.c}, dt::f32, tag::oi);
    s.dst_plain = memory::desc({1, l.o}, dt::f32, tag::nc);
    src_any = memory::desc({1, l.c}, dt::f32, tag::any);
    w_any = memory::desc({l.o, l.c}, dt::f32, tag::any);
    dst_any = memory::desc({1, l.o}, dt::f32, tag::any);
    dnnl::inner_product_forward::primitive_desc pd({fwd, src_any, w_any, dst_any}, s.engine);
    s.primitive = dnnl::inner_product_forward(pd);
    s.src = reordered(x, src_plain, pd.src_desc(), s.engine, s.stream);
    s.weights = reordered(weight, w_plain, pd.weights_desc(), s.engine, s.stream);
    s.dst = memory(pd.dst_desc(), s.engine);
    s.impl = pd.impl_info_str();
    return;
  }
  const memory::dims src_dims = {1, l.c, l.h, l.w};
  const memory::dims dst_dims = {1, l.o, l.out_h(), l.out_w()};
  src_plain = memory::desc(src_dims, dt::f32, tag::nchw);
  s.dst_plain = memory::desc(dst_dims, dt::f32, tag::nchw);
  src_any = memory::desc(src_dims, dt::f32, tag::any);
  dst_any = memory::desc(dst_dims, dt::f32, tag::any);
  const memory::dims strides = {l.stride, l.stride}, pads = {l.pad, l.pad};
  std::vector<float> w = weight;
  if (l.kind == LayerKind::kConv) {
    w_plain = memory::desc({l.o, l.c, l.kh, l.kw}, dt::f32, tag::oihw);
    w_any = memory::desc({l.o, l.c, l.kh, l.kw}, dt::f32, tag::any);
  } else if (l.kind == LayerKind::kDepthwise) {
    // Grouped weights [g, o/g, c/g, kh, kw] with g = channels.
    w_plain = memory::desc({l.c, 1, 1, l.kh, l.kw}, dt::f32, tag::goihw);
    w_any = memory::desc({l.c, 1, 1, l.kh, l.kw}, dt::f32, tag::any);
  } else {
    // oneDNN's deconvolution weights are [o, c, kh, kw] (no spatial flip); ONNX's are
    // [c, o, kh, kw].
    w_plain = memory::desc({l.o, l.c, l.kh, l.kw}, dt::f32, tag::oihw);
    w_any = memory::desc({l.o, l.c, l.kh, l.kw}, dt::f32, tag::any);
    const int64_t khw = l.kh * l.kw;
    for (int64_t c = 0; c < l.c; ++c) {
      for (int64_t o = 0; o < l.o; ++o) {
        std::memcpy(&w[(o * l.c + c) * khw], &weight[(c * l.o + o) * khw], khw * sizeof(float));
      }
    }
  }
  if (l.kind == LayerKind::kDeconv) {
    dnnl::deconvolution_forward::desc d(fwd, dnnl::algorithm::deconvolution_direct, src_any, w_any,
                                        memory::desc(), dst_any, strides, pads, pads);
    dnnl::deconvolution_forward::primitive_desc pd(d, s.engine);
    s.primitive = dnnl::deconvolution_forward(pd);
    s.src = reordered(x, src_plain, pd.src_desc(), s.engine, s.stream);
    s.weights = reordered(w, w_plain, pd.weights_desc(), s.engine, s.stream);
    s.dst = memory(pd.dst_desc(), s.engine);
    s.impl = pd.impl_info_str();
  } else {
    // Direct, and for 3x3 stride-1 layers also oneDNN's Winograd where it has one for this
    // machine: the faster of the two is the baseline (the Anvil side may use Winograd too).
    auto build = [&](dnnl::algorithm algorithm) {
      dnnl::convolution_forward::desc d(fwd, algorithm, src_any, w_any, dst_any, strides, pads,
                                        pads);
      dnnl::convolution_forward::primitive_desc pd(d, s.engine);
      s.primitive = dnnl::convolution_forward(pd);
      s.src = reordered(x, src_plain, pd.src_desc(), s.engine, s.stream);
      s.weights = reordered(w, w_plain, pd.weights_desc(), s.engine, s.stream);
      s.dst = memory(pd.dst_desc(), s.engine);
      s.impl = pd.impl_info_str();
    };
    build(dnnl::algorithm::convolution_direct);
    bool winograd_shape = l.kind == LayerKind::kConv && l.kh == 3 && l.kw == 3 && l.stride == 1;
    if (winograd_shape) {
      double direct_ms = median_ms();
      State direct_state;
      std::swap(direct_state.primitive, s.primitive);
      std::swap(direct_state.src, s.src);
      std::swap(direct_state.weights, s.weights);
      std::swap(direct_state.dst, s.dst);
      std::swap(direct_state.impl, s.impl);
      bool keep_winograd = false;
      try {
        build(dnnl::algorithm::convolution_winograd);
        keep_winograd = median_ms() < direct_ms;
      } catch (const dnnl::error&) {
        // No Winograd implementation for this shape or machine.
      }
      if (!keep_winograd) {
        std::swap(direct_state.primitive, s.primitive);
        std::swap(direct_state.src, s.src);
        std::swap(direct_state.weights, s.weights);
        std::swap(direct_state.dst, s.dst);
        std::swap(direct_state.impl, s.impl);
      }
    }
  }
}

double OnednnLayer::median_ms() {
  std::vector<double> ms;
  run();
  for (int i = 0; i < 15; ++i) {
    auto start = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::nth_element(ms.begin(), ms.begin() + 7, ms.end());
  return ms[7];
}

OnednnLayer::~OnednnLayer() = default;

void OnednnLayer::run() {
  State& s = *state_;
  if (omp_get_max_threads() != threads_) omp_set_num_threads(threads_);
  s.primitive.execute(
      s.stream, {{DNNL_ARG_SRC, s.src}, {DNNL_ARG_WEIGHTS, s.weights}, {DNNL_ARG_DST, s.dst}});
  s.stream.wait();
}

std::vector<float> OnednnLayer::output() const {
  State& s = *state_;
  std::vector<float> out(s.dst_plain.get_size() / sizeof(float));
  memory plain(s.dst_plain, s.engine);
  dnnl::reorder(s.dst, plain).execute(s.stream, s.dst, plain);
  s.stream.wait();
  std::memcpy(out.data(), plain.get_data_handle(), s.dst_plain.get_size());
  return out;
}

std::string OnednnLayer::implementation() const {
  return state_->impl;
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " (" + v->hash + ", cpu runtime " +
         (v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other") + ")";
}

}  // namespace anvil::bench
