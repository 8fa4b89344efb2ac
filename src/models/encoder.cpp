// RnnStack and the packed-semantics encoder.
#include <string>

#include "attn/autodiff/tape.h"
#include "attn/models/seq2seq.h"
#include "attn/nn/init.h"
#include "attn/ops/elementwise.h"
#include "attn/ops/linear.h"
#include "attn/ops/rnn_cell.h"
#include "attn/ops/select.h"
#include "attn/ops/shape_ops.h"

namespace attn::models {

Tensor time_major_ids(const Tensor& ids) {
  ShapeContract c("time_major_ids");
  c.check("ids", ids, {"B", "T"}, DType::i32);
  const int64_t B = ids.dim(0), T = ids.dim(1);
  Tensor out = Tensor::empty({T, B}, DType::i32);  // (T, B)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) out.i32()[t * B + b] = ids.i32()[b * T + t];
  return out;
}

RnnStack::RnnStack(bool lstm_, int64_t input_size, int64_t hidden_, int layers_, bool bidirectional, Rng& rng)
    : lstm(lstm_), hidden(hidden_), layers(layers_), directions(bidirectional ? 2 : 1), input_size_(input_size) {
  const int64_t G = (lstm ? 4 : 3) * hidden;
  for (int l = 0; l < layers; ++l) {
    for (int d = 0; d < directions; ++d) {
      const std::string suffix = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
      Weights w;
      w.w_ih = Tensor::empty({G, this->input_size(l)});
      w.w_hh = Tensor::empty({G, hidden});
      w.b_ih = Tensor::empty({G});
      w.b_hh = Tensor::empty({G});
      for (Tensor* t : {&w.w_ih, &w.w_hh, &w.b_ih, &w.b_hh}) nn::rnn_default_init_(*t, hidden, rng);
      w.w_ih = register_parameter("weight_ih" + suffix, w.w_ih);
      w.w_hh = register_parameter("weight_hh" + suffix, w.w_hh);
      w.b_ih = register_parameter("bias_ih" + suffix, w.b_ih);
      w.b_hh = register_parameter("bias_hh" + suffix, w.b_hh);
      weights_.push_back(w);
    }
  }
}

int64_t RnnStack::input_size(int layer) const { return layer == 0 ? input_size_ : hidden * directions; }

Encoder::Encoder(const Seq2SeqConfig& config, Rng& rng)
    : embedding(config.vocab, config.emb, rng, kPad),
      rnn(config.encoder == RnnCell::lstm, config.emb, config.hidden, config.layers, config.bidirectional, rng),
      config_(config),
      dropout_(config.dropout, splitmix64(config.seed ^ 0xE1C0DE5ULL)) {
  register_module("embedding", embedding);
  register_module("rnn", rnn);
  if (config.bidirectional) {
    bridge_ = std::make_unique<nn::Module>();
    for (int l = 0; l < config.layers; ++l) {
      bridge_h_.push_back(std::make_unique<nn::Linear>(2 * config.hidden, config.hidden, rng));
      bridge_->register_module("h_l" + std::to_string(l), *bridge_h_.back());
      if (rnn.lstm) {
        bridge_c_.push_back(std::make_unique<nn::Linear>(2 * config.hidden, config.hidden, rng));
        bridge_->register_module("c_l" + std::to_string(l), *bridge_c_.back());
      }
    }
    register_module("bridge", *bridge_);
  }
  register_module("dropout", dropout_);
}

namespace {

// One direction of one layer over the whole sequence. gates_x (S, B, G) is the hoisted input
// projection; keep (S, B) int32 says which rows are real at each step. Returns the outputs
// (S, B, H) (zero at padded positions) and the final state.
struct DirectionResult {
  Tensor outputs, h, c;
};

DirectionResult run_direction(const RnnStack::Weights& w, bool lstm, const Tensor& gates_x, const Tensor& keep,
                              const std::vector<char>& all_kept, int64_t B, int64_t H, bool reverse) {
  const int64_t S = gates_x.dim(0);
  std::vector<Tensor> outputs(static_cast<size_t>(S));
  Tensor h = Tensor::zeros({B, H});
  Tensor c = lstm ? Tensor::zeros({B, H}) : Tensor();
  for (int64_t i = 0; i < S; ++i) {
    const int64_t t = reverse ? S - 1 - i : i;
    const Tensor gx = gates_x.select(t);  // (B, G)
    Tensor h_new, c_new;
    if (lstm) {
      std::tie(h_new, c_new) = lstm_cell_projected(gx, h, c, w.w_hh, w.b_hh);
    } else {
      h_new = gru_cell_projected(gx, h, w.w_hh, w.b_hh);
    }
    if (all_kept[static_cast<size_t>(t)]) {
      outputs[static_cast<size_t>(t)] = h_new;
      h = h_new;
      c = c_new;
    } else {
      // Packed semantics: rows past their length keep their state and output 0.
      const Tensor k = keep.select(t);  // (B)
      outputs[static_cast<size_t>(t)] = where_rows(k, h_new);
      h = where_rows(k, h_new, h);
      if (lstm) c = where_rows(k, c_new, c);
    }
  }
  return {stack_rows(outputs), h, c};
}

}  // namespace

void check_lengths_in_range(const std::string& op, const std::string& arg, const Tensor& lengths, int64_t S) {
  check_length_values(op, arg, lengths, 1, "S", S);
}

void packed_keep_masks(const Tensor& lengths, int64_t S, Tensor& keep, std::vector<char>& all_kept) {
  const int64_t B = lengths.dim(0);
  // keep[t][b] = t < lengths[b]; all_kept[t] when every row is real at step t.
  keep = Tensor::empty({S, B}, DType::i32);  // (S, B)
  all_kept.assign(static_cast<size_t>(S), 1);
  for (int64_t t = 0; t < S; ++t)
    for (int64_t b = 0; b < B; ++b) {
      const bool k = t < lengths.i32()[b];
      keep.i32()[t * B + b] = k;
      if (!k) all_kept[static_cast<size_t>(t)] = 0;
    }
}

RnnStackOutput run_rnn_stack(const RnnStack& rnn, const Tensor& input_, const Tensor& keep,
                             const std::vector<char>& all_kept, nn::Dropout* between) {
  const int64_t B = input_.dim(1), H = rnn.hidden;
  Tensor input = input_;
  RnnStackOutput result;
  for (int l = 0; l < rnn.layers; ++l) {
    if (l > 0 && between) input = between->forward(input);
    std::vector<Tensor> outs;
    for (int d = 0; d < rnn.directions; ++d) {
      const RnnStack::Weights& w = rnn.at(l, d);
      const Tensor gates_x = linear(input, w.w_ih, w.b_ih);  // (S, B, G): one GEMM over S·B rows
      DirectionResult r = run_direction(w, rnn.lstm, gates_x, keep, all_kept, B, H, d == 1);
      outs.push_back(r.outputs);
      result.h.push_back(r.h);
      result.c.push_back(r.c);
    }
    input = outs.size() == 1 ? outs[0] : concat(outs);  // (S, B, E)
  }
  result.outputs = input;
  return result;
}

EncoderOutput Encoder::forward(const Tensor& src, const Tensor& src_lengths) {
  ShapeContract contract("Encoder");
  contract.check("src", src, {"B", "S"}, DType::i32).check("src_lengths", src_lengths, {"B"}, DType::i32);
  return forward_embedded(embedding.forward(time_major_ids(src)), src_lengths);  // (S, B, emb)
}

EncoderOutput Encoder::forward_embedded(const Tensor& embedded, const Tensor& src_lengths) {
  ShapeContract contract("Encoder.forward_embedded");
  contract.check("embedded", embedded, {"S", "B", "emb"}, DType::f32)
      .check("src_lengths", src_lengths, {"B"}, DType::i32);
  const int64_t S = embedded.dim(0);
  check_lengths_in_range("Encoder", "src_lengths", src_lengths, S);
  Tensor keep;
  std::vector<char> all_kept;
  packed_keep_masks(src_lengths, S, keep, all_kept);

  EncoderOutput result;
  RnnStackOutput stack = run_rnn_stack(rnn, embedded, keep, all_kept, &dropout_);
  const std::vector<Tensor>& final_h = stack.h;  // per layer and direction
  const std::vector<Tensor>& final_c = stack.c;
  const Tensor& input = stack.outputs;
  result.outputs = transpose_01(input);  // (B, S, E)
  for (int l = 0; l < rnn.layers; ++l) {
    if (rnn.directions == 1) {
      result.h.push_back(final_h[static_cast<size_t>(l)]);
      if (rnn.lstm) result.c.push_back(final_c[static_cast<size_t>(l)]);
    } else {
      const size_t f = static_cast<size_t>(2 * l), r = f + 1;
      result.h.push_back(tanh(bridge_h_[static_cast<size_t>(l)]->forward(concat({final_h[f], final_h[r]}))));
      if (rnn.lstm)
        result.c.push_back(tanh(bridge_c_[static_cast<size_t>(l)]->forward(concat({final_c[f], final_c[r]}))));
    }
  }
  return result;
}

}  // namespace attn::models
