// Jain & Wallace's adversarial attention (see attn/explain/adversarial.h).
#include "attn/explain/adversarial.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "attn/autodiff/tape.h"
#include "attn/error.h"
#include "attn/ops/softmax.h"
#include "attn/random.h"

namespace attn::explain {

double jensen_shannon(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size())
    throw ShapeError("jensen_shannon: the distributions differ in length (" + std::to_string(a.size()) + " and " +
                     std::to_string(b.size()) + ")");
  double total = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double m = 0.5 * (static_cast<double>(a[i]) + b[i]);
    if (a[i] > 0.0f) total += 0.5 * a[i] * std::log(a[i] / m);
    if (b[i] > 0.0f) total += 0.5 * b[i] * std::log(b[i] / m);
  }
  return total;
}

namespace {

// One candidate's forward values and, on request, ∂O/∂z. a (n): softmax(z).
struct Evaluation {
  double objective = 0.0, jsd = 0.0, probability = 0.0;
};

Evaluation evaluate(const AdversarialProblem& p, const float* z, float epsilon, float hinge_weight, float* gradient,
                    std::vector<double>& a, std::vector<double>& context, std::vector<double>& logits,
                    std::vector<double>& dcontext, std::vector<double>& da) {
  const int64_t n = p.n, E = p.E, C = p.C;
  // a = softmax(z) (n)
  const double top = *std::max_element(z, z + n);
  double sum = 0.0;
  for (int64_t s = 0; s < n; ++s) sum += (a[static_cast<size_t>(s)] = std::exp(static_cast<double>(z[s]) - top));
  for (auto& v : a) v /= sum;
  // context = Σ_s a_s h_s (E); logits = W context + b (C); ŷ = softmax(logits)[c]
  std::fill(context.begin(), context.end(), 0.0);
  for (int64_t s = 0; s < n; ++s) {
    const float* h = p.states.data() + s * E;
    const double w = a[static_cast<size_t>(s)];
    for (int64_t e = 0; e < E; ++e) context[static_cast<size_t>(e)] += w * h[e];
  }
  double top_logit = -INFINITY;
  for (int64_t j = 0; j < C; ++j) {
    double l = p.bias[static_cast<size_t>(j)];
    const float* row = p.weight.data() + j * E;
    for (int64_t e = 0; e < E; ++e) l += row[e] * context[static_cast<size_t>(e)];
    logits[static_cast<size_t>(j)] = l;
    top_logit = std::max(top_logit, l);
  }
  double z_sum = 0.0;
  for (auto& l : logits) z_sum += (l = std::exp(l - top_logit));
  for (auto& l : logits) l /= z_sum;  // now the probabilities p_j
  Evaluation r;
  r.probability = logits[static_cast<size_t>(p.label)];
  for (int64_t s = 0; s < n; ++s) {
    const double x = a[static_cast<size_t>(s)], y = p.alpha[static_cast<size_t>(s)], m = 0.5 * (x + y);
    if (x > 0.0) r.jsd += 0.5 * x * std::log(x / m);
    if (y > 0.0) r.jsd += 0.5 * y * std::log(y / m);
  }
  const double delta = r.probability - p.original;
  const double excess = std::fabs(delta) - epsilon;
  r.objective = r.jsd - hinge_weight * std::max(0.0, excess);
  if (gradient == nullptr) return r;
  // ∂O/∂a_s = ½ ln(a_s / m_s) − λ [excess > 0] sign(Δ) h_s · Wᵀ ŷ(e_c − p)
  const double hinge = excess > 0.0 ? hinge_weight * (delta > 0.0 ? 1.0 : -1.0) : 0.0;
  std::fill(dcontext.begin(), dcontext.end(), 0.0);
  if (hinge != 0.0)
    for (int64_t j = 0; j < C; ++j) {
      const double dlogit = r.probability * ((j == p.label ? 1.0 : 0.0) - logits[static_cast<size_t>(j)]);
      const float* row = p.weight.data() + j * E;
      for (int64_t e = 0; e < E; ++e) dcontext[static_cast<size_t>(e)] += dlogit * row[e];
    }
  double mean = 0.0;
  for (int64_t s = 0; s < n; ++s) {
    const double x = std::max(a[static_cast<size_t>(s)], 1e-300), m = 0.5 * (x + p.alpha[static_cast<size_t>(s)]);
    double dy = 0.0;
    if (hinge != 0.0) {
      const float* h = p.states.data() + s * E;
      for (int64_t e = 0; e < E; ++e) dy += h[e] * dcontext[static_cast<size_t>(e)];
    }
    da[static_cast<size_t>(s)] = 0.5 * std::log(x / m) - hinge * dy;
    mean += a[static_cast<size_t>(s)] * da[static_cast<size_t>(s)];
  }
  for (int64_t s = 0; s < n; ++s)
    gradient[s] = static_cast<float>(a[static_cast<size_t>(s)] * (da[static_cast<size_t>(s)] - mean));
  return r;
}

struct Workspace {
  std::vector<double> a, context, logits, dcontext, da;
  explicit Workspace(const AdversarialProblem& p)
      : a(static_cast<size_t>(p.n)),
        context(static_cast<size_t>(p.E)),
        logits(static_cast<size_t>(p.C)),
        dcontext(static_cast<size_t>(p.E)),
        da(static_cast<size_t>(p.n)) {}
};

void check_problem(const AdversarialProblem& p, const std::vector<float>& z, int64_t K, const char* what) {
  if (p.n < 1 || p.E < 1 || p.C < 2 || p.label < 0 || p.label >= p.C || p.alpha.size() != static_cast<size_t>(p.n) ||
      p.states.size() != static_cast<size_t>(p.n * p.E) || p.weight.size() != static_cast<size_t>(p.C * p.E) ||
      p.bias.size() != static_cast<size_t>(p.C))
    throw ShapeError(std::string(what) + ": the problem's sizes do not agree (n " + std::to_string(p.n) + ", E " +
                     std::to_string(p.E) + ", C " + std::to_string(p.C) + ")");
  if (K < 1 || z.size() != static_cast<size_t>(K * p.n))
    throw ShapeError(std::string(what) + ": expected K x n = " + std::to_string(K) + " x " + std::to_string(p.n) +
                     " values, got " + std::to_string(z.size()));
}

}  // namespace

std::vector<float> adversarial_probability(const AdversarialProblem& p, const std::vector<float>& a, int64_t K) {
  check_problem(p, a, K, "adversarial_probability");
  std::vector<float> logs(a.size());
  for (size_t i = 0; i < a.size(); ++i) logs[i] = a[i] > 0.0f ? std::log(a[i]) : -1e30f;
  Workspace w(p);
  std::vector<float> out;
  for (int64_t k = 0; k < K; ++k)
    out.push_back(static_cast<float>(
        evaluate(p, logs.data() + k * p.n, 0.0f, 0.0f, nullptr, w.a, w.context, w.logits, w.dcontext, w.da)
            .probability));
  return out;
}

std::vector<float> adversarial_objective(const AdversarialProblem& p, const std::vector<float>& z, int64_t K,
                                         float epsilon, float hinge_weight, std::vector<float>* gradient) {
  check_problem(p, z, K, "adversarial_objective");
  if (gradient) gradient->assign(z.size(), 0.0f);
  Workspace w(p);
  std::vector<float> out;
  for (int64_t k = 0; k < K; ++k)
    out.push_back(static_cast<float>(evaluate(p, z.data() + k * p.n, epsilon, hinge_weight,
                                              gradient ? gradient->data() + k * p.n : nullptr, w.a, w.context, w.logits,
                                              w.dcontext, w.da)
                                         .objective));
  return out;
}

AdversarialProblem adversarial_problem(models::AttnClassifier& model, const std::vector<int32_t>& ids) {
  if (ids.empty()) throw ValueError("adversarial_problem: the sentence has no tokens");
  if (!model.out.bias.defined()) throw ValueError("adversarial_problem: the output layer has no bias");
  const bool was_training = model.is_training();
  model.eval();
  AdversarialProblem p;
  {
    autodiff::NoGradGuard no_grad;
    const int32_t n = static_cast<int32_t>(ids.size());
    const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{n}, {1});
    const Tensor states = model.encode(model.embed(Tensor::from_vector(ids, {1, n})), lengths);  // (1, n, E)
    const models::AttentionPooling pooled = model.pool(states, lengths);
    const std::vector<float> probabilities = softmax(model.output(pooled.context)).to_vector();  // (C)
    p.n = n;
    p.E = states.dim(2);
    p.C = static_cast<int64_t>(probabilities.size());
    p.alpha = pooled.weights.to_vector();
    p.states = states.to_vector();
    p.weight = model.out.weight.to_vector();
    p.bias = model.out.bias.to_vector();
    p.label =
        static_cast<int32_t>(std::max_element(probabilities.begin(), probabilities.end()) - probabilities.begin());
    p.original = probabilities[static_cast<size_t>(p.label)];
  }
  model.train(was_training);
  return p;
}

AdversarialResult adversarial_attention(const AdversarialProblem& p, const AdversarialOptions& o) {
  if (o.candidates < 1)
    throw ValueError("adversarial_attention: candidates must be >= 1, got " + std::to_string(o.candidates));
  if (o.steps < 0) throw ValueError("adversarial_attention: steps must be >= 0, got " + std::to_string(o.steps));
  const int64_t K = o.candidates, n = p.n;
  std::vector<float> z(static_cast<size_t>(K * n));
  Rng rng(o.seed);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t s = 0; s < n; ++s)
      z[static_cast<size_t>(k * n + s)] =
          std::log(std::max(p.alpha[static_cast<size_t>(s)], 1e-30f)) + o.init_noise * rng.normal();
  check_problem(p, z, K, "adversarial_attention");
  AdversarialResult r;
  r.attention = p.alpha;  // the original: JSD 0, Δŷ 0
  r.max_attention = *std::max_element(p.alpha.begin(), p.alpha.end());
  r.final_jsd.assign(static_cast<size_t>(K), 0.0f);
  r.final_delta.assign(static_cast<size_t>(K), 0.0f);
  Workspace w(p);
  std::vector<float> grad(z.size()), m1(z.size(), 0.0f), m2(z.size(), 0.0f);
  const double beta1 = 0.9, beta2 = 0.999;
  for (int step = 0; step <= o.steps; ++step) {
    for (int64_t k = 0; k < K; ++k) {
      const Evaluation e = evaluate(p, z.data() + k * n, o.epsilon, o.hinge_weight, grad.data() + k * n, w.a, w.context,
                                    w.logits, w.dcontext, w.da);
      const double delta = std::fabs(e.probability - p.original);
      if (delta <= o.admissible && e.jsd > r.jsd) {
        r.jsd = static_cast<float>(e.jsd);
        r.delta = static_cast<float>(delta);
        for (int64_t s = 0; s < n; ++s)
          r.attention[static_cast<size_t>(s)] = static_cast<float>(w.a[static_cast<size_t>(s)]);
      }
      if (step == o.steps) {
        r.final_jsd[static_cast<size_t>(k)] = static_cast<float>(e.jsd);
        r.final_delta[static_cast<size_t>(k)] = static_cast<float>(delta);
      }
    }
    if (step == o.steps) break;
    // Adam, ascending O
    const double c1 = 1.0 - std::pow(beta1, step + 1), c2 = 1.0 - std::pow(beta2, step + 1);
    for (size_t i = 0; i < z.size(); ++i) {
      m1[i] = static_cast<float>(beta1 * m1[i] + (1.0 - beta1) * grad[i]);
      m2[i] = static_cast<float>(beta2 * m2[i] + (1.0 - beta2) * grad[i] * grad[i]);
      z[i] += static_cast<float>(o.learning_rate * (m1[i] / c1) / (std::sqrt(m2[i] / c2) + 1e-8));
    }
  }
  return r;
}

AdversarialResult adversarial_attention(models::AttnClassifier& model, const std::vector<int32_t>& ids,
                                        const AdversarialOptions& options) {
  return adversarial_attention(adversarial_problem(model, ids), options);
}

}  // namespace attn::explain
