#pragma once
// Shapes (outermost-first, like PyTorch) and the shape contract every op checks once
// at its boundary.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn {

enum class DType : uint8_t { f32, i32 };
const char* dtype_name(DType dtype);
inline int64_t dtype_size(DType) { return 4; }

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  // Size of dimension i; negative i counts from the end (-1 is the last).
  int64_t operator[](int i) const { return dims_[i < 0 ? i + rank() : i]; }
  int64_t numel() const;
  const std::vector<int64_t>& dims() const { return dims_; }
  // Product of all dimensions but the last: the number of rows of a (..., N) tensor.
  int64_t rows() const;
  int64_t last() const { return rank() == 0 ? 1 : dims_.back(); }
  std::string str() const;  // "(4, 7, 128)"

  bool operator==(const Shape& other) const = default;

 private:
  std::vector<int64_t> dims_;
};

class Tensor;

// Checks the tensors an op receives against named dimensions, binding each name to the
// size it first meets, so later arguments must agree:
//
//   ShapeContract c("additive_attention");
//   c.check("query", query, {"B", "D"});
//   c.check("keys", keys, {"B", "S", "E"});   // B must equal query's B
//
// A dimension name may be a number ("1", "3") for a fixed size. Names can be bound ahead
// of time with bind(). A mismatch throws ShapeError:
//   additive_attention: 'keys' expected (B=4, S, E=256), got (4, 7, 128)
class ShapeContract {
 public:
  explicit ShapeContract(std::string op) : op_(std::move(op)) {}

  ShapeContract& bind(std::string_view name, int64_t size);
  ShapeContract& check(std::string_view arg, const Tensor& tensor, std::initializer_list<std::string_view> dims,
                       DType dtype = DType::f32);
  // Size bound to a name; throws if the name was never bound.
  int64_t operator[](std::string_view name) const;
  bool bound(std::string_view name) const;
  const std::string& op() const { return op_; }

 private:
  const int64_t* find(std::string_view name) const;
  std::string op_;
  std::vector<std::pair<std::string, int64_t>> sizes_;
};

// The one length validator: every op, module, model and metric that takes lengths calls it.
// Each value of `lengths` (int32, any shape, row b) must lie in [lo, hi], else ValueError
// "<op>: '<arg>' value <v> at batch index <b> is out of range [<lo>, <dim>=<hi>]", followed by
// `above_hint` when the value is above hi.
void check_length_values(std::string_view op, std::string_view arg, const Tensor& lengths, int64_t lo,
                         std::string_view dim, int64_t hi, std::string_view above_hint = {});

}  // namespace attn
