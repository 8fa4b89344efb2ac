// pointer_log_probs (include/attn/ops/pointer.h).
#include "attn/ops/pointer.h"
#include "bindings.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  m.def("pointer_log_probs", &attn::pointer_log_probs, py::arg("logits"), py::arg("p_gen"), py::arg("attention"),
        py::arg("src_ids"), py::arg("extended_vocab"),
        "Pointer-generator: log max(p_gen softmax(logits) + (1 - p_gen) scatter_add(src_ids, attention), 1e-30), "
        "(N, V), (N), (N, S), (N, S) int32 -> (N, extended_vocab)");
  m.attr("POINTER_FLOOR") = attn::kPointerFloor;
});
