#pragma once
// The FLOP models behind `attn bench`'s gflops_per_s (docs/performance.md writes them out):
// matrix-product FLOPs, 2 per multiply-add, of one forward pass; elementwise work (gates,
// tanh, softmax, loss) is not counted. Training counts 3x (backward: dX and dW per product).
#include "attn/models/seq2seq.h"

namespace attn::bench {

// An RNN seq2seq over a batch of B sources of length S with `dec_steps` decoder steps,
// unidirectional 1-layer GRU, embedding M, E = D = A = H, vocabulary V; Luong attention with
// the general score and input feeding.
struct FlopCount {
  double encoder = 0, keys = 0, decoder_steps = 0, output = 0;
  double total() const { return encoder + keys + decoder_steps + output; }
};
FlopCount seq2seq_forward_flops(models::AttentionKind attention, double B, double S, double dec_steps, double M,
                                double H, double V);

// A Transformer encoder-decoder, teacher-forced over B rows, source length S, target length
// T (padded: what is computed), D model, F FFN, V vocabulary, L layers each side.
double transformer_forward_flops(double B, double S, double T, double D, double F, double V, double L);

}  // namespace attn::bench
