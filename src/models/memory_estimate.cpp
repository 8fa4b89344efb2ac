// Configuration bounds and memory estimates (see attn/models/memory_estimate.h).
#include "attn/models/memory_estimate.h"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <string>

#include "attn/error.h"
#include "attn/models/classifier.h"
#include "attn/models/seq2seq.h"
#include "attn/models/transformer.h"

namespace attn::models {
namespace {

constexpr double kFloat = 4.0;  // bytes per float32

struct Bound {
  const char* field;
  int64_t value, bound;
};
// ValueError "<model> config: '<field>' must be <= <bound>, got <value>" for the first field
// over its bound.
void at_most(const char* model, std::initializer_list<Bound> bounds) {
  for (const Bound& b : bounds)
    if (b.value > b.bound)
      throw ValueError(fmt::format("{} config: '{}' must be <= {}, got {}", model, b.field, b.bound, b.value));
}

// "512M" -> 536870912; -1 for anything that is not a positive whole number with an optional
// K/M/G/T suffix.
int64_t parse_byte_count(const std::string& text) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return -1;
  errno = 0;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE) return -1;
  int shift = 0;
  const std::string suffix(end);
  if (suffix == "K" || suffix == "k")
    shift = 10;
  else if (suffix == "M" || suffix == "m")
    shift = 20;
  else if (suffix == "G" || suffix == "g")
    shift = 30;
  else if (suffix == "T" || suffix == "t")
    shift = 40;
  else if (!suffix.empty())
    return -1;
  if (n == 0 || n > (static_cast<unsigned long long>(INT64_MAX) >> shift)) return -1;
  return static_cast<int64_t>(n << shift);
}

struct Budget {
  int64_t bytes = INT64_MAX;
  std::string source = "no limit known";
};

Budget read_budget() {
  Budget b;
  if (const char* env = std::getenv("ATTN_MEMORY_LIMIT")) {
    const int64_t n = parse_byte_count(env);
    if (n < 0)
      throw ValueError(
          fmt::format("ATTN_MEMORY_LIMIT must be a positive number of bytes (suffix K, M, G or T "
                      "allowed), got '{}'",
                      env));
    b.bytes = n;
    b.source = "ATTN_MEMORY_LIMIT";
    return b;
  }
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    long long kib = 0;
    if (!(meminfo >> kib)) break;
    if (key == "MemAvailable:") {
      b.bytes = static_cast<int64_t>(kib) * 1024;
      b.source = "MemAvailable";
      break;
    }
    meminfo.ignore(64, '\n');
  }
  return b;
}

const Budget& budget() {
  static const Budget b = read_budget();
  return b;
}

// Gates per RNN cell: GRU 3, LSTM 4.
double gates(const Seq2SeqConfig& c) { return c.encoder == RnnCell::lstm ? 4.0 : 3.0; }

// One RNN layer's weights: gates * H * (input + H + 2 biases), per direction.
double rnn_layer_floats(double g, double input, double H) { return g * H * (input + H + 2.0); }

}  // namespace

// ---------------------------------------------------------------------------------------
// Bounds

void check_config_bounds(const Seq2SeqConfig& c) {
  at_most("seq2seq", {{"layers", c.layers, kMaxLayers},
                      {"emb", c.emb, kMaxWidth},
                      {"hidden", c.hidden, kMaxWidth},
                      {"heads", c.heads, kMaxWidth},
                      {"window", c.window, kMaxWidth},
                      {"vocab", c.vocab, kMaxVocab},
                      {"max_src_len", c.max_src_len, kMaxLength},
                      {"location_filters", c.location_filters, kMaxWidth},
                      {"location_width", c.location_width, kMaxLength},
                      {"chunk", c.chunk, kMaxLength}});
}

void check_config_bounds(const TransformerConfig& c) {
  at_most("transformer", {{"encoder_layers", c.encoder_layers, kMaxLayers},
                          {"decoder_layers", c.decoder_layers, kMaxLayers},
                          {"d_model", c.d_model, kMaxWidth},
                          {"heads", c.heads, kMaxWidth},
                          {"ffn", c.ffn, kMaxFfn},
                          {"src_vocab", c.src_vocab, kMaxVocab},
                          {"tgt_vocab", c.tgt_vocab, kMaxVocab},
                          {"classes", c.classes, kMaxClasses},
                          {"max_len", c.max_len, kMaxLength}});
}

void check_config_bounds(const BiLstmConfig& c) {
  at_most("bilstm", {{"layers", c.layers, kMaxLayers},
                     {"emb", c.emb, kMaxWidth},
                     {"hidden", c.hidden, kMaxWidth},
                     {"vocab", c.vocab, kMaxVocab},
                     {"classes", c.classes, kMaxClasses}});
}

// ---------------------------------------------------------------------------------------
// The budget

int64_t available_memory_bytes() { return budget().bytes; }
std::string available_memory_source() { return budget().source; }

std::string format_bytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} bytes", bytes) : fmt::format("{:.1f} {}", bytes, units[u]);
}

void check_memory(double bytes, const std::string& what, const std::string& advice) {
  const Budget& b = budget();
  if (!(bytes > static_cast<double>(b.bytes))) return;  // NaN cannot happen: sizes are >= 0
  throw ValueError(fmt::format("{} needs about {} of memory, more than the {} available ({}): {}", what,
                               format_bytes(bytes), format_bytes(static_cast<double>(b.bytes)), b.source, advice));
}

// ---------------------------------------------------------------------------------------
// Estimates

double parameter_bytes(const Seq2SeqConfig& c) {
  const double V = c.vocab, emb = c.emb, H = c.hidden, L = c.layers, g = gates(c);
  const double dirs = c.bidirectional ? 2.0 : 1.0, E = H * dirs;
  double p = 2.0 * V * emb;                                                           // both embeddings
  p += dirs * (rnn_layer_floats(g, emb, H) + (L - 1.0) * rnn_layer_floats(g, E, H));  // encoder
  if (c.bidirectional) p += 2.0 * L * (E * H + H);                                    // bridge (h and c)
  // Decoder input, output features and attention as the header's equations give them.
  const bool bahdanau = c.attention == AttentionKind::bahdanau, luong = c.attention == AttentionKind::luong;
  const double input = emb + (bahdanau ? E : 0.0) + (luong && c.input_feeding ? H : 0.0);
  const double features = bahdanau ? H + E + emb : H;
  p += rnn_layer_floats(g, input, H) + (L - 1.0) * rnn_layer_floats(g, H, H);  // decoder
  if (bahdanau || luong)
    p += 2.0 * E * H + H * H + 2.0 * H + static_cast<double>(c.max_src_len) * (H + 1.0);  // attention
  if (luong) p += (E + H) * H;                                                            // linear_out
  p += V * (features + 1.0);                                                              // out
  return p * kFloat;
}

double parameter_bytes(const TransformerConfig& c) {
  const double d = c.d_model, f = c.ffn;
  const double encoder_layer = 4.0 * d * d + 2.0 * d * f + 9.0 * d + f;
  const double decoder_layer = 8.0 * d * d + 2.0 * d * f + 15.0 * d + f;
  double p = (static_cast<double>(c.src_vocab) + static_cast<double>(c.tgt_vocab)) * d;  // embeddings
  p += static_cast<double>(c.max_len) * d;                                               // learned positions
  p += c.encoder_layers * encoder_layer + c.decoder_layers * decoder_layer;
  p += static_cast<double>(c.tgt_vocab) * (d + 1.0) + static_cast<double>(c.classes) * (d + 1.0);  // heads
  return p * kFloat;
}

double parameter_bytes(const BiLstmConfig& c) {
  const double V = static_cast<double>(c.vocab), emb = static_cast<double>(c.emb), H = static_cast<double>(c.hidden);
  double p = V * emb;
  p += 2.0 * (rnn_layer_floats(4.0, emb, H) + (c.layers - 1.0) * rnn_layer_floats(4.0, 2.0 * H, H));
  p += 4.0 * H * static_cast<double>(c.classes) + static_cast<double>(c.classes);
  return p * kFloat;
}

void check_parameter_memory(const Seq2SeqConfig& c) {
  check_memory(
      parameter_bytes(c),
      fmt::format("a seq2seq model with layers={}, hidden={}, emb={}, vocab={}", c.layers, c.hidden, c.emb, c.vocab),
      "make it smaller (--layers, --hidden, --emb; 'layers', 'hidden', 'emb' in a configuration)");
}

void check_parameter_memory(const TransformerConfig& c, const std::string& model) {
  check_memory(parameter_bytes(c),
               fmt::format("a {} with d_model={}, ffn={}, layers={}+{}, vocab={}+{}", model, c.d_model, c.ffn,
                           c.encoder_layers, c.decoder_layers, c.src_vocab, c.tgt_vocab),
               "make it smaller (--d-model, --ffn, --enc-layers, --dec-layers; the same fields in a configuration)");
}

void check_parameter_memory(const BiLstmConfig& c) {
  check_memory(parameter_bytes(c),
               fmt::format("a bilstm classifier with layers={}, hidden={}, emb={}, vocab={}", c.layers, c.hidden, c.emb,
                           c.vocab),
               "make it smaller ('layers', 'hidden', 'emb' in --model-config, or a larger --min-freq)");
}

double seq2seq_training_bytes(const Seq2SeqConfig& c, int64_t B, int64_t S, int64_t T) {
  const double H = c.hidden, L = c.layers, g = gates(c), dirs = c.bidirectional ? 2.0 : 1.0;
  const double b = static_cast<double>(B), s = static_cast<double>(S), t = static_cast<double>(T);
  // Per step and row the tape keeps each cell's input, gates and states.
  double floats = s * b * (c.emb + L * dirs * (g + 3.0) * H);
  floats += t * b * (c.emb + L * (g + 3.0) * H + 3.0 * H);
  // Attention: scores and weights over the source per target step; the additive score keeps
  // its tanh(W q + U k) of (S, A = H) per step as well.
  const bool additive = c.attention == AttentionKind::bahdanau;
  if (c.attention != AttentionKind::none)
    floats += t * b * s * (2.0 + (additive ? H : 0.0)) * (c.heads > 1 ? c.heads : 1);
  floats += t * b * 2.0 * c.vocab;  // logits and their softmax
  // The pointer: the vocabulary distribution, the mixture and its log over V (+ the OOVs, not
  // known here), and the logits and weights stacked once more for the one fused op.
  if (c.pointer) floats += t * b * (4.0 * c.vocab + s);
  return 2.0 * floats * kFloat;  // and a gradient of each
}

double seq2seq_decoding_bytes(const Seq2SeqConfig& c, int64_t rows, int64_t S, int64_t T) {
  const double H = c.hidden, dirs = c.bidirectional ? 2.0 : 1.0;
  const double r = static_cast<double>(rows), s = static_cast<double>(S), t = static_cast<double>(T);
  double floats = s * r * (c.emb + 3.0 * dirs * H);                 // encoder outputs, keys, projections
  if (c.attention == AttentionKind::bahdanau) floats += r * s * H;  // one step's tanh(W q + U k)
  // The result keeps every step's weights over the source (heads of them for multihead),
  // copied once more by whoever draws or scores them.
  if (c.attention != AttentionKind::none)
    floats += 2.0 * t * r * s * (c.heads > 1 && c.step_score() == nn::StepScore::multihead ? c.heads : 1);
  floats += r * 2.0 * c.vocab;                 // one step's logits
  if (c.pointer) floats += r * 3.0 * c.vocab;  // the pointer's vocabulary distribution, mixture and log
  return floats * kFloat;
}

double transformer_training_bytes(const TransformerConfig& c, int64_t B, int64_t S, int64_t T) {
  const double d = c.d_model, f = c.ffn, h = c.heads;
  const double b = static_cast<double>(B), s = static_cast<double>(S), t = static_cast<double>(T);
  // Per layer and token: the sublayers' inputs, projections, norms and the FFN's hidden layer,
  // plus the attention probabilities kept for backward (heads x keys).
  double floats = c.encoder_layers * b * s * (14.0 * d + 2.0 * f + h * s);
  floats += c.decoder_layers * b * t * (20.0 * d + 2.0 * f + h * (s + t));
  floats += b * t * 2.0 * static_cast<double>(c.tgt_vocab);  // logits and softmax
  // The pointer: as the RNN's (P_vocab, mixture, log, reshaped logits), the gate's 3D input
  // and the last layer's head-averaged weights with their per-step source ids.
  if (c.pointer) floats += b * t * (4.0 * static_cast<double>(c.tgt_vocab) + 3.0 * d + 2.0 * s);
  return 2.0 * floats * kFloat;
}

double transformer_decoding_bytes(const TransformerConfig& c, int64_t rows, int64_t S, int64_t T, bool weights) {
  const double d = c.d_model, f = c.ffn, h = c.heads;
  const double r = static_cast<double>(rows), s = static_cast<double>(S), t = static_cast<double>(T);
  double floats = r * s * (4.0 * d + f + h * s);                             // encoder, one layer at a time
  floats += c.decoder_layers * r * (2.0 * t + 2.0 * s) * d;                  // self and cross key/value caches
  floats += r * (h * (s + t) + f + 2.0 * static_cast<double>(c.tgt_vocab));  // one step
  if (c.pointer) floats += r * 3.0 * static_cast<double>(c.tgt_vocab);       // the pointer's mixture, as the RNN's
  if (weights) floats += 2.0 * t * r * s * h;                                // kept cross-attention weights
  return floats * kFloat;
}

double bilstm_training_bytes(const BiLstmConfig& c, int64_t B, int64_t S) {
  const double H = static_cast<double>(c.hidden);
  const double tokens = static_cast<double>(B) * static_cast<double>(S);
  const double floats = tokens * (2.0 * static_cast<double>(c.emb) + c.layers * 2.0 * 7.0 * H + 8.0 * H);
  return 2.0 * floats * kFloat;
}

namespace {
constexpr const char* kBatchAdvice = "use a smaller batch or shorter sequences (--batch, --max-len, --max-tokens)";
// Without flags: decoding serves eval, translate, align, sample and the Python module, whose
// options differ (a command adds its own: "--eval-lengths 1000000: ...").
constexpr const char* kDecodeAdvice = "decode fewer or shorter sources at once, with a smaller beam or fewer steps";
}  // namespace

void check_training_memory(const Seq2SeqConfig& c, int64_t B, int64_t S, int64_t T) {
  check_memory(4.0 * parameter_bytes(c) + seq2seq_training_bytes(c, B, S, T),
               fmt::format("a seq2seq step on B={} sources of length S={} and targets of length T={}", B, S, T),
               kBatchAdvice);
}

void check_decoding_memory(const Seq2SeqConfig& c, int64_t rows, int64_t S, int64_t T) {
  check_memory(parameter_bytes(c) + seq2seq_decoding_bytes(c, rows, S, T),
               fmt::format("decoding {} rows of sources of length S={} for up to {} steps", rows, S, T), kDecodeAdvice);
}

void check_training_memory(const TransformerConfig& c, int64_t B, int64_t S, int64_t T) {
  check_memory(4.0 * parameter_bytes(c) + transformer_training_bytes(c, B, S, T),
               fmt::format("a Transformer step on B={} rows of S={} source and T={} target tokens", B, S, T),
               kBatchAdvice);
}

void check_decoding_memory(const TransformerConfig& c, int64_t rows, int64_t S, int64_t T, bool weights) {
  check_memory(parameter_bytes(c) + transformer_decoding_bytes(c, rows, S, T, weights),
               fmt::format("decoding {} rows of sources of length S={} for up to {} steps", rows, S, T), kDecodeAdvice);
}

void check_training_memory(const BiLstmConfig& c, int64_t B, int64_t S) {
  check_memory(4.0 * parameter_bytes(c) + bilstm_training_bytes(c, B, S),
               fmt::format("a bilstm step on B={} texts of S={} tokens", B, S), kBatchAdvice);
}

void note_tokens_cut(int64_t length, int64_t max_tokens, const std::string& kind) {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  std::fprintf(stderr,
               "attn: note: %s reads at most %lld tokens: a text of %lld tokens (and any other longer one) "
               "keeps its first %lld\n",
               kind.c_str(), static_cast<long long>(max_tokens), static_cast<long long>(length),
               static_cast<long long>(max_tokens));
}

}  // namespace attn::models
