#pragma once
// Source-token importance for encoder-decoders (issue 17, item 2, last bullet): for each
// token y_t of the model's own greedy hypothesis, how much each source token x_s matters,
// next to the attention row of that step.
//
//   attention        the decoder's weights over the source at step t: the RNN's attention
//                    (multi-head: averaged over heads); the Transformer's cross-attention of
//                    the LAST decoder layer, averaged over its heads
//   gradient × input g_{t,s} = Σ_d ∂ log p(y_t | y_<t, x)/∂e_{s,d} · e_{s,d}, teacher-forced on
//                    the hypothesis, with the FULL gradient (the attention is not held
//                    constant, as for transformer-cls in importance.h); signed (τ uses |g|).
//                    e: the RNN encoder's embeddings E[x]; the Transformer's √D·E[x] (the
//                    positions are not attributed)
//   leave-one-out    loo_{t,s} = |log p(y_t | y_<t, x) − log p(y_t | y_<t, x without x_s)|,
//                    the hypothesis held fixed (teacher-forced on the shortened source)
// All run in eval mode; the module's training flag is restored and its gradients released.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/models/batch.h"
#include "attn/models/seq2seq.h"
#include "attn/models/transformer.h"

namespace attn::explain {

// What the measures need of an encoder-decoder with attention.
struct SourceEmbeddingSeq2Seq {
  nn::Module* module = nullptr;
  std::string attention;                           // how the attention row is read, for the reports
  std::function<Tensor(const Tensor& src)> embed;  // (B, S) → e (B, S, E), batch-major
  // Teacher forcing from e: batch.src_lengths and batch.tgt_in are read → logits (B, T, V).
  std::function<Tensor(const Tensor& embeddings, const models::Batch& batch)> logits;
  // Greedy decoding of one source (1, S): the hypothesis (EOS included when emitted) and one
  // attention row of S weights per hypothesis token.
  std::function<void(const Tensor& src, const Tensor& lengths, int max_len, std::vector<int32_t>& hypothesis,
                     std::vector<std::vector<float>>& attention)>
      greedy;
};
// ValueError for an RNN without attention (--attention none): there is no row to compare.
SourceEmbeddingSeq2Seq source_embedding_model(models::Seq2Seq& model);
SourceEmbeddingSeq2Seq source_embedding_model(models::TransformerSeq2Seq& model);

// One explained source: per target token t (hypothesis.size() rows), per source token s.
struct PairImportance {
  std::vector<int32_t> source, hypothesis;
  std::vector<float> log_prob;                          // log p(y_t | y_<t, x), teacher-forced
  std::vector<std::vector<float>> attention, gradient;  // [t][s]
  std::vector<std::vector<float>> leave_one_out;        // [t][s]; empty for a one-token source
  bool has_leave_one_out() const { return !leave_one_out.empty(); }
};

// Decodes greedily (at most max_len tokens) and computes every measure. ValueError for an
// empty source or max_len < 1.
PairImportance explain_pair(const SourceEmbeddingSeq2Seq& model, const std::vector<int32_t>& source, int max_len);

// The pieces, for a given hypothesis (non-empty, as are the sources; ValueError otherwise).
std::vector<float> target_log_probs(const SourceEmbeddingSeq2Seq& model, const std::vector<int32_t>& source,
                                    const std::vector<int32_t>& hypothesis);
std::vector<std::vector<float>> gradient_times_input(const SourceEmbeddingSeq2Seq& model,
                                                     const std::vector<int32_t>& source,
                                                     const std::vector<int32_t>& hypothesis);
// ValueError for a one-token source (nothing would be left to translate).
std::vector<std::vector<float>> leave_one_out(const SourceEmbeddingSeq2Seq& model, const std::vector<int32_t>& source,
                                              const std::vector<int32_t>& hypothesis);

}  // namespace attn::explain
