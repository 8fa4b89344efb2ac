// attn.machine_report(): what `attn doctor --json` prints (include/attn/train/machine_report.h).
#include "attn/train/machine_report.h"
#include "bindings.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  m.def(
      "_machine_report_json",
      [](double sgemm_seconds) {
        py::gil_scoped_release release;
        return attn::train::machine_report({.sgemm_seconds = sgemm_seconds}).to_json().dump();
      },
      py::arg("sgemm_seconds") = 1.0, "The machine report as JSON text; see attn.machine_report");
});
