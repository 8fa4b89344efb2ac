// embedding (include/attn/ops/embedding.h).
#include "attn/ops/embedding.h"
#include "bindings.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  using namespace attn;
  m.def(
      "embedding",
      [](const Tensor& ids, const Tensor& weight, int32_t padding_idx) {
        return embedding(ids, weight, EmbeddingOptions{.padding_idx = padding_idx});
      },
      py::arg("ids"), py::arg("weight"), py::kw_only(), py::arg("padding_idx") = -1,
      "y[..., :] = weight[ids[...], :]; ids int32 (...), weight (V, D)");
});
