#pragma once
// Module: a named tree of parameters, like torch.nn.Module.
//
//   struct Encoder : Module {
//     Tensor weight_ih_l0 = register_parameter("weight_ih_l0", Tensor::empty({3 * H, E}));
//   };
//   struct Model : Module {
//     Encoder encoder;
//     Model() { register_module("encoder", encoder); }
//   };
//   model.named_parameters()  // {"encoder.weight_ih_l0", ...}, registration order
//
// Parameter names join with '.' exactly like PyTorch state_dict keys, and every
// parameter tensor carries its full name (Tensor::name()) once its module sits in the
// tree, so checkpoints and error messages agree with PyTorch's keys.
//
// Modules are neither copyable nor movable: a parent holds pointers to its children,
// so a child must live at least as long as its parent (make it a member, or hold it in
// a std::unique_ptr owned by the parent).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attn/random.h"
#include "attn/tensor.h"

namespace attn::nn {

class Module {
 public:
  Module() = default;
  // Leaves its parent's child list and orphans its own children, so destroying either
  // side first never leaves a dangling pointer behind.
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&&) = delete;
  Module& operator=(Module&&) = delete;

  // All parameters of this module and its children, depth-first in registration order
  // (own parameters first, then each child's), names joined with '.'. A tensor that is
  // registered under several names (weight tying) is listed once, under its first
  // name, as torch.nn.Module.named_parameters() does.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  // Total number of elements over parameters() (tied tensors counted once).
  int64_t num_parameters() const;

  // Clears every parameter's gradient. set_to_none = true (PyTorch's default) releases
  // the buffers, so an optimizer skips parameters that receive no gradient in the next
  // step; false keeps the buffers and fills them with zeros.
  void zero_grad(bool set_to_none = true);

  // Training mode (dropout active) for this module and every child.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Direct children in registration order, with their local names.
  const std::vector<std::pair<std::string, Module*>>& children() const { return children_; }

  // Registers a float32 tensor as a parameter: marks it requires_grad and names it
  // (prefix of the parent path + name). Returns the same tensor (shared storage), so a
  // member can be initialised with it. ValueError for an empty name, a name with '.',
  // a name already used by a parameter or child, an undefined or non-float32 tensor.
  Tensor register_parameter(const std::string& name, Tensor tensor);
  // Registers `child` under `name`; the child (and its subtree) now reports its
  // parameters as "<name>.<...>". The child must outlive this module. ValueError for
  // a bad or duplicate name, registering a module into itself or twice.
  Module& register_module(const std::string& name, Module& child);
  // Registers a random stream that training draws from (dropout masks, hard attention's
  // samples), so a run checkpoint can save and restore it: --resume then continues the
  // very stream an uninterrupted run would use. `rng` must live as long as this module.
  void register_random_stream(const std::string& name, Rng& rng);
  // Every registered stream of this module and its children, names joined with '.'
  // like named_parameters() ("encoder.dropout.rng").
  std::vector<std::pair<std::string, Rng*>> named_random_streams() const;

  // Makes every parameter of this module read and write `source`'s storage (its gradient
  // buffers stay its own): a replica that runs on the same weights, e.g. one per thread.
  // ValueError unless both list the same parameter names and shapes.
  void share_parameters(const Module& source);

 protected:
  // Hook for subclasses that must react to train()/eval(); called after the flag changed.
  virtual void on_train_changed(bool) {}

 private:
  void set_prefix(const std::string& prefix);
  void check_new_name(const std::string& kind, const std::string& name) const;
  void collect(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix) const;

  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Rng*>> random_streams_;
  std::vector<std::pair<std::string, Module*>> children_;
  std::string prefix_;  // "encoder.rnn." once registered under encoder.rnn
  Module* parent_ = nullptr;
  bool training_ = true;
};

}  // namespace attn::nn
