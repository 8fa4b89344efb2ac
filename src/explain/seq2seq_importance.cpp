// Source-token importance for encoder-decoders (see attn/explain/seq2seq_importance.h).
#include "attn/explain/seq2seq_importance.h"

#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/explain/inspection_guard.h"
#include "attn/ops/select.h"
#include "attn/ops/softmax.h"

namespace attn::explain {
namespace {

void check_inputs(const std::vector<int32_t>& source, const std::vector<int32_t>& hypothesis, const char* what) {
  if (source.empty()) throw ValueError(std::string(what) + ": the source has no tokens");
  if (hypothesis.empty()) throw ValueError(std::string(what) + ": the hypothesis has no tokens");
}

// `rows` copies of each source in `sources` (all of one length), teacher-forced on the
// hypothesis: src (R, S), src_lengths (R), tgt_in (R, T) = BOS y_1 .. y_{T-1}.
models::Batch teacher_forced(const std::vector<std::vector<int32_t>>& sources, const std::vector<int32_t>& hypothesis) {
  const int64_t R = static_cast<int64_t>(sources.size()), S = static_cast<int64_t>(sources.front().size());
  const int64_t T = static_cast<int64_t>(hypothesis.size());
  std::vector<int32_t> src, tgt_in;
  for (const auto& s : sources) {
    src.insert(src.end(), s.begin(), s.end());
    tgt_in.push_back(models::kBos);
    tgt_in.insert(tgt_in.end(), hypothesis.begin(), hypothesis.end() - 1);
  }
  models::Batch b;
  b.src = Tensor::from_vector(src, {R, S});
  b.src_lengths = Tensor::from_vector(std::vector<int32_t>(static_cast<size_t>(R), static_cast<int32_t>(S)), {R});
  b.tgt_in = Tensor::from_vector(tgt_in, {R, T});
  return b;
}

// log p(y_t) of each row r and step t of logits (R, T, V): out[r][t].
std::vector<std::vector<float>> emitted_log_probs(const Tensor& logits, const std::vector<int32_t>& hypothesis) {
  const Tensor lp = log_softmax(logits);
  const int64_t R = lp.dim(0), T = lp.dim(1), V = lp.dim(2);
  std::vector<std::vector<float>> out(static_cast<size_t>(R), std::vector<float>(static_cast<size_t>(T)));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t t = 0; t < T; ++t)
      out[static_cast<size_t>(r)][static_cast<size_t>(t)] =
          lp.f32()[(r * T + t) * V + hypothesis[static_cast<size_t>(t)]];
  return out;
}

// Decoding results' attention rows of one batch row, multi-head rows (H·S) averaged to S.
std::vector<std::vector<float>> head_averaged(const std::vector<std::vector<float>>& steps, size_t S) {
  std::vector<std::vector<float>> out;
  for (const auto& w : steps) {
    const size_t heads = w.size() / S;
    std::vector<float> row(S, 0.0f);
    for (size_t h = 0; h < heads; ++h)
      for (size_t s = 0; s < S; ++s) row[s] += w[h * S + s] / static_cast<float>(heads);
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

SourceEmbeddingSeq2Seq source_embedding_model(models::Seq2Seq& model) {
  if (model.config().attention == models::AttentionKind::none)
    throw ValueError(
        "the model has no attention (--attention none): attn explain compares attention with importance "
        "and supports seq2seq models with bahdanau or luong attention");
  SourceEmbeddingSeq2Seq m;
  m.module = &model;
  m.attention = std::string(models::to_string(model.config().attention)) + " (" + model.config().effective_score() +
                ")" + (model.config().effective_score() == "multihead" ? ", averaged over heads" : "");
  m.embed = [&model](const Tensor& src) {
    return transpose_01(model.encoder.embedding.forward(models::time_major_ids(src)));
  };
  m.logits = [&model](const Tensor& e, const models::Batch& batch) {
    const models::EncoderOutput enc =
        model.encoder.forward_embedded(transpose_01(e), batch.src_lengths);                   // e (S, B, emb)
    return transpose_01(model.decoder.forward(batch.tgt_in, enc, batch.src_lengths).logits);  // (B, T, V)
  };
  m.greedy = [&model](const Tensor& src, const Tensor& lengths, int max_len, std::vector<int32_t>& hypothesis,
                      std::vector<std::vector<float>>& attention) {
    const models::DecodeResult r = model.greedy(src, lengths, max_len);
    hypothesis = r.tokens.at(0);
    attention = head_averaged(r.attention.at(0), static_cast<size_t>(src.dim(1)));
  };
  return m;
}

SourceEmbeddingSeq2Seq source_embedding_model(models::TransformerSeq2Seq& model) {
  SourceEmbeddingSeq2Seq m;
  m.module = &model;
  m.attention = "cross-attention of the last decoder layer, averaged over heads";
  m.embed = [&model](const Tensor& src) { return model.embed_source(src); };
  m.logits = [&model](const Tensor& e, const models::Batch& batch) {
    return model.logits_from_source_embeddings(e, batch);
  };
  m.greedy = [&model](const Tensor& src, const Tensor& lengths, int max_len, std::vector<int32_t>& hypothesis,
                      std::vector<std::vector<float>>& attention) {
    const models::DecodeResult r = model.greedy(src, lengths, max_len, {.layer = -1, .head = -1});
    hypothesis = r.tokens.at(0);
    attention = r.attention.at(0);
  };
  return m;
}

std::vector<float> target_log_probs(const SourceEmbeddingSeq2Seq& model, const std::vector<int32_t>& source,
                                    const std::vector<int32_t>& hypothesis) {
  check_inputs(source, hypothesis, "target_log_probs");
  InspectionGuard guard(*model.module);
  autodiff::NoGradGuard no_grad;
  const models::Batch b = teacher_forced({source}, hypothesis);
  return emitted_log_probs(model.logits(model.embed(b.src), b), hypothesis).at(0);
}

// One backward pass for every target token: T copies of the source, row t seeded with
// ∂ log p(y_t)/∂logits of its own step t only.
std::vector<std::vector<float>> gradient_times_input(const SourceEmbeddingSeq2Seq& model,
                                                     const std::vector<int32_t>& source,
                                                     const std::vector<int32_t>& hypothesis) {
  check_inputs(source, hypothesis, "gradient_times_input");
  InspectionGuard guard(*model.module);
  const int64_t T = static_cast<int64_t>(hypothesis.size()), S = static_cast<int64_t>(source.size());
  const models::Batch b = teacher_forced(std::vector<std::vector<int32_t>>(static_cast<size_t>(T), source), hypothesis);
  Tensor e;
  {
    autodiff::NoGradGuard no_grad;
    e = model.embed(b.src).clone();  // (T, S, E)
  }
  e.set_requires_grad(true);
  const Tensor lp = log_softmax(model.logits(e, b));  // (T, T, V): row r, step t
  const int64_t V = lp.dim(2), E = e.dim(2);
  Tensor seed = Tensor::zeros(lp.shape());
  for (int64_t t = 0; t < T; ++t) seed.f32()[(t * T + t) * V + hypothesis[static_cast<size_t>(t)]] = 1.0f;
  backward(lp, seed);
  const float* grad = e.grad().f32();
  std::vector<std::vector<float>> out(static_cast<size_t>(T), std::vector<float>(static_cast<size_t>(S)));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < S; ++s) {
      double total = 0.0;
      for (int64_t d = 0; d < E; ++d) {
        const int64_t i = (t * S + s) * E + d;
        total += static_cast<double>(grad[i]) * e.f32()[i];
      }
      out[static_cast<size_t>(t)][static_cast<size_t>(s)] = static_cast<float>(total);
    }
  return out;
}

std::vector<std::vector<float>> leave_one_out(const SourceEmbeddingSeq2Seq& model, const std::vector<int32_t>& source,
                                              const std::vector<int32_t>& hypothesis) {
  check_inputs(source, hypothesis, "leave_one_out");
  if (source.size() < 2) throw ValueError("leave_one_out: a one-token source has nothing left to translate");
  const std::vector<float> full = target_log_probs(model, source, hypothesis);
  std::vector<std::vector<int32_t>> shortened;  // row s: the source without token s
  for (size_t s = 0; s < source.size(); ++s) {
    std::vector<int32_t> row = source;
    row.erase(row.begin() + static_cast<std::ptrdiff_t>(s));
    shortened.push_back(std::move(row));
  }
  std::vector<std::vector<float>> without;  // [s][t]
  {
    InspectionGuard guard(*model.module);
    autodiff::NoGradGuard no_grad;
    const models::Batch b = teacher_forced(shortened, hypothesis);
    without = emitted_log_probs(model.logits(model.embed(b.src), b), hypothesis);
  }
  const size_t T = hypothesis.size(), S = source.size();
  std::vector<std::vector<float>> out(T, std::vector<float>(S));
  for (size_t t = 0; t < T; ++t)
    for (size_t s = 0; s < S; ++s) out[t][s] = std::fabs(full[t] - without[s][t]);
  return out;
}

PairImportance explain_pair(const SourceEmbeddingSeq2Seq& model, const std::vector<int32_t>& source, int max_len) {
  if (source.empty()) throw ValueError("explain: the source has no tokens: there is nothing to explain");
  if (max_len < 1) throw ValueError("explain: max_len must be >= 1, got " + std::to_string(max_len));
  PairImportance p;
  p.source = source;
  {
    InspectionGuard guard(*model.module);
    const Tensor src = Tensor::from_vector(source, {1, static_cast<int64_t>(source.size())});
    const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(source.size())}, {1});
    model.greedy(src, lengths, max_len, p.hypothesis, p.attention);
  }
  p.log_prob = target_log_probs(model, source, p.hypothesis);
  p.gradient = gradient_times_input(model, source, p.hypothesis);
  if (source.size() >= 2) p.leave_one_out = leave_one_out(model, source, p.hypothesis);
  return p;
}

}  // namespace attn::explain
