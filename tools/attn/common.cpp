#include "common.h"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "alignment.h"
#include "attn/data/catalog.h"
#include "attn/data/tasks.h"
#include "attn/io/input_file.h"
#include "attn/models/memory_estimate.h"
#include "attn/parallel.h"
#include "attn/precision.h"
#include "attn/thread_limits.h"
#include "attn/train/checkpoint.h"
#include "attn/viz/plot.h"
#include "commands.h"
#include "option_parsing.h"

namespace attn::cli {

void ModelChoiceNames::apply(models::Seq2SeqConfig& config) const {
  config.encoder = models::parse_rnn_cell(encoder);
  config.attention = models::parse_attention_kind(attention);
  config.score = models::parse_score(config.attention, score);
  config.coverage = models::parse_coverage_kind(coverage);
  config.normalizer.kind = parse_normalizer(normalizer);
  check_normalizer("--alpha", config.normalizer);
}

void add_model_options(CLI::App* app, models::Seq2SeqConfig& c, ModelChoiceNames& names) {
  app->add_option("--encoder", names.encoder, "Encoder RNN: gru | lstm")->capture_default_str();
  app->add_option("--layers", c.layers, "RNN layers (encoder and decoder)")->capture_default_str();
  app->add_flag("--bidirectional", c.bidirectional, "Bidirectional encoder (with a learned bridge)");
  app->add_option("--emb", c.emb, "Embedding size")->capture_default_str();
  app->add_option("--hidden", c.hidden, "RNN hidden size")->capture_default_str();
  app->add_option("--dropout", c.dropout, "Dropout between RNN layers")->capture_default_str();
  app->add_option("--attention", names.attention, "Decoder: none | bahdanau | luong")->capture_default_str();
  app->add_option("--score", names.score,
                  "Attention score. bahdanau: additive | additive_normalized | location_aware | monotonic | mocha; "
                  "luong: general | dot | concat | location | scaled_dot | multihead | local_m | local_p | hard");
  app->add_option("--heads", c.heads, "Heads of --score multihead (dividing --hidden)")->capture_default_str();
  app->add_option("--window", c.window, "Half-width D of the local_m / local_p window")->capture_default_str();
  app->add_flag("!--no-input-feeding", c.input_feeding, "Luong decoder without input feeding");
  app->add_option("--coverage", names.coverage,
                  "Coverage of the bahdanau decoder, the earlier steps' attention in the additive score: none | "
                  "see (See et al. 2017; the loss adds --coverage-loss times sum_i min(a_i, c_i)) | tu (Tu et al. "
                  "2016: attention divided by a learned fertility, no loss term)")
      ->capture_default_str();
  app->add_option("--coverage-loss", c.coverage_loss, "--coverage see: the weight lambda of the coverage loss")
      ->capture_default_str();
  app->add_flag("--pointer", c.pointer,
                "Pointer-generator (See et al. 2017): mix the vocabulary distribution with the attention over the "
                "source, so the decoder can copy source tokens outside the vocabulary (bahdanau or luong, one head; a "
                "Transformer copies with its last layer's cross-attention averaged over heads)");
  app->add_option("--location-filters", c.location_filters, "--score location_aware: convolution channels K")
      ->capture_default_str();
  app->add_option("--location-width", c.location_width,
                  "--score location_aware: filter width r, odd (ESPnet's aconv_filts 100 is width 201)")
      ->capture_default_str();
  app->add_option("--location-sharpen", c.location_sharpening,
                  "--score location_aware: sharpening beta, a = softmax(beta e)")
      ->capture_default_str();
  app->add_flag("--location-smooth", c.location_smoothing,
                "--score location_aware: smoothing, sigmoid(e) normalised instead of softmax(e)");
  app->add_option("--monotonic-bias", c.monotonic_bias,
                  "--score monotonic | mocha: initial offset r of the selection energy (Raffel et al.: -4)")
      ->capture_default_str();
  app->add_option(
         "--monotonic-noise", c.monotonic_noise,
         "--score monotonic | mocha: std of the Gaussian noise on the selection energies in training (0: none)")
      ->capture_default_str();
  app->add_option("--chunk", c.chunk,
                  "--score mocha: chunk width W, soft attention over the W frames ending at the stop")
      ->capture_default_str();
  app->add_option("--normalizer", names.normalizer,
                  "Normaliser of the attention scores: softmax | sparsemax | entmax15 | entmax (alpha-entmax, "
                  "--alpha); the sparse ones give exact zeros. For the additive, dot, general, concat, location and "
                  "location_aware scores")
      ->capture_default_str();
  app->add_option("--alpha", c.normalizer.alpha, "--normalizer entmax: alpha > 1 (1.5: entmax15, 2: sparsemax)")
      ->capture_default_str();
}

void add_normalizer_json(CLI::App* cmd, const models::Seq2SeqConfig& config, nlohmann::json& j) {
  Normalizer normalizer = config.normalizer;
  as_usage([&] {
    normalizer.kind = parse_normalizer(cmd->get_option("--normalizer")->as<std::string>());
    check_normalizer("--alpha", normalizer);
  });
  if (normalizer.kind == NormalizerKind::softmax) return;
  j["normalizer"] = normalizer_name(normalizer.kind);
  j["alpha"] = std::stod(fmt::format("{}", normalizer.alpha));  // the float's shortest decimal, as the configs write it
}

void add_training_options(CLI::App* app, train::TrainOptions& o) {
  app->add_option("--task", o.task, "Task: " + data::task_names())
      ->capture_default_str();  // attn train lists its registry
  app->add_option("--min-len", o.min_len, "Shortest training source")->capture_default_str();
  app->add_option("--max-len", o.max_len, "Longest training source")->capture_default_str();
  app->add_option("--steps", o.steps, "Training steps")->capture_default_str();
  app->add_option("--batch", o.batch, "Batch size")->capture_default_str();
  app->add_option("--lr", o.lr, "Adam learning rate")->capture_default_str();
  app->add_option("--lr-schedule", o.lr_schedule, "constant | cosine | linear_warmup_decay | inverse_sqrt")
      ->capture_default_str();
  app->add_option("--warmup", o.warmup, "Linear learning-rate warm-up steps")->capture_default_str();
  app->add_option("--clip", o.clip, "Clip the global gradient norm (0: off)")->capture_default_str();
  app->add_option("--seed", o.seed, "Seed for data, initialisation and validation")
      ->capture_default_str()
      ->check(integer_at_least(0));
  app->add_option("--log-every", o.log_every, "Steps between log lines")->capture_default_str();
  app->add_option("--eval-every", o.eval_every, "Steps between validations")->capture_default_str();
  app->add_option("--eval-samples", o.eval_samples, "Validation set size")->capture_default_str();
  app->add_option("--bucket", o.bucket,
                  "Sort this many batches' worth of examples by length and batch neighbours (less padding; 1: off)")
      ->capture_default_str();
}

void add_precision_option(CLI::App* app, PrecisionUse use) {
  const bool int8 = use == PrecisionUse::inference;
  const std::string names = int8 ? "fp32 | bf16 | int8" : "fp32 | bf16";
  const std::string int8_help =
      int8 ? ". int8 quantizes the weights of the matrix products per output channel when the model loads and the "
             "activations per row, multiplied in int8 with int32 sums (oneDNN; a CPU with VNNI or AMX-INT8): "
             "docs/precision.md"
           : "";
  app->add_option_function<std::string>(
         "--precision", [](const std::string& name) { set_compute_precision(parse_precision(name)); },
         names +
             " (default fp32): bf16 runs the matrix products as bf16 GEMMs with fp32 "
             "accumulation (oneDNN; a CPU with AVX512_BF16 or AMX-BF16). Weights, gradients, optimizer state, "
             "softmax and layer-norm statistics stay fp32, and checkpoints always store fp32: either "
             "precision reads a checkpoint the other wrote" +
             int8_help)
      ->check(CLI::Validator(
          [int8](std::string& name) {
            return !int8 && name == "int8" ? std::string("int8 is for inference: translate, classify and eval only")
                                           : std::string();
          },
          ""))
      ->check(int8 ? CLI::IsMember({"fp32", "bf16", "int8"}) : CLI::IsMember({"fp32", "bf16"}));
}

void add_threads_option(CLI::App* app) {
  app->add_option_function<int>(
         "--threads", [](int n) { set_num_threads(n); }, "Threads (default: ATTN_NUM_THREADS or all cores)")
      ->check(integer_at_least(1))
      ->check(CLI::Validator(
          [](std::string& text) {
            // More threads than the machine can run only wait on each other (and each one takes
            // address space: attn/parallel.h).
            if (std::stoll(text) <= max_threads()) return std::string();
            return "more than " + std::to_string(kMaxThreadsPerCpu) + " threads per CPU: this machine has " +
                   std::to_string(machine_cpus()) + " CPUs; give at most " + std::to_string(max_threads());
          },
          ""));
}

decode::CheckpointKind require_checkpoint(const std::string& path,
                                          std::initializer_list<decode::CheckpointKind> allowed,
                                          const std::string& hint) {
  try {
    return decode::require_checkpoint_kind(path, allowed, hint);
  } catch (const ValueError& e) {
    throw UsageError(e.what());
  }
}

void add_coverage_penalty_option(CLI::App* cmd, float& beta) {
  cmd->add_option("--coverage-penalty", beta,
                  "Beam search: GNMT's coverage penalty beta, beta * sum_i log(min(sum_t a_ti, 1)) over the source "
                  "positions i added to each finished hypothesis's score (0: none)")
      ->capture_default_str();
}

std::vector<CLI::Option*> SpeechOptions::add(CLI::App* cmd) {
  return {cmd->add_option("--speech", speech, "ASR model: the .speech file holding the utterance"),
          cmd->add_option("--utterance", utterance, "ASR model: the utterance's id in --speech"),
          cmd->add_option("--join", join,
                          "ASR model: join N utterances from --utterance on, as eval --join does (default 1)")};
}

void refuse_options_for_kind(const CLI::App* cmd, std::initializer_list<const char*> options, bool applies,
                             const std::string& wanted, const std::string& model, decode::CheckpointKind kind) {
  if (applies) return;
  for (const char* option : options)
    if (cmd->count(option) > 0)
      throw UsageError(std::string(option) + " needs " + wanted + "; " + model + " is '" + decode::format_name(kind) +
                       "'");
}

void SpeechOptions::check(const CLI::App* cmd, decode::CheckpointKind kind, const std::string& model) const {
  refuse_options_for_kind(cmd, {"--speech", "--utterance", "--join"}, kind == decode::CheckpointKind::asr,
                          "an ASR checkpoint", model, kind);
}

namespace {

// --flag NAME, NAME one of `names` (CLI11 refuses any other; the first is the default shown),
// parsed into `target`.
template <class Enum>
void add_choice_option(CLI::App* cmd, const std::string& flag, Enum& target, Enum (*parse)(const std::string&),
                       const std::vector<std::string>& names, const std::string& help) {
  cmd->add_option_function<std::string>(
         flag, [&target, parse](const std::string& name) { target = parse(name); }, help)
      ->check(CLI::IsMember(names))
      ->default_str(names.front());
}

}  // namespace

void add_beam_stop_option(CLI::App* cmd, models::BeamStop& stop) {
  add_choice_option(cmd, "--beam-stop", stop, models::parse_beam_stop, {"bound", "top"},
                    "Beam search: when a sentence stops. bound (default): when no alive hypothesis can beat its best "
                    "finished one (GNMT's bound; PyTorch's output); top: at the step whose best candidate ends it, as "
                    "CTranslate2 does (fewer steps, the output may differ)");
}

void add_beam_rules_option(CLI::App* cmd, models::BeamRules& rules) {
  add_choice_option(cmd, "--beam-rules", rules, models::parse_beam_rules, {"attn", "ctranslate2"},
                    "Beam search: whose rules score and stop a sentence. attn (default): GNMT's length normalisation "
                    "((5 + len) / 6)^alpha and --beam-stop; ctranslate2: CTranslate2 4.8.5's (len^alpha, a sentence "
                    "stops once beam-width hypotheses have ended; its output, in fewer steps)");
}

void check_beam_rules(models::BeamRules rules, models::BeamStop stop, float coverage_penalty) {
  if (rules != models::BeamRules::ctranslate2) return;
  if (stop != models::BeamStop::bound)
    throw UsageError("--beam-stop top applies to --beam-rules attn (ctranslate2 has its own stopping rule)");
  if (coverage_penalty > 0.0f)
    throw UsageError("--coverage-penalty applies to --beam-rules attn (CTranslate2's coverage penalty is another)");
}

void check_coverage_penalty(float beta, int beam) {
  if (!(beta >= 0.0f) || !std::isfinite(beta))
    throw UsageError("--coverage-penalty must be finite and >= 0, got " + std::to_string(beta));
  if (beta > 0.0f && beam < 2) throw UsageError("--coverage-penalty applies to beam search (--beam > 1)");
}

void check_stdin_read() {
  // std::cin over stdio (the default) sees a read error as an end of file with ferror set;
  // unsynchronised (tokenize) it sets badbit.
  if (std::cin.bad() || (std::cin.fail() && !std::cin.eof()) || std::ferror(stdin))
    throw IoError(std::string("cannot read the standard input: ") + std::strerror(errno ? errno : EIO));
}

void refuse_outputs_naming_inputs(std::initializer_list<std::pair<const char*, std::string>> outputs) {
  as_usage([&] {
    for (const auto& [option, path] : outputs)
      if (!path.empty()) io::check_not_an_input(path, option);
    io::check_stdout_not_an_input();
  });
}

std::string read_stdin_bounded(size_t max_bytes) {
  std::string text;
  char buffer[65536];
  while (text.size() <= max_bytes) {
    std::cin.read(buffer, sizeof buffer);
    const std::streamsize got = std::cin.gcount();
    if (got <= 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  if (text.size() > max_bytes)
    throw IoError("the standard input holds more than " + std::to_string(max_bytes) + " bytes, more than one input");
  check_stdin_read();
  return text;
}

CLI::Validator integer_at_least(unsigned long long min) {
  return CLI::Validator([min](std::string& text) { return integer_at_least_error(text, min); },
                        "INT >= " + std::to_string(min));
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

namespace {
std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};
extern "C" void on_interrupt(int signal) {
  if (g_interrupted.exchange(true)) std::_Exit(128 + signal);
  g_signal.store(signal);
}
}  // namespace

std::string data_or_default(const std::string& given, const std::string& set, const std::string& usage) {
  if (!given.empty()) return given;
  const data::DataLookup found = data::find_data(set);
  if (found.path.empty())
    throw UsageError(usage + ": no " + set + "/ in " + found.looked + " (attn data get " + set + " installs it)");
  std::fprintf(stderr, "%s\n", found.chosen.c_str());
  return found.path;
}

const std::atomic<bool>& install_interrupt_flag() {
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) std::signal(signal, on_interrupt);
  return g_interrupted;
}

int interrupt_signal() { return g_signal.load(); }

std::string accuracy_table(const std::vector<std::string>& names,
                           const std::vector<std::vector<decode::LengthAccuracy>>& results) {
  std::ostringstream out;
  out << "| length |";
  for (const auto& n : names) out << ' ' << n << " token acc | " << n << " seq acc |";
  out << "\n|---:|";
  for (size_t i = 0; i < names.size(); ++i) out << "---:|---:|";
  out << '\n';
  for (size_t r = 0; r < results.front().size(); ++r) {
    out << "| " << results.front()[r].length << " |";
    for (const auto& res : results) {
      char cell[64];
      std::snprintf(cell, sizeof cell, " %.1f %% | %.1f %% |", 100 * res[r].token_accuracy,
                    100 * res[r].sequence_accuracy);
      out << cell;
    }
    out << '\n';
  }
  return out.str();
}

void write_accuracy_plot(const std::string& dir, const std::string& task, const std::vector<std::string>& names,
                         const std::vector<std::vector<decode::LengthAccuracy>>& results) {
  viz::LinePlot plot;
  plot.title = "Token accuracy against source length (" + task + " task)";
  plot.x_label = "source length";
  plot.y_label = "token accuracy";
  plot.y_min = 0.0;
  plot.y_max = 1.0;
  for (size_t i = 0; i < names.size(); ++i) {
    viz::Series s;
    s.name = names[i];
    for (const auto& r : results[i]) {
      s.x.push_back(r.length);
      s.y.push_back(r.token_accuracy);
    }
    plot.series.push_back(std::move(s));
  }
  for (const char* ext : {".png", ".svg"})
    viz::write_line_plot(plot, (std::filesystem::path(dir) / (std::string("accuracy_vs_length") + ext)).string());
}

void check_eval_memory(const models::Seq2SeqConfig& config, const decode::EvalOptions& options) {
  const int64_t rows = static_cast<int64_t>(std::min(options.batch, options.samples)) * std::max(options.beam, 1);
  for (int length : options.lengths) {
    try {
      models::check_decoding_memory(config, rows, length, static_cast<int64_t>(length) + 6);  // targets + EOS + 5
    } catch (const ValueError& e) {
      throw UsageError("--eval-lengths " + std::to_string(length) + ": " + e.what());
    }
  }
}

viz::Heatmap alignment_heatmap(models::Seq2Seq& model, const std::vector<int32_t>& source, int beam,
                               float length_penalty, std::string* output, float coverage_penalty,
                               std::vector<float>* copy) {
  if (model.config().attention == models::AttentionKind::none)
    throw UsageError("the model has no attention (--attention none): there is no alignment to draw");
  model.eval();
  const int64_t length = static_cast<int64_t>(source.size());
  // Refused before decoding, which for a long input takes minutes before drawing could fail.
  if (length > viz::kHeatmapMaxCells)
    throw UsageError("--input has " + std::to_string(length) + " symbols: a heatmap draws at most " +
                     std::to_string(viz::kHeatmapMaxCells) + " source columns");
  Tensor src = Tensor::from_vector(source, {1, length});
  Tensor lengths = Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(length)}, {1});
  const int max_len = static_cast<int>(length) * 2 + 10;
  const models::BeamOptions options{
      .width = beam, .length_penalty = length_penalty, .max_len = max_len, .coverage_penalty = coverage_penalty};
  models::DecodeResult decoded = beam > 1 ? model.beam(src, lengths, options) : model.greedy(src, lengths, max_len);
  const auto& tokens = decoded.tokens.at(0);
  const auto& steps = decoded.attention.at(0);
  viz::Heatmap map;
  map.title = std::string("attention: ") + models::to_string(model.config().attention) + " (" +
              model.config().effective_score() + ")";
  for (int32_t id : source) map.col_labels.push_back(data::symbol_name(id));
  for (int32_t id : tokens) map.row_labels.push_back(data::symbol_name(id));
  // Each step holds heads × S weights; one panel per head.
  const size_t per_step = steps.empty() ? 0 : steps.front().size();
  const size_t heads = length ? per_step / static_cast<size_t>(length) : 0;
  for (size_t h = 0; h < heads; ++h) {
    std::vector<float> panel;
    for (const auto& w : steps) panel.insert(panel.end(), w.begin() + h * length, w.begin() + (h + 1) * length);
    map.panels.push_back(std::move(panel));
  }
  *output = data::symbols_to_string(tokens);
  if (copy && !decoded.copy.empty()) *copy = decoded.copy.at(0);
  return map;
}

std::string write_alignment(models::Seq2Seq& model, const std::vector<int32_t>& source, int beam, float length_penalty,
                            const std::string& path) {
  std::string output;
  viz::write_heatmap(alignment_heatmap(model, source, beam, length_penalty, &output), path);
  return output;
}

}  // namespace attn::cli
