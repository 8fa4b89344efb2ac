// Wiegreffe & Pinter's diagnostic (see attn/explain/diagnostic.h).
#include "attn/explain/diagnostic.h"

#include <string>

#include "attn/autodiff/tape.h"
#include "attn/error.h"
#include "attn/ops/softmax.h"

namespace attn::explain {
namespace {

// Eval mode and no tape for the guard's lifetime; the training flag restored on leaving.
class EvalGuard {
 public:
  explicit EvalGuard(nn::Module& m) : m_(m), training_(m.is_training()) { m.eval(); }
  ~EvalGuard() { m_.train(training_); }
  EvalGuard(const EvalGuard&) = delete;
  EvalGuard& operator=(const EvalGuard&) = delete;

 private:
  nn::Module& m_;
  bool training_;
  autodiff::NoGradGuard no_grad_;
};

void sentence(const std::vector<int32_t>& ids, Tensor* ids_t, Tensor* lengths) {
  if (ids.empty()) throw ValueError("diagnostic: the sentence has no tokens");
  const int32_t n = static_cast<int32_t>(ids.size());
  *ids_t = Tensor::from_vector(ids, {1, n});
  *lengths = Tensor::from_vector(std::vector<int32_t>{n}, {1});
}

}  // namespace

std::vector<float> probabilities_with_weights(models::AttnClassifier& model, const std::vector<int32_t>& ids,
                                              const std::vector<float>& weights) {
  if (weights.size() != ids.size())
    throw ShapeError("probabilities_with_weights: " + std::to_string(weights.size()) + " weights for " +
                     std::to_string(ids.size()) + " tokens");
  EvalGuard guard(model);
  Tensor ids_t, lengths;
  sentence(ids, &ids_t, &lengths);
  const Tensor w = Tensor::from_vector(weights, {1, static_cast<int64_t>(weights.size())});
  return softmax(model.output(model.pool_with(w, model.encode(model.embed(ids_t), lengths)))).to_vector();
}

std::vector<float> own_attention(models::AttnClassifier& model, const std::vector<int32_t>& ids) {
  EvalGuard guard(model);
  Tensor ids_t, lengths, attention;
  sentence(ids, &ids_t, &lengths);
  model.logits(ids_t, lengths, &attention);
  return attention.to_vector();
}

}  // namespace attn::explain
