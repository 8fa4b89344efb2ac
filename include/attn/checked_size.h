#pragma once
// Size arithmetic that cannot overflow. Every tensor's shape is checked when its storage
// is made (Shape::numel, Shape::rows): no negative size, and the product of its sizes,
// zeros counted as ones so that every partial product is bounded too, at most
// kMaxElements; otherwise ValueError naming the shape. So every size product an op or
// kernel forms from one shape's dimensions (B·T, B·T·V, numel·dtype_size) is exact.
// Products of sizes that do not come from one shape use checked_size_product.
#include <cstdint>
#include <string_view>

namespace attn {

// Largest element count a tensor may have: its byte size (at most 8 bytes an element)
// fits in int64_t.
inline constexpr int64_t kMaxElements = int64_t{1} << 60;

// a·b for sizes a, b >= 0; ValueError "<what>: a x b elements is more than attn can
// address (2^60)" when it exceeds kMaxElements, "<what>: negative size" for a < 0 or b < 0.
int64_t checked_size_product(int64_t a, int64_t b, std::string_view what);

}  // namespace attn
