#pragma once
// Shared pieces of the bindings. Each ops_*.cpp registers its family with
// ATTN_PYTHON_REGISTER, so adding a family touches no other file.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <functional>
#include <vector>

#include "attn/tensor.h"

namespace attn::python {

Tensor from_numpy(const pybind11::array& array);
Tensor borrow_numpy(const pybind11::array& array);
pybind11::array to_numpy(const Tensor& t);

using RegisterFn = std::function<void(pybind11::module_&)>;
inline std::vector<RegisterFn>& registry() {
  static std::vector<RegisterFn> fns;
  return fns;
}
struct Registrar {
  explicit Registrar(RegisterFn fn) { registry().push_back(std::move(fn)); }
};

}  // namespace attn::python

#define ATTN_PYTHON_CONCAT_INNER(a, b) a##b
#define ATTN_PYTHON_CONCAT(a, b) ATTN_PYTHON_CONCAT_INNER(a, b)
#define ATTN_PYTHON_REGISTER(fn) \
  static ::attn::python::Registrar ATTN_PYTHON_CONCAT(attn_python_registrar_, __LINE__)(fn)
