#pragma once
// attn.nn.Module, the base class of every bound module. Registrars run in static-
// initialisation order, which is unspecified across files, so every file that binds a
// Module subclass calls nn_submodule(m) first: it binds the base class once (idempotent)
// and returns the attn.nn submodule.
#include <typeinfo>

#include "attn/nn/module.h"

#include "bindings.h"

namespace attn::python {

inline pybind11::module_ nn_submodule(pybind11::module_& m) {
  namespace py = pybind11;
  using attn::nn::Module;
  py::module_ n = m.def_submodule("nn", "Modules: a named tree of parameters, PyTorch's names and layouts");
  if (py::detail::get_type_info(typeid(Module))) return n;
  py::class_<Module>(n, "Module")
      .def("named_parameters", &Module::named_parameters,
           "[(name, Tensor), ...] depth-first in registration order, names as PyTorch state_dict keys")
      .def("parameters", &Module::parameters)
      .def("state_dict", [](const Module& mod) {
        py::dict d;
        for (const auto& [name, t] : mod.named_parameters()) d[py::str(name)] = t;
        return d;
      }, "{name: Tensor} (the live parameters, no copies)")
      .def("num_parameters", &Module::num_parameters)
      .def("zero_grad", &Module::zero_grad, py::arg("set_to_none") = true)
      .def("train", &Module::train, py::arg("on") = true)
      .def("eval", &Module::eval)
      .def_property_readonly("training", &Module::is_training);
  return n;
}

}  // namespace attn::python
