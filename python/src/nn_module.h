#pragma once
// attn.nn.Module, the base class of every bound module. Registrars run in static-
// initialisation order, which is unspecified across files, so every file that binds a
// Module subclass calls nn_submodule(m) first: it binds the base class once (idempotent)
// and returns the attn.nn submodule.
#include <string>
#include <typeinfo>

#include "attn/error.h"
#include "attn/nn/module.h"
#include "bindings.h"

namespace attn::python {

// {name: Tensor}: the live parameters, no copies (PyTorch's state_dict keys).
inline pybind11::dict parameter_dict(const attn::nn::Module& m) {
  pybind11::dict d;
  for (const auto& [name, t] : m.named_parameters()) d[pybind11::str(name)] = t;
  return d;
}

// Copies {name: numpy array or Tensor} into m's parameters; ValueError for an unknown name,
// ShapeError for a shape or dtype that differs (checked per entry, in the dict's order).
inline void load_parameters(attn::nn::Module& m, const pybind11::dict& values) {
  namespace py = pybind11;
  auto params = m.named_parameters();
  for (const auto& item : values) {
    const std::string name = py::str(item.first);
    Tensor* target = nullptr;
    for (auto& [n, t] : params)
      if (n == name) target = &t;
    if (target == nullptr) throw ValueError("load_parameters: unknown parameter '" + name + "'");
    Tensor source =
        py::isinstance<Tensor>(item.second) ? item.second.cast<Tensor>() : from_numpy(item.second.cast<py::array>());
    if (source.dtype() != DType::f32 || source.shape() != target->shape())
      throw ShapeError("load_parameters: '" + name + "' expected " + target->shape().str() + " float32, got " +
                       source.shape().str() + " " + dtype_name(source.dtype()));
    target->copy_from(source);
  }
}

inline pybind11::module_ nn_submodule(pybind11::module_& m) {
  namespace py = pybind11;
  using attn::nn::Module;
  py::module_ n = m.def_submodule("nn", "Modules: a named tree of parameters, PyTorch's names and layouts");
  if (py::detail::get_type_info(typeid(Module))) return n;
  py::class_<Module>(n, "Module")
      .def("named_parameters", &Module::named_parameters,
           "[(name, Tensor), ...] depth-first in registration order, names as PyTorch state_dict keys")
      .def("parameters", &Module::parameters)
      .def("state_dict", &parameter_dict, "{name: Tensor} (the live parameters, no copies)")
      .def("num_parameters", &Module::num_parameters)
      .def("zero_grad", &Module::zero_grad, py::arg("set_to_none") = true)
      .def("train", &Module::train, py::arg("on") = true)
      .def("eval", &Module::eval)
      .def_property_readonly("training", &Module::is_training);
  return n;
}

}  // namespace attn::python
