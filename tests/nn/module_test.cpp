#include "attn/nn/module.h"

#include <memory>
#include <type_traits>

#include "test_support.h"

namespace attn::nn {
namespace {

struct Rnn : Module {
  Tensor weight_ih_l0 = register_parameter("weight_ih_l0", Tensor::zeros({6, 3}));
  Tensor bias_ih_l0 = register_parameter("bias_ih_l0", Tensor::zeros({6}));
};

struct Encoder : Module {
  Tensor embedding = register_parameter("embedding", Tensor::zeros({10, 3}));
  Rnn rnn;
  Encoder() { register_module("rnn", rnn); }
};

struct Model : Module {
  Encoder encoder;
  Rnn decoder;
  Tensor out;
  Model() {
    register_module("encoder", encoder);
    register_module("decoder", decoder);
    // Registered after the children, listed first (own parameters come first, as in PyTorch).
    out = register_parameter("out", Tensor::zeros({2, 2}));
  }
  using Module::register_module;
  using Module::register_parameter;
};

// A bare module whose registration functions are public, for error-path tests.
struct Open : Module {
  using Module::register_module;
  using Module::register_parameter;
  int train_calls = 0;
  void on_train_changed(bool) override { ++train_calls; }
};

std::vector<std::string> names_of(const Module& m) {
  std::vector<std::string> out;
  for (const auto& [n, t] : m.named_parameters()) out.push_back(n);
  return out;
}

TEST(Module, NamesJoinWithDotsInRegistrationOrder) {
  static_assert(!std::is_copy_constructible_v<Module> && !std::is_copy_assignable_v<Module>);
  static_assert(!std::is_move_constructible_v<Model>);
  Model m;
  const std::vector<std::string> expected = {"out",
                                             "encoder.embedding",
                                             "encoder.rnn.weight_ih_l0",
                                             "encoder.rnn.bias_ih_l0",
                                             "decoder.weight_ih_l0",
                                             "decoder.bias_ih_l0"};
  EXPECT_EQ(names_of(m), expected);
  // Every tensor carries its full name and requires grad.
  for (const auto& [n, t] : m.named_parameters()) {
    EXPECT_EQ(t.name(), n);
    EXPECT_TRUE(t.requires_grad()) << n;
  }
  // The member and the listed tensor share storage.
  EXPECT_TRUE(m.named_parameters()[2].second.same(m.encoder.rnn.weight_ih_l0));
  EXPECT_EQ(m.parameters().size(), 6u);
  EXPECT_EQ(m.num_parameters(), 4 + 30 + 18 + 6 + 18 + 6);
  // A child on its own lists local names.
  EXPECT_EQ(names_of(m.encoder.rnn), (std::vector<std::string>{"weight_ih_l0", "bias_ih_l0"}));
  ASSERT_EQ(m.children().size(), 2u);
  EXPECT_EQ(m.children()[0].first, "encoder");
  EXPECT_EQ(m.children()[0].second, &m.encoder);
}

TEST(Module, LateRegistrationRenamesTheSubtree) {
  Open root, mid, leaf;
  Tensor w = leaf.register_parameter("w", Tensor::zeros({2}));
  EXPECT_EQ(w.name(), "w");
  mid.register_module("leaf", leaf);
  EXPECT_EQ(w.name(), "leaf.w");
  root.register_module("mid", mid);
  EXPECT_EQ(w.name(), "mid.leaf.w");
  // A parameter added after the module joined the tree gets its full name at once.
  Tensor b = leaf.register_parameter("b", Tensor::zeros({2}));
  EXPECT_EQ(b.name(), "mid.leaf.b");
  EXPECT_EQ(names_of(root), (std::vector<std::string>{"mid.leaf.w", "mid.leaf.b"}));
}

TEST(Module, TiedParametersAreListedOnce) {
  Open root, a, b;
  root.register_module("a", a);
  root.register_module("b", b);
  Tensor shared = a.register_parameter("weight", Tensor::zeros({3, 2}));
  b.register_parameter("weight", shared);
  b.register_parameter("bias", Tensor::zeros({3}));
  EXPECT_EQ(names_of(root), (std::vector<std::string>{"a.weight", "b.bias"}));
  EXPECT_EQ(root.num_parameters(), 6 + 3);
}

TEST(Module, ZeroGradDropsOrZeroes) {
  Model m;
  m.out.grad_accumulator().fill(3.0f);
  m.encoder.embedding.grad_accumulator().fill(2.0f);
  m.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(m.out.has_grad());
  EXPECT_EQ(m.out.grad().to_vector(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(m.encoder.embedding.grad().to_vector(), std::vector<float>(30, 0.0f));
  EXPECT_FALSE(m.decoder.bias_ih_l0.has_grad());
  m.zero_grad();  // PyTorch's default: set to none
  EXPECT_FALSE(m.out.has_grad());
  EXPECT_FALSE(m.encoder.embedding.has_grad());
}

TEST(Module, TrainModePropagates) {
  Open root, child, grandchild;
  root.register_module("child", child);
  child.register_module("grandchild", grandchild);
  EXPECT_TRUE(root.is_training());
  root.eval();
  EXPECT_FALSE(root.is_training());
  EXPECT_FALSE(child.is_training());
  EXPECT_FALSE(grandchild.is_training());
  EXPECT_EQ(grandchild.train_calls, 1);
  child.train(true);
  EXPECT_FALSE(root.is_training());
  EXPECT_TRUE(child.is_training());
  EXPECT_TRUE(grandchild.is_training());
  EXPECT_EQ(grandchild.train_calls, 2);
}

TEST(Module, DestroyingAChildUnregistersIt) {
  Open root;
  auto child = std::make_unique<Open>();
  root.register_module("child", *child);
  child->register_parameter("w", Tensor::zeros({2}));
  EXPECT_EQ(names_of(root), std::vector<std::string>{"child.w"});
  child.reset();
  EXPECT_TRUE(root.children().empty());
  EXPECT_TRUE(root.named_parameters().empty());
  // And a parent destroyed first leaves its children usable.
  Open orphan;
  Tensor w = orphan.register_parameter("w", Tensor::zeros({1}));
  {
    Open parent;
    parent.register_module("orphan", orphan);
    EXPECT_EQ(w.name(), "orphan.w");
  }
  EXPECT_EQ(w.name(), "w");
  Open adopter;
  adopter.register_module("again", orphan);
  EXPECT_EQ(w.name(), "again.w");
}

TEST(Module, RegistrationErrors) {
  Open m, other, child;
  m.register_parameter("w", Tensor::zeros({2}));
  EXPECT_THROW_MSG(m.register_parameter("w", Tensor::zeros({2})), ValueError,
                   "parameter name 'w' is already a parameter");
  EXPECT_THROW_MSG(m.register_parameter("a.b", Tensor::zeros({2})), ValueError,
                   "parameter name 'a.b' must not contain '.'");
  EXPECT_THROW_MSG(m.register_parameter("", Tensor::zeros({2})), ValueError, "parameter name must not be empty");
  EXPECT_THROW_MSG(m.register_parameter("u", Tensor()), ValueError, "parameter 'u' is an undefined tensor");
  EXPECT_THROW_MSG(m.register_parameter("ids", Tensor::zeros({2}, DType::i32)), ValueError,
                   "parameter 'ids' must be float32, got int32");
  EXPECT_THROW_MSG(m.register_module("w", child), ValueError, "module name 'w' is already a parameter");
  EXPECT_THROW_MSG(m.register_module("self", m), ValueError, "cannot be registered into itself");
  m.register_module("child", child);
  EXPECT_THROW_MSG(m.register_parameter("child", Tensor::zeros({1})), ValueError, "'child' is already a child module");
  EXPECT_THROW_MSG(other.register_module("c", child), ValueError, "module 'c' already has a parent");
  Open grandchild;
  child.register_module("g", grandchild);
  EXPECT_THROW_MSG(grandchild.register_module("m", m), ValueError, "is an ancestor (cycle)");
  // Errors inside a registered module name it by its path.
  EXPECT_THROW_MSG(grandchild.register_parameter("", Tensor::zeros({1})), ValueError,
                   "module 'child.g': parameter name");
}

}  // namespace
}  // namespace attn::nn
