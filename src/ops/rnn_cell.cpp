#include "attn/ops/rnn_cell.h"

#include "attn/autodiff/tape.h"
#include "kernels/blas.h"
#include "kernels/elementwise.h"
#include "kernels/reduce.h"
#include "kernels/rnn_cell.h"
#include "weight_gemm.h"

namespace attn {
namespace {

// The inputs of one cell step. Unprojected: x, w_ih, b_ih are used and gates_x is
// undefined. Projected: gates_x is used and x, w_ih, b_ih are undefined.
struct CellInputs {
  Tensor x, gates_x, h, c, w_ih, w_hh, b_ih, b_hh;
};

const float* data_or_null(const Tensor& t) { return t.defined() ? t.f32() : nullptr; }

// Checks every argument once and returns the contract with B, H (and I) bound.
// `gates` is 3 (GRU) or 4 (LSTM); the stacked dimension is named "3H" / "4H".
ShapeContract check_cell(const char* op, int gates, const CellInputs& in, bool projected, bool lstm) {
  const char* G = gates == 3 ? "3H" : "4H";
  ShapeContract sc(op);
  if (!projected) sc.check("x", in.x, {"B", "I"});
  sc.check("h", in.h, {"B", "H"});
  if (lstm) sc.check("c", in.c, {"B", "H"});
  sc.bind(G, gates * sc["H"]);
  if (projected) {
    sc.check("gates_x", in.gates_x, {"B", G});
  } else {
    sc.check("w_ih", in.w_ih, {G, "I"});
  }
  sc.check("w_hh", in.w_hh, {G, "H"});
  if (!projected && in.b_ih.defined()) sc.check("b_ih", in.b_ih, {G});
  if (in.b_hh.defined()) sc.check("b_hh", in.b_hh, {G});
  return sc;
}

// gx (B, G) = x (B, I) W_ihᵀ, the bias is added by the fused kernel.
Tensor input_projection(const char* op, const CellInputs& in, int64_t B, int64_t I, int64_t G) {
  Tensor gx = Tensor::empty({B, G});
  detail::weight_gemm(op, in.w_ih, true, B, G, I, in.x.f32(), I, in.w_ih.f32(), I, nullptr, gx.f32(), G);
  return gx;
}

// Given the pre-activation gradients of both sides (B, G), accumulates the gradients of
// every input that requires grad:
//   dx += dgates_x W_ih, dW_ih += dgates_xᵀ x, db_ih += Σ_b dgates_x (or dgates_x itself
//   into gates_x for the projected form); dh += dgates_h W_hh, dW_hh += dgates_hᵀ h,
//   db_hh += Σ_b dgates_h. The direct terms of h and c were added by the gate kernel. The
//   weight products wait to run stacked over every step (autodiff::accumulate_weight_grad).
void accumulate_input_grads(const CellInputs& in, bool projected, int64_t B, int64_t I, int64_t H, int64_t G,
                            const Tensor& dgates_x, const Tensor& dgates_h) {
  if (in.h.requires_grad())
    kernels::gemm(false, false, B, H, G, 1.0f, dgates_h.f32(), G, in.w_hh.f32(), H, 1.0f, in.h.grad_accumulator().f32(),
                  H);
  if (in.w_hh.requires_grad()) autodiff::accumulate_weight_grad(in.w_hh, dgates_h, in.h);
  if (in.b_hh.requires_grad()) kernels::sum_columns_into(dgates_h.f32(), B, G, in.b_hh.grad_accumulator().f32());
  if (projected) {
    if (in.gates_x.requires_grad()) kernels::add_into(in.gates_x.grad_accumulator().f32(), dgates_x.f32(), B * G);
    return;
  }
  if (in.x.requires_grad())
    kernels::gemm(false, false, B, I, G, 1.0f, dgates_x.f32(), G, in.w_ih.f32(), I, 1.0f, in.x.grad_accumulator().f32(),
                  I);
  if (in.w_ih.requires_grad()) autodiff::accumulate_weight_grad(in.w_ih, dgates_x, in.x);
  if (in.b_ih.requires_grad()) kernels::sum_columns_into(dgates_x.f32(), B, G, in.b_ih.grad_accumulator().f32());
}

// One cell step up to its gate kernel: the sizes and both sides' gate pre-activations.
struct CellStep {
  int64_t B, H, G, I;  // G = gates · H; I = 0 when projected
  Tensor gates_x;      // (B, G): x W_ihᵀ, or the projected gates_x (b_ih is then undefined)
  Tensor saved;        // (B, G + H): h W_hhᵀ in columns [0, G); the kernel fills it for backward
};

// Checks every argument (check_cell) and computes h W_hhᵀ and, unprojected, x W_ihᵀ.
CellStep begin_step(const char* op, int gates, const CellInputs& in, bool projected, bool lstm) {
  const ShapeContract sc = check_cell(op, gates, in, projected, lstm);
  CellStep s{sc["B"], sc["H"], gates * sc["H"], projected ? 0 : sc["I"], in.gates_x, Tensor()};
  s.saved = Tensor::empty({s.B, s.G + s.H});
  detail::weight_gemm(op, in.w_hh, true, s.B, s.G, s.H, in.h.f32(), s.H, in.w_hh.f32(), s.H, nullptr, s.saved.f32(),
                      s.G + s.H);
  if (!projected) s.gates_x = input_projection(op, in, s.B, s.I, s.G);
  return s;
}

bool cell_needs_grad(const CellInputs& in) {
  return autodiff::needs_grad(in.x, in.gates_x, in.h, in.c, in.w_ih, in.w_hh, in.b_ih, in.b_hh);
}

Tensor gru(const char* op, const CellInputs& in, bool projected) {
  // saved (B, 4H): columns [0, 3H) take h W_hhᵀ, the kernel turns them into [r, z, n, gh_n].
  const CellStep s = begin_step(op, 3, in, projected, false);
  const int64_t B = s.B, I = s.I, H = s.H, G = s.G;
  Tensor saved = s.saved;  // the same storage
  Tensor out = Tensor::empty({B, H});
  kernels::gru_cell_forward(B, H, s.gates_x.f32(), data_or_null(in.b_ih), data_or_null(in.b_hh), in.h.f32(),
                            saved.f32(), out.f32());

  if (cell_needs_grad(in)) {
    autodiff::record(op, {out}, [in, saved, out, projected, B, I, H, G]() {
      Tensor dgates_x = Tensor::empty({B, G});
      Tensor dgates_h = Tensor::empty({B, G});
      float* dh = in.h.requires_grad() ? in.h.grad_accumulator().f32() : nullptr;
      kernels::gru_cell_backward(B, H, saved.f32(), in.h.f32(), out.grad().f32(), dgates_x.f32(), dgates_h.f32(), dh);
      accumulate_input_grads(in, projected, B, I, H, G, dgates_x, dgates_h);
    });
  }
  return out;
}

std::pair<Tensor, Tensor> lstm(const char* op, const CellInputs& in, bool projected) {
  // saved (B, 5H): columns [0, 4H) take h W_hhᵀ, the kernel turns them into
  // [i, f, g, o, tanh(c')].
  const CellStep s = begin_step(op, 4, in, projected, true);
  const int64_t B = s.B, I = s.I, H = s.H, G = s.G;
  Tensor saved = s.saved;  // the same storage
  Tensor h_out = Tensor::empty({B, H});
  Tensor c_out = Tensor::empty({B, H});
  kernels::lstm_cell_forward(B, H, s.gates_x.f32(), data_or_null(in.b_ih), data_or_null(in.b_hh), in.c.f32(),
                             saved.f32(), h_out.f32(), c_out.f32());

  if (cell_needs_grad(in)) {
    autodiff::record(op, {h_out, c_out}, [in, saved, h_out, c_out, projected, B, I, H, G]() {
      // Either output may have no gradient (only h' or only c' used downstream).
      const float* dh_out = h_out.has_grad() ? h_out.grad().f32() : nullptr;
      const float* dc_out = c_out.has_grad() ? c_out.grad().f32() : nullptr;
      // The pre-activations are gx + gh, so both sides share one gradient.
      Tensor dgates = Tensor::empty({B, G});
      float* dc = in.c.requires_grad() ? in.c.grad_accumulator().f32() : nullptr;
      kernels::lstm_cell_backward(B, H, saved.f32(), in.c.f32(), dh_out, dc_out, dgates.f32(), dc);
      accumulate_input_grads(in, projected, B, I, H, G, dgates, dgates);
    });
  }
  return {h_out, c_out};
}

}  // namespace

Tensor gru_cell(const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                const Tensor& b_hh) {
  return gru("gru_cell", CellInputs{x, Tensor(), h, Tensor(), w_ih, w_hh, b_ih, b_hh}, false);
}

Tensor gru_cell_projected(const Tensor& gates_x, const Tensor& h, const Tensor& w_hh, const Tensor& b_hh) {
  return gru("gru_cell_projected", CellInputs{Tensor(), gates_x, h, Tensor(), Tensor(), w_hh, Tensor(), b_hh}, true);
}

std::pair<Tensor, Tensor> lstm_cell(const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
                                    const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  return lstm("lstm_cell", CellInputs{x, Tensor(), h, c, w_ih, w_hh, b_ih, b_hh}, false);
}

std::pair<Tensor, Tensor> lstm_cell_projected(const Tensor& gates_x, const Tensor& h, const Tensor& c,
                                              const Tensor& w_hh, const Tensor& b_hh) {
  return lstm("lstm_cell_projected", CellInputs{Tensor(), gates_x, h, c, Tensor(), w_hh, Tensor(), b_hh}, true);
}

}  // namespace attn
