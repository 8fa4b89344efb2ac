// gru_cell(_projected), lstm_cell(_projected) (include/attn/ops/rnn_cell.h). PyTorch's
// gate order and weight layout.
#include "attn/ops/rnn_cell.h"
#include "optional.h"

namespace py = pybind11;

ATTN_PYTHON_REGISTER([](py::module_& m) {
  using namespace attn;
  using attn::python::opt;
  using OT = std::optional<Tensor>;
  m.def(
      "gru_cell",
      [](const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh, const OT& b_ih, const OT& b_hh) {
        return gru_cell(x, h, w_ih, w_hh, opt(b_ih), opt(b_hh));
      },
      py::arg("x"), py::arg("h"), py::arg("w_ih"), py::arg("w_hh"), py::arg("b_ih") = py::none(),
      py::arg("b_hh") = py::none(), "h' (B, H) of one GRU step (gates r, z, n)");
  m.def(
      "gru_cell_projected",
      [](const Tensor& gates_x, const Tensor& h, const Tensor& w_hh, const OT& b_hh) {
        return gru_cell_projected(gates_x, h, w_hh, opt(b_hh));
      },
      py::arg("gates_x"), py::arg("h"), py::arg("w_hh"), py::arg("b_hh") = py::none(),
      "h' from gates_x (B, 3H) = x W_ihᵀ + b_ih");
  m.def(
      "lstm_cell",
      [](const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih, const Tensor& w_hh, const OT& b_ih,
         const OT& b_hh) { return lstm_cell(x, h, c, w_ih, w_hh, opt(b_ih), opt(b_hh)); },
      py::arg("x"), py::arg("h"), py::arg("c"), py::arg("w_ih"), py::arg("w_hh"), py::arg("b_ih") = py::none(),
      py::arg("b_hh") = py::none(), "(h', c') of one LSTM step (gates i, f, g, o)");
  m.def(
      "lstm_cell_projected",
      [](const Tensor& gates_x, const Tensor& h, const Tensor& c, const Tensor& w_hh, const OT& b_hh) {
        return lstm_cell_projected(gates_x, h, c, w_hh, opt(b_hh));
      },
      py::arg("gates_x"), py::arg("h"), py::arg("c"), py::arg("w_hh"), py::arg("b_hh") = py::none(),
      "(h', c') from gates_x (B, 4H) = x W_ihᵀ + b_ih");
});
