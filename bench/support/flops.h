#pragma once
// The FLOP models behind `attn bench`'s gflops_per_s (docs/performance.md writes them out):
// matrix-product FLOPs, 2 per multiply-add, of one forward pass; elementwise work (gates,
// tanh, softmax, loss) is not counted. Training counts 3x (backward: dX and dW per product).
#include <string>

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

// `attn bench attention --kind sdpa`'s (query, key) pairs that a mask leaves visible, T queries
// over T keys: none T², causal T(T+1)/2, padding (the last quarter of the keys masked)
// T·(T − ⌊T/4⌋). A forward pass is 4·B·H·pairs·Dh FLOPs (q kᵀ and a v over those pairs).
double sdpa_visible_pairs(const std::string& mask, double T);

}  // namespace attn::bench

namespace attn::bench {

// The multiply-adds (1 each, not 2 FLOPs) that one decoder pass of a step attention does in
// attn, B = 1: the listener's T frames of E features, U decoder steps with a query of D, A = D
// (nn::make_step_attention). Matrix and vector products only; tanh, softmax and the monotonic
// recurrence are elementwise, O(T) per step at most, and not counted.
//   additive     T·E·A (keys, once) + U·(D·A + T·A + T·E)        global: every frame each step
//   local_m      U·(D·E + 2·K·E), K = min(2·window + 1, T)        q W, K scores, K-frame context
//   local_p      local_m + U·(A·D + A)                            the position predictor
//   monotonic    training: T·E·A + U·(D·A + T·A + T·E)            the expected alignment: every frame each step
//                inference, at most: T·E·A + U·(D·A + E) + (T + U)·A
//                each step scores the frames from its position to the stop (every frame once over
//                the pass, each stop again by the next step: at most T + U energies) and takes
//                the stop's values; the count depends on where it stops, so this is its bound
//   mocha        training: 2·T·E·A + U·(2·D·A + 2·T·A + T·E)      selection and chunk energies
//                inference, at most: 2·T·E·A + U·(2·D·A + W·A + W·E) + (T + U)·A
//                the chunk energies and the context over the W frames ending at the stop
double step_attention_macs(const std::string& kind, bool training, double T, double U, double D, double E,
                           double window, double chunk);

}  // namespace attn::bench
