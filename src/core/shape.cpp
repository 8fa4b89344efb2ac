#include "attn/shape.h"

#include <charconv>

#include "attn/checked_size.h"
#include "attn/tensor.h"

namespace attn {

const char* dtype_name(DType dtype) { return dtype == DType::f32 ? "float32" : "int32"; }

int64_t checked_size_product(int64_t a, int64_t b, std::string_view what) {
  if (a < 0 || b < 0) throw ValueError(std::string(what) + ": negative size");
  if (a != 0 && b > kMaxElements / a)
    throw ValueError(std::string(what) + ": " + std::to_string(a) + " x " + std::to_string(b) +
                     " elements is more than attn can address (2^60)");
  return a * b;
}

namespace {
// The product of dims[0, end), checked as checked_size.h promises for the whole shape.
int64_t checked_product(const Shape& shape, int end) {
  int64_t product = 1, bound = 1;  // bound: zeros counted as ones
  for (int i = 0; i < shape.rank(); ++i) {
    const int64_t d = shape.dims()[static_cast<size_t>(i)];
    if (d < 0) throw ValueError("shape " + shape.str() + ": negative dimension " + std::to_string(d));
    if (d > 1 && bound > kMaxElements / d)
      throw ValueError("shape " + shape.str() + ": too many elements (the product of its sizes exceeds 2^60)");
    if (d > 1) bound *= d;
    if (i < end) product *= d;
  }
  return product;
}
}  // namespace

int64_t Shape::numel() const { return checked_product(*this, rank()); }

int64_t Shape::rows() const { return checked_product(*this, rank() - 1); }

std::string Shape::str() const {
  std::string s = "(";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + ")";
}

namespace {
bool parse_number(std::string_view name, int64_t& value) {
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), value);
  return ec == std::errc() && ptr == name.data() + name.size();
}
}  // namespace

const int64_t* ShapeContract::find(std::string_view name) const {
  for (const auto& [n, size] : sizes_)
    if (n == name) return &size;
  return nullptr;
}

bool ShapeContract::bound(std::string_view name) const { return find(name) != nullptr; }

ShapeContract& ShapeContract::bind(std::string_view name, int64_t size) {
  if (const int64_t* existing = find(name)) {
    if (*existing != size)
      throw ShapeError(op_ + ": dimension " + std::string(name) + " is " + std::to_string(*existing) +
                       ", cannot also be " + std::to_string(size));
    return *this;
  }
  sizes_.emplace_back(std::string(name), size);
  return *this;
}

int64_t ShapeContract::operator[](std::string_view name) const {
  if (const int64_t* size = find(name)) return *size;
  throw ShapeError(op_ + ": dimension " + std::string(name) + " is not bound");
}

ShapeContract& ShapeContract::check(std::string_view arg, const Tensor& tensor,
                                    std::initializer_list<std::string_view> dims, DType dtype) {
  // The expected shape, written with the sizes known before this argument.
  auto expected = [&] {
    std::string s = "(";
    bool first = true;
    for (std::string_view name : dims) {
      if (!first) s += ", ";
      first = false;
      int64_t fixed;
      if (parse_number(name, fixed)) {
        s += name;
      } else if (const int64_t* size = find(name)) {
        s += std::string(name) + "=" + std::to_string(*size);
      } else {
        s += name;
      }
    }
    return s + ")";
  };
  if (!tensor.defined())
    throw ShapeError(op_ + ": '" + std::string(arg) + "' expected " + expected() + ", got an undefined tensor");
  if (tensor.dtype() != dtype)
    throw ShapeError(op_ + ": '" + std::string(arg) + "' expected dtype " + dtype_name(dtype) + ", got " +
                     dtype_name(tensor.dtype()));
  const Shape& shape = tensor.shape();
  bool ok = shape.rank() == static_cast<int>(dims.size());
  if (ok) {
    // First pass: compare against fixed sizes and names bound earlier (or earlier in this
    // same argument), without binding on a failure.
    std::vector<std::pair<std::string_view, int64_t>> pending;
    int i = 0;
    for (std::string_view name : dims) {
      const int64_t actual = shape[i++];
      int64_t fixed;
      if (parse_number(name, fixed)) {
        ok = ok && fixed == actual;
      } else if (const int64_t* size = find(name)) {
        ok = ok && *size == actual;
      } else {
        bool seen = false;
        for (auto& [n, v] : pending)
          if (n == name) {
            seen = true;
            ok = ok && v == actual;
          }
        if (!seen) pending.emplace_back(name, actual);
      }
    }
    if (ok)
      for (auto& [n, v] : pending) sizes_.emplace_back(std::string(n), v);
  }
  if (!ok) throw ShapeError(op_ + ": '" + std::string(arg) + "' expected " + expected() + ", got " + shape.str());
  return *this;
}

void check_length_values(std::string_view op, std::string_view arg, const Tensor& lengths, int64_t lo,
                         std::string_view dim, int64_t hi, std::string_view above_hint) {
  const int32_t* len = lengths.i32();
  for (int64_t b = 0; b < lengths.numel(); ++b) {
    if (len[b] >= lo && len[b] <= hi) continue;
    std::string message = std::string(op) + ": '" + std::string(arg) + "' value " + std::to_string(len[b]) +
                          " at batch index " + std::to_string(b) + " is out of range [" + std::to_string(lo) + ", " +
                          std::string(dim) + "=" + std::to_string(hi) + "]";
    if (len[b] > hi) message += above_hint;
    throw ValueError(message);
  }
}

}  // namespace attn
