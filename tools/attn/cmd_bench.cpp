// attn bench: side-by-side benchmarks (bench/torch_peer.py runs the same models in PyTorch
// and prints the same JSON keys; bench/compare.sh alternates the two).
//
//   attn bench seq2seq   --attention bahdanau|none|luong ... --json
//     training throughput (teacher forcing, Adam, global-norm clipping) and greedy decoding
//     throughput of models::Seq2Seq on fixed-length random copy batches.
//   attn bench attention --kind sdpa|additive|mha ... --json
//     forward and forward+backward time of one attention call, resident memory.
//   attn bench transformer ... --json
//     training throughput (label smoothing, Adam, clipping) and beam decoding throughput of
//     models::TransformerSeq2Seq on token-budget batches of synthetic Multi30k-like pairs.
//   attn bench online --lengths 64,...,2048 --json (cmd_bench_online.cpp)
//     one decoder pass of global, local, monotonic and MoChA attention as T grows.
//   attn bench gemm --precision fp32|bf16 --json
//     GFLOP/s of kernels::gemm at the GEMM shapes of the two benchmarks above, and 2048³ (the peak).
//
// The FLOP counts behind gflops_per_s are written out in docs/performance.md; bench/support/flops.h
// computes them. The /proc readers and the peer's synthetic pairs are bench/support's too.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/data/parallel.h"
#include "attn/data/tasks.h"
#include "attn/json.h"
#include "attn/models/seq2seq.h"
#include "attn/models/transformer.h"
#include "attn/nn/init.h"
#include "attn/nn/multihead_attention.h"
#include "attn/ops/attention.h"
#include "attn/ops/gemm.h"
#include "attn/ops/loss.h"
#include "attn/ops/sdpa.h"
#include "attn/parallel.h"
#include "attn/precision.h"
#include "attn/train/machine_report.h"
#include "attn/train/optimizer.h"
#include "attn/train/run.h"
#include "commands.h"
#include "common.h"
#include "support/flops.h"
#include "support/measure.h"
#include "support/synthetic_pairs.h"

namespace attn::cli {
namespace {
using json = nlohmann::json;
using bench::Clock;
using bench::median;
using bench::process_cpu_seconds;
using bench::seconds_since;

void print_json_or_text(bool as_json, const json& j) {
  if (as_json) {
    std::printf("%s\n", json_text(j).c_str());
  } else {
    std::printf("%s\n", json_text(j, 2).c_str());
  }
  std::fflush(stdout);
}

// ---- seq2seq ------------------------------------------------------------------------------------

struct Seq2SeqBenchArgs {
  std::string attention = "bahdanau";
  int batch = 64;
  int emb = 64;
  int hidden = 256;
  int vocab = data::kVocabSize;
  int len = 40;
  int steps = 20;
  int warmup = 3;
  int greedy_reps = 3;
  uint64_t seed = 1;
  bool as_json = false;
};

const char* kOutputNote =
    "bahdanau output layer is W_o [s_t; c_t; emb(y_{t-1})] + b (attn's models::Seq2Seq), not the issue's "
    "[s_t; c_t]; the PyTorch peer implements the same";

void run_seq2seq_bench(const Seq2SeqBenchArgs& a) {
  models::Seq2SeqConfig config;
  config.emb = a.emb;
  config.hidden = a.hidden;
  config.vocab = a.vocab;
  config.seed = a.seed;
  as_usage([&] {
    config.attention = models::parse_attention_kind(a.attention);
    config.validate();
    if (a.batch < 1 || a.len < 1 || a.steps < 1 || a.warmup < 0 || a.greedy_reps < 0)
      throw ValueError("--batch, --len, --steps must be >= 1 and --warmup, --greedy-reps >= 0");
    if (a.vocab != data::kVocabSize)
      throw ValueError("--vocab must be " + std::to_string(data::kVocabSize) + " (the copy task's vocabulary), got " +
                       std::to_string(a.vocab));
    if (a.len > config.max_src_len)
      throw ValueError("--len must be <= " + std::to_string(config.max_src_len) + ", got " + std::to_string(a.len));
  });
  models::Seq2Seq model(config);
  train::Adam adam(model.parameters(), {.lr = 1e-3f});

  // Every batch is made before timing starts: the timed loop is model work only.
  data::TaskGenerator generator(data::TaskKind::copy, a.len, a.len, a.seed);
  std::vector<data::Batch> batches;
  for (int i = 0; i < a.warmup + a.steps; ++i) batches.push_back(generator.fixed_length(a.batch, a.len));
  const data::Batch greedy_batch = generator.fixed_length(a.batch, a.len);

  double t_forward = 0, t_backward = 0, t_optimizer = 0, train_seconds = 0, train_cpu = 0;
  double last_loss = 0;
  int64_t row_blocks = 1;  // of the last step (loss_backward_in_row_blocks)
  model.train();
  for (int i = 0; i < a.warmup + a.steps; ++i) {
    const bool timed = i >= a.warmup;
    const data::Batch& batch = batches[static_cast<size_t>(i)];
    const double cpu0 = process_cpu_seconds();
    const auto t0 = Clock::now();
    // The run loop's step (train/seq2seq_trainer.cpp): one block of rows per thread where
    // that is exact, else forward then backward.
    const std::optional<models::Seq2Seq::StepValues> in_blocks = model.loss_backward_in_row_blocks(batch);
    auto t1 = Clock::now();  // the forward pass's end; in blocks, the backward pass's too
    if (in_blocks) {
      last_loss = in_blocks->loss;
    } else {
      Tensor loss = model.loss(batch);
      last_loss = loss.item();
      t1 = Clock::now();
      backward(loss);
    }
    row_blocks = in_blocks ? in_blocks->blocks : 1;
    const auto t2 = Clock::now();
    train::apply_gradients(adam, /*clip=*/1.0f);  // the run loop's update (train/run.h)
    const auto t3 = Clock::now();
    if (timed) {
      t_forward += std::chrono::duration<double>(t1 - t0).count();
      t_backward += std::chrono::duration<double>(t2 - t1).count();
      t_optimizer += std::chrono::duration<double>(t3 - t2).count();
      train_seconds += std::chrono::duration<double>(t3 - t0).count();
      train_cpu += process_cpu_seconds() - cpu0;
    }
  }

  // Greedy decoding: up to len + 1 steps (the target and EOS); it stops early only when
  // every row has produced EOS. Tokens = B x steps actually run (every row is computed at
  // every step).
  model.eval();
  const int max_len = a.len + 1;
  int64_t greedy_steps = 0;
  double greedy_seconds = 0, greedy_cpu = 0;
  for (int r = 0; r < 1 + a.greedy_reps; ++r) {
    const double cpu0 = process_cpu_seconds();
    const auto t0 = Clock::now();
    models::DecodeResult d = model.greedy(greedy_batch.src, greedy_batch.src_lengths, max_len);
    const double s = seconds_since(t0);
    const double cpu = process_cpu_seconds() - cpu0;
    size_t longest = 0;
    for (const auto& row : d.tokens) longest = std::max(longest, row.size());
    if (r > 0 || a.greedy_reps == 0) {
      greedy_seconds += s;
      greedy_cpu += cpu;
      greedy_steps += static_cast<int64_t>(longest);
    }
  }

  const double B = a.batch, S = a.len, T = a.len + 1;
  const bench::FlopCount f = bench::seq2seq_forward_flops(config.attention, B, S, T, a.emb, a.hidden, a.vocab);
  const double train_flops_per_step = 3 * f.total();
  const double steps = a.steps;
  const double greedy_runs = a.greedy_reps == 0 ? 1 : a.greedy_reps;
  const double mean_greedy_steps = static_cast<double>(greedy_steps) / greedy_runs;
  const double greedy_flops =
      bench::seq2seq_forward_flops(config.attention, B, S, mean_greedy_steps, a.emb, a.hidden, a.vocab).total() *
      greedy_runs;

  json j;
  j["impl"] = "attn";
  j["precision"] = precision_name(compute_precision());
  j["bench"] = "seq2seq";
  j["attention"] = a.attention;
  j["train_tokens_per_s"] = steps * B * T / train_seconds;
  j["greedy_tokens_per_s"] = B * static_cast<double>(greedy_steps) / greedy_seconds;
  j["gflops_per_s"] = train_flops_per_step * steps / train_seconds / 1e9;
  j["greedy_gflops_per_s"] = greedy_flops / greedy_seconds / 1e9;
  j["train_flops_per_step"] = train_flops_per_step;
  j["train_flops_per_token"] = train_flops_per_step / (B * T);
  j["steps"] = a.steps;
  j["warmup"] = a.warmup;
  j["seconds"] = train_seconds;
  j["step_ms"] = 1e3 * train_seconds / steps;
  j["train_cpu_seconds"] = train_cpu;  // CPU time of the timed steps, all threads
  j["train_tokens_per_cpu_s"] = steps * B * T / train_cpu;
  j["greedy_cpu_seconds"] = greedy_cpu;
  j["greedy_tokens_per_cpu_s"] = B * static_cast<double>(greedy_steps) / greedy_cpu;
  j["row_blocks"] = row_blocks;
  // In row blocks each thread runs its rows' forward and backward back to back: one phase.
  if (row_blocks > 1)
    j["phase_ms_per_step"] = {{"forward_backward", 1e3 * (t_forward + t_backward) / steps},
                              {"clip_adam", 1e3 * t_optimizer / steps}};
  else
    j["phase_ms_per_step"] = {{"forward", 1e3 * t_forward / steps},
                              {"backward", 1e3 * t_backward / steps},
                              {"clip_adam", 1e3 * t_optimizer / steps}};
  j["greedy_reps"] = a.greedy_reps;
  j["greedy_seconds"] = greedy_seconds;
  j["greedy_steps_per_rep"] = mean_greedy_steps;
  j["final_loss"] = last_loss;
  j["threads"] = num_threads();
  j["parameters"] = model.num_parameters();
  j["config"] = {{"batch", a.batch},   {"emb", a.emb},
                 {"hidden", a.hidden}, {"vocab", a.vocab},
                 {"len", a.len},       {"target_len", a.len + 1},
                 {"encoder", "gru"},   {"score", config.effective_score()},
                 {"seed", a.seed}};
  if (config.attention == models::AttentionKind::bahdanau) j["note"] = kOutputNote;
  j["machine"] = train::machine_report().to_json();  // measured after the benchmark, as attn doctor
  print_json_or_text(a.as_json, j);
}

// ---- attention ----------------------------------------------------------------------------------

struct AttentionBenchArgs {
  std::string kind = "sdpa";
  std::string mask = "none";  // sdpa: none | causal | padding (the last quarter of the keys masked)
  int batch = 1;
  int heads = 8;
  int len = 4096;
  int dim = 256;
  int reps = 3;
  int warmup = 1;
  uint64_t seed = 1;
  bool as_json = false;
};

Tensor random_normal(const Shape& shape, Rng& rng, bool requires_grad) {
  Tensor t = Tensor::empty(shape);
  nn::normal_(t, 0.0f, 1.0f, rng);
  if (requires_grad) t.set_requires_grad(true);
  return t;
}

void run_attention_bench(const AttentionBenchArgs& a) {
  const std::vector<std::string> kinds = {"sdpa", "additive", "mha"};
  if (std::find(kinds.begin(), kinds.end(), a.kind) == kinds.end())
    throw UsageError("unknown --kind '" + a.kind + "' (valid: sdpa, additive, mha)");
  if (a.batch < 1 || a.heads < 1 || a.len < 1 || a.dim < 1 || a.reps < 1 || a.warmup < 0)
    throw UsageError("--batch, --heads, --len, --dim, --reps must be >= 1 and --warmup >= 0");
  if (a.kind != "additive" && a.dim % a.heads != 0)
    throw UsageError("--dim " + std::to_string(a.dim) + " is not divisible by --heads " + std::to_string(a.heads));
  if (a.mask != "none" && a.mask != "causal" && a.mask != "padding")
    throw UsageError("unknown --mask '" + a.mask + "' (valid: none, causal, padding)");
  if (a.mask != "none" && a.kind != "sdpa") throw UsageError("--mask is for --kind sdpa");
  const int64_t B = a.batch, H = a.heads, T = a.len, D = a.dim, Dh = D / H;
  Rng rng(a.seed);

  // Inputs, weights and the output gradient exist before the baseline is read.
  std::function<Tensor()> forward;
  std::vector<Tensor> leaves;  // whose gradients are dropped after each backward
  std::unique_ptr<nn::MultiheadAttention> mha;
  Tensor seed_grad;
  double flops_forward = 0;
  if (a.kind == "sdpa") {
    Tensor q = random_normal({B, H, T, Dh}, rng, true), k = random_normal({B, H, T, Dh}, rng, true),
           v = random_normal({B, H, T, Dh}, rng, true);
    leaves = {q, k, v};
    SdpaOptions o;
    o.causal = a.mask == "causal";
    if (a.mask == "padding")  // every row's last quarter of keys is padding
      o.key_lengths =
          Tensor::from_vector(std::vector<int32_t>(static_cast<size_t>(B), static_cast<int32_t>(T - T / 4)), {B});
    forward = [q, k, v, o] { return sdpa(q, k, v, o).out; };
    seed_grad = random_normal({B, H, T, Dh}, rng, false);
    flops_forward = 4.0 * B * H * bench::sdpa_visible_pairs(a.mask, T) * Dh;  // q kᵀ and a v
  } else if (a.kind == "mha") {
    mha = std::make_unique<nn::MultiheadAttention>(
        nn::MultiheadAttentionOptions{.embed_dim = D, .num_heads = H, .seed = a.seed});
    Tensor x = random_normal({B, T, D}, rng, true);
    leaves = mha->parameters();
    leaves.push_back(x);
    nn::MultiheadAttention* m = mha.get();
    forward = [m, x] { return m->forward(x, x, x).out; };
    seed_grad = random_normal({B, T, D}, rng, false);
    flops_forward = 2.0 * B * T * D * 3 * D + 4.0 * B * T * T * D + 2.0 * B * T * D * D;
  } else {  // additive, A = E = D, T queries over S = T keys
    Tensor q = random_normal({B, T, D}, rng, true), kv = random_normal({B, T, D}, rng, true);
    Tensor w_q = random_normal({D, D}, rng, false), w_k = random_normal({D, D}, rng, false);
    Tensor bias = Tensor::zeros({D}), v = random_normal({D}, rng, false);
    for (Tensor* w : {&w_q, &w_k, &v}) {
      for (float& x : std::span<float>(w->f32(), static_cast<size_t>(w->numel()))) x *= 0.05f;
      w->set_requires_grad(true);
    }
    bias.set_requires_grad(true);
    Tensor lengths = Tensor::from_vector(std::vector<int32_t>(static_cast<size_t>(B), static_cast<int32_t>(T)), {B});
    leaves = {q, kv, w_q, w_k, bias, v};
    forward = [=] {
      const Tensor pk = additive_project_keys(kv, w_k);
      AdditiveOptions o;
      o.need_weights = false;
      return additive_attention(q, pk, kv, w_q, bias, v, lengths, o).context;
    };
    seed_grad = random_normal({B, T, D}, rng, false);
    // Projections, vᵀ tanh(...) over (T, S, A) and the context; the (T, S, A) tanh itself
    // is elementwise work, not counted.
    flops_forward = 2.0 * B * T * D * D * 2 + 2.0 * B * T * T * D + 2.0 * B * T * T * D;
  }

  const double baseline_rss = bench::proc_status_mb("VmRSS");
  const bool peak_reset = bench::reset_peak_rss();

  auto run_forward = [&] {
    autodiff::NoGradGuard no_grad;
    Tensor out = forward();
    (void)out;
  };
  auto run_forward_backward = [&] {
    Tensor out = forward();
    backward(out, seed_grad);
    for (Tensor& t : leaves) t.drop_grad();
  };
  std::vector<double> fwd_ms, fb_ms;
  for (int r = 0; r < a.warmup + a.reps; ++r) {
    auto t0 = Clock::now();
    run_forward();
    if (r >= a.warmup) fwd_ms.push_back(1e3 * seconds_since(t0));
  }
  for (int r = 0; r < a.warmup + a.reps; ++r) {
    auto t0 = Clock::now();
    run_forward_backward();
    if (r >= a.warmup) fb_ms.push_back(1e3 * seconds_since(t0));
  }
  const double peak_rss = bench::proc_status_mb("VmHWM");

  json j;
  j["impl"] = "attn";
  j["precision"] = precision_name(compute_precision());
  j["bench"] = "attention";
  j["kind"] = a.kind;
  j["forward_ms"] = median(fwd_ms);
  j["forward_backward_ms"] = median(fb_ms);
  j["baseline_rss_mb"] = baseline_rss;
  j["peak_rss_mb"] = peak_rss;
  j["growth_mb"] = peak_rss - baseline_rss;
  j["peak_reset"] = peak_reset;  // false: the peak covers the whole process
  j["forward_ms_all"] = fwd_ms;
  j["forward_backward_ms_all"] = fb_ms;
  j["forward_gflops_per_s"] = flops_forward / (median(fwd_ms) * 1e-3) / 1e9;
  j["forward_backward_gflops_per_s"] = 3 * flops_forward / (median(fb_ms) * 1e-3) / 1e9;
  j["reps"] = a.reps;
  j["warmup"] = a.warmup;
  j["threads"] = num_threads();
  j["config"] = {{"batch", a.batch}, {"heads", a.heads}, {"len", a.len}, {"dim", a.dim}, {"seed", a.seed}};
  if (a.kind == "sdpa") j["config"]["head_dim"] = Dh;
  if (a.kind == "sdpa") j["config"]["mask"] = a.mask;
  if (a.kind == "mha") j["config"]["head_dim"] = Dh;
  if (a.kind == "additive") j["note"] = "heads unused; T queries over S = T keys, A = E = D = dim";
  j["machine"] = train::machine_report().to_json();  // after the peak-RSS reading, as attn doctor
  print_json_or_text(a.as_json, j);
}

// ---- transformer --------------------------------------------------------------------------------

struct TransformerBenchArgs {
  int d_model = 256;
  int heads = 4;
  int ffn = 1024;
  int layers = 3;  // encoder and decoder each
  int vocab = 6000;
  int max_tokens = 2500;
  float label_smoothing = 0.1f;
  int steps = 10;
  int warmup = 2;
  int beam = 5;
  float length_penalty = 1.0f;
  int beam_sentences = 64;
  int beam_reps = 1;
  uint64_t seed = 1;
  bool as_json = false;
};

void run_transformer_bench(const TransformerBenchArgs& a) {
  models::TransformerConfig config;
  config.src_vocab = config.tgt_vocab = a.vocab;
  config.d_model = a.d_model;
  config.heads = a.heads;
  config.ffn = a.ffn;
  config.encoder_layers = config.decoder_layers = a.layers;
  config.norm_first = true;
  config.share_embeddings = true;
  config.tie_output = true;
  config.seed = a.seed;
  as_usage([&] {
    config.validate();
    if (a.steps < 1 || a.warmup < 0 || a.beam < 1 || a.beam_sentences < 1 || a.beam_reps < 1)
      throw ValueError("--steps, --beam, --beam-sentences, --beam-reps must be >= 1 and --warmup >= 0");
    if (a.vocab < 4)
      throw ValueError("--vocab must be >= 4 (PAD, BOS, EOS and a token), got " + std::to_string(a.vocab));
    if (a.max_tokens < 2 * 25 + 1)
      throw ValueError("--max-tokens must hold one pair of the longest synthetic lengths (>= 51), got " +
                       std::to_string(a.max_tokens));
    if (!(a.label_smoothing >= 0.0f && a.label_smoothing < 1.0f))
      throw ValueError("--label-smoothing must be in [0, 1), got " + std::to_string(a.label_smoothing));
    if (!(a.length_penalty >= 0.0f) || !std::isfinite(a.length_penalty))
      throw ValueError("--length-penalty must be finite and >= 0, got " + std::to_string(a.length_penalty));
  });
  models::TransformerSeq2Seq model(config);
  train::Adam adam(model.parameters(), {.lr = 1e-3f});

  // A pool of pairs cut into budget batches; the timed steps take batches spread evenly over
  // the length-sorted list, so short and long batches both appear. Made before timing starts.
  const int n_batches = a.warmup + a.steps;
  const std::vector<data::EncodedPair> pairs = bench::multi30k_like_pairs(4000, a.vocab, a.seed);
  const std::vector<std::vector<size_t>> all = bench::budget_batches(pairs, a.max_tokens);
  std::vector<data::Batch> batches;
  for (int i = 0; i < n_batches; ++i)
    batches.push_back(data::make_pair_batch(pairs, all[static_cast<size_t>(i) * all.size() / n_batches]));

  // Beam decoding first, on the untrained model, of the first beam_sentences pairs (mixed
  // lengths) for exactly longest target + 1 steps (the EOS a trained model ends with): EOS's
  // tied embedding row is zeroed, so its logit is 0 against N(0, 1) ones and no hypothesis
  // finishes early, and both sides do the same work (PyTorch's peer zeroes the same row).
  // Output tokens: sentences x steps. One untimed decode first.
  {
    Tensor& w = model.embedding->weight;
    std::fill_n(w.f32() + data::kEos * w.dim(1), w.dim(1), 0.0f);
  }
  model.eval();
  std::vector<size_t> first(static_cast<size_t>(a.beam_sentences));
  for (size_t i = 0; i < first.size(); ++i) first[i] = i;
  const data::Batch beam_batch = data::make_pair_batch(pairs, first);
  const models::BeamOptions beam_options{
      .width = a.beam, .length_penalty = a.length_penalty, .max_len = static_cast<int>(beam_batch.tgt_in.dim(1))};
  double beam_seconds = 0, beam_tokens = 0;
  for (int r = 0; r < 1 + a.beam_reps; ++r) {
    const auto t0 = Clock::now();
    const models::DecodeResult d = model.beam(beam_batch.src, beam_batch.src_lengths, beam_options);
    const double s = seconds_since(t0);
    if (r == 0) continue;
    beam_seconds += s;
    for (const auto& row : d.tokens) beam_tokens += static_cast<double>(row.size());
  }

  double train_seconds = 0, train_cpu = 0, train_flops = 0, target_tokens = 0, padded_tokens = 0, sentences = 0,
         last_loss = 0;
  model.train();
  for (int i = 0; i < n_batches; ++i) {
    const data::Batch& batch = batches[static_cast<size_t>(i)];
    const auto t0 = Clock::now();
    const double cpu0 = process_cpu_seconds();
    Tensor loss = model.loss(batch, a.label_smoothing);
    last_loss = loss.item();
    backward(loss);
    train::clip_grad_norm(model.parameters(), 1.0f);
    adam.step();
    adam.zero_grad();
    if (i < a.warmup) continue;
    train_seconds += seconds_since(t0);
    train_cpu += process_cpu_seconds() - cpu0;
    const double B = batch.src.dim(0), S = batch.src.dim(1), T = batch.tgt_in.dim(1);
    train_flops += 3 * bench::transformer_forward_flops(B, S, T, a.d_model, a.ffn, a.vocab, a.layers);
    for (int64_t b = 0; b < batch.tgt_lengths.numel(); ++b) target_tokens += batch.tgt_lengths.i32()[b];
    padded_tokens += B * (S + T);
    sentences += B;
  }

  json j;
  j["impl"] = "attn";
  j["precision"] = precision_name(compute_precision());
  j["bench"] = "transformer";
  j["train_tokens_per_s"] = target_tokens / train_seconds;
  j["train_padded_tokens_per_s"] = padded_tokens / train_seconds;
  j["train_sentences_per_s"] = sentences / train_seconds;
  j["train_cpu_seconds"] = train_cpu;  // CPU time of the timed steps, all threads
  j["train_tokens_per_cpu_s"] = target_tokens / train_cpu;
  j["gflops_per_s"] = train_flops / train_seconds / 1e9;
  j["beam_sentences_per_s"] = a.beam_sentences * a.beam_reps / beam_seconds;
  j["beam_tokens_per_s"] = beam_tokens / beam_seconds;
  j["beam_tokens_per_sentence"] = beam_tokens / (a.beam_sentences * a.beam_reps);
  j["train_flops"] = train_flops;
  j["target_tokens"] = target_tokens;
  j["steps"] = a.steps;
  j["warmup"] = a.warmup;
  j["seconds"] = train_seconds;
  j["step_ms"] = 1e3 * train_seconds / a.steps;
  j["beam_seconds"] = beam_seconds;
  j["final_loss"] = last_loss;
  j["threads"] = num_threads();
  j["parameters"] = model.num_parameters();
  j["config"] = {{"d_model", a.d_model},
                 {"heads", a.heads},
                 {"ffn", a.ffn},
                 {"layers", a.layers},
                 {"vocab", a.vocab},
                 {"max_tokens", a.max_tokens},
                 {"label_smoothing", a.label_smoothing},
                 {"beam", a.beam},
                 {"length_penalty", a.length_penalty},
                 {"beam_sentences", a.beam_sentences},
                 {"beam_max_len", beam_options.max_len},
                 {"norm_first", true},
                 {"tied_embeddings", true},
                 {"dropout", config.dropout},
                 {"seed", a.seed}};
  print_json_or_text(a.as_json, j);
}

// ---- gemm -----------------------------------------------------------------------------------------

struct GemmBenchArgs {
  double seconds = 0.5;  // per shape, after one untimed call
  bool as_json = false;
};

// The products of `bench transformer` (Multi30k recipe: ~1250 tokens a side, d 256, ffn 1024,
// vocabulary 6000) and `bench seq2seq` (batch 64, emb 64, hidden 256, source 40), forward
// (x Wᵀ: op(B) transposed) and the two backward products of the FFN's first layer.
struct GemmShape {
  const char* name;
  bool transpose_a, transpose_b;
  int64_t m, n, k;
};
constexpr GemmShape kGemmShapes[] = {
    {"transformer qkv projection x Wt", false, true, 1250, 768, 256},
    {"transformer ffn in x Wt", false, true, 1250, 1024, 256},
    {"transformer ffn out x Wt", false, true, 1250, 256, 1024},
    {"transformer generator x Et", false, true, 1250, 6000, 256},
    {"transformer ffn in dX = dY W", false, false, 1250, 256, 1024},
    {"transformer ffn in dW = dYt X", true, false, 1024, 256, 1250},
    {"rnn encoder input gates x Wt", false, true, 2560, 768, 64},
    {"rnn decoder step hidden gates h Wt", false, true, 64, 768, 256},
    {"rnn decoder step attention query h Wt", false, true, 64, 256, 256},
    {"peak 2048^3", false, false, 2048, 2048, 2048},
};

void run_gemm_bench(const GemmBenchArgs& a) {
  Rng rng(1);
  json rows = json::array();
  for (const GemmShape& g : kGemmShapes) {
    std::vector<float> A(static_cast<size_t>(g.m * g.k)), B(static_cast<size_t>(g.k * g.n)),
        C(static_cast<size_t>(g.m * g.n));
    for (float& x : A) x = rng.uniform() - 0.5f;
    for (float& x : B) x = rng.uniform() - 0.5f;
    const int64_t lda = g.transpose_a ? g.m : g.k, ldb = g.transpose_b ? g.k : g.n;
    auto call = [&] {
      blas_gemm(g.transpose_a, g.transpose_b, g.m, g.n, g.k, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, C.data(), g.n);
    };
    call();  // untimed: the bf16 primitive is built here
    int64_t calls = 0;
    const auto start = Clock::now();
    do {
      call();
      ++calls;
    } while (seconds_since(start) < a.seconds);
    const double seconds = seconds_since(start);
    json row = {
        {"shape", g.name},
        {"m", g.m},
        {"n", g.n},
        {"k", g.k},
        {"transpose_a", g.transpose_a},
        {"transpose_b", g.transpose_b},
        {"calls", calls},
        {"gflops_per_s", 2.0 * static_cast<double>(g.m * g.n * g.k) * static_cast<double>(calls) / seconds / 1e9}};
    if (compute_precision() == Precision::bf16)
      row["implementation"] = gemm_bf16_implementation(g.transpose_a, g.transpose_b, g.m, g.n, g.k);
    rows.push_back(row);
  }
  json j;
  j["impl"] = "attn";
  j["precision"] = precision_name(compute_precision());
  j["bench"] = "gemm";
  j["threads"] = num_threads();
  j["seconds_per_shape"] = a.seconds;
  j["shapes"] = rows;
  print_json_or_text(a.as_json, j);
}

}  // namespace

void add_bench_online_command(CLI::App* bench);  // cmd_bench_online.cpp

void add_bench_command(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks (the same JSON as bench/torch_peer.py)");
  bench->require_subcommand(1);
  add_bench_online_command(bench);

  auto s = std::make_shared<Seq2SeqBenchArgs>();
  CLI::App* seq = bench->add_subcommand("seq2seq", "Seq2seq training and greedy decoding throughput");
  seq->add_option("--attention", s->attention, "none | bahdanau | luong")->capture_default_str();
  seq->add_option("--batch", s->batch, "Batch size")->capture_default_str();
  seq->add_option("--emb", s->emb, "Embedding size")->capture_default_str();
  seq->add_option("--hidden", s->hidden, "GRU hidden size (= attention size)")->capture_default_str();
  seq->add_option("--vocab", s->vocab, "Vocabulary (the copy task's 32)")->capture_default_str();
  seq->add_option("--len", s->len, "Source length (target: len + 1 with EOS)")->capture_default_str();
  seq->add_option("--steps", s->steps, "Timed training steps")->capture_default_str();
  seq->add_option("--warmup", s->warmup, "Untimed training steps first")->capture_default_str();
  seq->add_option("--greedy-reps", s->greedy_reps, "Timed greedy decodes (after one untimed)")->capture_default_str();
  seq->add_option("--seed", s->seed, "Seed")->capture_default_str()->check(integer_at_least(0));
  seq->add_flag("--json", s->as_json, "One line of JSON");
  add_threads_option(seq);
  add_precision_option(seq);
  seq->callback([s] { run_seq2seq_bench(*s); });

  auto t = std::make_shared<AttentionBenchArgs>();
  CLI::App* att = bench->add_subcommand("attention", "One attention call: forward and forward+backward time, RSS");
  att->add_option("--kind", t->kind, "sdpa | additive | mha")->capture_default_str();
  att->add_option("--mask", t->mask, "sdpa: none | causal | padding (last quarter of keys)")->capture_default_str();
  att->add_option("--batch", t->batch, "Batch size")->capture_default_str();
  att->add_option("--heads", t->heads, "Heads (sdpa, mha)")->capture_default_str();
  att->add_option("--len", t->len, "T = S")->capture_default_str();
  att->add_option("--dim", t->dim, "Model size (sdpa: Dh = dim / heads)")->capture_default_str();
  att->add_option("--reps", t->reps, "Timed repetitions (median reported)")->capture_default_str();
  att->add_option("--warmup", t->warmup, "Untimed repetitions first")->capture_default_str();
  att->add_option("--seed", t->seed, "Seed")->capture_default_str()->check(integer_at_least(0));
  att->add_flag("--json", t->as_json, "One line of JSON");
  add_threads_option(att);
  add_precision_option(att);
  att->callback([t] { run_attention_bench(*t); });

  auto m = std::make_shared<TransformerBenchArgs>();
  CLI::App* tf = bench->add_subcommand("transformer",
                                       "Transformer (Multi30k recipe shapes) training and beam decoding throughput");
  tf->add_option("--d-model", m->d_model, "Model size")->capture_default_str();
  tf->add_option("--heads", m->heads, "Attention heads")->capture_default_str();
  tf->add_option("--ffn", m->ffn, "Feed-forward width")->capture_default_str();
  tf->add_option("--layers", m->layers, "Encoder and decoder layers (each)")->capture_default_str();
  tf->add_option("--vocab", m->vocab, "Shared vocabulary (tied embeddings)")->capture_default_str();
  tf->add_option("--max-tokens", m->max_tokens, "Padded source+target tokens per batch")->capture_default_str();
  tf->add_option("--label-smoothing", m->label_smoothing, "Label smoothing")->capture_default_str();
  tf->add_option("--steps", m->steps, "Timed training steps")->capture_default_str();
  tf->add_option("--warmup", m->warmup, "Untimed training steps first")->capture_default_str();
  tf->add_option("--beam", m->beam, "Beam width")->capture_default_str();
  tf->add_option("--length-penalty", m->length_penalty, "GNMT length penalty alpha")->capture_default_str();
  tf->add_option("--beam-sentences", m->beam_sentences, "Sentences per beam decode")->capture_default_str();
  tf->add_option("--beam-reps", m->beam_reps, "Timed beam decodes (after one untimed)")->capture_default_str();
  tf->add_option("--seed", m->seed, "Seed")->capture_default_str()->check(integer_at_least(0));
  tf->add_flag("--json", m->as_json, "One line of JSON");
  add_threads_option(tf);
  add_precision_option(tf);
  tf->callback([m] { run_transformer_bench(*m); });

  auto g = std::make_shared<GemmBenchArgs>();
  CLI::App* gemm =
      bench->add_subcommand("gemm", "kernels::gemm GFLOP/s at the Transformer's and the RNN's shapes, and 2048^3");
  gemm->add_option("--seconds", g->seconds, "Timed seconds per shape")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  gemm->add_flag("--json", g->as_json, "One line of JSON");
  add_threads_option(gemm);
  add_precision_option(gemm);
  gemm->callback([g] { run_gemm_bench(*g); });
}

ATTN_REGISTER_COMMAND(90, add_bench_command);

}  // namespace attn::cli
