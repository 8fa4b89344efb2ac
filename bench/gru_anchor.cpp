// attn_gru_anchor: attn's GRU layer (models::run_rnn_stack over a 1-layer RnnStack, the
// seq2seq encoder's recurrence) timed against oneDNN's lbr_gru primitive, which computes
// PyTorch's GRU (n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))), on the same weights.
//
//   attn_gru_anchor [--batch 64] [--len 40] [--input 64] [--hidden 256] [--reps 10] [--threads 2]
//
// Prints one JSON line: median forward and forward+backward times of both, the ratios
// (oneDNN time / attn time: > 1 means attn is faster) and the largest difference between the
// two forward outputs (a check that both compute the same function).
// oneDNN's side excludes its weight reorders (user layout to the primitive's, done once
// outside the timed loop; a training step whose weights change would pay them every call),
// so the comparison is the primitives' best case.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/models/seq2seq.h"
#include "attn/nn/init.h"
#include "attn/parallel.h"
#include "attn/random.h"

namespace {
using Clock = std::chrono::steady_clock;
using dnnl::memory;
using tag = memory::format_tag;

double median_ms(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double process_cpu_ms() {  // every thread's CPU time: on a loaded machine steadier than wall time
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return 1e3 * static_cast<double>(ts.tv_sec) + 1e-6 * static_cast<double>(ts.tv_nsec);
}

struct Times {
  std::vector<std::vector<double>> wall, cpu;  // ms, per function, per round
};

// Runs every function once untimed, then `reps` rounds of each in turn (interleaved, so that
// load on a shared machine falls on all of them alike); wall and process CPU ms, per function.
Times interleaved_ms(int reps, const std::vector<std::function<void()>>& fns) {
  for (const auto& f : fns) f();
  Times out{std::vector<std::vector<double>>(fns.size()), std::vector<std::vector<double>>(fns.size())};
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < fns.size(); ++i) {
      const double c0 = process_cpu_ms();
      const auto t0 = Clock::now();
      fns[i]();
      out.wall[i].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      out.cpu[i].push_back(process_cpu_ms() - c0);
    }
  return out;
}

memory::desc md(const memory::dims& dims, tag t) { return memory::desc(dims, memory::data_type::f32, t); }

// attn's (3H, K) gate-major weight (PyTorch order r, z, n) as oneDNN's ldigo (K, 3, H) with
// oneDNN's gate order u (= z), r, o (= n).
std::vector<float> to_ldigo(const attn::Tensor& w, int64_t H) {
  const int64_t K = w.dim(1);
  const int from[3] = {1, 0, 2};
  std::vector<float> out(static_cast<size_t>(K * 3 * H));
  for (int64_t k = 0; k < K; ++k)
    for (int g = 0; g < 3; ++g)
      for (int64_t o = 0; o < H; ++o)
        out[static_cast<size_t>((k * 3 + g) * H + o)] = w.f32()[(from[g] * H + o) * K + k];
  return out;
}

struct Args {
  int64_t batch = 64, len = 40, input = 64, hidden = 256;
  int reps = 10, threads = 2;
};

Args parse(int argc, char** argv) {
  Args a;
  std::unordered_map<std::string, int64_t*> flags = {
      {"--batch", &a.batch}, {"--len", &a.len}, {"--input", &a.input}, {"--hidden", &a.hidden}};
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + f);
    const std::string text = argv[++i];
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || v < 1) throw std::invalid_argument(f + " must be an integer >= 1, got '" + text + "'");
    if (f == "--reps")
      a.reps = static_cast<int>(v);
    else if (f == "--threads")
      a.threads = static_cast<int>(v);
    else if (flags.count(f))
      *flags[f] = v;
    else
      throw std::invalid_argument("unknown option " + f);
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  try {
    a = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attn_gru_anchor: %s\n", e.what());
    return 2;
  }
  attn::set_num_threads(a.threads);
  const int64_t S = a.len, B = a.batch, I = a.input, H = a.hidden;

  // ---- attn --------------------------------------------------------------------------------
  attn::Rng rng(1);
  attn::models::RnnStack gru(false, I, H, 1, false, rng);
  attn::Tensor x = attn::Tensor::empty({S, B, I});
  attn::nn::normal_(x, 0.0f, 1.0f, rng);
  x.set_requires_grad(true);
  attn::Tensor dy = attn::Tensor::empty({S, B, H});
  attn::nn::normal_(dy, 0.0f, 1.0f, rng);
  attn::Tensor lengths =
      attn::Tensor::from_vector(std::vector<int32_t>(static_cast<size_t>(B), static_cast<int32_t>(S)), {B});
  attn::Tensor keep;
  std::vector<char> all_kept;
  attn::models::packed_keep_masks(lengths, S, keep, all_kept);
  attn::Tensor attn_out;
  auto attn_forward = [&] {
    attn::autodiff::NoGradGuard no_grad;
    attn_out = attn::models::run_rnn_stack(gru, x, keep, all_kept).outputs;
  };
  std::vector<attn::Tensor> leaves = gru.parameters();
  leaves.push_back(x);
  auto attn_forward_backward = [&] {
    attn::Tensor out = attn::models::run_rnn_stack(gru, x, keep, all_kept).outputs;
    attn::backward(out, dy);
    for (attn::Tensor& t : leaves) t.drop_grad();
  };

  // ---- oneDNN ------------------------------------------------------------------------------
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream st(eng);
  const auto& w = gru.at(0, 0);
  std::vector<float> wl = to_ldigo(w.w_ih, H), wi = to_ldigo(w.w_hh, H);
  std::vector<float> bias(static_cast<size_t>(4 * H));  // ldgo: u, r, o, u' (lbr: b_hn apart)
  const int from[3] = {1, 0, 2};
  for (int g = 0; g < 3; ++g)
    for (int64_t o = 0; o < H; ++o)
      bias[static_cast<size_t>(g * H + o)] =
          w.b_ih.f32()[from[g] * H + o] + (g < 2 ? w.b_hh.f32()[from[g] * H + o] : 0.0f);
  for (int64_t o = 0; o < H; ++o) bias[static_cast<size_t>(3 * H + o)] = w.b_hh.f32()[2 * H + o];

  const memory::dims src_d{S, B, I}, iter_d{1, 1, B, H}, wl_d{1, 1, I, 3, H}, wi_d{1, 1, H, 3, H}, b_d{1, 1, 4, H},
      dst_d{S, B, H};
  const auto dir = dnnl::rnn_direction::unidirectional_left2right;
  auto forward_pd = [&](dnnl::prop_kind kind) {
    dnnl::lbr_gru_forward::desc d(kind, dir, md(src_d, tag::tnc), md(iter_d, tag::ldnc), md(wl_d, tag::any),
                                  md(wi_d, tag::any), md(b_d, tag::ldgo), md(dst_d, tag::tnc), md(iter_d, tag::ldnc));
    return dnnl::lbr_gru_forward::primitive_desc(d, eng);
  };
  const auto inf_pd = forward_pd(dnnl::prop_kind::forward_inference);
  const auto train_pd = forward_pd(dnnl::prop_kind::forward_training);
  dnnl::lbr_gru_backward::desc bd(dnnl::prop_kind::backward, dir, md(src_d, tag::tnc), md(iter_d, tag::ldnc),
                                  md(wl_d, tag::any), md(wi_d, tag::any), md(b_d, tag::ldgo), md(dst_d, tag::tnc),
                                  md(iter_d, tag::ldnc), md(src_d, tag::tnc), md(iter_d, tag::ldnc), md(wl_d, tag::any),
                                  md(wi_d, tag::any), md(b_d, tag::ldgo), md(dst_d, tag::tnc), md(iter_d, tag::ldnc));
  const dnnl::lbr_gru_backward::primitive_desc back_pd(bd, eng, train_pd);

  memory src(md(src_d, tag::tnc), eng, x.f32()), h0(md(iter_d, tag::ldnc), eng), hT(md(iter_d, tag::ldnc), eng);
  std::memset(h0.get_data_handle(), 0, static_cast<size_t>(B * H) * sizeof(float));
  memory dst(md(dst_d, tag::tnc), eng), b(md(b_d, tag::ldgo), eng, bias.data());
  memory user_wl(md(wl_d, tag::ldigo), eng, wl.data()), user_wi(md(wi_d, tag::ldigo), eng, wi.data());
  auto reordered = [&](const memory& user, const memory::desc& want) {
    memory m(want, eng);
    dnnl::reorder(user, m).execute(st, const_cast<memory&>(user), m);
    return m;
  };
  memory inf_wl = reordered(user_wl, inf_pd.weights_layer_desc()),
         inf_wi = reordered(user_wi, inf_pd.weights_iter_desc());
  memory tr_wl = reordered(user_wl, train_pd.weights_layer_desc()),
         tr_wi = reordered(user_wi, train_pd.weights_iter_desc());
  memory bk_wl = reordered(user_wl, back_pd.weights_layer_desc()),
         bk_wi = reordered(user_wi, back_pd.weights_iter_desc());
  memory workspace(train_pd.workspace_desc(), eng);
  memory ddst(md(dst_d, tag::tnc), eng, dy.f32()), dhT(md(iter_d, tag::ldnc), eng), dsrc(md(src_d, tag::tnc), eng),
      dh0(md(iter_d, tag::ldnc), eng), db(md(b_d, tag::ldgo), eng);
  std::memset(dhT.get_data_handle(), 0, static_cast<size_t>(B * H) * sizeof(float));
  memory dwl(back_pd.diff_weights_layer_desc(), eng), dwi(back_pd.diff_weights_iter_desc(), eng);
  st.wait();

  dnnl::lbr_gru_forward inf(inf_pd), train(train_pd);
  dnnl::lbr_gru_backward back(back_pd);
  auto dnnl_forward = [&] {
    inf.execute(st, {{DNNL_ARG_SRC_LAYER, src},
                     {DNNL_ARG_SRC_ITER, h0},
                     {DNNL_ARG_WEIGHTS_LAYER, inf_wl},
                     {DNNL_ARG_WEIGHTS_ITER, inf_wi},
                     {DNNL_ARG_BIAS, b},
                     {DNNL_ARG_DST_LAYER, dst},
                     {DNNL_ARG_DST_ITER, hT}});
    st.wait();
  };
  auto dnnl_forward_backward = [&] {
    train.execute(st, {{DNNL_ARG_SRC_LAYER, src},
                       {DNNL_ARG_SRC_ITER, h0},
                       {DNNL_ARG_WEIGHTS_LAYER, tr_wl},
                       {DNNL_ARG_WEIGHTS_ITER, tr_wi},
                       {DNNL_ARG_BIAS, b},
                       {DNNL_ARG_DST_LAYER, dst},
                       {DNNL_ARG_DST_ITER, hT},
                       {DNNL_ARG_WORKSPACE, workspace}});
    // oneDNN accumulates into the weight gradients: zero them as a new step would.
    std::memset(dwl.get_data_handle(), 0, dwl.get_desc().get_size());
    std::memset(dwi.get_data_handle(), 0, dwi.get_desc().get_size());
    std::memset(db.get_data_handle(), 0, db.get_desc().get_size());
    back.execute(st, {{DNNL_ARG_SRC_LAYER, src},
                      {DNNL_ARG_SRC_ITER, h0},
                      {DNNL_ARG_WEIGHTS_LAYER, bk_wl},
                      {DNNL_ARG_WEIGHTS_ITER, bk_wi},
                      {DNNL_ARG_BIAS, b},
                      {DNNL_ARG_DST_LAYER, dst},
                      {DNNL_ARG_DST_ITER, hT},
                      {DNNL_ARG_DIFF_SRC_LAYER, dsrc},
                      {DNNL_ARG_DIFF_SRC_ITER, dh0},
                      {DNNL_ARG_DIFF_WEIGHTS_LAYER, dwl},
                      {DNNL_ARG_DIFF_WEIGHTS_ITER, dwi},
                      {DNNL_ARG_DIFF_BIAS, db},
                      {DNNL_ARG_DIFF_DST_LAYER, ddst},
                      {DNNL_ARG_DIFF_DST_ITER, dhT},
                      {DNNL_ARG_WORKSPACE, workspace}});
    st.wait();
  };

  // The forward outputs against each other: both compute the same GRU.
  attn_forward();
  dnnl_forward();
  float max_diff = 0.0f;
  const float* d = static_cast<const float*>(dst.get_data_handle());
  for (int64_t i = 0; i < S * B * H; ++i) max_diff = std::max(max_diff, std::fabs(d[i] - attn_out.f32()[i]));
  const Times times =
      interleaved_ms(a.reps, {attn_forward, dnnl_forward, attn_forward_backward, dnnl_forward_backward});

  const auto& ms = times.wall;
  const auto& cpu = times.cpu;
  const double caf = median_ms(cpu[0]), cdf = median_ms(cpu[1]), cafb = median_ms(cpu[2]), cdfb = median_ms(cpu[3]);
  const double af = median_ms(ms[0]), df = median_ms(ms[1]), afb = median_ms(ms[2]), dfb = median_ms(ms[3]);
  const double flops = 2.0 * S * B * (I + H) * 3 * H;  // forward products; training 3x
  std::printf(
      "{\"impl\": \"attn\", \"bench\": \"gru_anchor\", \"attn_forward_ms\": %.4f, \"attn_forward_backward_ms\": %.4f, "
      "\"onednn_forward_ms\": %.4f, \"onednn_forward_backward_ms\": %.4f, \"forward_ratio\": %.4f, "
      "\"forward_backward_ratio\": %.4f, \"attn_forward_gflops_per_s\": %.2f, \"attn_forward_backward_gflops_per_s\": "
      "%.2f, \"onednn_forward_gflops_per_s\": %.2f, \"onednn_forward_backward_gflops_per_s\": %.2f, "
      "\"attn_forward_cpu_ms\": %.4f, \"attn_forward_backward_cpu_ms\": %.4f, \"onednn_forward_cpu_ms\": %.4f, "
      "\"onednn_forward_backward_cpu_ms\": %.4f, \"forward_cpu_ratio\": %.4f, \"forward_backward_cpu_ratio\": %.4f, "
      "\"forward_max_abs_diff\": %.3g, \"onednn\": \"%d.%d.%d\", \"reps\": %d, \"threads\": %d, "
      "\"config\": {\"batch\": %ld, \"len\": %ld, \"input\": %ld, \"hidden\": %ld}}\n",
      af, afb, df, dfb, df / af, dfb / afb, flops / af / 1e6, 3 * flops / afb / 1e6, flops / df / 1e6,
      3 * flops / dfb / 1e6, caf, cafb, cdf, cdfb, cdf / caf, cdfb / cafb, max_diff, dnnl_version()->major,
      dnnl_version()->minor, dnnl_version()->patch, a.reps, attn::num_threads(), static_cast<long>(B),
      static_cast<long>(S), static_cast<long>(I), static_cast<long>(H));
  return 0;
}
