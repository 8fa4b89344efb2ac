#pragma once
// Eval mode for the guard's lifetime; on leaving, the training flag is restored and the
// parameter gradients the measures' backward passes left are released. Every importance
// measure (importance.cpp, seq2seq_importance.cpp) inspects a model under one.
#include "attn/nn/module.h"

namespace attn::explain {

class InspectionGuard {
 public:
  explicit InspectionGuard(nn::Module& model) : model_(model), was_training_(model.is_training()) { model.eval(); }
  ~InspectionGuard() {
    model_.zero_grad();
    model_.train(was_training_);
  }
  InspectionGuard(const InspectionGuard&) = delete;
  InspectionGuard& operator=(const InspectionGuard&) = delete;

 private:
  nn::Module& model_;
  bool was_training_;
};

}  // namespace attn::explain
