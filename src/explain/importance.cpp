// Per-token importance measures and the permutation test (see attn/explain/importance.h).
#include "attn/explain/importance.h"

#include <algorithm>
#include <cmath>

#include "attn/autodiff/tape.h"
#include "attn/explain/inspection_guard.h"
#include "attn/explain/rollout.h"
#include "attn/ops/reduce.h"
#include "attn/ops/softmax.h"
#include "attn/random.h"

namespace attn::explain {
using models::AttnClassifier;

namespace {

void check_sentence(const std::vector<int32_t>& ids, const char* what) {
  if (ids.empty()) throw ValueError(std::string(what) + ": the sentence has no tokens");
}

// `rows` copies of the sentence: ids (rows, n), lengths (rows) = n.
void repeated(const std::vector<int32_t>& ids, int64_t rows, Tensor* ids_out, Tensor* lengths_out) {
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<int32_t> all;
  for (int64_t r = 0; r < rows; ++r) all.insert(all.end(), ids.begin(), ids.end());
  *ids_out = Tensor::from_vector(all, {rows, n});
  *lengths_out = Tensor::from_vector(std::vector<int32_t>(static_cast<size_t>(rows), static_cast<int32_t>(n)), {rows});
}

// softmax(logits)[:, label] for each row.
std::vector<float> column(const Tensor& probabilities, int32_t label) {
  const int64_t B = probabilities.dim(0), C = probabilities.dim(1);
  std::vector<float> out(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) out[static_cast<size_t>(b)] = probabilities.f32()[b * C + label];
  return out;
}

// The seed that makes backward(probabilities) give ∂p_label/∂· for every row at once.
Tensor one_hot_seed(const Tensor& probabilities, int32_t label) {
  Tensor seed = Tensor::zeros(probabilities.shape());
  for (int64_t b = 0; b < probabilities.dim(0); ++b) seed.f32()[b * probabilities.dim(1) + label] = 1.0f;
  return seed;
}

void check_label(int64_t classes, int32_t label) {
  if (label < 0 || label >= classes)
    throw ValueError("explain: label " + std::to_string(label) + " is out of range [0, " + std::to_string(classes) +
                     ")");
}

// Embeddings of `rows` copies of the sentence, as a leaf (rows, n, emb) without the tape.
Tensor embedding_leaf(const EmbeddingClassifier& model, const Tensor& ids) {
  Tensor e;
  {
    autodiff::NoGradGuard no_grad;
    e = model.embed(ids).clone();
  }
  e.set_requires_grad(true);
  return e;
}

// Σ_d values[s, d] · grad[s, d] for each token s of a (n, D) block.
std::vector<float> summed_over_embedding(const float* values, const float* grad, int64_t n, int64_t D) {
  std::vector<float> out(static_cast<size_t>(n), 0.0f);
  for (int64_t s = 0; s < n; ++s) {
    double total = 0.0;
    for (int64_t d = 0; d < D; ++d) total += static_cast<double>(grad[s * D + d]) * values[s * D + d];
    out[static_cast<size_t>(s)] = static_cast<float>(total);
  }
  return out;
}

}  // namespace

EmbeddingClassifier embedding_classifier(AttnClassifier& model) {
  EmbeddingClassifier c;
  c.module = &model;
  c.classes = model.config().classes;
  c.embed = [&model](const Tensor& ids) { return model.embed(ids); };
  c.logits = [&model](const Tensor& e, const Tensor& lengths) {
    return model.output(model.pool(model.encode(e, lengths), lengths).context);
  };
  return c;
}

EmbeddingClassifier embedding_classifier(models::TransformerClassifier& model) {
  EmbeddingClassifier c;
  c.module = &model;
  c.classes = model.config().classes;
  c.embed = [&model](const Tensor& ids) { return model.embed(ids); };
  c.logits = [&model](const Tensor& e, const Tensor& lengths) { return model.logits_from_embeddings(e, lengths); };
  return c;
}

std::vector<float> class_probability(const EmbeddingClassifier& model, const Tensor& ids, const Tensor& lengths,
                                     int32_t label) {
  check_label(model.classes, label);
  InspectionGuard guard(*model.module);
  autodiff::NoGradGuard no_grad;
  return column(softmax(model.logits(model.embed(ids), lengths)), label);
}

std::vector<int32_t> predicted_labels(const EmbeddingClassifier& model, const Tensor& ids, const Tensor& lengths) {
  InspectionGuard guard(*model.module);
  autodiff::NoGradGuard no_grad;
  const Tensor logits = model.logits(model.embed(ids), lengths);  // (B, C)
  const int64_t B = logits.dim(0), C = logits.dim(1);
  std::vector<int32_t> out;
  for (int64_t b = 0; b < B; ++b) {
    const float* row = logits.f32() + b * C;
    out.push_back(static_cast<int32_t>(std::max_element(row, row + C) - row));
  }
  return out;
}

std::vector<float> class_probability(AttnClassifier& model, const Tensor& ids, const Tensor& lengths, int32_t label) {
  return class_probability(embedding_classifier(model), ids, lengths, label);
}

std::vector<float> gradient_times_input(AttnClassifier& model, const std::vector<int32_t>& ids, int32_t label) {
  check_sentence(ids, "gradient_times_input");
  check_label(model.config().classes, label);
  InspectionGuard guard(model);
  Tensor ids_t, lengths;
  repeated(ids, 1, &ids_t, &lengths);
  const Tensor e = embedding_leaf(embedding_classifier(model), ids_t);  // (1, n, emb)
  const Tensor states = model.encode(e, lengths);                       // (1, n, E)
  Tensor weights;                                                       // (1, n), a constant
  {
    autodiff::NoGradGuard no_grad;
    weights = model.pool(states.detach(), lengths).weights;
  }
  const Tensor probabilities = softmax(model.output(model.pool_with(weights, states)));
  backward(probabilities, one_hot_seed(probabilities, label));
  return summed_over_embedding(e.f32(), e.grad().f32(), e.dim(1), e.dim(2));
}

// One integrated-gradients step at α = 1 is e · ∂ŷ/∂e: the full gradient × input.
std::vector<float> full_gradient_times_input(const EmbeddingClassifier& model, const std::vector<int32_t>& ids,
                                             int32_t label) {
  check_sentence(ids, "full_gradient_times_input");
  return integrated_gradients(model, ids, label, 1).attributions;
}

std::vector<float> leave_one_out(AttnClassifier& model, const std::vector<int32_t>& ids, int32_t label) {
  return leave_one_out(embedding_classifier(model), ids, label);
}

std::vector<float> leave_one_out(const EmbeddingClassifier& model, const std::vector<int32_t>& ids, int32_t label) {
  check_sentence(ids, "leave_one_out");
  if (ids.size() < 2) throw ValueError("leave_one_out: a one-token sentence has nothing left to classify");
  const int64_t n = static_cast<int64_t>(ids.size());
  Tensor full_ids, full_lengths;
  repeated(ids, 1, &full_ids, &full_lengths);
  const float full = class_probability(model, full_ids, full_lengths, label)[0];
  std::vector<int32_t> shortened;  // row s: the sentence without token s, (n, n − 1)
  for (int64_t s = 0; s < n; ++s)
    for (int64_t t = 0; t < n; ++t)
      if (t != s) shortened.push_back(ids[static_cast<size_t>(t)]);
  const Tensor lengths =
      Tensor::from_vector(std::vector<int32_t>(static_cast<size_t>(n), static_cast<int32_t>(n - 1)), {n});
  std::vector<float> p = class_probability(model, Tensor::from_vector(shortened, {n, n - 1}), lengths, label);
  for (float& v : p) v = std::fabs(full - v);
  return p;
}

IntegratedGradients integrated_gradients(AttnClassifier& model, const std::vector<int32_t>& ids, int32_t label,
                                         int steps) {
  return integrated_gradients(embedding_classifier(model), ids, label, steps);
}

IntegratedGradients integrated_gradients(const EmbeddingClassifier& model, const std::vector<int32_t>& ids,
                                         int32_t label, int steps) {
  check_sentence(ids, "integrated_gradients");
  check_label(model.classes, label);
  if (steps < 1) throw ValueError("integrated_gradients: steps must be >= 1, got " + std::to_string(steps));
  InspectionGuard guard(*model.module);
  Tensor ids_t, lengths;
  repeated(ids, steps, &ids_t, &lengths);
  Tensor e = embedding_leaf(model, ids_t);  // (m, n, emb), row k − 1 scaled by k / m below
  const int64_t n = e.dim(1), D = e.dim(2);
  for (int64_t k = 0; k < steps; ++k) {
    const float alpha = static_cast<float>(k + 1) / static_cast<float>(steps);
    for (int64_t i = 0; i < n * D; ++i) e.f32()[k * n * D + i] *= alpha;
  }
  const Tensor probabilities = softmax(model.logits(e, lengths));  // (m, C)
  backward(probabilities, one_hot_seed(probabilities, label));
  IntegratedGradients r;
  r.attributions.assign(static_cast<size_t>(n), 0.0f);
  const float* grad = e.grad().f32();
  const float* full = e.f32() + (steps - 1) * n * D;  // α = 1: the embeddings themselves
  double total = 0.0;
  for (int64_t s = 0; s < n; ++s) {
    double a = 0.0;
    for (int64_t d = 0; d < D; ++d) {
      double mean_grad = 0.0;
      for (int64_t k = 0; k < steps; ++k) mean_grad += grad[k * n * D + s * D + d];
      a += full[s * D + d] * mean_grad / steps;
    }
    r.attributions[static_cast<size_t>(s)] = static_cast<float>(a);
    total += a;
  }
  const float at_input = probabilities.f32()[(steps - 1) * probabilities.dim(1) + label];
  {
    autodiff::NoGradGuard no_grad;
    Tensor one_ids, one_length;
    repeated(ids, 1, &one_ids, &one_length);
    const Tensor zero = Tensor::zeros({1, n, D});
    r.baseline_probability = column(softmax(model.logits(zero, one_length)), label)[0];
  }
  r.completeness_error = static_cast<float>(std::fabs(total - (at_input - r.baseline_probability)));
  return r;
}

std::vector<float> permutation_deltas(AttnClassifier& model, const std::vector<int32_t>& ids, int32_t label,
                                      int permutations, uint64_t seed) {
  check_sentence(ids, "permutation_deltas");
  check_label(model.config().classes, label);
  if (permutations < 1)
    throw ValueError("permutation_deltas: permutations must be >= 1, got " + std::to_string(permutations));
  InspectionGuard guard(model);
  autodiff::NoGradGuard no_grad;
  Tensor ids_t, lengths;
  repeated(ids, 1, &ids_t, &lengths);
  const Tensor states = model.encode(model.embed(ids_t), lengths);  // (1, n, E), fixed
  models::AttentionPooling own = model.pool(states, lengths);
  const float full = column(softmax(model.output(own.context)), label)[0];
  const int64_t n = states.dim(1), E = states.dim(2), P = permutations;
  Tensor weights = Tensor::empty({P, n});
  Tensor states_p = Tensor::empty({P, n, E});
  Rng rng(seed);
  std::vector<float> a = own.weights.to_vector();
  for (int64_t p = 0; p < P; ++p) {
    std::vector<float> shuffled = a;  // Fisher–Yates
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(shuffled[static_cast<size_t>(i)], shuffled[rng.below(static_cast<uint64_t>(i + 1))]);
    std::copy(shuffled.begin(), shuffled.end(), weights.f32() + p * n);
    std::copy(states.f32(), states.f32() + n * E, states_p.f32() + p * n * E);
  }
  std::vector<float> deltas = column(softmax(model.output(model.pool_with(weights, states_p))), label);
  for (float& v : deltas) v = std::fabs(v - full);
  return deltas;
}

namespace {

// label = argmax, probability = ŷ, from probabilities (1, C).
void set_prediction(const Tensor& probabilities, SentenceImportance& r) {
  const std::vector<float> p = probabilities.to_vector();
  r.label = static_cast<int32_t>(argmax(p.data(), static_cast<int64_t>(p.size())));
  r.probability = p[static_cast<size_t>(r.label)];
}

// Leave-one-out (2+ tokens) and integrated gradients, for either kind.
void add_perturbation_measures(const EmbeddingClassifier& model, const std::vector<int32_t>& ids,
                               const ImportanceOptions& options, SentenceImportance& r) {
  r.has_leave_one_out = ids.size() >= 2;
  if (r.has_leave_one_out) r.leave_one_out = leave_one_out(model, ids, r.label);
  IntegratedGradients ig = integrated_gradients(model, ids, r.label, options.ig_steps);
  r.integrated_gradients = ig.attributions;
  r.ig_completeness_error = ig.completeness_error;
  r.baseline_probability = ig.baseline_probability;
}

// Positions 1..N−1 of a row over [CLS] + tokens.
std::vector<float> token_columns(const Tensor& rows, int64_t row) {
  const int64_t N = rows.dim(1);
  return std::vector<float>(rows.f32() + row * N + 1, rows.f32() + (row + 1) * N);
}

}  // namespace

SentenceImportance explain_sentence(AttnClassifier& model, const std::vector<int32_t>& ids,
                                    const ImportanceOptions& options) {
  check_sentence(ids, "explain_sentence");
  SentenceImportance r;
  Tensor ids_t, lengths;
  repeated(ids, 1, &ids_t, &lengths);
  {
    InspectionGuard guard(model);
    autodiff::NoGradGuard no_grad;
    Tensor attention;
    set_prediction(softmax(model.logits(ids_t, lengths, &attention)), r);
    r.attention = attention.to_vector();
  }
  r.gradient = gradient_times_input(model, ids, r.label);
  add_perturbation_measures(embedding_classifier(model), ids, options, r);
  r.permutation_deltas = permutation_deltas(model, ids, r.label, options.permutations, options.seed);
  std::vector<float> sorted = r.permutation_deltas;
  std::sort(sorted.begin(), sorted.end());
  const size_t m = sorted.size();
  r.permutation_median = m % 2 ? sorted[m / 2] : 0.5f * (sorted[m / 2 - 1] + sorted[m / 2]);
  if (options.adversarial.steps >= 0) {
    r.adversarial = adversarial_attention(model, ids, options.adversarial);
    r.has_adversarial = true;
  }
  return r;
}

SentenceImportance explain_sentence(models::TransformerClassifier& model, const std::vector<int32_t>& ids,
                                    const std::vector<std::string>& tokens, const ImportanceOptions& options) {
  check_sentence(ids, "explain_sentence");
  if (tokens.size() != ids.size())
    throw ShapeError("explain_sentence: 'tokens' expected one per id (" + std::to_string(ids.size()) + "), got " +
                     std::to_string(tokens.size()));
  SentenceImportance r;
  const int64_t N = static_cast<int64_t>(ids.size()) + 1;  // [CLS] + tokens
  std::vector<Tensor> layers;                              // per layer (H, N, N)
  {
    InspectionGuard guard(model);
    autodiff::NoGradGuard no_grad;
    Tensor ids_t, lengths;
    repeated(ids, 1, &ids_t, &lengths);
    std::vector<nn::LayerAttention> weights;
    set_prediction(softmax(model.logits_from_embeddings(model.embed(ids_t), lengths, &weights)), r);
    std::vector<Tensor> batch;
    for (const auto& w : weights) batch.push_back(w.self_weights);
    layers = sentence_layers(batch, 0, N);
  }
  const Tensor& last = layers.back();  // (H, N, N)
  const int64_t H = last.dim(0);
  r.attention.assign(static_cast<size_t>(N - 1), 0.0f);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t s = 1; s < N; ++s) r.attention[static_cast<size_t>(s - 1)] += last.f32()[h * N * N + s] / H;
  r.rollout = token_columns(attention_rollout(layers), 0);
  r.flow = token_columns(attention_flow(layers, {0}), 0);
  std::vector<bool> punctuation;
  for (const auto& t : tokens) punctuation.push_back(is_punctuation(t));
  r.heads = head_statistics(layers, punctuation);
  r.heads_per_layer = H;
  const EmbeddingClassifier differentiable = embedding_classifier(model);
  r.gradient = full_gradient_times_input(differentiable, ids, r.label);
  add_perturbation_measures(differentiable, ids, options, r);
  return r;
}

}  // namespace attn::explain
