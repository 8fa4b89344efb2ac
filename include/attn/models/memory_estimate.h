#pragma once
// Memory bounded before allocating: upper bounds on every configuration field, and an
// up-front estimate of what a model and one batch of work need, refused when it exceeds the
// memory this machine has available.
//
//   check_config_bounds(config);                      // from each config's validate()
//   check_memory(parameter_bytes(config), "...", "lower --layers");
//
// The available memory is ATTN_MEMORY_LIMIT (bytes, or with a K, M, G or T suffix: "512M")
// when set (tests use it), else MemAvailable from /proc/meminfo, read once per process (the
// budget at start, so memory the process itself holds later never shrinks it), else no limit.
// Estimates are in bytes, as doubles (a product of hostile sizes must not wrap), and count
// float32 tensors: they aim at the right order of magnitude, erring high, not exact figures.
#include <cstdint>
#include <string>

namespace attn::models {

struct Seq2SeqConfig;
struct TransformerConfig;
struct BiLstmConfig;

// Upper bounds of configuration fields, far above any model this library trains on a CPU
// (each one alone would need gigabytes); a checkpoint or --model-config beyond them is
// refused at once, naming the field, before any estimate or allocation.
inline constexpr int64_t kMaxLayers = 256;
inline constexpr int64_t kMaxWidth = 1 << 16;  // emb, hidden, d_model, heads, window
inline constexpr int64_t kMaxFfn = 1 << 18;
inline constexpr int64_t kMaxVocab = 1 << 24;
inline constexpr int64_t kMaxLength = 1 << 20;  // max_len, max_src_len
inline constexpr int64_t kMaxClasses = 1 << 16;

// ValueError "<model> config: '<field>' must be <= <bound>, got <value>".
void check_config_bounds(const Seq2SeqConfig& c);
void check_config_bounds(const TransformerConfig& c);
void check_config_bounds(const BiLstmConfig& c);

// The budget described above, in bytes (INT64_MAX when unknown), and where it came from
// ("ATTN_MEMORY_LIMIT" or "MemAvailable"). ValueError for an unreadable ATTN_MEMORY_LIMIT.
int64_t available_memory_bytes();
std::string available_memory_source();

// ValueError when `bytes` exceeds the budget, one line:
//   "<what> needs about 102.4 GiB of memory, more than the 19.4 GiB available (MemAvailable):
//    <advice>"
void check_memory(double bytes, const std::string& what, const std::string& advice);
// "1.5 GiB", "312.0 MiB", "4.0 KiB": for messages.
std::string format_bytes(double bytes);

// Parameters (weights only; training adds gradients and two Adam moments: 4x).
double parameter_bytes(const Seq2SeqConfig& c);
double parameter_bytes(const TransformerConfig& c);
double parameter_bytes(const BiLstmConfig& c);

// check_memory on the parameters, naming the model's sizes; called by every model's
// constructor before it allocates a weight.
void check_parameter_memory(const Seq2SeqConfig& c);
void check_parameter_memory(const TransformerConfig& c, const std::string& model);
void check_parameter_memory(const BiLstmConfig& c);
// `c` after its validate() and check_parameter_memory: what a model's first member
// initialiser takes, so nothing is allocated for a bad or too large configuration.
template <typename Config>
const Config& validated_config(const Config& c) {
  c.validate();
  check_parameter_memory(c);
  return c;
}

// One teacher-forced training step on B sources of length S and targets of length T:
// the activations the tape keeps and their gradients (parameters not included).
double seq2seq_training_bytes(const Seq2SeqConfig& c, int64_t B, int64_t S, int64_t T);
// Greedy or beam decoding of B sources of length S for up to T steps (rows = B x beam width):
// encoder states, attention memory and the per-step attention weights kept in the result.
double seq2seq_decoding_bytes(const Seq2SeqConfig& c, int64_t rows, int64_t S, int64_t T);
// Transformer: training on (B, S) sources and (B, T) targets (S = 0 for an LM or T = 0 for a
// classifier); decoding keeps a key/value cache and, with `weights`, the cross-attention
// weights per step.
double transformer_training_bytes(const TransformerConfig& c, int64_t B, int64_t S, int64_t T);
double transformer_decoding_bytes(const TransformerConfig& c, int64_t rows, int64_t S, int64_t T, bool weights);
// BiLSTM classifier on (B, S) word ids, training (activations and their gradients).
double bilstm_training_bytes(const BiLstmConfig& c, int64_t B, int64_t S);

// check_memory on a forward pass of the sizes above plus the parameters (x4 when training:
// gradients and Adam moments), naming the batch's sizes; the models call these before
// allocating a batch's first activation.
void check_training_memory(const Seq2SeqConfig& c, int64_t B, int64_t S, int64_t T);
void check_decoding_memory(const Seq2SeqConfig& c, int64_t rows, int64_t S, int64_t T);
void check_training_memory(const TransformerConfig& c, int64_t B, int64_t S, int64_t T);
void check_decoding_memory(const TransformerConfig& c, int64_t rows, int64_t S, int64_t T, bool weights);
void check_training_memory(const BiLstmConfig& c, int64_t B, int64_t S);

// The longest text the BiLSTM classifier reads (max_tokens()): SST-2's longest sentence has
// 56 tokens; a longer text keeps its first kBiLstmMaxTokens tokens, as transformer-cls keeps
// max_len - 1, so one 200,000-word line cannot take the whole memory.
inline constexpr int64_t kBiLstmMaxTokens = 1024;
// Cuts `ids` to `max_tokens` (0: no limit) and, the first time this happens in the process,
// says so on stderr, naming the model kind and the length that arrived.
template <class Ids>
void keep_first_tokens(Ids& ids, int64_t max_tokens, const std::string& kind);
void note_tokens_cut(int64_t length, int64_t max_tokens, const std::string& kind);
template <class Ids>
void keep_first_tokens(Ids& ids, int64_t max_tokens, const std::string& kind) {
  if (max_tokens <= 0 || static_cast<int64_t>(ids.size()) <= max_tokens) return;
  note_tokens_cut(static_cast<int64_t>(ids.size()), max_tokens, kind);
  ids.resize(static_cast<size_t>(max_tokens));
}

}  // namespace attn::models
