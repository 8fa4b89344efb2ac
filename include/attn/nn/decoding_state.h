#pragma once
// The per-sequence state a decoder carries from one step to the next, behind the one interface
// that beam search reorders it through (models::detail::BeamSearch::reorder). Every decoder's
// state implements it:
//   nn::StepState                  an attention module's own (coverage, the previous alignment, ...)
//   nn::KvCache                    a Transformer decoder's keys and values
//   models::DecoderState           the RNN decoder's hidden states, input feed and StepState
//   models::TransformerDecodingState  the Transformer's KvCache and the pointer's source ids
// A state is created at the start of decoding, advanced by each step and reordered with the
// hypotheses (or cut to the rows still decoding).
#include "attn/tensor.h"

namespace attn::nn {

class DecodingState {
 public:
  virtual ~DecodingState() = default;
  // Row i of the state becomes row index[i] of the old one; index int32 (B'), values in [0, B).
  // B' may differ from B (a batch whose finished rows leave it).
  virtual void reorder(const Tensor& index) = 0;

 protected:
  DecodingState() = default;
  DecodingState(const DecodingState&) = default;
  DecodingState(DecodingState&&) = default;
  DecodingState& operator=(const DecodingState&) = default;
  DecodingState& operator=(DecodingState&&) = default;
};

}  // namespace attn::nn
