#include "attn/nn/multihead_attention.h"

#include <array>
#include <cmath>
#include <string>
#include <tuple>

#include "attn/autodiff/tape.h"
#include "attn/nn/init.h"
#include "attn/number_format.h"
#include "attn/ops/dropout.h"
#include "attn/ops/heads.h"
#include "attn/ops/linear.h"
#include "attn/ops/sdpa.h"

namespace attn::nn {
namespace {

std::string str(int64_t x) { return std::to_string(x); }

void check_positive(const std::string& who, const char* what, int64_t value) {
  if (value <= 0) throw ValueError(who + ": " + what + " must be positive, got " + str(value));
}

void check_divisible(const std::string& who, const char* what, int64_t value, int64_t heads) {
  if (value % heads != 0)
    throw ValueError(who + ": " + what + "=" + str(value) + " is not divisible by num_heads=" + str(heads) +
                     " (each head gets " + what + " / num_heads features)");
}

void check_dropout(const std::string& who, float p) {
  if (!(p >= 0.0f && p < 1.0f)) throw ValueError(who + ": dropout must be in [0, 1), got " + format_number(p));
}

// Checks the masks and weight options of a call against B, T, S bound in `c`.
void check_masks(ShapeContract& c, const MhaCallOptions& call, int64_t H) {
  const std::string& op = c.op();
  const int64_t B = c["B"], S = c["S"];
  if (call.key_lengths.defined() && call.key_padding_mask.defined())
    throw ValueError(op + ": key_lengths and key_padding_mask are exclusive; give one of them, not both");
  if (call.key_lengths.defined()) {
    c.check("key_lengths", call.key_lengths, {"B"}, DType::i32);
    check_length_values(op, "key_lengths", call.key_lengths, 0, "S", S);
  }
  if (call.key_padding_mask.defined()) c.check("key_padding_mask", call.key_padding_mask, {"B", "S"}, DType::i32);
  if (call.attn_bias.defined()) {  // torch's float attn_mask shapes, one for all heads or one per (b, h)
    const Tensor& b = call.attn_bias;
    const int64_t T = c["T"];
    const Shape& s = b.shape();
    const bool ok = s == Shape({T, S}) || s == Shape({B * H, T, S}) || s == Shape({B, H, T, S});
    if (!ok || b.dtype() != DType::f32)
      throw ShapeError(op + ": 'attn_bias' expected float32 (T=" + str(T) + ", S=" + str(S) + "), (B·H=" + str(B * H) +
                       ", T, S) or (B=" + str(B) + ", H=" + str(H) + ", T, S), got " + s.str() + " " +
                       dtype_name(b.dtype()));
  }
  if (!(call.temperature > 0.0f) || !std::isfinite(call.temperature))
    throw ValueError(op + ": temperature must be a finite value > 0, got " + format_number(call.temperature));
  if (!call.need_weights && (!call.heads.empty() || call.average_weights))
    throw ValueError(op + ": 'heads' and 'average_weights' shape the returned weights; set need_weights = true");
  for (int head : call.heads)
    if (head < 0 || head >= H)
      throw ValueError(op + ": selected head " + str(head) + " is out of range [0, H=" + str(H) + ")");
}

// The boundary checks both modules share, for `op` with `o`'s embed_dim, kdim, vdim and
// num_heads: shapes of the inputs and masks, mask values and the weight options.
template <class Options>
void check_call(const char* op, const Tensor& query, const Tensor& key, const Tensor& value, const MhaCallOptions& call,
                const Options& o) {
  ShapeContract c(op);
  c.bind("D", o.embed_dim);
  c.check("query", query, {"B", "T", "D"});
  c.bind("Dk", o.kdim);
  c.check("key", key, {"B", "S", "Dk"});
  c.bind("Dv", o.vdim);
  c.check("value", value, {"B", "S", "Dv"});
  check_masks(c, call, o.num_heads);
}

// Attention over heads: q (B, H, T, Dq), k (B, H, S, Dq), v (B, H, S, Dv) → context
// (B, H, T, Dv) and the weights the caller asked for.
MhaResult attend(const Tensor& q, const Tensor& k, const Tensor& v, const MhaCallOptions& call, float scale,
                 float dropout_p, bool training, Rng& dropout_rng, const Normalizer& normalizer = {}) {
  SdpaOptions so;
  so.normalizer = normalizer;
  so.key_lengths = call.key_lengths;
  so.key_padding_mask = call.key_padding_mask;
  so.causal = call.causal;
  so.bias = call.attn_bias;
  so.scale = scale;
  so.temperature = call.temperature;
  const bool drop = training && dropout_p > 0.0f;
  // Dropout on the weights needs them materialised: the fused kernel's online softmax
  // never holds a finished row of weights to drop from.
  so.need_weights = call.need_weights || drop;
  SdpaResult r = sdpa(q, k, v, so);
  Tensor context = r.out;
  Tensor weights = r.weights;
  if (drop) {
    const int64_t B = q.dim(0), H = q.dim(1), T = q.dim(2), S = k.dim(2), Dv = v.dim(3);
    const Tensor dropped = dropout(r.weights, dropout_p, dropout_rng.next(), true);  // (B, H, T, S)
    context = bmm(dropped.reshape({B * H, T, S}), v.reshape({B * H, S, Dv})).reshape({B, H, T, Dv});
    if (!call.weights_before_dropout) weights = dropped;
  }
  if (!call.need_weights) return {context, Tensor()};
  if (!call.heads.empty()) weights = select_heads(weights, call.heads);
  if (call.average_weights) weights = mean_heads(weights);
  return {context, weights};
}

Tensor rows(const Tensor& t, int64_t begin, int64_t end) { return t.defined() ? t.slice(begin, end) : Tensor(); }

}  // namespace

// ---- MultiheadAttention ---------------------------------------------------------------------------

namespace {
void validate(const MultiheadAttentionOptions& o) {
  const std::string who = "MultiheadAttention";
  check_positive(who, "embed_dim", o.embed_dim);
  check_positive(who, "num_heads", o.num_heads);
  if (o.embed_dim % o.num_heads != 0)
    throw ValueError(who + ": embed_dim=" + str(o.embed_dim) + " is not divisible by num_heads=" + str(o.num_heads));
  if (o.kdim < 0) throw ValueError(who + ": kdim must be >= 0 (0 means embed_dim), got " + str(o.kdim));
  if (o.vdim < 0) throw ValueError(who + ": vdim must be >= 0 (0 means embed_dim), got " + str(o.vdim));
  check_dropout(who, o.dropout);
}

MultiheadAttentionOptions resolved(MultiheadAttentionOptions o) {
  validate(o);
  if (o.kdim == 0) o.kdim = o.embed_dim;
  if (o.vdim == 0) o.vdim = o.embed_dim;
  return o;
}

// Separate query, key and value projections (D, D), (D, kdim), (D, vdim), Xavier-uniform,
// drawn in that order.
std::array<Tensor, 3> xavier_projections(int64_t D, int64_t kdim, int64_t vdim, Rng& rng) {
  std::array<Tensor, 3> w = {Tensor::empty({D, D}), Tensor::empty({D, kdim}), Tensor::empty({D, vdim})};
  for (Tensor& t : w) xavier_uniform_(t, rng);
  return w;
}
}  // namespace

MultiheadAttention::MultiheadAttention(const MultiheadAttentionOptions& options)
    : options_(resolved(options)),
      rng_(options.seed),
      out_proj(options_.embed_dim, options_.embed_dim, rng_, options_.bias),
      dropout_rng_(splitmix64(options.seed ^ 0x6d68612d64726f70ull)) {
  register_random_stream("dropout_rng", dropout_rng_);
  const int64_t D = options_.embed_dim;
  // Registration order is PyTorch's state_dict order.
  if (!options_.separate_projections && options_.kdim == D && options_.vdim == D) {
    Tensor w = Tensor::empty({3 * D, D});
    xavier_uniform_(w, rng_);
    in_proj_weight = register_parameter("in_proj_weight", w);
  } else {
    auto [wq, wk, wv] = xavier_projections(D, options_.kdim, options_.vdim, rng_);
    q_proj_weight = register_parameter("q_proj_weight", wq);
    k_proj_weight = register_parameter("k_proj_weight", wk);
    v_proj_weight = register_parameter("v_proj_weight", wv);
  }
  if (options_.bias) {
    in_proj_bias = register_parameter("in_proj_bias", Tensor::zeros({3 * D}));
    out_proj.bias.fill(0.0f);
  }
  register_module("out_proj", out_proj);
}

// Unchecked projections (the public entry points check first).
Tensor MultiheadAttention::project_query_(const Tensor& query) const {
  const int64_t D = options_.embed_dim, H = options_.num_heads;
  if (in_proj_weight.defined())
    return split_heads(linear(query, rows(in_proj_weight, 0, D), rows(in_proj_bias, 0, D)), H);
  return split_heads(linear(query, q_proj_weight, rows(in_proj_bias, 0, D)), H);
}

std::pair<Tensor, Tensor> MultiheadAttention::project_kv_(const Tensor& key, const Tensor& value) const {
  const int64_t D = options_.embed_dim, H = options_.num_heads;
  if (in_proj_weight.defined()) {
    if (key.same(value)) {
      // Shared keys and values: one GEMM → (B, S, 2D).
      auto kv = split_heads_packed(linear(key, rows(in_proj_weight, D, 3 * D), rows(in_proj_bias, D, 3 * D)), H, 2);
      return {kv[0], kv[1]};
    }
    return {split_heads(linear(key, rows(in_proj_weight, D, 2 * D), rows(in_proj_bias, D, 2 * D)), H),
            split_heads(linear(value, rows(in_proj_weight, 2 * D, 3 * D), rows(in_proj_bias, 2 * D, 3 * D)), H)};
  }
  return {split_heads(linear(key, k_proj_weight, rows(in_proj_bias, D, 2 * D)), H),
          split_heads(linear(value, v_proj_weight, rows(in_proj_bias, 2 * D, 3 * D)), H)};
}

MhaResult MultiheadAttention::attend_heads_(const Tensor& q, const Tensor& k, const Tensor& v,
                                            const MhaCallOptions& call) {
  MhaResult r = attend(q, k, v, call, 0.0f /* 1 / sqrt(Dh) */, options_.dropout, is_training(), dropout_rng_,
                       options_.normalizer);
  r.out = out_proj.forward(merge_heads(r.out));  // (B, T, D)
  return r;
}

MhaResult MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                      const MhaCallOptions& call) {
  check_call("multihead_attention", query, key, value, call, options_);
  const int64_t H = options_.num_heads;

  Tensor q, k, v;  // (B, H, T, Dh), (B, H, S, Dh), (B, H, S, Dh)
  if (in_proj_weight.defined() && query.same(key) && key.same(value)) {
    // Self-attention: one GEMM for q, k and v → (B, T, 3D).
    auto qkv = split_heads_packed(linear(query, in_proj_weight, in_proj_bias), H, 3);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    q = project_query_(query);
    std::tie(k, v) = project_kv_(key, value);
  }
  return attend_heads_(q, k, v, call);
}

Tensor MultiheadAttention::project_query(const Tensor& query) const {
  ShapeContract c("multihead_attention.project_query");
  c.bind("D", options_.embed_dim);
  c.check("query", query, {"B", "T", "D"});
  return project_query_(query);
}

std::pair<Tensor, Tensor> MultiheadAttention::project_kv(const Tensor& key, const Tensor& value) const {
  ShapeContract c("multihead_attention.project_kv");
  c.bind("Dk", options_.kdim);
  c.check("key", key, {"B", "S", "Dk"});
  c.bind("Dv", options_.vdim);
  c.check("value", value, {"B", "S", "Dv"});
  return project_kv_(key, value);
}

std::vector<Tensor> MultiheadAttention::project_qkv(const Tensor& x) const {
  const int64_t D = options_.embed_dim, H = options_.num_heads;
  if (!in_proj_weight.defined())
    throw ValueError("multihead_attention.project_qkv: self-attention projections need kdim == vdim == embed_dim=" +
                     str(D) + ", this module has kdim=" + str(options_.kdim) + ", vdim=" + str(options_.vdim));
  ShapeContract c("multihead_attention.project_qkv");
  c.bind("D", D);
  c.check("x", x, {"B", "T", "D"});
  return split_heads_packed(linear(x, in_proj_weight, in_proj_bias), H, 3);  // one GEMM → (B, T, 3D)
}

MhaResult MultiheadAttention::attend_heads(const Tensor& q, const Tensor& k, const Tensor& v,
                                           const MhaCallOptions& call) {
  ShapeContract c("multihead_attention.attend_heads");
  c.bind("H", options_.num_heads);
  c.bind("Dh", head_dim());
  c.check("q", q, {"B", "H", "T", "Dh"});
  c.check("k", k, {"B", "H", "S", "Dh"});
  c.check("v", v, {"B", "H", "S", "Dh"});
  check_masks(c, call, options_.num_heads);
  return attend_heads_(q, k, v, call);
}

MhaResult MultiheadAttention::attend_projected(const Tensor& query, const Tensor& k, const Tensor& v,
                                               const MhaCallOptions& call) {
  return attend_heads(project_query(query), k, v, call);
}

// ---- MultiheadGeneralAttention --------------------------------------------------------------------

namespace {
MultiheadGeneralAttentionOptions resolved(MultiheadGeneralAttentionOptions o) {
  const std::string who = "MultiheadGeneralAttention";
  check_positive(who, "embed_dim", o.embed_dim);
  check_positive(who, "num_heads", o.num_heads);
  if (o.kdim < 0) throw ValueError(who + ": kdim must be >= 0 (0 means embed_dim), got " + str(o.kdim));
  if (o.vdim < 0) throw ValueError(who + ": vdim must be >= 0 (0 means embed_dim), got " + str(o.vdim));
  if (o.kdim == 0) o.kdim = o.embed_dim;
  if (o.vdim == 0) o.vdim = o.embed_dim;
  check_divisible(who, "embed_dim", o.embed_dim, o.num_heads);
  if (!o.in_proj) {
    check_divisible(who, "kdim", o.kdim, o.num_heads);
    check_divisible(who, "vdim", o.vdim, o.num_heads);
  }
  if (!std::isfinite(o.scale) || o.scale < 0.0f)
    throw ValueError(who + ": scale must be finite and >= 0 (0 means 1/sqrt(Dk_h)), got " + format_number(o.scale));
  check_dropout(who, o.dropout);
  return o;
}
}  // namespace

MultiheadGeneralAttention::MultiheadGeneralAttention(const MultiheadGeneralAttentionOptions& options)
    : options_(resolved(options)), rng_(options.seed), dropout_rng_(splitmix64(options.seed ^ 0x6d68612d64726f70ull)) {
  register_random_stream("dropout_rng", dropout_rng_);
  const int64_t D = options_.embed_dim, H = options_.num_heads;
  const bool proj = options_.in_proj;
  if (proj) {
    auto [wq, wk, wv] = xavier_projections(D, options_.kdim, options_.vdim, rng_);
    q_proj_weight = register_parameter("q_proj_weight", wq);
    k_proj_weight = register_parameter("k_proj_weight", wk);
    v_proj_weight = register_parameter("v_proj_weight", wv);
    if (options_.bias) in_proj_bias = register_parameter("in_proj_bias", Tensor::zeros({3 * D}));
  }
  const int64_t Dq = D / H, Dk = (proj ? D : options_.kdim) / H;
  Tensor w = Tensor::empty({H, Dq, Dk});
  for (int64_t h = 0; h < H; ++h) {
    Tensor wh = w.select(h);  // a view: w does not require grad yet, nothing is recorded
    xavier_uniform_(wh, rng_);
  }
  bilinear_weight = register_parameter("bilinear_weight", w);
  if (options_.out_proj) {
    const int64_t Dc = proj ? D : options_.vdim;
    out_proj = std::make_unique<Linear>(Dc, D, rng_, options_.bias);
    if (options_.bias) out_proj->bias.fill(0.0f);
    register_module("out_proj", *out_proj);
  }
}

MhaResult MultiheadGeneralAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                             const MhaCallOptions& call) {
  check_call("multihead_general_attention", query, key, value, call, options_);
  const int64_t D = options_.embed_dim, H = options_.num_heads;
  Tensor q, k, v;  // (B, H, T, Dq_h), (B, H, S, Dk_h), (B, H, S, Dv_h)
  if (options_.in_proj) {
    q = split_heads(linear(query, q_proj_weight, rows(in_proj_bias, 0, D)), H);
    k = split_heads(linear(key, k_proj_weight, rows(in_proj_bias, D, 2 * D)), H);
    v = split_heads(linear(value, v_proj_weight, rows(in_proj_bias, 2 * D, 3 * D)), H);
  } else {
    q = split_heads(query, H);
    k = split_heads(key, H);
    v = split_heads(value, H);
  }
  // e = q_h W_h k_hᵀ: project the queries once per head (B, H, T, Dk_h), then the fused
  // attention with the score scale given in the options (1 = Luong's general score).
  Tensor qw = head_matmul(q, bilinear_weight);
  MhaResult r =
      attend(qw, k, v, call, options_.scale /* 0: 1 / sqrt(Dk_h) */, options_.dropout, is_training(), dropout_rng_);
  r.out = merge_heads(r.out);  // (B, T, H·Dv_h)
  if (out_proj) r.out = out_proj->forward(r.out);
  return r;
}

}  // namespace attn::nn
