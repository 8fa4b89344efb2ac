#pragma once
// Optimizers with update rules identical to torch.optim (SGD, Adam, AdamW) and
// torch.nn.utils.clip_grad_norm_.
//
//   train::Adam opt(model.parameters(), {.lr = 1e-3f});
//   loss = ...; backward(loss);
//   train::clip_grad_norm(model.parameters(), 1.0f);
//   opt.step();
//   opt.zero_grad();
//
// A parameter without a gradient (has_grad() false) is skipped by step(): its state does
// not advance, as in PyTorch when .grad is None. Each update is one fused loop per
// parameter, threaded over elements with parallel_for (every element is computed by one
// thread, so results do not depend on the thread count). Scalars (bias corrections, step
// sizes) are computed in double, as Python does, and the element arithmetic in float32.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attn/tensor.h"

namespace attn::train {

// Everything an optimizer needs to resume: the number of step() calls and, per
// parameter that has been updated at least once, named tensors:
//   "optimizer.<i>.step"       int32 (1): updates applied to parameter i
//   "optimizer.<i>.<slot>"     float32, the parameter's shape: momentum_buffer (SGD with
//                              momentum), exp_avg and exp_avg_sq (Adam, AdamW)
// <i> is the parameter's index in the list the optimizer was built with (as in
// torch.optim state_dicts). state() returns the live buffers (no copies); load_state()
// copies.
struct OptimizerState {
  int64_t step = 0;
  std::vector<std::pair<std::string, Tensor>> tensors;
};

class Optimizer {
 public:
  // ValueError for an empty list, an undefined or non-float32 tensor, a tensor listed
  // twice, or a bad learning rate.
  Optimizer(std::vector<Tensor> params, float lr, const char* name);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient.
  void step();
  // Clears the gradients: set_to_none = true (PyTorch's default) releases them, false
  // fills them with zeros.
  void zero_grad(bool set_to_none = true);

  float lr() const { return lr_; }
  // ValueError unless finite and >= 0.
  void set_lr(float lr);
  int64_t step_count() const { return step_count_; }
  const std::vector<Tensor>& parameters() const { return params_; }
  const char* name() const { return name_; }

  OptimizerState state() const;
  // Checks everything first (names, indices, dtypes, shapes, every slot present) and
  // changes nothing on failure; ValueError naming the offending entry.
  void load_state(const OptimizerState& state);

 protected:
  // The per-parameter state buffers this optimizer keeps (e.g. {"exp_avg", "exp_avg_sq"}).
  virtual std::vector<std::string> slot_names() const = 0;
  // Applies one update to params_[index] from its gradient. `slots` holds the state
  // buffers in slot_names() order; empty on the parameter's first update (the
  // optimizer creates them). `step` is the parameter's update count including this one.
  virtual void update(Tensor& param, const Tensor& grad, std::vector<Tensor>& slots, int64_t step) = 0;
  std::string param_label(size_t index) const;

 private:
  struct ParamState {
    int64_t steps = 0;
    std::vector<Tensor> slots;
  };
  std::vector<Tensor> params_;
  std::vector<ParamState> states_;
  float lr_;
  int64_t step_count_ = 0;
  const char* name_;
};

struct SGDOptions {
  float lr = 1e-3f;
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

// torch.optim.SGD:
//   g = grad + wd·p
//   if momentum: buf = g on the first update, else buf = momentum·buf + (1 − dampening)·g
//                g = g + momentum·buf (nesterov) or g = buf
//   p = p − lr·g
class SGD final : public Optimizer {
 public:
  explicit SGD(std::vector<Tensor> params, SGDOptions options = {});
  const SGDOptions& options() const { return options_; }

 protected:
  std::vector<std::string> slot_names() const override;
  void update(Tensor& param, const Tensor& grad, std::vector<Tensor>& slots, int64_t step) override;

 private:
  SGDOptions options_;
};

struct AdamOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;  // Adam: L2 added to the gradient; AdamW: decoupled
};

struct AdamWOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 1e-2f;
};

// torch.optim.Adam (amsgrad = false), at update t of a parameter:
//   g = grad + wd·p
//   m = lerp(m, g, 1 − β1);  v = β2·v + (1 − β2)·g²
//   p = p − lr / (1 − β1^t) · m / (√v / √(1 − β2^t) + eps)
class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params, AdamOptions options = {});
  const AdamOptions& options() const { return options_; }

 protected:
  Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled, const char* name);
  std::vector<std::string> slot_names() const override;
  void update(Tensor& param, const Tensor& grad, std::vector<Tensor>& slots, int64_t step) override;

 private:
  AdamOptions options_;
  bool decoupled_;
};

// torch.optim.AdamW: p = p · (1 − lr·wd) first, then the Adam update without L2.
class AdamW final : public Adam {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});
};

// torch.nn.utils.clip_grad_norm_ (norm_type 2): the total L2 norm over the gradients of
// `params` (those without a gradient are skipped), accumulated in double in a fixed
// order; if coef = max_norm / (norm + 1e-6) < 1 every gradient is multiplied by coef.
// Returns the total norm (0 when no parameter has a gradient). A NaN or infinite norm
// throws ValueError naming it and the first parameter with a non-finite gradient, and
// leaves the gradients untouched. ValueError for a negative or NaN max_norm.
float clip_grad_norm(const std::vector<Tensor>& params, float max_norm);

}  // namespace attn::train
