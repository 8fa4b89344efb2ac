#include "attn/train/optimizer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_set>

#include "attn/number_format.h"
#include "attn/parallel.h"
#include "kernels/optimizer.h"

namespace attn::train {
namespace {

constexpr int64_t kGrain = 1 << 14;  // elements per thread chunk, at least

void check_option(const char* opt, const char* what, float value, bool ok) {
  if (!std::isfinite(value) || !ok)
    throw ValueError(std::string(opt) + ": invalid " + what + " " + format_number(value));
}

}  // namespace

// ---------------------------------------------------------------------------- Optimizer

Optimizer::Optimizer(std::vector<Tensor> params, float lr, const char* name)
    : params_(std::move(params)), states_(params_.size()), lr_(lr), name_(name) {
  if (params_.empty()) throw ValueError(std::string(name_) + ": got an empty parameter list");
  std::unordered_set<const TensorImpl*> seen;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].defined())
      throw ValueError(std::string(name_) + ": parameter " + std::to_string(i) + " is undefined");
    if (params_[i].dtype() != DType::f32)
      throw ValueError(std::string(name_) + ": parameter " + param_label(i) + " must be float32, got " +
                       dtype_name(params_[i].dtype()));
    if (!seen.insert(params_[i].impl_ptr().get()).second)
      throw ValueError(std::string(name_) + ": parameter " + param_label(i) + " appears more than once");
  }
  set_lr(lr);
}

std::string Optimizer::param_label(size_t index) const {
  const std::string& n = params_[index].name();
  return n.empty() ? "#" + std::to_string(index) : "#" + std::to_string(index) + " '" + n + "'";
}

void Optimizer::set_lr(float lr) {
  if (!std::isfinite(lr) || lr < 0.0f)
    throw ValueError(std::string(name_) + ": invalid learning rate " + format_number(lr) +
                     " (must be finite and >= 0)");
  lr_ = lr;
}

void Optimizer::step() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    if (!p.has_grad()) continue;
    ParamState& s = states_[i];
    update(p, p.grad(), s.slots, s.steps + 1);
    ++s.steps;
  }
  ++step_count_;
}

void Optimizer::zero_grad(bool set_to_none) {
  for (Tensor& p : params_) {
    if (set_to_none)
      p.drop_grad();
    else
      p.zero_grad();
  }
}

OptimizerState Optimizer::state() const {
  OptimizerState out;
  out.step = step_count_;
  const std::vector<std::string> names = slot_names();
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamState& s = states_[i];
    if (s.steps == 0) continue;
    const std::string prefix = "optimizer." + std::to_string(i) + ".";
    const int64_t steps = std::min<int64_t>(s.steps, std::numeric_limits<int32_t>::max());
    out.tensors.emplace_back(prefix + "step",
                             Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(steps)}, {1}));
    for (size_t k = 0; k < s.slots.size() && k < names.size(); ++k)
      out.tensors.emplace_back(prefix + names[k], s.slots[k]);
  }
  return out;
}

void Optimizer::load_state(const OptimizerState& state) {
  const std::string where = std::string(name_) + ": load_state: ";
  if (state.step < 0) throw ValueError(where + "step count " + std::to_string(state.step) + " is negative");
  const std::vector<std::string> names = slot_names();
  // index -> (steps, slots by slot index)
  struct Pending {
    int64_t steps = -1;
    std::vector<Tensor> slots;
  };
  std::map<size_t, Pending> pending;
  for (const auto& [key, tensor] : state.tensors) {
    // "optimizer.<i>.<slot>"
    const std::string prefix = "optimizer.";
    size_t index = 0;
    std::string slot;
    bool ok = key.rfind(prefix, 0) == 0;
    if (ok) {
      const char* b = key.data() + prefix.size();
      const char* e = key.data() + key.size();
      auto [ptr, ec] = std::from_chars(b, e, index);
      ok = ec == std::errc() && ptr != b && ptr < e && *ptr == '.';
      if (ok) slot.assign(ptr + 1, e);
    }
    if (!ok) throw ValueError(where + "unexpected entry '" + key + "' (expected optimizer.<index>.<slot>)");
    if (index >= params_.size())
      throw ValueError(where + "entry '" + key + "' refers to parameter " + std::to_string(index) +
                       ", but the optimizer has " + std::to_string(params_.size()));
    if (!tensor.defined()) throw ValueError(where + "entry '" + key + "' is an undefined tensor");
    Pending& p = pending[index];
    if (p.slots.empty()) p.slots.resize(names.size());
    if (slot == "step") {
      if (p.steps >= 0) throw ValueError(where + "entry '" + key + "' appears twice");
      if (tensor.dtype() != DType::i32 || tensor.shape() != Shape{1})
        throw ValueError(where + "entry '" + key + "' expected int32 (1), got " + dtype_name(tensor.dtype()) + " " +
                         tensor.shape().str());
      const int32_t steps = tensor.i32()[0];
      if (steps < 1)
        throw ValueError(where + "entry '" + key + "' holds step " + std::to_string(steps) + " (must be >= 1)");
      p.steps = steps;
      continue;
    }
    size_t k = 0;
    while (k < names.size() && names[k] != slot) ++k;
    if (k == names.size())
      throw ValueError(where + "unexpected entry '" + key + "' (" + name_ + " keeps no '" + slot + "')");
    if (p.slots[k].defined()) throw ValueError(where + "entry '" + key + "' appears twice");
    const Tensor& param = params_[index];
    if (tensor.dtype() != DType::f32 || tensor.shape() != param.shape())
      throw ValueError(where + "entry '" + key + "' expected float32 " + param.shape().str() +
                       " (the shape of parameter " + param_label(index) + "), got " + dtype_name(tensor.dtype()) + " " +
                       tensor.shape().str());
    p.slots[k] = tensor;
  }
  for (const auto& [index, p] : pending) {
    const std::string prefix = "optimizer." + std::to_string(index) + ".";
    if (p.steps < 0) throw ValueError(where + "entry '" + prefix + "step' is missing");
    for (size_t k = 0; k < names.size(); ++k)
      if (!p.slots[k].defined()) throw ValueError(where + "entry '" + prefix + names[k] + "' is missing");
  }
  // Everything checked: commit.
  std::vector<ParamState> states(params_.size());
  for (const auto& [index, p] : pending) {
    states[index].steps = p.steps;
    for (const Tensor& t : p.slots) states[index].slots.push_back(t.clone());
  }
  states_ = std::move(states);
  step_count_ = state.step;
}

// ---------------------------------------------------------------------------- SGD

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : Optimizer(std::move(params), options.lr, "SGD"), options_(options) {
  check_option("SGD", "momentum", options.momentum, options.momentum >= 0.0f);
  check_option("SGD", "dampening", options.dampening, true);
  check_option("SGD", "weight_decay", options.weight_decay, options.weight_decay >= 0.0f);
  if (options.nesterov && (options.momentum <= 0.0f || options.dampening != 0.0f))
    throw ValueError("SGD: nesterov momentum requires momentum > 0 and dampening = 0");
}

std::vector<std::string> SGD::slot_names() const {
  if (options_.momentum != 0.0f) return {"momentum_buffer"};
  return {};
}

void SGD::update(Tensor& param, const Tensor& grad, std::vector<Tensor>& slots, int64_t step) {
  const float lr = Optimizer::lr(), wd = options_.weight_decay, mom = options_.momentum;
  const float keep = 1.0f - options_.dampening;
  const bool nesterov = options_.nesterov;
  float* p = param.f32();
  const float* g = grad.f32();
  const int64_t n = param.numel();
  if (mom == 0.0f) {
    // p −= lr (g + wd p)
    parallel_for(0, n, kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) p[i] -= lr * (g[i] + wd * p[i]);
    });
    return;
  }
  const bool first = slots.empty();
  if (first) slots.push_back(Tensor::empty(param.shape()));
  float* buf = slots[0].f32();
  parallel_for(0, n, kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const float d = g[i] + wd * p[i];
      const float b = first ? d : mom * buf[i] + keep * d;
      buf[i] = b;
      p[i] -= lr * (nesterov ? d + mom * b : b);
    }
  });
}

// ---------------------------------------------------------------------------- Adam, AdamW

namespace {
void check_adam(const char* name, const AdamOptions& o) {
  check_option(name, "beta1", o.beta1, o.beta1 >= 0.0f && o.beta1 < 1.0f);
  check_option(name, "beta2", o.beta2, o.beta2 >= 0.0f && o.beta2 < 1.0f);
  check_option(name, "eps", o.eps, o.eps >= 0.0f);
  check_option(name, "weight_decay", o.weight_decay, o.weight_decay >= 0.0f);
}
}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options) : Adam(std::move(params), options, false, "Adam") {}

Adam::Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled, const char* name)
    : Optimizer(std::move(params), options.lr, name), options_(options), decoupled_(decoupled) {
  check_adam(name, options);
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions o)
    : Adam(std::move(params), AdamOptions{o.lr, o.beta1, o.beta2, o.eps, o.weight_decay}, true, "AdamW") {}

std::vector<std::string> Adam::slot_names() const { return {"exp_avg", "exp_avg_sq"}; }

void Adam::update(Tensor& param, const Tensor& grad, std::vector<Tensor>& slots, int64_t step) {
  if (slots.empty()) {
    slots.push_back(Tensor::zeros(param.shape()));
    slots.push_back(Tensor::zeros(param.shape()));
  }
  const double lr = Optimizer::lr();
  const double b1 = options_.beta1, b2 = options_.beta2;
  // Scalars as Python computes them (double), then used as float32 in the element loop.
  const double bias_correction1 = 1.0 - std::pow(b1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(b2, static_cast<double>(step));
  // The element loop: kernels::adam_update (vectorised per ISA level).
  kernels::AdamScalars scalars;
  scalars.w1 = static_cast<float>(1.0 - b1);
  scalars.beta2 = options_.beta2;
  scalars.w2 = static_cast<float>(1.0 - b2);
  scalars.l2 = decoupled_ ? 0.0f : options_.weight_decay;
  scalars.decay = decoupled_ ? static_cast<float>(1.0 - lr * options_.weight_decay) : 1.0f;
  scalars.step_size = static_cast<float>(lr / bias_correction1);
  scalars.bc2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  scalars.eps = options_.eps;
  kernels::adam_update(param.f32(), grad.f32(), slots[0].f32(), slots[1].f32(), param.numel(), scalars);
}

// ---------------------------------------------------------------------------- clip_grad_norm

float clip_grad_norm(const std::vector<Tensor>& params, float max_norm) {
  if (std::isnan(max_norm) || max_norm < 0.0f)
    throw ValueError("clip_grad_norm: max_norm must be >= 0, got " + format_number(max_norm));
  // Sums of squares over fixed blocks (independent of the thread count), added in order.
  constexpr int64_t kBlock = 1 << 12;
  std::vector<Tensor> grads;
  std::vector<size_t> owners;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].defined() && params[i].has_grad()) {
      grads.push_back(params[i].grad());
      owners.push_back(i);
    }
  if (grads.empty()) return 0.0f;
  double total_sq = 0.0;
  std::string first_bad;
  std::vector<double> partial;
  for (size_t t = 0; t < grads.size(); ++t) {
    const float* g = grads[t].f32();
    const int64_t n = grads[t].numel();
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    partial.assign(static_cast<size_t>(blocks), 0.0);
    parallel_for(0, blocks, 4, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        double s = 0.0;
        const int64_t end = std::min(n, (b + 1) * kBlock);
        for (int64_t i = b * kBlock; i < end; ++i) s += static_cast<double>(g[i]) * g[i];
        partial[static_cast<size_t>(b)] = s;
      }
    });
    double sq = 0.0;
    for (double s : partial) sq += s;
    if (!std::isfinite(sq) && first_bad.empty()) {
      const std::string& name = params[owners[t]].name();
      first_bad = "parameter #" + std::to_string(owners[t]) + (name.empty() ? "" : " '" + name + "'");
    }
    total_sq += sq;
  }
  const float total = static_cast<float>(std::sqrt(total_sq));
  if (!std::isfinite(total))
    throw ValueError(
        "clip_grad_norm: the total gradient norm is " + format_number(total) +
        (first_bad.empty() ? std::string(" (overflow)") : " (first non-finite gradient: " + first_bad + ")") +
        "; gradients left unchanged");
  const float coef = max_norm / (total + 1e-6f);
  if (coef < 1.0f) {
    for (Tensor& gt : grads) {
      float* g = gt.f32();
      parallel_for(0, gt.numel(), kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) g[i] *= coef;
      });
    }
  }
  return total;
}

}  // namespace attn::train
