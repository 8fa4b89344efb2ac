#include "beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "attn/checked_size.h"
#include "attn/error.h"
#include "attn/models/batch.h"

namespace attn::models::detail {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

BeamSource beam_source(const Tensor& src_lengths, int64_t S) {
  const int32_t* l = src_lengths.i32();
  return {S, std::vector<int32_t>(l, l + src_lengths.numel())};
}

BeamSearch::BeamSearch(const std::string& op, int64_t batch, const BeamOptions& options, int64_t weights_per_row,
                       BeamSource source, bool live_only)
    : batch_(batch),
      K_(options.width),
      alpha_(options.length_penalty),
      max_len_(options.max_len),
      W_(weights_per_row),
      beta_(options.coverage_penalty),
      stop_(options.stop),
      rules_(options.rules),
      source_(std::move(source)),
      live_only_(live_only) {
  if (options.width < 1) throw ValueError(op + ": width must be >= 1, got " + std::to_string(options.width));
  if (options.max_len < 1) throw ValueError(op + ": max_len must be >= 1, got " + std::to_string(options.max_len));
  if (!(options.length_penalty >= 0.0f) || !std::isfinite(options.length_penalty))
    throw ValueError(op + ": length_penalty must be finite and >= 0, got " + std::to_string(options.length_penalty));
  if (!(beta_ >= 0.0f) || !std::isfinite(beta_))
    throw ValueError(op + ": coverage_penalty must be finite and >= 0, got " + std::to_string(beta_));
  if (beta_ > 0.0f &&
      (W_ == 0 || source_.S < 1 || W_ % source_.S != 0 || source_.lengths.size() != static_cast<size_t>(batch)))
    throw ValueError(op + ": coverage_penalty needs the attention weights, and this model has none");
  if (rules_ == BeamRules::ctranslate2 && (beta_ > 0.0f || stop_ != BeamStop::bound))
    throw ValueError(op + ": the ctranslate2 beam rules have their own stopping rule and no coverage penalty (" +
                     (beta_ > 0.0f ? "coverage_penalty " + std::to_string(beta_) : std::string("stop top")) +
                     " given)");
  const size_t BK = static_cast<size_t>(checked_size_product(batch, K_, op + ": batch x beam width"));
  if (beta_ > 0.0f) coverage_.assign(BK * static_cast<size_t>(source_.S), 0.0f);
  score_.assign(BK, kNegInf);
  for (int64_t b = 0; b < batch; ++b) score_[static_cast<size_t>(b * K_)] = 0.0f;
  finished_.resize(static_cast<size_t>(batch));
  done_.assign(static_cast<size_t>(batch), 0);
  top_ended_.assign(static_cast<size_t>(batch), 0);
  next_.assign(BK, kBos);
  for (int64_t b = 0; b < batch; ++b) live_.push_back(b);
  reorder_ = Tensor::empty({static_cast<int64_t>(BK)}, DType::i32);
}

float BeamSearch::lp(int len) const {
  if (alpha_ == 0.0f) return 1.0f;
  return rules_ == BeamRules::ctranslate2 ? std::pow(static_cast<float>(len), alpha_)
                                          : std::pow((5.0f + len) / 6.0f, alpha_);
}

float BeamSearch::coverage_penalty(int64_t b, const float* coverage) const {
  if (beta_ == 0.0f) return 0.0f;
  double sum = 0.0;  // over the source positions (columns), never the target steps (rows)
  for (int64_t i = 0; i < source_.lengths[static_cast<size_t>(b)]; ++i)
    sum += std::log(std::min(std::max(coverage[i], std::numeric_limits<float>::min()), 1.0f));
  return beta_ * static_cast<float>(sum);
}

void BeamSearch::add_weights(const float* from, const float* weights, float* coverage) const {
  const int64_t S = source_.S, heads = W_ / S;
  for (int64_t i = 0; i < S; ++i) {
    double a = 0.0;
    for (int64_t h = 0; h < heads; ++h) a += weights[h * S + i];
    coverage[i] = from[i] + static_cast<float>(a / static_cast<double>(heads));
  }
}

Tensor BeamSearch::next_tokens() const {
  const int64_t L = static_cast<int64_t>(live_.size());
  Tensor ids = Tensor::empty({L * K_}, DType::i32);
  for (int64_t li = 0; li < L; ++li)
    std::copy_n(next_.begin() + live_[static_cast<size_t>(li)] * K_, K_, ids.i32() + li * K_);
  return ids;
}

bool BeamSearch::advance(const Tensor& logp, const float* weights, const float* copy) {
  const int64_t BK = rows(), V = logp.dim(1);
  const int K = K_;
  const int t = static_cast<int>(tokens_.size());
  // at[b]: the decoder row block of source row b in this step's inputs (live rows only).
  std::vector<int64_t> at(static_cast<size_t>(batch_), -1);
  for (size_t li = 0; li < live_.size(); ++li) at[static_cast<size_t>(live_[li])] = static_cast<int64_t>(li);
  // This step's weights and copy probabilities by global row b·K + k (zero for rows not stepped).
  auto keep = [&](const float* in, int64_t width, std::vector<std::vector<float>>& per_step) {
    std::vector<float>& all = per_step.emplace_back(static_cast<size_t>(BK * width), 0.0f);
    for (size_t li = 0; li < live_.size(); ++li)
      std::copy_n(in + static_cast<int64_t>(li) * K * width, K * width, all.begin() + live_[li] * K * width);
  };
  if (W_ > 0) keep(weights, W_, weights_);
  if (copy) keep(copy, 1, copies_);
  tokens_.emplace_back(static_cast<size_t>(BK), kPad);
  parents_.emplace_back(static_cast<size_t>(BK), 0);
  std::vector<int32_t>& tok = tokens_.back();
  std::vector<int32_t>& par = parents_.back();
  std::vector<float> new_score(static_cast<size_t>(BK), kNegInf);
  std::vector<float> new_coverage(coverage_.size(), 0.0f);
  std::vector<Candidate>& cands = candidates_;
  // CTranslate2's min_decoding_length 1: no EOS at step 0, the other tokens renormalised without
  // it, log p(v) − log(1 − p(EOS)) (its log-softmax over logits with EOS at −inf).
  const bool no_eos = rules_ == BeamRules::ctranslate2 && t == 0;
  cands.reserve(static_cast<size_t>(2 * K * K));  // allocates on the first step only
  bool all_done = true;
  for (int64_t b = 0; b < batch_; ++b) {
    for (int k = 0; k < K; ++k) par[static_cast<size_t>(b * K + k)] = static_cast<int32_t>(b * K + k);
    if (done_[static_cast<size_t>(b)]) continue;
    // The best 2K of the row's K·V proposals (score desc, then beam and token asc) are among the
    // best 2K of each hypothesis's V: those are kept (insertion into a sorted run), then sorted.
    cands.clear();
    const size_t top_n = static_cast<size_t>(2 * K);
    for (int k = 0; k < K; ++k) {
      float base = score_[static_cast<size_t>(b * K + k)];
      if (base == kNegInf) continue;
      const float* row = logp.f32() + (at[static_cast<size_t>(b)] * K + k) * V;
      if (no_eos) {
        const float renormalise = -std::log1p(-std::exp(row[kEos]));
        if (std::isfinite(renormalise)) base += renormalise;
      }
      const size_t first = cands.size();
      auto offer = [&](int v) {
        if (no_eos && v == kEos) return;
        const float score = base + row[v];
        const size_t n = cands.size() - first;
        // Equal scores: the earlier token ranks first, so a later one enters only when strictly better.
        if (n == top_n && !(score > cands.back().score)) return;
        if (n < top_n) cands.push_back({score, k, v});
        size_t i = cands.size() - 1;
        for (; i > first && cands[i - 1].score < score; --i) cands[i] = cands[i - 1];
        cands[i] = {score, k, v};
      };
      int v = 0;
      for (; v < V && cands.size() - first < top_n; ++v) offer(v);
      // Once the run is full, most blocks of tokens hold none better than its last: one
      // branch-free test per block (the same float sums as offer's, so the same choices).
      constexpr int kBlock = 16;
      for (; v + kBlock <= V; v += kBlock) {
        const float last = cands.back().score;
        bool better = false;
        for (int i = 0; i < kBlock; ++i) better |= base + row[v + i] > last;
        if (better)
          for (int i = 0; i < kBlock; ++i) offer(v + i);
      }
      for (; v < V; ++v) offer(v);
    }
    const size_t top = std::min(cands.size(), top_n);
    std::partial_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(top), cands.end(),
                      [](const Candidate& x, const Candidate& y) {
                        if (x.score != y.score) return x.score > y.score;
                        if (x.beam != y.beam) return x.beam < y.beam;
                        return x.token < y.token;
                      });
    const bool row_done = rules_ == BeamRules::ctranslate2 ? place_ctranslate2(b, t, top, tok, par, new_score)
                                                           : place_attn(b, t, top, tok, par, new_score, new_coverage);
    if (row_done) {
      done_[static_cast<size_t>(b)] = 1;
      for (int k = 0; k < K; ++k) new_score[static_cast<size_t>(b * K + k)] = kNegInf;
    } else {
      all_done = false;
    }
  }
  score_.swap(new_score);
  coverage_.swap(new_coverage);
  if (all_done) return false;
  next_ = tok;
  // The next step's rows: all of them, or the live ones; each extends a row of this step.
  std::vector<int64_t> next_live;
  for (int64_t b : live_)
    if (!live_only_ || !done_[static_cast<size_t>(b)]) next_live.push_back(b);
  const int64_t n = static_cast<int64_t>(next_live.size()) * K;
  if (reorder_.numel() != n) reorder_ = Tensor::empty({n}, DType::i32);
  for (size_t li = 0; li < next_live.size(); ++li) {
    const int64_t b = next_live[li];
    for (int k = 0; k < K; ++k) {
      const int64_t parent = par[static_cast<size_t>(b * K + k)] - b * K;  // beam within row b
      reorder_.i32()[static_cast<int64_t>(li) * K + k] = static_cast<int32_t>(at[static_cast<size_t>(b)] * K + parent);
    }
  }
  live_.swap(next_live);
  return true;
}

// attn's rules: the candidates in order fill the K new beams; each EOS among them on the way
// finishes a hypothesis scored raw / lp(len) + cp (GNMT). The row stops when no alive
// hypothesis can beat its best finished one (bound), or when this step's best candidate
// ended it (top).
bool BeamSearch::place_attn(int64_t b, int t, size_t top, std::vector<int32_t>& tok, std::vector<int32_t>& par,
                            std::vector<float>& new_score, std::vector<float>& new_coverage) {
  const int K = K_;
  const int64_t S = source_.S;
  const std::vector<Candidate>& cands = candidates_;
  std::vector<float> extended(beta_ > 0.0f ? static_cast<size_t>(S) : 0);
  std::vector<Finished>& finished = finished_[static_cast<size_t>(b)];
  int alive = 0;
  for (size_t i = 0; i < top && alive < K; ++i) {
    const Candidate& c = cands[i];
    if (c.score == kNegInf) break;
    const int64_t from = b * K + c.beam;
    float cp = 0.0f;
    if (beta_ > 0.0f) {  // the hypothesis's attention, this step's included
      add_weights(coverage_.data() + from * S, weights_.back().data() + from * W_, extended.data());
      cp = coverage_penalty(b, extended.data());
    }
    if (c.token == kEos) {
      finished.push_back({c.score / lp(t + 1) + cp, t, c.beam});
    } else {
      const size_t j = static_cast<size_t>(b * K + alive);
      tok[j] = c.token;
      par[j] = static_cast<int32_t>(from);
      new_score[j] = c.score;
      if (beta_ > 0.0f) std::copy(extended.begin(), extended.end(), new_coverage.begin() + static_cast<int64_t>(j) * S);
      ++alive;
    }
  }
  const bool top_finished = stop_ == BeamStop::top && top > 0 && cands[0].token == kEos && cands[0].score != kNegInf;
  float best_alive = kNegInf;
  for (int k = 0; k < alive; ++k) best_alive = std::max(best_alive, new_score[static_cast<size_t>(b * K + k)]);
  float best_finished = kNegInf;
  for (const Finished& f : finished) best_finished = std::max(best_finished, f.normalized);
  const float bound = best_alive / lp(max_len_);
  const float reachable = alpha_ == 0.0f ? best_alive : std::max(bound, best_alive / lp(t + 2));
  return alive == 0 || top_finished || (!finished.empty() && best_finished >= reachable);
}

// CTranslate2 4.8.5's rules (BeamSearch::search in its src/decoding.cc, patience 1): candidate
// positions 0..K-1 are the new beams, in that order; one ending in EOS (or any, at the last
// step) finishes with raw / len^α, and its slot takes the next non-EOS candidate from positions
// K..2K-1 (none left: the finished candidate itself stays, as there). The row stops once K
// hypotheses have finished, or with α = 0 once some step's best candidate was EOS.
bool BeamSearch::place_ctranslate2(int64_t b, int t, size_t top, std::vector<int32_t>& tok, std::vector<int32_t>& par,
                                   std::vector<float>& new_score) {
  const int K = K_;
  const std::vector<Candidate>& cands = candidates_;
  std::vector<Finished>& finished = finished_[static_cast<size_t>(b)];
  const bool last = t + 1 >= max_len_;
  size_t secondary = static_cast<size_t>(K);
  bool alive = false;
  for (size_t k = 0; k < top && k < static_cast<size_t>(K); ++k) {
    const Candidate* c = &cands[k];
    if (c->score == kNegInf) break;
    if (c->token == kEos || last) {
      if (k == 0) top_ended_[static_cast<size_t>(b)] = 1;
      finished.push_back({c->score / lp(t + 1), t, c->beam, c->token});
      for (; secondary < top; ++secondary)
        if (cands[secondary].token != kEos && cands[secondary].score != kNegInf) {
          c = &cands[secondary++];
          break;
        }
    }
    const size_t j = static_cast<size_t>(b * K) + k;
    tok[j] = c->token;
    par[j] = static_cast<int32_t>(b * K + c->beam);
    new_score[j] = c->score;
    alive = true;
  }
  const bool enough = alpha_ == 0.0f ? top_ended_[static_cast<size_t>(b)] && !finished.empty()
                                     : finished.size() >= static_cast<size_t>(K);
  return last || !alive || enough;
}

DecodeResult BeamSearch::result() const {
  const int K = K_;
  const int steps = static_cast<int>(tokens_.size());
  auto weights_of = [&](int step, int beam) {
    const auto begin = weights_[static_cast<size_t>(step)].begin() + static_cast<int64_t>(beam) * W_;
    return std::vector<float>(begin, begin + W_);
  };
  // The hypothesis whose last token came at step t as global beam j (finished: its token
  // `last`, EOS or CTranslate2's last-step token, at step t, extending hypothesis j, a new beam
  // of step t - 1), rebuilt through the backpointers.
  auto trace = [&](int t, int j, bool finished, int32_t last, float score) {
    DecodeResult::Hypothesis h;
    h.score = score;
    const bool copies = !copies_.empty();
    if (finished) {
      h.tokens.push_back(last);
      if (W_ > 0) h.attention.push_back(weights_of(t, j));
      if (copies) h.copy.push_back(copies_[static_cast<size_t>(t)][static_cast<size_t>(j)]);
      --t;
    }
    for (; t >= 0; --t) {
      const int parent = parents_[static_cast<size_t>(t)][static_cast<size_t>(j)];
      h.tokens.push_back(tokens_[static_cast<size_t>(t)][static_cast<size_t>(j)]);
      if (W_ > 0) h.attention.push_back(weights_of(t, parent));
      if (copies) h.copy.push_back(copies_[static_cast<size_t>(t)][static_cast<size_t>(parent)]);
      j = parent;
    }
    std::reverse(h.tokens.begin(), h.tokens.end());
    std::reverse(h.attention.begin(), h.attention.end());
    std::reverse(h.copy.begin(), h.copy.end());
    return h;
  };
  DecodeResult result;
  result.tokens.resize(static_cast<size_t>(batch_));
  result.attention.resize(static_cast<size_t>(batch_));
  result.hypotheses.resize(static_cast<size_t>(batch_));
  for (int64_t b = 0; b < batch_; ++b) {
    std::vector<DecodeResult::Hypothesis>& list = result.hypotheses[static_cast<size_t>(b)];
    std::vector<Finished> fin = finished_[static_cast<size_t>(b)];
    if (!fin.empty()) {
      // Best first; equal scores keep the order they finished in (the winner is the first).
      std::stable_sort(fin.begin(), fin.end(),
                       [](const Finished& x, const Finished& y) { return x.normalized > y.normalized; });
      for (size_t i = 0; i < fin.size() && i < static_cast<size_t>(K); ++i)
        list.push_back(
            trace(fin[i].step, static_cast<int>(b * K + fin[i].parent), true, fin[i].last, fin[i].normalized));
    } else {
      // No EOS within max_len: the best alive hypothesis of the last step (the row was not
      // done, so its alive scores are valid).
      int beam_at = static_cast<int>(b * K);
      for (int k = 1; k < K; ++k)
        if (score_[static_cast<size_t>(b * K + k)] > score_[static_cast<size_t>(beam_at)])
          beam_at = static_cast<int>(b * K + k);
      const float cp =
          beta_ > 0.0f ? coverage_penalty(b, coverage_.data() + static_cast<int64_t>(beam_at) * source_.S) : 0.0f;
      list.push_back(trace(steps - 1, beam_at, false, kEos, score_[static_cast<size_t>(beam_at)] / lp(steps) + cp));
    }
    result.tokens[static_cast<size_t>(b)] = list.front().tokens;
    if (W_ > 0) result.attention[static_cast<size_t>(b)] = list.front().attention;
    if (!copies_.empty()) {
      result.copy.resize(static_cast<size_t>(batch_));
      result.copy[static_cast<size_t>(b)] = list.front().copy;
    }
  }
  return result;
}

}  // namespace attn::models::detail
