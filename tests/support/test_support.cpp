#include "test_support.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "attn/autodiff/tape.h"
#include "attn/random.h"

namespace attn::testing {

namespace {
// The process's temporary folder, removed by the destructor of this static at exit.
struct ProcessTempDir {
  std::filesystem::path path;
  ProcessTempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "attn_test_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed: " + pattern);
    path = pattern;
  }
  ~ProcessTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};
}  // namespace

std::filesystem::path process_temp_dir() {
  static const ProcessTempDir dir;
  return dir.path;
}

std::string temp_path(const std::string& name) { return (process_temp_dir() / name).string(); }

std::string temp_file(const std::string& name, const std::string& content) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

void TempDirTest::SetUp() {
  std::string pattern = (std::filesystem::temp_directory_path() / "attn_test_XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  dir_ = pattern;
}

void TempDirTest::TearDown() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void TempDirTest::put(const std::string& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

std::string TempDirTest::read(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  Rng rng(seed);
  Tensor t = Tensor::empty(shape);
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = lo + (hi - lo) * rng.uniform();
  return t;
}

Tensor leaf(const Shape& shape, uint64_t seed, float lo, float hi) {
  return random_tensor(shape, seed, lo, hi).set_requires_grad(true);
}
Tensor wide_leaf(const Shape& shape, uint64_t seed, float lo, float hi) { return leaf(shape, seed, lo, hi); }

Tensor lengths_of(const std::vector<int32_t>& lengths) {
  return Tensor::from_vector(lengths, {static_cast<int64_t>(lengths.size())});
}

Tensor random_ids(const Shape& shape, int32_t vocab, uint64_t seed) {
  Rng rng(seed);
  Tensor t = Tensor::empty(shape, DType::i32);
  int32_t* p = t.i32();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(vocab));
  return t;
}

Tensor ragged_mask(const Shape& shape, const std::vector<int64_t>& lengths) {
  const int64_t n = shape.last();
  std::vector<int32_t> m(static_cast<size_t>(shape.numel()), 0);
  for (size_t r = 0; r < lengths.size(); ++r)
    for (int64_t i = 0; i < lengths[r]; ++i) m[r * n + i] = 1;
  return Tensor::from_vector(m, shape);
}

::testing::AssertionResult tensors_close(const Tensor& actual, const Tensor& expected, float atol, float rtol) {
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape mismatch: actual " << actual.shape().str() << ", expected "
                                         << expected.shape().str();
  const float* a = actual.f32();
  const float* e = expected.f32();
  double scale = 1.0;
  for (int64_t i = 0; i < expected.numel(); ++i)
    if (std::isfinite(e[i])) scale = std::max(scale, std::fabs(static_cast<double>(e[i])));
  int64_t worst = -1;
  double worst_excess = 0.0;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double err = std::fabs(static_cast<double>(a[i]) - e[i]);
    const double allowed = atol * scale + rtol * std::fabs(e[i]);
    if (std::isnan(a[i]) != std::isnan(e[i]) || err > allowed) {
      const double excess = std::isnan(err) ? 1e30 : err - allowed;
      if (worst < 0 || excess > worst_excess) {
        worst = i;
        worst_excess = excess;
      }
    }
  }
  if (worst < 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "tensors differ, shape " << actual.shape().str() << ", worst flat index "
                                       << worst << ": actual " << a[worst] << ", expected " << e[worst] << " (allowed "
                                       << atol << " * scale " << scale << " + " << rtol << " * |expected|)";
}

namespace {
double weighted_sum(const Tensor& y, const std::vector<double>& w) {
  const float* p = y.f32();
  double s = 0.0;
  for (int64_t i = 0; i < y.numel(); ++i) s += w[i] * p[i];
  return s;
}
}  // namespace

::testing::AssertionResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                                     std::vector<Tensor> inputs, GradcheckOptions options) {
  for (Tensor& t : inputs)
    if (t.requires_grad()) t.drop_grad();
  Tensor y = fn(inputs);
  if (!y.requires_grad()) return ::testing::AssertionFailure() << "gradcheck: output does not require grad";
  Rng rng(1234);
  std::vector<double> w(static_cast<size_t>(y.numel()));
  std::vector<float> wf(w.size());
  for (size_t i = 0; i < w.size(); ++i) wf[i] = static_cast<float>(w[i] = rng.uniform() * 2.0 - 1.0);
  backward(y, Tensor::from_vector(wf, y.shape()));

  autodiff::NoGradGuard no_grad;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor& x = inputs[k];
    if (!x.requires_grad()) continue;
    Tensor analytic = x.has_grad() ? x.grad().clone() : Tensor::zeros(x.shape());
    float* p = x.f32();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float original = p[i];
      p[i] = static_cast<float>(original + options.eps);
      const double plus = weighted_sum(fn(inputs), w);
      p[i] = static_cast<float>(original - options.eps);
      const double minus = weighted_sum(fn(inputs), w);
      p[i] = original;
      const double numeric = (plus - minus) / (2.0 * options.eps);
      const double got = analytic.f32()[i];
      if (std::fabs(got - numeric) > options.atol + options.rtol * std::fabs(numeric)) {
        return ::testing::AssertionFailure() << "gradcheck: input " << k << " shape " << x.shape().str()
                                             << ", flat index " << i << ": analytic " << got << ", numeric " << numeric;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

std::string data_dir() {
  if (const char* env = std::getenv("ATTN_DATA_DIR"); env != nullptr && *env != '\0') return env;
  return ATTN_DATA_DIR_DEFAULT;
}

bool data_file_exists(const std::string& relative_path) {
  std::error_code error;
  return std::filesystem::is_regular_file(data_dir() + "/" + relative_path, error);
}

bool data_required() {
  const char* env = std::getenv("ATTN_REQUIRE_DATA");
  return env != nullptr && std::string(env) == "1";
}

}  // namespace attn::testing
