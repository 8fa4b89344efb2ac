#include "attn/ops/linear.h"

#include "attn/autodiff/tape.h"
#include "attn/parallel.h"
#include "op_table.h"
#include "test_support.h"

namespace attn {
namespace {
using namespace attn::testing;  // the helpers of tests/support

// y[r, o] = Σ_i x[r, i] W[o, i] + b[o], in double.
Tensor linear_reference(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t in = w.dim(1), out = w.dim(0), rows = x.numel() / in;
  std::vector<int64_t> dims = x.shape().dims();
  dims.back() = out;
  Tensor y = Tensor::empty(Shape(dims));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = b.defined() ? b.f32()[o] : 0.0;
      for (int64_t i = 0; i < in; ++i) s += static_cast<double>(x.f32()[r * in + i]) * w.f32()[o * in + i];
      y.f32()[r * out + o] = static_cast<float>(s);
    }
  return y;
}

// Element (i, j) of op(x) for a matrix stored with row stride `cols` (transposed or not).
float at(const float* x, bool transposed, int64_t rows_stored_cols, int64_t i, int64_t j) {
  return transposed ? x[j * rows_stored_cols + i] : x[i * rows_stored_cols + j];
}

// The naive triple loop: c[b] = op(a[b]) op(b[b]).
Tensor bmm_reference(const Tensor& a, const Tensor& b, int64_t batch, int64_t m, int64_t n, int64_t k,
                     MatmulOptions o) {
  Tensor c = Tensor::empty({batch, m, n});
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (int64_t p = 0; p < k; ++p)
          s += static_cast<double>(at(a.f32() + t * m * k, o.transpose_a, o.transpose_a ? m : k, i, p)) *
               at(b.f32() + t * k * n, o.transpose_b, o.transpose_b ? k : n, p, j);
        c.f32()[(t * m + i) * n + j] = static_cast<float>(s);
      }
  return c;
}

const MatmulOptions kAllTransposes[] = {{false, false}, {true, false}, {false, true}, {true, true}};

std::string describe(MatmulOptions o) {
  return std::string("transpose_a=") + (o.transpose_a ? "1" : "0") + " transpose_b=" + (o.transpose_b ? "1" : "0");
}

TEST(Linear, ForwardHandComputed) {
  // W = [[1, 0], [0, 1], [1, 1]], b = [0.5, -1, 0], x = [1, 2] -> [1.5, 1, 3]
  Tensor w = Tensor::from_vector(std::vector<float>{1, 0, 0, 1, 1, 1}, {3, 2});
  Tensor b = Tensor::from_vector(std::vector<float>{0.5f, -1.0f, 0.0f}, {3});
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2}, {2});
  Tensor y = linear(x, w, b);
  EXPECT_EQ(y.shape(), Shape({3}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{1.5f, 1.0f, 3.0f}));
  Tensor y2 = linear(Tensor::from_vector(std::vector<float>{1, 2, -1, 4}, {2, 2}), w);
  EXPECT_EQ(y2.shape(), Shape({2, 3}));
  EXPECT_EQ(y2.to_vector(), (std::vector<float>{1, 2, 3, -1, 4, 3}));
}

TEST(Linear, ForwardMatchesReferenceAcrossRanks) {
  Tensor w = random_tensor({5, 7}, 1);
  Tensor b = random_tensor({5}, 2);
  for (const Shape& shape : {Shape{7}, Shape{1, 7}, Shape{4, 7}, Shape{2, 3, 7}, Shape{2, 1, 3, 7}}) {
    Tensor x = random_tensor(shape, 3);
    Tensor y = linear(x, w, b);
    std::vector<int64_t> dims = shape.dims();
    dims.back() = 5;
    EXPECT_EQ(y.shape(), Shape(dims)) << shape.str();
    EXPECT_TRUE(tensors_close(y, linear_reference(x, w, b))) << shape.str();
    EXPECT_TRUE(tensors_close(linear(x, w), linear_reference(x, w, Tensor()))) << shape.str();
  }
  // OUT = 1
  Tensor w1 = random_tensor({1, 7}, 4), b1 = random_tensor({1}, 5), x = random_tensor({3, 7}, 6);
  EXPECT_EQ(linear(x, w1, b1).shape(), Shape({3, 1}));
  EXPECT_TRUE(tensors_close(linear(x, w1, b1), linear_reference(x, w1, b1)));
}

TEST(Linear, Gradcheck) {
  auto with_bias = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
  auto no_bias = [](const std::vector<Tensor>& in) { return linear(in[0], in[1]); };
  EXPECT_TRUE(gradcheck(with_bias, {leaf({4}, 1), leaf({3, 4}, 2), leaf({3}, 3)}));        // rank 1
  EXPECT_TRUE(gradcheck(with_bias, {leaf({5, 4}, 4), leaf({3, 4}, 5), leaf({3}, 6)}));     // rank 2
  EXPECT_TRUE(gradcheck(with_bias, {leaf({2, 3, 4}, 7), leaf({3, 4}, 8), leaf({3}, 9)}));  // rank 3
  EXPECT_TRUE(gradcheck(no_bias, {leaf({2, 3, 4}, 10), leaf({3, 4}, 11)}));                // no bias
  EXPECT_TRUE(gradcheck(with_bias, {leaf({3, 4}, 12), leaf({1, 4}, 13), leaf({1}, 14)}));  // OUT = 1
  EXPECT_TRUE(gradcheck(with_bias, {leaf({1, 4}, 15), leaf({3, 4}, 16), leaf({3}, 17)}));  // rows = 1
  EXPECT_TRUE(gradcheck(with_bias, {leaf({3, 1}, 18), leaf({2, 1}, 19), leaf({2}, 20)}));  // IN = 1
  // Only some inputs require grad.
  EXPECT_TRUE(gradcheck(with_bias, {random_tensor({3, 4}, 21), leaf({2, 4}, 22), random_tensor({2}, 23)}));
  EXPECT_TRUE(gradcheck(with_bias, {leaf({3, 4}, 24), random_tensor({2, 4}, 25), leaf({2}, 26)}));
  // Large magnitudes: y is linear in each input, so a large step costs no accuracy.
  GradcheckOptions big{.eps = 0.5, .atol = 5e-2, .rtol = 1e-3};
  EXPECT_TRUE(
      gradcheck(with_bias, {leaf({3, 4}, 27, -100, 100), leaf({2, 4}, 28, -100, 100), leaf({2}, 29, -100, 100)}, big));
}

TEST(Linear, BackwardAccumulatesIntoExistingGradients) {
  Tensor x = leaf({3, 4}, 1), w = leaf({2, 4}, 2), b = leaf({2}, 3);
  Tensor seed = random_tensor({3, 2}, 4);
  backward(linear(x, w, b), seed);
  Tensor gx = x.grad().clone(), gw = w.grad().clone(), gb = b.grad().clone();
  backward(linear(x, w, b), seed);
  for (auto [g, once] : {std::pair{x.grad(), gx}, std::pair{w.grad(), gw}, std::pair{b.grad(), gb}}) {
    std::vector<float> twice = once.to_vector();
    for (float& v : twice) v *= 2.0f;
    EXPECT_TRUE(tensors_close(g, Tensor::from_vector(twice, once.shape()), 1e-6f, 1e-6f));
  }
  // db is the column sum of the seed.
  const float* s = seed.f32();
  EXPECT_FLOAT_EQ(gb.f32()[0], s[0] + s[2] + s[4]);
  EXPECT_FLOAT_EQ(gb.f32()[1], s[1] + s[3] + s[5]);
}

TEST(Linear, ZeroRows) {
  Tensor x = leaf({0, 4}, 1), w = leaf({3, 4}, 2), b = leaf({3}, 3);
  Tensor y = linear(x, w, b);
  EXPECT_EQ(y.shape(), Shape({0, 3}));
  backward(y, Tensor::zeros({0, 3}));
  EXPECT_EQ(w.grad().to_vector(), std::vector<float>(12, 0.0f));
  EXPECT_EQ(b.grad().to_vector(), std::vector<float>(3, 0.0f));
}

TEST(Linear, ErrorsNameOpArgumentAndShapes) {
  EXPECT_THROW_MSG(linear(Tensor::zeros({8, 64}), Tensor::zeros({32, 48})), ShapeError,
                   "linear: 'weight' expected (OUT, IN=64), got (32, 48)");
  EXPECT_THROW_MSG(linear(Tensor::zeros({8, 64}), Tensor::zeros({32, 64}), Tensor::zeros({16})), ShapeError,
                   "linear: 'bias' expected (OUT=32), got (16)");
  EXPECT_THROW_MSG(linear(Tensor::zeros({2, 4}), Tensor::zeros({4})), ShapeError,
                   "linear: 'weight' expected (OUT, IN=4), got (4)");
  EXPECT_THROW_MSG(linear(Tensor::scalar(1.0f), Tensor::zeros({2, 1})), ShapeError,
                   "linear: 'x' expected (..., IN), got ()");
  EXPECT_THROW_MSG(linear(Tensor::zeros({2, 4}, DType::i32), Tensor::zeros({2, 4})), ShapeError,
                   "linear: 'x' expected dtype float32, got int32");
  EXPECT_THROW_MSG(linear(Tensor(), Tensor::zeros({2, 4})), ShapeError,
                   "linear: 'x' expected (..., IN), got an undefined tensor");
  EXPECT_THROW_MSG(linear(Tensor::zeros({2, 4}), Tensor()), ShapeError,
                   "linear: 'weight' expected (OUT, IN=4), got an undefined tensor");
}

TEST(Matmul, EachTransposeMatchesNaiveLoop) {
  const int64_t m = 3, n = 5, k = 4;
  for (MatmulOptions o : kAllTransposes) {
    Tensor a = random_tensor(o.transpose_a ? Shape{k, m} : Shape{m, k}, 1);
    Tensor b = random_tensor(o.transpose_b ? Shape{n, k} : Shape{k, n}, 2);
    Tensor c = matmul(a, b, o);
    EXPECT_EQ(c.shape(), Shape({m, n})) << describe(o);
    EXPECT_TRUE(tensors_close(c, bmm_reference(a, b, 1, m, n, k, o).reshape({m, n}))) << describe(o);
  }
  // A hand example: [[1, 2], [3, 4]] [[5], [6]] = [[17], [39]]
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(matmul(a, Tensor::from_vector(std::vector<float>{5, 6}, {2, 1})).to_vector(), (std::vector<float>{17, 39}));
  // aᵀ with a = [[1, 2], [3, 4]]: [[1, 3], [2, 4]] [[5], [6]] = [[23], [34]]
  EXPECT_EQ(matmul(a, Tensor::from_vector(std::vector<float>{5, 6}, {2, 1}), {.transpose_a = true}).to_vector(),
            (std::vector<float>{23, 34}));
}

TEST(Matmul, GradcheckEachTranspose) {
  for (MatmulOptions o : kAllTransposes) {
    auto fn = [o](const std::vector<Tensor>& in) { return matmul(in[0], in[1], o); };
    EXPECT_TRUE(gradcheck(
        fn, {leaf(o.transpose_a ? Shape{4, 3} : Shape{3, 4}, 1), leaf(o.transpose_b ? Shape{2, 4} : Shape{4, 2}, 2)}))
        << describe(o);
    // M = 1, N = 1 edge
    EXPECT_TRUE(gradcheck(
        fn, {leaf(o.transpose_a ? Shape{4, 1} : Shape{1, 4}, 3), leaf(o.transpose_b ? Shape{1, 4} : Shape{4, 1}, 4)}))
        << describe(o);
  }
}

TEST(Bmm, EachTransposeMatchesNaiveLoop) {
  // Small products run one GEMM per batch item in parallel; 64^3 and larger run
  // one threaded GEMM after another. Cover both paths.
  for (auto [batch, m, n, k] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{3, 2, 5, 4}, {1, 3, 2, 6}, {2, 64, 65, 66}}) {
    for (MatmulOptions o : kAllTransposes) {
      Tensor a = random_tensor(o.transpose_a ? Shape{batch, k, m} : Shape{batch, m, k}, 1);
      Tensor b = random_tensor(o.transpose_b ? Shape{batch, n, k} : Shape{batch, k, n}, 2);
      Tensor c = bmm(a, b, o);
      EXPECT_EQ(c.shape(), Shape({batch, m, n}));
      EXPECT_TRUE(tensors_close(c, bmm_reference(a, b, batch, m, n, k, o))) << describe(o) << " m=" << m;
    }
  }
}

TEST(Bmm, GradcheckEachTranspose) {
  for (MatmulOptions o : kAllTransposes) {
    auto fn = [o](const std::vector<Tensor>& in) { return bmm(in[0], in[1], o); };
    EXPECT_TRUE(gradcheck(fn, {leaf(o.transpose_a ? Shape{2, 4, 3} : Shape{2, 3, 4}, 1),
                               leaf(o.transpose_b ? Shape{2, 2, 4} : Shape{2, 4, 2}, 2)}))
        << describe(o);
    EXPECT_TRUE(gradcheck(fn, {leaf(o.transpose_a ? Shape{1, 2, 3} : Shape{1, 3, 2}, 3),
                               leaf(o.transpose_b ? Shape{1, 1, 2} : Shape{1, 2, 1}, 4)}))
        << describe(o) << " (batch 1)";
  }
}

TEST(Bmm, LargeBackwardMatchesReference) {
  // Backward on the threaded-GEMM path, checked against dA = dC op(B)ᵀ, dB = op(A)ᵀ dC
  // written with the naive loop itself.
  const int64_t batch = 2, m = 64, n = 64, k = 64;
  for (MatmulOptions o : kAllTransposes) {
    Tensor a = leaf(o.transpose_a ? Shape{batch, k, m} : Shape{batch, m, k}, 1);
    Tensor b = leaf(o.transpose_b ? Shape{batch, n, k} : Shape{batch, k, n}, 2);
    Tensor dc = random_tensor({batch, m, n}, 3);
    backward(bmm(a, b, o), dc);
    // d op(A) (M, K) = dC (M, N) op(B)ᵀ: a product with op(B) read transposed.
    Tensor d_op_a = bmm_reference(dc, b, batch, m, k, n, {false, !o.transpose_b});
    Tensor d_op_b = bmm_reference(a, dc, batch, k, n, m, {!o.transpose_a, false});  // (K, N)
    Tensor expect_da = o.transpose_a ? Tensor::empty({batch, k, m}) : d_op_a;
    Tensor expect_db = o.transpose_b ? Tensor::empty({batch, n, k}) : d_op_b;
    for (int64_t t = 0; t < batch; ++t) {
      if (o.transpose_a)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t p = 0; p < k; ++p) expect_da.f32()[(t * k + p) * m + i] = d_op_a.f32()[(t * m + i) * k + p];
      if (o.transpose_b)
        for (int64_t p = 0; p < k; ++p)
          for (int64_t j = 0; j < n; ++j) expect_db.f32()[(t * n + j) * k + p] = d_op_b.f32()[(t * k + p) * n + j];
    }
    EXPECT_TRUE(tensors_close(a.grad(), expect_da)) << describe(o);
    EXPECT_TRUE(tensors_close(b.grad(), expect_db)) << describe(o);
  }
}

TEST(Matmul, ErrorsNameOpArgumentAndShapes) {
  EXPECT_THROW_MSG(matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5})), ShapeError,
                   "matmul: 'b' expected (K=3, N), got (4, 5)");
  EXPECT_THROW_MSG(matmul(Tensor::zeros({2, 3}), Tensor::zeros({5, 4}), {.transpose_b = true}), ShapeError,
                   "matmul: 'b' expected (N, K=3), got (5, 4)");
  EXPECT_THROW_MSG(matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5}), {.transpose_a = true}), ShapeError,
                   "matmul: 'b' expected (K=2, N), got (4, 5)");
  EXPECT_THROW_MSG(matmul(Tensor::zeros({2, 3, 4}), Tensor::zeros({4, 5})), ShapeError,
                   "matmul: 'a' expected (M, K), got (2, 3, 4)");
  EXPECT_THROW_MSG(bmm(Tensor::zeros({2, 3, 4}), Tensor::zeros({3, 4, 5})), ShapeError,
                   "bmm: 'b' expected (B=2, K=4, N), got (3, 4, 5)");
  EXPECT_THROW_MSG(bmm(Tensor::zeros({2, 3, 4}), Tensor::zeros({2, 5, 4}), {.transpose_a = true, .transpose_b = true}),
                   ShapeError, "bmm: 'b' expected (B=2, N, K=3), got (2, 5, 4)");
  EXPECT_THROW_MSG(bmm(Tensor::zeros({3, 4}), Tensor::zeros({2, 4, 5})), ShapeError,
                   "bmm: 'a' expected (B, M, K), got (3, 4)");
  EXPECT_THROW_MSG(bmm(Tensor::zeros({2, 3, 4}, DType::i32), Tensor::zeros({2, 4, 5})), ShapeError,
                   "bmm: 'a' expected dtype float32, got int32");
}

// Runs linear forward + backward; returns y, dx, dW, db.
std::vector<std::vector<float>> linear_run() {
  Tensor x = leaf({2, 150, 96}, 1), w = leaf({80, 96}, 2), b = leaf({80}, 3);
  Tensor y = linear(x, w, b);
  backward(y, random_tensor(y.shape(), 4));
  return {y.to_vector(), x.grad().to_vector(), w.grad().to_vector(), b.grad().to_vector()};
}

// DESIGN: a fixed seed and thread count give identical runs. OpenBLAS's threaded SGEMM
// partitions the product by thread count, and its edge kernels round differently, so one
// thread and two threads agree only to float rounding (measured: up to ~2e-5 absolute on
// values of ~10); the same thread count is bit-identical run to run.
TEST(Linear, BitIdenticalRunToRunAndCloseAcrossThreadCounts) {
  const auto runs = run_at_thread_counts(linear_run, {1, 2, 2});
  const auto &one = runs[0], &two = runs[1], &two_again = runs[2];
  const char* names[] = {"y", "dx", "dW", "db"};
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(two[i], two_again[i]) << names[i];
    const Shape shape{static_cast<int64_t>(one[i].size())};
    EXPECT_TRUE(tensors_close(Tensor::from_vector(two[i], shape), Tensor::from_vector(one[i], shape), 1e-4f, 1e-5f))
        << names[i];
  }
}

}  // namespace
}  // namespace attn
