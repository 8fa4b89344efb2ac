#pragma once
// Optional tensor arguments: Python None maps to an undefined attn::Tensor (C++ `Tensor()`),
// and an undefined result maps back to None.
#include <optional>

#include "bindings.h"

namespace attn::python {

inline Tensor opt(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }

inline pybind11::object or_none(const Tensor& t) {
  if (!t.defined()) return pybind11::none();
  return pybind11::cast(t);
}

}  // namespace attn::python
