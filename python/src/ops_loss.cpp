// cross_entropy, cross_entropy_sum, cross_entropy_count (include/attn/ops/loss.h).
#include "attn/ops/loss.h"
#include "bindings.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  using namespace attn;
  m.def(
      "cross_entropy",
      [](const Tensor& logits, const Tensor& targets, int32_t ignore_index, float label_smoothing) {
        return cross_entropy(logits, targets,
                             CrossEntropyOptions{.ignore_index = ignore_index, .label_smoothing = label_smoothing});
      },
      py::arg("logits"), py::arg("targets"), py::kw_only(), py::arg("ignore_index") = -100,
      py::arg("label_smoothing") = 0.0f, "Mean cross-entropy over non-ignored targets (0 when all are ignored)");
  m.def(
      "cross_entropy_sum",
      [](const Tensor& logits, const Tensor& targets, int32_t ignore_index, float label_smoothing) {
        return cross_entropy_sum(logits, targets,
                                 CrossEntropyOptions{.ignore_index = ignore_index, .label_smoothing = label_smoothing});
      },
      py::arg("logits"), py::arg("targets"), py::kw_only(), py::arg("ignore_index") = -100,
      py::arg("label_smoothing") = 0.0f, "Summed cross-entropy over non-ignored targets");
  m.def("cross_entropy_count", &attn::cross_entropy_count, py::arg("targets"), py::arg("ignore_index") = -100,
        "Number of targets that are not ignore_index");
});
