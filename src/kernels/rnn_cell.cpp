#include "kernels/rnn_cell.h"

#include <cmath>

#include "attn/parallel.h"
#include "fast_math.h"
#include "kernels/elementwise.h"

namespace attn::kernels::inline ATTN_ISA_NS {
namespace {

// Rows per chunk: about 1024 gate elements (a few transcendental functions each), enough
// work to pay for waking a thread.
int64_t row_grain(int64_t hidden) {
  const int64_t g = 1024 / (hidden > 0 ? hidden : 1);
  return g > 0 ? g : 1;
}

// One row of the GRU gates; the bias flags are template parameters so that the loop has no
// branch and vectorises.
template <bool kBiasIh, bool kBiasHh>
void gru_row_forward(int64_t H, const float* gx, const float* b_ih, const float* b_hh, const float* hb, float* s,
                     float* out) {
  ATTN_SIMD
  for (int64_t j = 0; j < H; ++j) {
    float xr = gx[j], xz = gx[H + j], xn = gx[2 * H + j];
    if constexpr (kBiasIh) {
      xr += b_ih[j];
      xz += b_ih[H + j];
      xn += b_ih[2 * H + j];
    }
    float hr = s[j], hz = s[H + j], hn = s[2 * H + j];
    if constexpr (kBiasHh) {
      hr += b_hh[j];
      hz += b_hh[H + j];
      hn += b_hh[2 * H + j];
    }
    const float r = sigmoid_approx(xr + hr);
    const float z = sigmoid_approx(xz + hz);
    const float n = tanh_accurate(xn + r * hn);
    out[j] = (1.0f - z) * n + z * hb[j];
    s[j] = r;
    s[H + j] = z;
    s[2 * H + j] = n;
    s[3 * H + j] = hn;
  }
}

}  // namespace

void gru_cell_forward(int64_t batch, int64_t hidden, const float* gates_x, const float* b_ih, const float* b_hh,
                      const float* h, float* saved, float* h_out) {
  const int64_t H = hidden;
  auto row = b_ih ? (b_hh ? gru_row_forward<true, true> : gru_row_forward<true, false>)
                  : (b_hh ? gru_row_forward<false, true> : gru_row_forward<false, false>);
  parallel_for(0, batch, row_grain(H), [&](int64_t lo, int64_t hi) {
    // gates_x row (3H) [x_r, x_z, x_n]; saved row in: (3H) h W_hhᵀ, out: (4H) [r, z, n, gh_n]
    for (int64_t b = lo; b < hi; ++b)
      row(H, gates_x + b * 3 * H, b_ih, b_hh, h + b * H, saved + b * 4 * H, h_out + b * H);
  });
}

void gru_cell_backward(int64_t batch, int64_t hidden, const float* saved, const float* h, const float* dh_out,
                       float* dgates_x, float* dgates_h, float* dh) {
  const int64_t H = hidden;
  parallel_for(0, batch, row_grain(H), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const float* s = saved + b * 4 * H;
      const float* hb = h + b * H;
      const float* g = dh_out + b * H;
      float* dgx = dgates_x + b * 3 * H;
      float* dgh = dgates_h + b * 3 * H;
      for (int64_t j = 0; j < H; ++j) {
        const float r = s[j], z = s[H + j], n = s[2 * H + j], hn = s[3 * H + j];
        // h' = (1 − z) n + z h
        const float dn_pre = g[j] * (1.0f - z) * (1.0f - n * n);   // through n = tanh(·)
        const float dz_pre = g[j] * (hb[j] - n) * z * (1.0f - z);  // through z = σ(·)
        const float dr_pre = dn_pre * hn * r * (1.0f - r);         // n's argument holds r ⊙ gh_n
        dgx[j] = dr_pre;
        dgx[H + j] = dz_pre;
        dgx[2 * H + j] = dn_pre;
        dgh[j] = dr_pre;
        dgh[H + j] = dz_pre;
        dgh[2 * H + j] = dn_pre * r;
      }
      if (dh) {
        float* d = dh + b * H;
        for (int64_t j = 0; j < H; ++j) d[j] += g[j] * s[H + j];  // dh += dh' ⊙ z
      }
    }
  });
}

void lstm_cell_forward(int64_t batch, int64_t hidden, const float* gates_x, const float* b_ih, const float* b_hh,
                       const float* c, float* saved, float* h_out, float* c_out) {
  const int64_t H = hidden;
  parallel_for(0, batch, row_grain(H), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const float* gx = gates_x + b * 4 * H;  // (4H) [x_i, x_f, x_g, x_o]
      float* s = saved + b * 5 * H;           // in: (4H) h W_hhᵀ; out: (5H) [i, f, g, o, tanh(c')]
      const float* cb = c + b * H;
      float* ho = h_out + b * H;
      float* co = c_out + b * H;
      for (int64_t j = 0; j < H; ++j) {
        float ai = gx[j] + s[j], af = gx[H + j] + s[H + j];
        float ag = gx[2 * H + j] + s[2 * H + j], ao = gx[3 * H + j] + s[3 * H + j];
        if (b_ih) {
          ai += b_ih[j];
          af += b_ih[H + j];
          ag += b_ih[2 * H + j];
          ao += b_ih[3 * H + j];
        }
        if (b_hh) {
          ai += b_hh[j];
          af += b_hh[H + j];
          ag += b_hh[2 * H + j];
          ao += b_hh[3 * H + j];
        }
        const float i = sigmoid_approx(ai), f = sigmoid_approx(af), g = tanh_accurate(ag), o = sigmoid_approx(ao);
        const float cn = f * cb[j] + i * g;
        const float tc = tanh_accurate(cn);
        co[j] = cn;
        ho[j] = o * tc;
        s[j] = i;
        s[H + j] = f;
        s[2 * H + j] = g;
        s[3 * H + j] = o;
        s[4 * H + j] = tc;
      }
    }
  });
}

void lstm_cell_backward(int64_t batch, int64_t hidden, const float* saved, const float* c, const float* dh_out,
                        const float* dc_out, float* dgates, float* dc) {
  const int64_t H = hidden;
  parallel_for(0, batch, row_grain(H), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const float* s = saved + b * 5 * H;
      const float* cb = c + b * H;
      const float* gh = dh_out ? dh_out + b * H : nullptr;
      const float* gc = dc_out ? dc_out + b * H : nullptr;
      float* d = dgates + b * 4 * H;
      float* dcb = dc ? dc + b * H : nullptr;
      for (int64_t j = 0; j < H; ++j) {
        const float i = s[j], f = s[H + j], g = s[2 * H + j], o = s[3 * H + j], tc = s[4 * H + j];
        const float dh_j = gh ? gh[j] : 0.0f;
        // h' = o tanh(c'), c' = f c + i g
        const float dct = (gc ? gc[j] : 0.0f) + dh_j * o * (1.0f - tc * tc);
        d[j] = dct * g * i * (1.0f - i);
        d[H + j] = dct * cb[j] * f * (1.0f - f);
        d[2 * H + j] = dct * i * (1.0f - g * g);
        d[3 * H + j] = dh_j * tc * o * (1.0f - o);
        if (dcb) dcb[j] += dct * f;  // dc += dc'_total ⊙ f
      }
    }
  });
}

}  // namespace attn::kernels::inline ATTN_ISA_NS
