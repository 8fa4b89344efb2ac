// Batched beam search: B rows × K hypotheses step together as B·K decoder rows.
//
// At each step every alive hypothesis k of row b proposes its V continuations with score
// raw_k + log p(v); the best 2K candidates are visited in order (score desc, then hypothesis
// and token index asc): a candidate ending in EOS becomes a finished hypothesis, scored
// raw / lp(len) with GNMT's lp(len) = ((5 + len) / 6)^α; the others fill the K new alive
// hypotheses. A row stops when its best finished score cannot be beaten by any alive
// hypothesis: raw scores only decrease, so an alive one can at best reach
// raw / lp(max_len) (α > 0) or raw (α = 0). Finished rows keep stepping with the batch but
// are ignored. Backpointers per step rebuild the tokens and attention of the winner.
#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/autodiff/tape.h"
#include "attn/models/seq2seq.h"
#include "attn/ops/select.h"
#include "attn/ops/softmax.h"

namespace attn::models {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Finished {
  float normalized;
  int step;    // the step that produced EOS
  int parent;  // beam index (within the row) of the hypothesis it extended
};

struct Candidate {
  float score;
  int beam;
  int token;
};

}  // namespace

DecodeResult Seq2Seq::beam(const Tensor& src, const Tensor& src_lengths, const BeamOptions& options) {
  if (options.width < 1) throw ValueError("beam: width must be >= 1, got " + std::to_string(options.width));
  if (options.max_len < 1) throw ValueError("beam: max_len must be >= 1, got " + std::to_string(options.max_len));
  if (!(options.length_penalty >= 0.0f) || !std::isfinite(options.length_penalty))
    throw ValueError("beam: length_penalty must be finite and >= 0, got " + std::to_string(options.length_penalty));
  autodiff::NoGradGuard no_grad;
  const int K = options.width;
  const float alpha = options.length_penalty;
  auto lp = [alpha](int len) { return alpha == 0.0f ? 1.0f : std::pow((5.0f + len) / 6.0f, alpha); };

  const EncoderOutput enc_b = encoder.forward(src, src_lengths);
  const int64_t B = src.dim(0), S = src.dim(1), BK = B * K, V = config_.vocab;
  // Expand every row to K hypotheses: row b*K + k comes from row b.
  Tensor expand = Tensor::empty({BK}, DType::i32);
  for (int64_t i = 0; i < BK; ++i) expand.i32()[i] = static_cast<int32_t>(i / K);
  EncoderOutput enc;
  enc.outputs = gather_rows(enc_b.outputs, expand);
  for (const Tensor& h : enc_b.h) enc.h.push_back(gather_rows(h, expand));
  for (const Tensor& c : enc_b.c) enc.c.push_back(gather_rows(c, expand));
  Tensor lengths = Tensor::empty({BK}, DType::i32);
  for (int64_t i = 0; i < BK; ++i) lengths.i32()[i] = src_lengths.i32()[i / K];
  // The per-batch attention memory of the expanded rows (projections run on B·K rows once).
  const AttentionMemory memory = decoder.prepare(enc, lengths);
  const int64_t W = decoder.attention ? decoder.attention->weight_heads() * S : 0;  // weights per row and step
  DecoderState state = decoder.initial_state(enc, BK);

  const bool with_weights = config_.attention != "none";
  std::vector<float> score(static_cast<size_t>(BK), kNegInf);  // raw log-prob of alive hypotheses
  for (int64_t b = 0; b < B; ++b) score[static_cast<size_t>(b * K)] = 0.0f;
  std::vector<std::vector<int32_t>> tokens, parents;  // per step, per new beam (BK)
  std::vector<std::vector<float>> weights;             // per step, (BK, W) by source beam
  std::vector<std::vector<Finished>> finished(static_cast<size_t>(B));
  std::vector<char> done(static_cast<size_t>(B), 0);
  Tensor prev = Tensor::empty({BK}, DType::i32);
  for (int64_t i = 0; i < BK; ++i) prev.i32()[i] = data::kBos;
  Tensor reorder = Tensor::empty({BK}, DType::i32);
  std::vector<Candidate> cands;
  cands.reserve(static_cast<size_t>(K * V));
  int steps = 0;
  for (int t = 0; t < options.max_len; ++t) {
    const Tensor emb = decoder.embedding.forward(prev);  // (BK, emb)
    const Decoder::Step s = decoder.step(emb, state, memory, with_weights);
    const Tensor logp = log_softmax(decoder.step_logits(s, emb));  // (BK, V)
    steps = t + 1;
    if (with_weights) weights.emplace_back(s.weights.f32(), s.weights.f32() + BK * W);
    tokens.emplace_back(static_cast<size_t>(BK), data::kPad);
    parents.emplace_back(static_cast<size_t>(BK), 0);
    std::vector<int32_t>& tok = tokens.back();
    std::vector<int32_t>& par = parents.back();
    std::vector<float> new_score(static_cast<size_t>(BK), kNegInf);
    bool all_done = true;
    for (int64_t b = 0; b < B; ++b) {
      for (int k = 0; k < K; ++k) par[static_cast<size_t>(b * K + k)] = static_cast<int32_t>(b * K + k);
      if (done[static_cast<size_t>(b)]) continue;
      cands.clear();
      for (int k = 0; k < K; ++k) {
        const float base = score[static_cast<size_t>(b * K + k)];
        if (base == kNegInf) continue;
        const float* row = logp.f32() + (b * K + k) * V;
        for (int v = 0; v < V; ++v) cands.push_back({base + row[v], k, v});
      }
      const size_t top = std::min(cands.size(), static_cast<size_t>(2 * K));
      std::partial_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(top), cands.end(),
                        [](const Candidate& x, const Candidate& y) {
                          if (x.score != y.score) return x.score > y.score;
                          if (x.beam != y.beam) return x.beam < y.beam;
                          return x.token < y.token;
                        });
      int alive = 0;
      for (size_t i = 0; i < top && alive < K; ++i) {
        const Candidate& c = cands[i];
        if (c.score == kNegInf) break;
        if (c.token == data::kEos) {
          finished[static_cast<size_t>(b)].push_back({c.score / lp(t + 1), t, c.beam});
        } else {
          const size_t j = static_cast<size_t>(b * K + alive);
          tok[j] = c.token;
          par[j] = static_cast<int32_t>(b * K + c.beam);
          new_score[j] = c.score;
          ++alive;
        }
      }
      // Stop the row when no alive hypothesis can beat its best finished one.
      float best_alive = kNegInf;
      for (int k = 0; k < alive; ++k) best_alive = std::max(best_alive, new_score[static_cast<size_t>(b * K + k)]);
      float best_finished = kNegInf;
      for (const Finished& f : finished[static_cast<size_t>(b)]) best_finished = std::max(best_finished, f.normalized);
      const float bound = best_alive / lp(options.max_len);
      const float reachable = alpha == 0.0f ? best_alive : std::max(bound, best_alive / lp(t + 2));
      if (alive == 0 || (!finished[static_cast<size_t>(b)].empty() && best_finished >= reachable)) {
        done[static_cast<size_t>(b)] = 1;
        for (int k = 0; k < K; ++k) new_score[static_cast<size_t>(b * K + k)] = kNegInf;
      } else {
        all_done = false;
      }
    }
    score.swap(new_score);
    if (all_done) break;
    // Reorder the decoder state to the new hypotheses.
    for (int64_t i = 0; i < BK; ++i) {
      reorder.i32()[i] = par[static_cast<size_t>(i)];
      prev.i32()[i] = tok[static_cast<size_t>(i)];
    }
    for (Tensor& h : state.h) h = gather_rows(h, reorder);
    for (Tensor& c : state.c) c = gather_rows(c, reorder);
    if (state.feed.defined()) state.feed = gather_rows(state.feed, reorder);
  }

  // Rebuild the winner of each row from the backpointers.
  DecodeResult result;
  result.tokens.resize(static_cast<size_t>(B));
  result.attention.resize(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    int last_step;
    int32_t last_token = -1;  // EOS for a finished hypothesis
    int beam_at;              // global beam index at last_step's "new beam" list, or the parent for EOS
    const std::vector<Finished>& fin = finished[static_cast<size_t>(b)];
    if (!fin.empty()) {
      const Finished* best = &fin[0];
      for (const Finished& f : fin)
        if (f.normalized > best->normalized) best = &f;
      last_step = best->step;
      last_token = data::kEos;
      beam_at = static_cast<int>(b * K + best->parent);
    } else {
      // No EOS within max_len: the best alive hypothesis of the last step.
      last_step = steps - 1;
      beam_at = static_cast<int>(b * K);
      // score holds -inf for done rows; the row was not done, so its alive scores are valid.
      for (int k = 1; k < K; ++k)
        if (score[static_cast<size_t>(b * K + k)] > score[static_cast<size_t>(beam_at)]) beam_at = static_cast<int>(b * K + k);
    }
    std::vector<int32_t> out;
    std::vector<std::vector<float>> att;
    int t = last_step;
    int j = beam_at;
    if (last_token == data::kEos) {
      // EOS at step t, extending hypothesis j (a new beam of step t - 1).
      out.push_back(data::kEos);
      if (with_weights) att.emplace_back(weights[t].begin() + j * W, weights[t].begin() + (j + 1) * W);
      --t;
    }
    for (; t >= 0; --t) {
      const int parent = parents[static_cast<size_t>(t)][static_cast<size_t>(j)];
      out.push_back(tokens[static_cast<size_t>(t)][static_cast<size_t>(j)]);
      if (with_weights) att.emplace_back(weights[t].begin() + parent * W, weights[t].begin() + (parent + 1) * W);
      j = parent;
    }
    std::reverse(out.begin(), out.end());
    std::reverse(att.begin(), att.end());
    result.tokens[static_cast<size_t>(b)] = std::move(out);
    if (with_weights) result.attention[static_cast<size_t>(b)] = std::move(att);
  }
  return result;
}

}  // namespace attn::models
