// The Transformer pointer-generator (TransformerConfig::pointer): its configuration and
// parameters, the gradient of its loss (finite differences), a mixture that is a distribution
// in training too, decoding with the KV cache against the teacher-forced recomputation, and
// the edge cases of the RNN pointer (a source of one token, a source of unknown words only).
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/data/open_vocab.h"
#include "attn/models/pointer.h"
#include "attn/models/transformer.h"
#include "attn/parallel.h"
#include "pointer_checks.h"
#include "test_support.h"

namespace attn::models {
namespace {

TransformerConfig pointer_config(bool pointer = true) {
  TransformerConfig c;
  c.src_vocab = data::kOpenVocabSize;
  c.tgt_vocab = data::kOpenVocabSize;
  c.d_model = 8;
  c.heads = 2;
  c.ffn = 16;
  c.encoder_layers = 1;
  c.decoder_layers = 2;  // the copy distribution is the last layer's, not the first's
  c.dropout = 0.0f;
  c.max_len = 16;
  c.seed = 3;
  c.pointer = pointer;
  return c;
}

// By value: named_parameters() returns a temporary list (a reference into it would dangle).
Tensor parameter(const nn::Module& m, const std::string& name) {
  for (const auto& [n, p] : m.named_parameters())
    if (n == name) return p;
  throw ValueError("no parameter " + name);
}

TEST(TransformerPointerConfig, JsonAndParameters) {
  const TransformerConfig off = pointer_config(false), on = pointer_config(true);
  EXPECT_FALSE(off.to_json().contains("pointer"));  // checkpoints without it keep their form
  EXPECT_EQ(on.to_json().at("pointer"), true);
  EXPECT_TRUE(TransformerConfig::from_json(on.to_json()).pointer);
  EXPECT_FALSE(TransformerConfig::from_json(off.to_json()).pointer);
  // The configuration a checkpoint written before the pointer holds (every key of that
  // version's to_json) loads without it.
  const nlohmann::json before = nlohmann::json::parse(
      R"({"src_vocab":24,"tgt_vocab":24,"classes":2,"d_model":8,"heads":2,"ffn":16,"encoder_layers":1,
          "decoder_layers":2,"dropout":0.0,"norm_first":true,"activation":"relu","positions":"sinusoidal",
          "max_len":16,"share_embeddings":false,"tie_output":true,"seed":3})");
  EXPECT_EQ(TransformerConfig::from_json(before).to_json(), off.to_json());
  // p_gen's [w_c; w_s; w_x] over 3D, drawn after every other weight: a model without the
  // pointer has the same names and starting values as before, so its checkpoints load.
  const TransformerSeq2Seq plain(off), pointer(on);
  EXPECT_EQ(parameter(pointer, "pointer_gate.weight").shape(), (Shape{1, 24}));
  EXPECT_EQ(parameter(pointer, "pointer_gate.bias").shape(), (Shape{1}));
  const auto plain_parameters = plain.named_parameters();
  EXPECT_EQ(plain_parameters.size() + 2, pointer.named_parameters().size());
  for (const auto& [name, p] : plain_parameters) {
    EXPECT_EQ(name.find("pointer"), std::string::npos) << name;
    EXPECT_TRUE(testing::tensors_close(parameter(pointer, name), p, 0.0f, 0.0f)) << name;
  }
  EXPECT_THROW_MSG(TransformerLM{on}, ValueError, "pointer applies to the encoder-decoder");
  EXPECT_THROW_MSG(TransformerClassifier{on}, ValueError, "pointer applies to the encoder-decoder");
}

TEST(TransformerPointer, LossGradcheckGateAndCopyAttention) {
  set_num_threads(1);
  TransformerSeq2Seq model(pointer_config());
  // Unseen symbols (21, 30) read as UNK: their targets are extended ids only copying reaches,
  // so the loss depends on the last layer's cross-attention through the copy distribution.
  const data::OpenVocabBatch ob = data::open_vocab_copy_batch({{21, 2, 30}, {5, 21}});
  const std::vector<Tensor> checked = {
      parameter(model, "pointer_gate.weight"), parameter(model, "pointer_gate.bias"),
      parameter(model, "decoder.layers.1.multihead_attn.in_proj_weight"),  // the copy attention's q, k, v
      parameter(model, "decoder.layers.0.multihead_attn.in_proj_weight")};
  EXPECT_TRUE(testing::gradcheck([&](const std::vector<Tensor>&) { return model.loss(ob.batch); }, checked,
                                 {.eps = 1e-2, .atol = 3e-3, .rtol = 3e-2}));
  EXPECT_EQ(autodiff::tape().size(), 0u);
  EXPECT_THROW_MSG(model.loss(ob.batch, 0.1f), ValueError,
                   "label smoothing (0.1) does not apply to the pointer-generator");
}

TEST(TransformerPointer, MixtureIsADistributionWithDropout) {
  // The copy distribution is the cross-attention before attention dropout: with it, Σ_w P(w) = 1
  // in training as in evaluation (the dropped weights do not sum to 1).
  TransformerConfig c = pointer_config();
  c.dropout = 0.5f;
  TransformerSeq2Seq model(c);
  const data::OpenVocabBatch ob = data::open_vocab_copy_batch({{21, 2, 30, 4}, {5, 21}});
  autodiff::NoGradGuard no_grad;
  for (bool training : {true, false}) {
    training ? model.train() : model.eval();
    const Tensor log_p = model.logits(ob.batch);  // (B, T, Vx)
    ASSERT_EQ(log_p.shape(), (Shape{2, 5, ob.batch.extended_vocab}));
    const int64_t Vx = log_p.dim(2);
    for (int64_t row = 0; row < log_p.numel() / Vx; ++row) {
      double sum = 0.0;
      for (int64_t w = 0; w < Vx; ++w) sum += std::exp(static_cast<double>(log_p.f32()[row * Vx + w]));
      EXPECT_NEAR(sum, 1.0, 1e-4) << "row " << row << (training ? " in training" : "");
    }
  }
}

// The teacher-forced log P (T, Vx) of `tokens` (a copied OOV fed back as UNK) for row 0 of ob.
Tensor teacher_forced(TransformerSeq2Seq& model, const data::OpenVocabBatch& ob, const std::vector<int32_t>& tokens) {
  std::vector<int32_t> in{kBos};
  for (size_t t = 0; t + 1 < tokens.size(); ++t) in.push_back(tokens[t]);
  const int64_t T = static_cast<int64_t>(tokens.size());
  Batch forced = ob.batch;
  forced.tgt_in = in_vocabulary(Tensor::from_vector(in, {1, T}), model.config().tgt_vocab);
  forced.tgt_out_ext = Tensor::from_vector(tokens, {1, T});
  forced.tgt_out = in_vocabulary(forced.tgt_out_ext, model.config().tgt_vocab);
  forced.tgt_lengths = Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(T)}, {1});
  autodiff::NoGradGuard no_grad;
  return model.logits(forced).reshape({T, ob.batch.extended_vocab});
}

TEST(TransformerPointer, CachedDecodingEqualsTeacherForcedRecompute) {
  // Greedy and beam step the decoder with its KV cache; the teacher-forced pass recomputes every
  // prefix at once. Greedy's token at each step is the argmax of the recomputed log P, and each
  // beam hypothesis's score (α = 0) is the recomputed Σ_t log P(y_t). Catches a step that mixes
  // differently, reads another layer's weights, or feeds an extended id back into the embedding.
  set_num_threads(1);
  int copied = 0;              // emitted extended ids: the case the test is about
  for (int layer : {-1, 0}) {  // the reported alignment's layer: the copy one, or another
    SCOPED_TRACE("select layer " + std::to_string(layer));
    TransformerSeq2Seq model(pointer_config());
    model.eval();
    const data::OpenVocabBatch ob = data::open_vocab_copy_batch({{21, 3, 22, 21}});
    const Batch& b = ob.batch;
    const DecodeResult g = model.greedy(b.src, b.src_lengths, 6, {.layer = layer}, b.src_ext, b.extended_vocab);
    const Tensor forced = teacher_forced(model, ob, g.tokens.at(0));
    for (size_t t = 0; t < g.tokens[0].size(); ++t) {
      const float* row = forced.f32() + static_cast<int64_t>(t) * b.extended_vocab;
      EXPECT_EQ(g.tokens[0][t], std::max_element(row, row + b.extended_vocab) - row) << "step " << t;
    }
    const DecodeResult k = model.beam(b.src, b.src_lengths, {.width = 3, .length_penalty = 0.0f, .max_len = 5},
                                      {.layer = layer}, b.src_ext, b.extended_vocab);
    for (const DecodeResult::Hypothesis& h : k.hypotheses.at(0)) {
      const Tensor log_p = teacher_forced(model, ob, h.tokens);
      double sum = 0.0;
      for (size_t t = 0; t < h.tokens.size(); ++t)
        sum += log_p.f32()[static_cast<int64_t>(t) * b.extended_vocab + h.tokens[t]];
      EXPECT_NEAR(h.score, sum, 1e-4 * std::max(1.0, std::fabs(sum))) << "hypothesis of " << h.tokens.size();
      for (int32_t id : h.tokens) copied += id >= model.config().tgt_vocab;
    }
    for (int32_t id : g.tokens[0]) copied += id >= model.config().tgt_vocab;
  }
  EXPECT_GT(copied, 0) << "no hypothesis emitted a copied OOV";
}

// Greedy and beam decoding of a batch with its extended ids.
void expect_decodes(TransformerSeq2Seq& model, const data::OpenVocabBatch& ob) {
  const Batch& b = ob.batch;
  expect_pointer_decoding(model.greedy(b.src, b.src_lengths, 6, {}, b.src_ext, b.extended_vocab), b);
  expect_pointer_decoding(model.beam(b.src, b.src_lengths, {.width = 3, .max_len = 6}, {}, b.src_ext, b.extended_vocab),
                          b);
}

TEST(TransformerPointer, OneTokenAndAllUnknownSources) {
  set_num_threads(1);
  TransformerSeq2Seq model(pointer_config());
  model.eval();
  expect_decodes(model, data::open_vocab_copy_batch({{7}}));                     // S = 1
  expect_decodes(model, data::open_vocab_copy_batch({{21}}));                    // S = 1, unknown
  expect_decodes(model, data::open_vocab_copy_batch({{21, 22, 21, 40}, {33}}));  // unknown words only
  const Tensor loss = model.loss(data::open_vocab_copy_batch({{21, 22, 21, 40}, {33}}).batch);
  EXPECT_TRUE(std::isfinite(loss.item()));
  // Without the extended ids the copy goes to the source's own ids (UNK here), as the RNN's.
  const data::OpenVocabBatch ob = data::open_vocab_copy_batch({{21, 22}});
  const DecodeResult r = model.greedy(ob.batch.src, ob.batch.src_lengths, 4);
  for (int32_t id : r.tokens.at(0)) EXPECT_LT(id, model.config().tgt_vocab);
  // The logits of source embeddings (explain) copy by batch.src_ext: the same as logits() with
  // it, an error naming it without (embeddings carry no ids).
  autodiff::NoGradGuard no_grad;
  EXPECT_TRUE(testing::tensors_close(model.logits_from_source_embeddings(model.embed_source(ob.batch.src), ob.batch),
                                     model.logits(ob.batch)));
  Batch without = ob.batch;
  without.src_ext = Tensor();
  EXPECT_THROW_MSG(model.logits_from_source_embeddings(model.embed_source(without.src), without), ValueError,
                   "the pointer-generator needs the source's ids (src_ext)");
}

}  // namespace
}  // namespace attn::models
