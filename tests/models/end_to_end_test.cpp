// The first end-to-end check: a tiny GRU language model trained with Adam on a fixed
// synthetic task must drive its loss below a stated threshold.
//
// Task: a sequence starts with a stride k in {1, 2, 3} (token k - 1), then a random
// start a, then a + k, a + 2k, ... (mod the content vocabulary). Every target after the
// start is predictable, but only by remembering k from the first step, so the GRU's
// state has to carry information.
#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/nn/layers.h"
#include "attn/ops/loss.h"
#include "attn/ops/shape_ops.h"
#include "attn/parallel.h"
#include "attn/train/optimizer.h"
#include "test_support.h"

namespace attn {
namespace {

constexpr int kStrides = 3;
constexpr int kContent = 12;
constexpr int kVocab = kStrides + kContent;
constexpr int kLength = 8;

struct TinyLm : nn::Module {
  nn::Embedding embed;
  nn::GRUCell cell;
  nn::Linear out;
  TinyLm(Rng& rng) : embed(kVocab, 16, rng), cell(16, 32, rng), out(32, kVocab, rng) {
    register_module("embed", embed);
    register_module("cell", cell);
    register_module("out", out);
  }
  // ids (T, B) → logits (T, B, V)
  Tensor forward(const Tensor& ids) {
    const int64_t batch = ids.dim(1);
    Tensor h = Tensor::zeros({batch, 32});
    std::vector<Tensor> logits;
    for (int64_t t = 0; t < ids.dim(0); ++t) {
      h = cell.forward(embed.forward(ids.select(t)), h);
      logits.push_back(out.forward(h));
    }
    return stack_rows(logits);
  }
};

// inputs (T, B) and targets (T, B); the target of the stride token (the random start)
// is ignored.
std::pair<Tensor, Tensor> make_batch(Rng& rng, int batch) {
  Tensor inputs = Tensor::empty({kLength, batch}, DType::i32);
  Tensor targets = Tensor::empty({kLength, batch}, DType::i32);
  for (int b = 0; b < batch; ++b) {
    const int k = 1 + static_cast<int>(rng.below(kStrides));
    int value = static_cast<int>(rng.below(kContent));
    std::vector<int> seq = {k - 1};
    for (int t = 0; t < kLength; ++t, value = (value + k) % kContent) seq.push_back(kStrides + value);
    for (int t = 0; t < kLength; ++t) {
      inputs.i32()[t * batch + b] = seq[t];
      targets.i32()[t * batch + b] = t == 0 ? -100 : seq[t + 1];
    }
  }
  return {inputs, targets};
}

TEST(EndToEnd, TinyGruLanguageModelLearns) {
  set_num_threads(2);
  Rng rng(42);
  TinyLm model(rng);
  train::Adam adam(model.parameters(), {.lr = 1e-2f});
  float first = 0.0f, last = 0.0f;
  for (int step = 0; step < 300; ++step) {
    auto [inputs, targets] = make_batch(rng, 32);
    Tensor logits = model.forward(inputs);
    Tensor loss = cross_entropy(logits, targets);
    if (step == 0) first = loss.item();
    last = loss.item();
    backward(loss);
    train::clip_grad_norm(model.parameters(), 1.0f);
    adam.step();
    adam.zero_grad();
  }
  // A uniform guess costs ln(15) = 2.71 nats; the task is deterministic after the first
  // step, so a model that learned it gets close to 0.
  EXPECT_GT(first, 2.0f);
  EXPECT_LT(last, 0.05f) << "first loss " << first;
  EXPECT_EQ(autodiff::tape().size(), 0u);
}

}  // namespace
}  // namespace attn
