// attn.torch's backward of additive_attention from the saved forward (ops::additive_attention_backward,
// attn/ops/attention.h), instead of recomputing the forward on attn's tape.
#include <string>

#include "attn/ops/attention.h"
#include "optional.h"

namespace py = pybind11;

namespace attn::python {
namespace {

py::tuple additive_attention_backward(const Tensor& query, const Tensor& pk, const Tensor& values, const Tensor& w_q,
                                      const Tensor& bias, const Tensor& v, const std::optional<Tensor>& lengths,
                                      const Tensor& weights, const Tensor& dcontext,
                                      const std::optional<Tensor>& dweights) {
  AdditiveGradients g = attn::additive_attention_backward(query, pk, values, w_q, bias, v, lengths.value_or(Tensor()),
                                                          weights, dcontext, dweights.value_or(Tensor()));
  return py::make_tuple(g.query, g.projected_keys, g.values, g.w_q, g.bias, g.v);
}

void register_torch_backward(py::module_& m) {
  m.def("_additive_attention_backward", &additive_attention_backward, py::arg("query"), py::arg("projected_keys"),
        py::arg("values"), py::arg("w_q"), py::arg("bias"), py::arg("v"), py::arg("lengths"), py::arg("weights"),
        py::arg("dcontext"), py::arg("dweights"),
        "attn.torch's additive_attention backward from the saved forward weights (no recomputation)");
}

}  // namespace
}  // namespace attn::python

ATTN_PYTHON_REGISTER(attn::python::register_torch_backward);
