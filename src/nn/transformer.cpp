#include "attn/nn/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>

#include "attn/autodiff/tape.h"
#include "attn/nn/init.h"
#include "attn/number_format.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/select.h"
#include "attn/parallel.h"
#include "attn/shape.h"

namespace attn::nn {
const char* to_string(FfnActivation activation) { return activation == FfnActivation::gelu ? "gelu" : "relu"; }
FfnActivation parse_ffn_activation(const std::string& name, const std::string& who) {
  if (name == "relu") return FfnActivation::relu;
  if (name == "gelu") return FfnActivation::gelu;
  throw ValueError(who + ": unknown activation '" + name + "' (valid: relu, gelu)");
}

namespace {

std::string str(int64_t x) { return std::to_string(x); }

// Independent streams from one seed: stream k of `seed`.
uint64_t sub_seed(uint64_t seed, uint64_t k) { return splitmix64(seed ^ splitmix64(k + 0x7472616e73666f72ull)); }

// Sub-seeds inside a layer.
enum : uint64_t { kSelfAttn = 1, kCrossAttn, kLinear, kDropout, kDropout1, kDropout2, kDropout3, kLayer0 = 100 };

const TransformerLayerOptions& validated(const TransformerLayerOptions& o) {
  o.validate();
  return o;
}

TransformerLayerOptions layer_options(const TransformerLayerOptions& o, int64_t index) {
  TransformerLayerOptions l = o;
  l.seed = sub_seed(o.seed, kLayer0 + static_cast<uint64_t>(index));
  return l;
}

MultiheadAttentionOptions mha_options(const TransformerLayerOptions& o, uint64_t stream) {
  MultiheadAttentionOptions m;
  m.embed_dim = o.d_model;
  m.num_heads = o.heads;
  m.dropout = o.dropout;
  m.seed = sub_seed(o.seed, stream);
  m.normalizer = o.normalizer;
  return m;
}

Tensor activate(const Tensor& x, FfnActivation activation) {
  return activation == FfnActivation::gelu ? gelu(x) : relu(x);
}

// One residual sublayer: x + f(norm(x)) (pre-LN) or norm(x + f(x)) (post-LN).
template <typename F>
Tensor sublayer(bool norm_first, LayerNorm& norm, const Tensor& x, F&& f) {
  return norm_first ? add(x, f(norm.forward(x))) : norm.forward(add(x, f(x)));
}

// Checks key_lengths int32 (B) with values in [0, S] against B, S bound in `c`.
void check_lengths(ShapeContract& c, const char* arg, const Tensor& lengths) {
  if (!lengths.defined()) return;
  c.check(arg, lengths, {"B"}, DType::i32);
  check_length_values(c.op(), arg, lengths, 0, "S", c["S"]);
}

// Checks a layer cache's self keys/values (B, H, t, Dh) (either undefined before the first
// step) against B bound in `c`; returns t.
// rows (when defined, int32 (B)): the cache still holds the previous batch (P rows), to be
// gathered by rows while appending.
int64_t check_self_cache(ShapeContract& c, const LayerKvCache& cache, int64_t H, int64_t Dh,
                         const Tensor& rows = Tensor()) {
  if (cache.self_k.defined() != cache.self_v.defined())
    throw ValueError(c.op() + ": cache.self_k and cache.self_v must both be defined or both undefined");
  if (!cache.self_k.defined()) return 0;
  c.bind("H", H);
  c.bind("Dh", Dh);
  const char* batch = rows.defined() ? "P" : "B";
  c.check("cache.self_k", cache.self_k, {batch, "H", "t", "Dh"});
  c.check("cache.self_v", cache.self_v, {batch, "H", "t", "Dh"});
  return c["t"];
}

// cache (P, H, t, Dh) or undefined (t = 0), x (B, H, 1, Dh) → (B, H, t + 1, Dh): the time-axis
// concatenation of one new step, batch row b continuing cache row rows[b] (rows int32 (B) with
// values in [0, P), already checked; undefined: row b, P = B). One copy for a beam's reorder
// and the append. Not recorded (the step path runs without gradients).
Tensor append_step(const Tensor& cache, const Tensor& x, const Tensor& rows) {
  const int64_t B = x.dim(0), H = x.dim(1), Dh = x.dim(3);
  const int64_t t = cache.defined() ? cache.dim(2) : 0;
  Tensor y = Tensor::empty({B, H, t + 1, Dh});
  const float* src = cache.defined() ? cache.f32() : nullptr;
  const int32_t* from = rows.defined() ? rows.i32() : nullptr;
  const float* nx = x.f32();
  float* dst = y.f32();
  const int64_t row = (t + 1) * Dh;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, row));
  parallel_for(0, B * H, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t s = from ? from[r / H] * H + r % H : r;  // the cache row (b', h) continued
      if (t > 0) std::memcpy(dst + r * row, src + s * t * Dh, sizeof(float) * t * Dh);
      std::memcpy(dst + r * row + t * Dh, nx + r * Dh, sizeof(float) * Dh);
    }
  });
  return y;
}

// Causal self-attention of one new position h (B, 1, D) over the cached keys and values plus
// its own: appends k, v to the cache (the cache's rows `rows` when defined), attends → (B, 1, D).
// weights (when given) receives self_weights.
Tensor self_attention_step(MultiheadAttention& mha, const Tensor& h, LayerKvCache& cache, LayerAttention* weights,
                           const Tensor& rows = Tensor()) {
  std::vector<Tensor> qkv = mha.project_qkv(h);  // 3 × (B, H, 1, Dh)
  cache.self_k = append_step(cache.self_k, qkv[1], rows);
  cache.self_v = append_step(cache.self_v, qkv[2], rows);
  MhaCallOptions call;
  call.need_weights = weights != nullptr;
  MhaResult r = mha.attend_heads(qkv[0], cache.self_k, cache.self_v, call);  // one query sees every cached key
  if (weights != nullptr) weights->self_weights = r.weights;                 // (B, H, 1, t + 1)
  return r.out;
}

// The cross weights of a grouped step, w (M, H, group, S), as the decoder rows' (M·group, H, 1, S).
Tensor group_weights(const Tensor& w, int64_t group) {
  if (group == 1) return w;
  const int64_t M = w.dim(0), H = w.dim(1), S = w.dim(3);
  Tensor out = Tensor::empty({M * group, H, 1, S});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t k = 0; k < group; ++k)
        std::memcpy(out.f32() + ((m * group + k) * H + h) * S, w.f32() + ((m * H + h) * group + k) * S,
                    sizeof(float) * S);
  return out;
}

// Checks x (B, 1, D) of a step.
void check_step_input(ShapeContract& c, const Tensor& x, int64_t D) {
  c.bind("D", D);
  c.check("x", x, {"B", "1", "D"});
}

}  // namespace

void TransformerLayerOptions::validate() const {
  const std::string who = "TransformerLayerOptions";
  if (d_model <= 0) throw ValueError(who + ": d_model must be positive, got " + str(d_model));
  if (heads <= 0) throw ValueError(who + ": heads must be positive, got " + str(heads));
  if (d_model % heads != 0)
    throw ValueError(who + ": d_model=" + str(d_model) + " is not divisible by heads=" + str(heads));
  if (ffn <= 0) throw ValueError(who + ": ffn must be positive, got " + str(ffn));
  if (!(dropout >= 0.0f && dropout < 1.0f))
    throw ValueError(who + ": dropout must be in [0, 1), got " + format_number(dropout));
  if (!(eps > 0.0f) || !std::isfinite(eps))
    throw ValueError(who + ": eps must be a finite value > 0, got " + format_number(eps));
}

// ---- KvCache ----------------------------------------------------------------------------------------

namespace {

// The self keys and values of every layer: row i becomes row rows[i] (checked by the caller).
void gather_self_rows(std::vector<LayerKvCache>& layers, const Tensor& rows) {
  autodiff::NoGradGuard no_grad;
  for (LayerKvCache& l : layers)
    for (Tensor* t : {&l.self_k, &l.self_v})
      if (t->defined()) *t = gather_rows(*t, rows);  // (B', ...)
}

}  // namespace

void KvCache::select_rows(const Tensor& rows) {
  select_memory_rows(rows);
  gather_self_rows(layers, rows);
}

void KvCache::reorder(const Tensor& index) {
  select_memory_rows(index);
  pending_rows = index;
  if (steps == 0) gather_pending();  // nothing to append to yet
}

void KvCache::gather_pending() {
  if (!pending_rows.defined()) return;
  gather_self_rows(layers, pending_rows);
  pending_rows = Tensor();
}

void KvCache::select_memory_rows(const Tensor& rows) {
  gather_pending();
  if (!rows.defined() || rows.dtype() != DType::i32 || rows.rank() != 1)
    throw ShapeError("KvCache::select_rows: 'rows' expected int32 (B'), got " +
                     (rows.defined() ? rows.shape().str() + " " + dtype_name(rows.dtype()) : std::string("undefined")));
  // B from whatever the cache holds (nothing before the first step of a decoder started
  // without memory_lengths: then any row list is accepted and nothing changes). Memory rows
  // count `group` decoder rows each.
  int64_t B = memory_lengths.defined() ? memory_lengths.numel() * group : -1;
  for (const LayerKvCache& l : layers)
    for (const Tensor* t : {&l.self_k, &l.self_v, &l.cross_k, &l.cross_v})
      if (t->defined()) {
        const int64_t rows_here = t->dim(0) * (t == &l.self_k || t == &l.self_v ? 1 : group);
        if (B >= 0 && rows_here != B)
          throw ShapeError("KvCache::select_rows: the cache is inconsistent: batch " + str(rows_here) + " next to " +
                           str(B));
        B = rows_here;
      }
  if (B < 0) return;
  const int64_t m = rows.numel();
  const int32_t* r = rows.i32();
  for (int64_t i = 0; i < m; ++i)
    if (r[i] < 0 || r[i] >= B)
      throw ValueError("KvCache::select_rows: row " + str(r[i]) + " at position " + str(i) +
                       " is out of range [0, B=" + str(B) + ")");
  if (m % group != 0)
    throw ValueError("KvCache::select_rows: " + str(m) + " rows are not whole groups of " + str(group));
  // The memory row of each kept group; identity (nothing to gather) when no group moved.
  Tensor memory_rows = Tensor::empty({m / group}, DType::i32);
  bool same_memory = m == B;
  for (int64_t g = 0; g < m / group; ++g) {
    const int32_t from = r[g * group] / static_cast<int32_t>(group);
    for (int64_t i = g * group; i < (g + 1) * group; ++i)
      if (r[i] / group != from)
        throw ValueError("KvCache::select_rows: row " + str(r[i]) + " at position " + str(i) +
                         " is not of memory row " + str(from) + " (groups of " + str(group) + ")");
    memory_rows.i32()[g] = from;
    same_memory = same_memory && from == g;
  }
  autodiff::NoGradGuard no_grad;
  for (LayerKvCache& l : layers) {
    if (same_memory) continue;
    for (Tensor* t : {&l.cross_k, &l.cross_v})
      if (t->defined()) *t = gather_rows(*t, memory_rows);  // (B' / group, ...)
  }
  if (memory_lengths.defined() && !same_memory) {
    Tensor out = Tensor::empty({m / group}, DType::i32);
    for (int64_t g = 0; g < m / group; ++g) out.i32()[g] = memory_lengths.i32()[memory_rows.i32()[g]];
    memory_lengths = out;
  }
}

// ---- TransformerEncoderLayer ----------------------------------------------------------------------

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerLayerOptions& options)
    : options_(validated(options)),
      rng_(sub_seed(options.seed, kLinear)),
      self_attn(mha_options(options_, kSelfAttn)),
      linear1(options_.d_model, options_.ffn, rng_),
      linear2(options_.ffn, options_.d_model, rng_),
      norm1(options_.d_model, options_.eps),
      norm2(options_.d_model, options_.eps),
      dropout_(options_.dropout, sub_seed(options_.seed, kDropout)),
      dropout1_(options_.dropout, sub_seed(options_.seed, kDropout1)),
      dropout2_(options_.dropout, sub_seed(options_.seed, kDropout2)) {
  // PyTorch's registration order (state_dict order); dropouts have no parameters.
  register_module("self_attn", self_attn);
  register_module("linear1", linear1);
  register_module("dropout", dropout_);
  register_module("linear2", linear2);
  register_module("norm1", norm1);
  register_module("norm2", norm2);
  register_module("dropout1", dropout1_);
  register_module("dropout2", dropout2_);
}

Tensor TransformerEncoderLayer::run(const Tensor& x, const Tensor& key_lengths, bool causal, LayerAttention* weights) {
  ShapeContract c(causal ? "transformer_encoder_layer (causal)" : "transformer_encoder_layer");
  c.bind("D", options_.d_model);
  c.check("x", x, {"B", "S", "D"});
  check_lengths(c, "key_lengths", key_lengths);

  MhaCallOptions call;
  call.key_lengths = key_lengths;
  call.causal = causal;
  call.need_weights = weights != nullptr;
  auto sa = [&](const Tensor& h) {  // Drop(SelfAttn(h)), h passed as query, key and value (one GEMM)
    MhaResult r = self_attn.forward(h, h, h, call);
    if (weights != nullptr) weights->self_weights = r.weights;
    return dropout1_.forward(r.out);
  };
  const Tensor h = sublayer(options_.norm_first, norm1, x, sa);
  return sublayer(options_.norm_first, norm2, h, [this](const Tensor& y) { return feed_forward(y); });
}

// Drop(linear2(Drop(act(linear1(h))))): (B, S, D) → (B, S, D)
Tensor TransformerEncoderLayer::feed_forward(const Tensor& h) {
  return dropout2_.forward(linear2.forward(dropout_.forward(activate(linear1.forward(h), options_.activation))));
}

Tensor TransformerEncoderLayer::forward(const Tensor& x, const Tensor& key_lengths, LayerAttention* weights) {
  return run(x, key_lengths, false, weights);
}

Tensor TransformerEncoderLayer::forward_causal(const Tensor& x, const Tensor& key_lengths, LayerAttention* weights) {
  return run(x, key_lengths, true, weights);
}

Tensor TransformerEncoderLayer::step(const Tensor& x, LayerKvCache& cache, LayerAttention* weights) {
  autodiff::NoGradGuard no_grad;
  ShapeContract c("transformer_encoder_layer.step");
  check_step_input(c, x, options_.d_model);
  check_self_cache(c, cache, options_.heads, options_.d_model / options_.heads);

  auto sa = [&](const Tensor& h) { return dropout1_.forward(self_attention_step(self_attn, h, cache, weights)); };
  const Tensor h = sublayer(options_.norm_first, norm1, x, sa);
  return sublayer(options_.norm_first, norm2, h, [this](const Tensor& y) { return feed_forward(y); });
}

// ---- TransformerDecoderLayer ----------------------------------------------------------------------

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerLayerOptions& options)
    : options_(validated(options)),
      rng_(sub_seed(options.seed, kLinear)),
      self_attn(mha_options(options_, kSelfAttn)),
      multihead_attn(mha_options(options_, kCrossAttn)),
      linear1(options_.d_model, options_.ffn, rng_),
      linear2(options_.ffn, options_.d_model, rng_),
      norm1(options_.d_model, options_.eps),
      norm2(options_.d_model, options_.eps),
      norm3(options_.d_model, options_.eps),
      dropout_(options_.dropout, sub_seed(options_.seed, kDropout)),
      dropout1_(options_.dropout, sub_seed(options_.seed, kDropout1)),
      dropout2_(options_.dropout, sub_seed(options_.seed, kDropout2)),
      dropout3_(options_.dropout, sub_seed(options_.seed, kDropout3)) {
  register_module("self_attn", self_attn);
  register_module("multihead_attn", multihead_attn);
  register_module("linear1", linear1);
  register_module("dropout", dropout_);
  register_module("linear2", linear2);
  register_module("norm1", norm1);
  register_module("norm2", norm2);
  register_module("norm3", norm3);
  register_module("dropout1", dropout1_);
  register_module("dropout2", dropout2_);
  register_module("dropout3", dropout3_);
}

// Drop(linear2(Drop(act(linear1(h))))): (B, T, D) → (B, T, D)
Tensor TransformerDecoderLayer::feed_forward(const Tensor& h) {
  return dropout3_.forward(linear2.forward(dropout_.forward(activate(linear1.forward(h), options_.activation))));
}

Tensor TransformerDecoderLayer::forward(const Tensor& x, const Tensor& memory, const Tensor& memory_lengths,
                                        LayerAttention* weights, bool copy) {
  ShapeContract c("transformer_decoder_layer");
  c.bind("D", options_.d_model);
  c.check("x", x, {"B", "T", "D"});
  c.check("memory", memory, {"B", "S", "D"});
  check_lengths(c, "memory_lengths", memory_lengths);

  MhaCallOptions self_call;
  self_call.causal = true;
  self_call.need_weights = weights != nullptr && !copy;
  MhaCallOptions cross_call;
  cross_call.key_lengths = memory_lengths;
  cross_call.need_weights = weights != nullptr;
  cross_call.weights_before_dropout = copy;
  auto sa = [&](const Tensor& h) {
    MhaResult r = self_attn.forward(h, h, h, self_call);
    if (self_call.need_weights) weights->self_weights = r.weights;
    return dropout1_.forward(r.out);
  };
  auto ca = [&](const Tensor& h) {  // memory as key and value: one GEMM for both
    MhaResult r = multihead_attn.forward(h, memory, memory, cross_call);
    if (weights != nullptr) {
      weights->cross_weights = r.weights;
      weights->cross_output = r.out;
    }
    return dropout2_.forward(r.out);
  };
  Tensor h = sublayer(options_.norm_first, norm1, x, sa);
  h = sublayer(options_.norm_first, norm2, h, ca);
  return sublayer(options_.norm_first, norm3, h, [this](const Tensor& y) { return feed_forward(y); });
}

Tensor TransformerDecoderLayer::step(const Tensor& x, const Tensor& memory, LayerKvCache& cache,
                                     const Tensor& memory_lengths, LayerAttention* weights, bool self_weights,
                                     int64_t group, const Tensor& rows) {
  autodiff::NoGradGuard no_grad;
  const int64_t D = options_.d_model, H = options_.heads, Dh = D / H;
  ShapeContract c("transformer_decoder_layer.step");
  check_step_input(c, x, D);
  check_self_cache(c, cache, H, Dh, rows);
  if (rows.defined()) {
    c.check("rows", rows, {"B"}, DType::i32);
    const int64_t P = cache.self_k.defined() ? c["P"] : 0;
    for (int64_t i = 0; i < rows.numel(); ++i)
      if (rows.i32()[i] < 0 || rows.i32()[i] >= P)
        throw ValueError(c.op() + ": row " + str(rows.i32()[i]) + " at position " + str(i) +
                         " is out of range [0, P=" + str(P) + ")");
  }
  if (group < 1 || c["B"] % group != 0)
    throw ValueError(c.op() + ": group " + str(group) + " does not divide the batch B=" + str(c["B"]));
  const int64_t B = c["B"], M = B / group;  // decoder rows, memory rows
  c.bind("M", M);
  if (cache.cross_k.defined() != cache.cross_v.defined())
    throw ValueError(c.op() + ": cache.cross_k and cache.cross_v must both be defined or both undefined");
  if (!cache.cross_k.defined()) {
    if (!memory.defined())
      throw ValueError(c.op() + ": 'memory' is needed on the first step (the cache holds no cross keys yet)");
    c.check("memory", memory, {"M", "S", "D"});
    std::tie(cache.cross_k, cache.cross_v) = multihead_attn.project_kv(memory, memory);  // (M, H, S, Dh) each
  }
  c.bind("H", H);
  c.bind("Dh", Dh);
  c.check("cache.cross_k", cache.cross_k, {"M", "H", "S", "Dh"});
  c.check("cache.cross_v", cache.cross_v, {"M", "H", "S", "Dh"});
  if (memory_lengths.defined()) {
    c.check("memory_lengths", memory_lengths, {"M"}, DType::i32);
    check_length_values(c.op(), "memory_lengths", memory_lengths, 0, "S", c["S"]);
  }

  MhaCallOptions cross_call;
  cross_call.key_lengths = memory_lengths;
  cross_call.need_weights = weights != nullptr;
  auto sa = [&](const Tensor& h) {
    return dropout1_.forward(self_attention_step(self_attn, h, cache, self_weights ? weights : nullptr, rows));
  };
  // A memory row's `group` decoder rows attend as that many queries: h (B, 1, D) as (M, group, D).
  auto ca = [&](const Tensor& h) {
    MhaResult r = multihead_attn.attend_projected(h.reshape({M, group, D}), cache.cross_k, cache.cross_v, cross_call);
    if (weights != nullptr) {
      weights->cross_weights = group_weights(r.weights, group);  // (B, H, 1, S)
      weights->cross_output = r.out.reshape({B, 1, D});          // (B, 1, D)
    }
    return dropout2_.forward(r.out.reshape({B, 1, D}));
  };
  Tensor h = sublayer(options_.norm_first, norm1, x, sa);
  h = sublayer(options_.norm_first, norm2, h, ca);
  return sublayer(options_.norm_first, norm3, h, [this](const Tensor& y) { return feed_forward(y); });
}

// ---- Stacks -----------------------------------------------------------------------------------------

namespace {

// The shared constructor of the three stacks: `n` layers registered as "layers.<i>", and for
// pre-LN the final LayerNorm as "norm" (torch.nn.TransformerEncoder/Decoder's `norm`).
template <typename Layer>
void build_stack(const char* who, const TransformerLayerOptions& options, int n, Module& stack, Module& layer_list,
                 std::vector<std::unique_ptr<Layer>>& layers, std::unique_ptr<LayerNorm>& norm) {
  options.validate();
  if (n < 1) throw ValueError(std::string(who) + ": layers must be >= 1, got " + str(n));
  for (int i = 0; i < n; ++i) {
    layers.push_back(std::make_unique<Layer>(layer_options(options, i)));
    layer_list.register_module(str(i), *layers.back());
  }
  stack.register_module("layers", layer_list);
  if (options.norm_first) {
    norm = std::make_unique<LayerNorm>(options.d_model, options.eps);
    stack.register_module("norm", *norm);
  }
}

// A stack's pass over x: h = layer_forward(layer i, h, i, layer i's slot of *weights or nullptr)
// for each layer, then the final norm (pre-norm stacks). *weights gets one slot a layer.
template <typename Layer, class LayerForward>
Tensor run_stack(const std::vector<std::unique_ptr<Layer>>& layers, const std::unique_ptr<LayerNorm>& norm,
                 const Tensor& x, std::vector<LayerAttention>* weights, LayerForward&& layer_forward) {
  if (weights != nullptr) weights->assign(layers.size(), LayerAttention{});
  Tensor h = x;
  for (size_t i = 0; i < layers.size(); ++i)
    h = layer_forward(*layers[i], h, i, weights != nullptr ? &(*weights)[i] : nullptr);
  return norm ? norm->forward(h) : h;
}

}  // namespace

TransformerEncoder::TransformerEncoder(const TransformerLayerOptions& options, int n) {
  build_stack("TransformerEncoder", options, n, *this, layer_list_, layers, norm);
}

Tensor TransformerEncoder::forward(const Tensor& x, const Tensor& key_lengths, std::vector<LayerAttention>* weights) {
  return run_stack(layers, norm, x, weights, [&](auto& layer, const Tensor& h, size_t, LayerAttention* w) {
    return layer.forward(h, key_lengths, w);
  });
}

TransformerDecoder::TransformerDecoder(const TransformerLayerOptions& options, int n) {
  build_stack("TransformerDecoder", options, n, *this, layer_list_, layers, norm);
}

Tensor TransformerDecoder::forward(const Tensor& x, const Tensor& memory, const Tensor& memory_lengths,
                                   std::vector<LayerAttention>* weights, int copy_layer) {
  const bool copy = copy_layer >= 0;
  return run_stack(layers, norm, x, weights, [&](auto& layer, const Tensor& h, size_t i, LayerAttention* w) {
    const bool wanted = !copy || static_cast<size_t>(copy_layer) == i;
    return layer.forward(h, memory, memory_lengths, wanted ? w : nullptr, copy);
  });
}

KvCache TransformerDecoder::start(const Tensor& memory_lengths, int64_t group) const {
  if (memory_lengths.defined() && (memory_lengths.dtype() != DType::i32 || memory_lengths.rank() != 1))
    throw ShapeError("TransformerDecoder::start: 'memory_lengths' expected int32 (M), got " +
                     memory_lengths.shape().str() + " " + dtype_name(memory_lengths.dtype()));
  if (group < 1) throw ValueError("TransformerDecoder::start: group must be >= 1, got " + str(group));
  KvCache cache;
  cache.layers.resize(layers.size());
  cache.memory_lengths = memory_lengths;
  cache.group = group;
  return cache;
}

Tensor TransformerDecoder::step(const Tensor& x, const Tensor& memory, KvCache& cache,
                                std::vector<LayerAttention>* weights, int cross_layer) {
  autodiff::NoGradGuard no_grad;
  if (cache.layers.size() != layers.size())
    throw ValueError("TransformerDecoder::step: the cache has " + str(static_cast<int64_t>(cache.layers.size())) +
                     " layers, this decoder " + str(static_cast<int64_t>(layers.size())) + " (use start())");
  if (cross_layer >= static_cast<int>(layers.size()))
    throw ValueError("TransformerDecoder::step: cross_layer " + str(cross_layer) + " out of range (" +
                     str(static_cast<int64_t>(layers.size())) + " layers)");
  // A pending reorder (its memory rows already moved, its rows checked): the self keys and
  // values follow in the layers' append.
  const Tensor rows = cache.pending_rows;
  if (rows.defined() && rows.numel() != x.dim(0))
    throw ShapeError("TransformerDecoder::step: the cache's pending reorder expected (B=" + str(x.dim(0)) +
                     ") rows, got " + rows.shape().str());
  if (weights != nullptr) weights->assign(layers.size(), LayerAttention{});
  Tensor h = x;
  for (size_t i = 0; i < layers.size(); ++i) {
    const bool all = cross_layer < 0, wanted = all || static_cast<size_t>(cross_layer) == i;
    h = layers[i]->step(h, memory, cache.layers[i], cache.memory_lengths,
                        weights != nullptr && wanted ? &(*weights)[i] : nullptr, all, cache.group, rows);
  }
  cache.pending_rows = Tensor();
  cache.steps += 1;
  return norm ? norm->forward(h) : h;
}

CausalTransformer::CausalTransformer(const TransformerLayerOptions& options, int n) {
  build_stack("CausalTransformer", options, n, *this, layer_list_, layers, norm);
}

Tensor CausalTransformer::forward(const Tensor& x, const Tensor& lengths, std::vector<LayerAttention>* weights) {
  return run_stack(layers, norm, x, weights, [&](auto& layer, const Tensor& h, size_t, LayerAttention* w) {
    return layer.forward_causal(h, lengths, w);
  });
}

KvCache CausalTransformer::start(int64_t batch) const {
  if (batch < 1) throw ValueError("CausalTransformer::start: batch must be >= 1, got " + str(batch));
  const TransformerLayerOptions& o = layers.front()->options();
  KvCache cache;
  cache.layers.resize(layers.size());
  for (LayerKvCache& l : cache.layers) {
    l.self_k = Tensor::empty({batch, o.heads, 0, o.d_model / o.heads});
    l.self_v = Tensor::empty({batch, o.heads, 0, o.d_model / o.heads});
  }
  return cache;
}

Tensor CausalTransformer::step(const Tensor& x, KvCache& cache) {
  autodiff::NoGradGuard no_grad;
  if (cache.layers.size() != layers.size())
    throw ValueError("CausalTransformer::step: the cache has " + str(static_cast<int64_t>(cache.layers.size())) +
                     " layers, this stack " + str(static_cast<int64_t>(layers.size())) + " (use start())");
  cache.gather_pending();
  Tensor h = x;
  for (size_t i = 0; i < layers.size(); ++i) h = layers[i]->step(h, cache.layers[i]);
  cache.steps += 1;
  return norm ? norm->forward(h) : h;
}

// ---- PositionalEncoding -----------------------------------------------------------------------------

PositionalEncoding::PositionalEncoding(const std::string& kind_, int64_t max_len_, int64_t d_model_, Rng& rng)
    : kind(kind_), max_len(max_len_), d_model(d_model_) {
  if (kind != "sinusoidal" && kind != "learned")
    throw ValueError("PositionalEncoding: kind must be sinusoidal or learned, got '" + kind + "'");
  if (max_len < 1) throw ValueError("PositionalEncoding: max_len must be positive, got " + str(max_len));
  if (d_model < 1) throw ValueError("PositionalEncoding: d_model must be positive, got " + str(d_model));
  if (kind == "learned") {
    Tensor w = Tensor::empty({max_len, d_model});
    normal_(w, 0.0f, 0.02f, rng);
    weight = register_parameter("weight", w);
    return;
  }
  // PE(p, 2i) = sin(p / 10000^(2i/D)), PE(p, 2i+1) = cos(p / 10000^(2i/D)), in double.
  weight = Tensor::empty({max_len, d_model});
  float* w = weight.f32();
  for (int64_t p = 0; p < max_len; ++p)
    for (int64_t j = 0; j < d_model; ++j) {
      const double angle = static_cast<double>(p) / std::pow(10000.0, static_cast<double>(j - j % 2) / d_model);
      w[p * d_model + j] = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
}

Tensor PositionalEncoding::forward(const Tensor& x, int64_t offset) const {
  ShapeContract c("positional_encoding");
  c.bind("D", d_model);
  c.check("x", x, {"B", "T", "D"});
  const int64_t B = c["B"], T = c["T"];
  if (offset < 0) throw ValueError("positional_encoding: offset must be >= 0, got " + str(offset));
  if (offset + T > max_len)
    throw ValueError("positional_encoding: positions [" + str(offset) + ", " + str(offset + T) +
                     ") exceed max_len=" + str(max_len));
  // Rows offset .. offset + T of the table for every batch row (gather_rows carries the
  // gradient into a learned table), then one add: no broadcasting.
  Tensor index = Tensor::empty({B * T}, DType::i32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) index.i32()[b * T + t] = static_cast<int32_t>(offset + t);
  return add(x, gather_rows(weight, index).reshape({B, T, d_model}));
}

}  // namespace attn::nn
