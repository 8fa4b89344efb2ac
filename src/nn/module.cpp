#include "attn/nn/module.h"

#include <unordered_set>

namespace attn::nn {

Module::~Module() {
  if (parent_ != nullptr) {
    auto& siblings = parent_->children_;
    for (auto it = siblings.begin(); it != siblings.end(); ++it)
      if (it->second == this) {
        siblings.erase(it);
        break;
      }
  }
  for (auto& [n, m] : children_) {
    m->parent_ = nullptr;
    m->set_prefix("");
  }
}

void Module::check_new_name(const std::string& kind, const std::string& name) const {
  const std::string where =
      prefix_.empty() ? std::string("module") : "module '" + prefix_.substr(0, prefix_.size() - 1) + "'";
  if (name.empty()) throw ValueError(where + ": " + kind + " name must not be empty");
  if (name.find('.') != std::string::npos)
    throw ValueError(where + ": " + kind + " name '" + name + "' must not contain '.'");
  for (const auto& [n, t] : parameters_)
    if (n == name) throw ValueError(where + ": " + kind + " name '" + name + "' is already a parameter");
  for (const auto& [n, m] : children_)
    if (n == name) throw ValueError(where + ": " + kind + " name '" + name + "' is already a child module");
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor) {
  check_new_name("parameter", name);
  if (!tensor.defined()) throw ValueError("register_parameter: parameter '" + name + "' is an undefined tensor");
  if (tensor.dtype() != DType::f32)
    throw ValueError("register_parameter: parameter '" + name + "' must be float32, got " + dtype_name(tensor.dtype()));
  if (!tensor.is_leaf())
    throw ValueError("register_parameter: parameter '" + name + "' is the output of an op; register a leaf tensor");
  tensor.set_requires_grad(true);
  tensor.set_name(prefix_ + name);
  parameters_.emplace_back(name, tensor);
  return tensor;
}

Module& Module::register_module(const std::string& name, Module& child) {
  check_new_name("module", name);
  if (&child == this) throw ValueError("register_module: module '" + name + "' cannot be registered into itself");
  if (child.parent_ != nullptr) throw ValueError("register_module: module '" + name + "' already has a parent");
  for (const Module* m = parent_; m != nullptr; m = m->parent_)
    if (m == &child) throw ValueError("register_module: module '" + name + "' is an ancestor (cycle)");
  for (const auto& [n, m] : children_)
    if (m == &child) throw ValueError("register_module: module '" + name + "' is already registered as '" + n + "'");
  child.parent_ = this;
  children_.emplace_back(name, &child);
  child.set_prefix(prefix_ + name + ".");
  return child;
}

void Module::register_random_stream(const std::string& name, Rng& rng) {
  for (const auto& [n, r] : random_streams_)
    if (n == name) throw ValueError("register_random_stream: stream '" + name + "' is already registered");
  random_streams_.emplace_back(name, &rng);
}

std::vector<std::pair<std::string, Rng*>> Module::named_random_streams() const {
  std::vector<std::pair<std::string, Rng*>> out;
  for (const auto& [n, r] : random_streams_) out.emplace_back(n, r);
  for (const auto& [n, m] : children_)
    for (auto& [name, r] : m->named_random_streams()) out.emplace_back(n + "." + name, r);
  return out;
}

void Module::set_prefix(const std::string& prefix) {
  prefix_ = prefix;
  for (auto& [n, t] : parameters_) t.set_name(prefix_ + n);
  for (auto& [n, m] : children_) m->set_prefix(prefix_ + n + ".");
}

void Module::collect(std::vector<std::pair<std::string, Tensor>>& out, const std::string& prefix) const {
  for (const auto& [n, t] : parameters_) out.emplace_back(prefix + n, t);
  for (const auto& [n, m] : children_) m->collect(out, prefix + n + ".");
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> all;
  collect(all, "");
  // Tied tensors (the same storage object registered twice) are listed once.
  std::unordered_set<const TensorImpl*> seen;
  std::vector<std::pair<std::string, Tensor>> out;
  out.reserve(all.size());
  for (auto& entry : all)
    if (seen.insert(entry.second.impl_ptr().get()).second) out.push_back(std::move(entry));
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters()) out.push_back(t);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t total = 0;
  for (const auto& [n, t] : named_parameters()) total += t.numel();
  return total;
}

void Module::share_parameters(const Module& source) {
  const std::vector<std::pair<std::string, Tensor>> mine = named_parameters(), theirs = source.named_parameters();
  if (mine.size() != theirs.size())
    throw ValueError("share_parameters: the source has " + std::to_string(theirs.size()) + " parameters, this module " +
                     std::to_string(mine.size()));
  for (size_t i = 0; i < mine.size(); ++i) {
    const auto& [name, t] = mine[i];
    const auto& [source_name, s] = theirs[i];
    if (name != source_name || t.shape() != s.shape())
      throw ValueError("share_parameters: parameter " + std::to_string(i) + " is '" + name + "' " + t.shape().str() +
                       " here and '" + source_name + "' " + s.shape().str() + " in the source");
  }
  for (size_t i = 0; i < mine.size(); ++i) {
    TensorImpl& t = *mine[i].second.impl_ptr();  // every holder of the tensor sees the new storage
    t.buffer = theirs[i].second.impl_ptr()->buffer;
    t.offset = theirs[i].second.impl_ptr()->offset;
  }
}

void Module::zero_grad(bool set_to_none) {
  for (auto& [n, t] : named_parameters()) {
    if (set_to_none)
      t.drop_grad();
    else
      t.zero_grad();
  }
}

void Module::train(bool on) {
  training_ = on;
  on_train_changed(on);
  for (auto& [n, m] : children_) m->train(on);
}

}  // namespace attn::nn
