// attn view: one self-contained HTML page (viewer/ inlined, no network) that shows a model's
// attention for one input, or a run folder's training curves:
//   attn view --model M (--input "5 9 3" | --text "..." | --stdin) --out view.html
//   attn view --run DIR --out view.html
// Every checkpoint kind with attention: the RNN seq2seq (greedy and each beam hypothesis,
// one panel per head), the Transformer translation model (encoder self, decoder self and
// cross-attention, every layer and head, per hypothesis), the character LM and the
// classifiers (transformer-cls: every layer; bilstm-attn: its attention beside gradient ×
// input, leave-one-out and integrated gradients with Kendall τ). docs/viewer.md shows them.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attn/autodiff/tape.h"
#include "attn/data/parallel.h"
#include "attn/data/sst2.h"
#include "attn/data/tasks.h"
#include "attn/data/text.h"
#include "attn/explain/report.h"
#include "attn/explain/rollout.h"
#include "attn/io/atomic_file.h"
#include "attn/io/input_file.h"
#include "attn/explain/zero_share.h"
#include "attn/json.h"
#include "attn/printable.h"
#include "attn/train/run_log.h"
#include "attn/models/attention_classifier.h"
#include "attn/models/transformer.h"
#include "attn/train/checkpoint.h"
#include "attn/data/char_vocab.h"
#include "attn/decode/classify.h"
#include "attn/decode/seq2seq.h"
#include "attn/decode/sample.h"
#include "attn/decode/translate.h"
#include "attn/viz/html_view.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {
namespace {
using nlohmann::json;
namespace fs = std::filesystem;

constexpr int32_t kSubwordUnk = 3;  // data::SubwordModel's UNK id (load() checks it)

struct ViewArgs {
  std::string model, input, text, run, out, json_out;
  bool from_stdin = false;
  int beam = 4;
};

// One kind of attention (encoder self, cross, ...) of one input: per layer and head, a
// rows × cols matrix (rows: the queries, cols: the keys).
struct AttentionMap {
  std::string name;
  std::vector<std::string> rows, cols;
  int64_t layers = 0, heads = 0;
  std::vector<float> weights;  // (layers, heads, rows, cols)
};

// The share of exactly-zero weights among the positions each row may attend to: every one, or
// for the decoder's self-attention those up to the row's own (the causal mask's zeros are not
// the normaliser's). null for a rollout, which is a product of maps, not a normaliser's output.
json map_zero_share(const AttentionMap& m) {
  if (m.name.find("rollout") != std::string::npos) return nullptr;
  const bool causal = m.name == "decoder self";
  const size_t R = m.rows.size(), C = m.cols.size();
  explain::ZeroShare zeros;
  for (size_t i = 0; i < m.weights.size(); ++i)
    if (!causal || (i % C) <= (i / C) % R) zeros.add(m.weights[i]);
  return zeros.share();
}

// The page's form (packed weights) or the raw export's (nested arrays of every weight).
json map_json(const AttentionMap& m, bool packed) {
  json j = {{"name", m.name},     {"rows", m.rows},   {"cols", m.cols},
            {"layers", m.layers}, {"heads", m.heads}, {"zero_share", map_zero_share(m)}};
  if (packed) {
    j["data"] = viz::pack_weights(m.weights);
    return j;
  }
  const size_t R = m.rows.size(), C = m.cols.size();
  json layers = json::array();
  for (int64_t l = 0; l < m.layers; ++l) {
    json heads = json::array();
    for (int64_t h = 0; h < m.heads; ++h) {
      json matrix = json::array();
      for (size_t r = 0; r < R; ++r) {
        const auto row = m.weights.begin() + static_cast<int64_t>(((l * m.heads + h) * R + r) * C);
        matrix.push_back(std::vector<float>(row, row + static_cast<int64_t>(C)));
      }
      heads.push_back(std::move(matrix));
    }
    layers.push_back(std::move(heads));
  }
  j["weights"] = std::move(layers);
  return j;
}

// Per layer (1, H, R', C') with R' >= rows, C' >= cols: the top-left rows × cols of each.
AttentionMap map_from_layers(std::string name, std::vector<std::string> rows, std::vector<std::string> cols,
                             const std::vector<Tensor>& layers) {
  AttentionMap m;
  m.name = std::move(name);
  m.rows = std::move(rows);
  m.cols = std::move(cols);
  m.layers = static_cast<int64_t>(layers.size());
  m.heads = layers.empty() ? 0 : layers.front().dim(1);
  const int64_t R = static_cast<int64_t>(m.rows.size()), C = static_cast<int64_t>(m.cols.size());
  for (const Tensor& t : layers) {
    const int64_t full_r = t.dim(2), full_c = t.dim(3);
    const std::vector<float> w = t.to_vector();
    for (int64_t h = 0; h < m.heads; ++h)
      for (int64_t r = 0; r < R; ++r) {
        const float* row = w.data() + (h * full_r + r) * full_c;
        m.weights.insert(m.weights.end(), row, row + C);
      }
  }
  return m;
}

// Attention rollout (explain/rollout.h) of a self-attention stack over `tokens`, per layer
// (1, H, N', N') with N' >= N: one (N, N) matrix, shown as a map of 1 layer and 1 head.
AttentionMap rollout_map(const std::string& name, const std::vector<std::string>& tokens,
                         const std::vector<Tensor>& layers) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const Tensor r = explain::attention_rollout(explain::sentence_layers(layers, 0, n));  // (N, N)
  return map_from_layers(name + " rollout", tokens, tokens, {r.reshape({1, 1, n, n})});
}

// An RNN decoder's weights per output step (H·S, head-major) as one layer of H heads.
AttentionMap map_from_steps(std::vector<std::string> rows, std::vector<std::string> cols,
                            const std::vector<std::vector<float>>& steps) {
  AttentionMap m;
  m.name = "cross";
  m.rows = std::move(rows);
  m.cols = std::move(cols);
  m.layers = 1;
  const size_t S = m.cols.size(), T = std::min(m.rows.size(), steps.size());
  m.rows.resize(T);
  m.heads = steps.empty() || S == 0 ? 0 : static_cast<int64_t>(steps.front().size() / S);
  for (int64_t h = 0; h < m.heads; ++h)
    for (size_t t = 0; t < T; ++t) {
      const auto row = steps[t].begin() + h * static_cast<int64_t>(S);
      m.weights.insert(m.weights.end(), row, row + static_cast<int64_t>(S));
    }
  return m;
}

struct Hypothesis {
  std::string name, text;
  json score;  // null for greedy
  std::vector<AttentionMap> maps;
  std::vector<float> copy = {};  // the pointer-generator: 1 − p_gen of each output token; else empty
  std::vector<float> coverage = {};  // a coverage model: Σ_t a_{t,i} of each source token; else empty
};

// Row labels that show the pointer's copy probability of each output token: "Zürich · copy 0.93".
std::vector<std::string> with_copy(std::vector<std::string> rows, const std::vector<float>& copy) {
  for (size_t t = 0; t < rows.size() && t < copy.size(); ++t) rows[t] += " · copy " + fmt::format("{:.2f}", copy[t]);
  return rows;
}

// A coverage model's attention summed over the output steps, per source token: the final
// coverage Σ_t a_{t,i} (the GNMT penalty's column sums; below 0.5: under-translated). Empty
// for a map without one head (coverage needs the additive score, which has one).
std::vector<float> final_coverage(const AttentionMap& cross) {
  const size_t S = cross.cols.size(), T = cross.rows.size();
  if (cross.heads != 1 || cross.layers != 1) return {};
  std::vector<float> sums(S, 0.0f);
  for (size_t t = 0; t < T; ++t)
    for (size_t i = 0; i < S; ++i) sums[i] += cross.weights[t * S + i];
  return sums;
}

// The coverage beside the alignment: the cross map's column labels gain each source token's
// final coverage ("Haus · cov 1.02"), and a second map shows the coverage after each output
// step, min(Σ_{t'≤t} a_{t',i}, 1) (the penalty's clipped column sums; its last row is the final
// coverage). Adds nothing when the cross map has no single head.
void add_coverage(Hypothesis& h) {
  AttentionMap& cross = h.maps.back();
  h.coverage = final_coverage(cross);
  if (h.coverage.empty()) return;
  AttentionMap running = cross;
  running.name = "coverage";
  const size_t S = cross.cols.size();
  std::vector<float> sums(S, 0.0f);
  for (size_t t = 0; t < cross.rows.size(); ++t)
    for (size_t i = 0; i < S; ++i) {
      sums[i] += cross.weights[t * S + i];
      running.weights[t * S + i] = std::min(sums[i], 1.0f);
    }
  for (size_t i = 0; i < S; ++i) cross.cols[i] += " · cov " + fmt::format("{:.2f}", h.coverage[i]);
  running.cols = cross.cols;
  h.maps.push_back(std::move(running));
}

// The JSON of a hypothesis's coverage: the final sums and the source positions below 0.5.
json coverage_json(const std::vector<float>& coverage) {
  json under = json::array();
  for (size_t i = 0; i < coverage.size(); ++i)
    if (coverage[i] < 0.5f) under.push_back(i);
  return {{"final", coverage}, {"under_translated", under}};
}

constexpr const char* kCoverageNote =
    "coverage: each source token's column shows its final coverage, the attention summed over the output steps "
    "(below 0.5: under-translated); the coverage map shows it after each step, clipped at 1 as the coverage "
    "penalty clips it";

struct View {
  std::string model_kind, title, input;
  std::vector<Hypothesis> hypotheses;
  json classifier;  // the token shading (classifiers only)
  std::vector<std::string> notes;

  View() = default;
  View(std::string kind, std::string title_, std::string input_)
      : model_kind(std::move(kind)), title(std::move(title_)), input(std::move(input_)) {}
};

json view_json(const View& v, bool packed) {
  json hypotheses = json::array();
  for (const Hypothesis& h : v.hypotheses) {
    json maps = json::array();
    for (const AttentionMap& m : h.maps) maps.push_back(map_json(m, packed));
    hypotheses.push_back({{"name", h.name}, {"text", h.text}, {"score", h.score}, {"maps", maps}});
    if (!h.copy.empty()) hypotheses.back()["copy"] = h.copy;
    if (!h.coverage.empty()) hypotheses.back()["coverage"] = coverage_json(h.coverage);
  }
  json j = {{"kind", "attention"}, {"model", v.model_kind}, {"title", v.title},      {"input", v.input},
            {"hypotheses", hypotheses}, {"notes", v.notes}};
  if (!v.classifier.is_null()) j["classifier"] = v.classifier;
  return j;
}

// The greedy output, then each beam hypothesis (best first), as decode results.
struct Decoded {
  std::string name;
  json score;
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> attention;
  std::vector<float> copy = {};  // the pointer-generator only
};
template <class DecodeFn>
std::vector<Decoded> greedy_and_beam(int beam, DecodeFn&& decode) {
  std::vector<Decoded> out;
  const models::DecodeResult greedy = decode(1);
  out.push_back({"greedy", nullptr, greedy.tokens.at(0),
                 greedy.attention.empty() ? std::vector<std::vector<float>>{} : greedy.attention.at(0),
                 greedy.copy.empty() ? std::vector<float>{} : greedy.copy.at(0)});
  if (beam > 1) {
    const models::DecodeResult b = decode(beam);
    int rank = 1;
    for (const auto& h : b.hypotheses.at(0))
      out.push_back({"beam " + std::to_string(beam) + " #" + std::to_string(rank++), h.score, h.tokens, h.attention, h.copy});
  }
  return out;
}

// An RNN seq2seq's greedy output of `source` and, for beam > 1, each beam hypothesis, with
// its cross-attention (one layer, a head per --score multihead head).
std::vector<Hypothesis> seq2seq_hypotheses(models::Seq2Seq& model, const std::vector<int32_t>& source, int beam) {
  const bool coverage = model.config().coverage != models::CoverageKind::none;
  model.eval();
  const int64_t S = static_cast<int64_t>(source.size());
  const Tensor src = Tensor::from_vector(source, {1, S});
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(S)}, {1});
  const int max_len = static_cast<int>(S) * 2 + 10;
  std::vector<std::string> cols;
  for (int32_t id : source) cols.push_back(data::symbol_name(id));
  std::vector<Hypothesis> out;
  for (const Decoded& d : greedy_and_beam(beam, [&](int width) {
         return width > 1 ? model.beam(src, lengths, {.width = width, .length_penalty = 1.0f, .max_len = max_len})
                          : model.greedy(src, lengths, max_len);
       })) {
    std::vector<std::string> rows;
    for (int32_t id : d.tokens) rows.push_back(data::symbol_name(id));
    out.push_back({d.name, data::symbols_to_string(d.tokens), d.score,
                   {map_from_steps(with_copy(rows, d.copy), cols, d.attention)}, d.copy});
    if (coverage) add_coverage(out.back());
  }
  return out;
}

View view_synthetic(const ViewArgs& a) {
  if (a.input.empty()) throw UsageError("a synthetic-task model needs --input \"5 9 3 17 4\"");
  std::vector<int32_t> source;
  as_usage([&] { source = data::parse_symbols(a.input); });
  if (source.empty()) throw UsageError("--input is empty");
  decode::LoadedSeq2Seq loaded = decode::load_seq2seq(a.model);
  models::Seq2Seq& model = *loaded.model;
  if (model.config().attention == models::AttentionKind::none)
    throw UsageError("the model has no attention (--attention none): there is nothing to view");
  View v("rnn-seq2seq", std::string("attention: ") + models::to_string(model.config().attention) + " (" + model.config().effective_score() + ")",
         data::symbols_to_string(source));
  v.hypotheses = seq2seq_hypotheses(model, source, a.beam);
  if (model.config().coverage != models::CoverageKind::none) v.notes.push_back(kCoverageNote);
  return v;
}

std::vector<int32_t> all_but_last(std::vector<int32_t> ids) {
  if (!ids.empty()) ids.pop_back();
  return ids;
}

View view_translation(const ViewArgs& a, const std::string& text) {
  decode::LoadedTranslator loaded = decode::load_translator(a.model);
  models::Translator& model = *loaded.model;
  if (model.attention_layers() == 0)
    throw UsageError("the model has no attention (--attention none): there is nothing to view");
  model.module().eval();
  const data::SubwordModel& spm = *loaded.tokenizer;
  std::vector<int32_t> ids = spm.encode(text);
  if (ids.empty()) throw UsageError("--text is empty after tokenisation");
  // The pointer-generator copies unknown pieces: a text of nothing else still translates.
  const bool pointer = loaded.info.config.value("pointer", false);
  if (!pointer && std::count(ids.begin(), ids.end(), kSubwordUnk) == static_cast<std::ptrdiff_t>(ids.size()))
    throw UsageError("the model's vocabulary cannot encode --text (every piece is unknown)");
  const bool transformer = loaded.info.kind == "transformer";
  const bool coverage =
      !transformer && models::Seq2SeqConfig::from_json(loaded.info.config).coverage != models::CoverageKind::none;
  const size_t limit = transformer ? static_cast<size_t>(loaded.info.config.value("max_len", 256)) - 1
                                   : static_cast<size_t>(loaded.info.config.value("max_src_len", 128));
  if (ids.size() > limit)
    throw UsageError("--text has " + std::to_string(ids.size()) + " pieces; the model reads at most " +
                     std::to_string(limit));
  const int64_t S = static_cast<int64_t>(ids.size());
  const Tensor src = Tensor::from_vector(ids, {1, S});
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(S)}, {1});
  int max_len = static_cast<int>(2 * S + 10);
  if (transformer) max_len = std::min<int>(max_len, static_cast<int>(limit));
  View v(transformer ? "transformer-translation" : "rnn-translation", transformer ? "Transformer translation" : "RNN translation: " + loaded.info.config.value("attention", std::string()),
         text);
  if (coverage) v.notes.push_back(kCoverageNote);
  const std::vector<std::string> src_pieces = spm.pieces(ids);
  // The pointer's extended ids: unknown pieces as V + k, emitted by their text.
  const int64_t V = model.vocab();
  data::EncodedOovs oovs;
  if (pointer) oovs = data::encode_with_oovs(spm, text, limit);
  models::TranslatorDecodeOptions options{.max_len = max_len};
  if (pointer) {
    options.src_ext = Tensor::from_vector(oovs.ext, {1, S});
    options.extended_vocab = V + static_cast<int64_t>(oovs.oovs.size());
  }
  for (const Decoded& d : greedy_and_beam(a.beam, [&](int width) {
         options.beam = width;
         return model.decode(src, lengths, options);
       })) {
    const std::vector<std::string> out_pieces = decode::output_pieces(spm, d.tokens, oovs.oovs);
    Hypothesis h{d.name, pointer ? decode::output_text(spm, d.tokens, oovs.oovs) : spm.decode(d.tokens), d.score, {},
                 d.copy};
    if (!transformer) {
      h.maps.push_back(map_from_steps(with_copy(out_pieces, d.copy), src_pieces, d.attention));
      if (coverage) add_coverage(h);
    } else {
      // The decoder's input at step t is BOS, then the token it chose at t - 1.
      std::vector<int32_t> tgt_in = {data::kBos};  // a copied OOV (the pointer) is read as unknown
      for (int32_t id : all_but_last(d.tokens)) tgt_in.push_back(id < V ? id : data::kSubwordUnk);
      data::Batch batch;  // attention_maps reads src, src_lengths and tgt_in
      batch.src = src;
      batch.src_lengths = lengths;
      batch.tgt_in = Tensor::from_vector(tgt_in, {1, static_cast<int64_t>(tgt_in.size())});
      const models::TransformerSeq2Seq::AttentionMaps maps = model.attention_maps(batch);
      std::vector<std::string> in_pieces = {"<s>"};
      for (const std::string& p : decode::output_pieces(spm, all_but_last(d.tokens), oovs.oovs)) in_pieces.push_back(p);
      h.maps.push_back(map_from_layers("encoder self", src_pieces, src_pieces, maps.encoder_self));
      h.maps.push_back(rollout_map("encoder self", src_pieces, maps.encoder_self));
      h.maps.push_back(map_from_layers("decoder self", out_pieces, in_pieces, maps.decoder_self));
      h.maps.push_back(map_from_layers("cross", with_copy(out_pieces, d.copy), src_pieces, maps.cross));
    }
    v.hypotheses.push_back(std::move(h));
  }
  return v;
}

View view_lm(const ViewArgs& a, const std::string& text) {
  decode::LoadedLm lm = decode::load_char_lm(a.model);
  lm.model->eval();
  const std::vector<std::string> chars = data::utf8_characters(text);
  if (chars.empty()) throw UsageError("--text is empty");
  std::vector<int32_t> ids = {data::kBos};
  for (int32_t id : lm.vocab.encode(text)) ids.push_back(id);
  if (std::count(ids.begin() + 1, ids.end(), data::CharVocab::kUnk) == static_cast<std::ptrdiff_t>(chars.size()))
    throw UsageError("the model's vocabulary cannot encode --text (every character is unknown)");
  const int64_t max_len = lm.model->config().max_len;
  if (static_cast<int64_t>(ids.size()) > max_len)
    throw UsageError("--text has " + std::to_string(chars.size()) + " characters; the model reads at most " +
                     std::to_string(max_len - 1));
  std::vector<std::string> tokens = {"<s>"};
  tokens.insert(tokens.end(), chars.begin(), chars.end());
  const std::vector<Tensor> layers = lm.model->self_attention(Tensor::from_vector(ids, {1, static_cast<int64_t>(ids.size())}));
  View v("transformer-lm", "character language model: causal self-attention", text);
  v.hypotheses.push_back({"input", text, nullptr,
                          {map_from_layers("decoder self", tokens, tokens, layers), rollout_map("decoder self", tokens, layers)}});
  return v;
}

// A classifier's attention beside the importance measures of attn explain (bilstm-attn and
// transformer-cls; for transformer-cls also [CLS]'s rollout and flow rows).
json explained_tokens(models::TextClassifier& model, const data::Vocab& vocab, const std::string& text) {
  const std::vector<std::string> tokens = data::sst2_tokens(text);
  std::vector<int32_t> ids;
  for (const auto& t : tokens) ids.push_back(vocab.id(t));
  explain::SentenceImportance m;
  if (auto* pooling = dynamic_cast<models::AttnClassifier*>(&model))
    m = explain::explain_sentence(*pooling, ids, {});
  else if (auto* transformer = dynamic_cast<models::TransformerClassifier*>(&model.module()))
    m = explain::explain_sentence(*transformer, ids, tokens, {});
  else
    return nullptr;
  json measures = {{"attention", m.attention},
                   {"gradient × input", m.gradient},
                   {"integrated gradients", m.integrated_gradients}};
  if (m.has_leave_one_out) measures["leave-one-out"] = m.leave_one_out;
  if (!m.rollout.empty()) measures["rollout"] = m.rollout;
  if (!m.flow.empty()) measures["flow"] = m.flow;
  json taus = json::array();
  for (const explain::TauPair& pair : explain::tau_pairs_for(m)) {
    const explain::KendallTau k = explain::sentence_tau(m, pair);
    taus.push_back({{"first", pair.first}, {"second", pair.second}, {"defined", k.defined},
                    {"tau", k.defined ? json(k.tau) : json(nullptr)}, {"p", k.defined ? json(k.p_value) : json(nullptr)},
                    {"reason", k.undefined_reason}});
  }
  return {{"tokens", tokens}, {"label_index", m.label}, {"probability", m.probability}, {"measures", measures},
          {"taus", taus}};
}

View view_classifier(const ViewArgs& a, const std::string& text) {
  decode::LoadedClassifier loaded = decode::load_classifier(a.model);
  models::TextClassifier& model = *loaded.model;
  decode::Classification c;
  as_usage([&] { c = decode::classify_text(model, loaded.vocab, text); });
  if (c.attention.empty())
    throw UsageError(a.model + " is a '" + model.kind() + "' classifier, which has no attention: there is nothing to view");
  if (std::count(c.ids.begin(), c.ids.end(), data::Vocab::kUnk) == static_cast<std::ptrdiff_t>(c.ids.size()))
    throw UsageError("the model's vocabulary cannot encode --text (every token is unknown)");
  View v(model.kind(), "classifier (" + model.kind() + "): " + model.attention_description(),
         text);
  v.classifier = explained_tokens(model, loaded.vocab, text);
  if (v.classifier.is_null()) {
    v.classifier = {{"tokens", c.tokens}, {"label_index", c.label}, {"probability", c.probability},
                    {"measures", {{"attention", c.attention}}}, {"taus", json::array()}};
    v.notes.push_back("gradient × input, leave-one-out and integrated gradients: attn explain computes them for "
                      "bilstm-attn and transformer-cls classifiers");
  }
  const int32_t label = v.classifier.at("label_index").get<int32_t>();
  v.classifier["label"] = loaded.labels.at(static_cast<size_t>(label));
  v.classifier["description"] = model.attention_description();
  model.module().eval();
  const int64_t n = static_cast<int64_t>(c.ids.size());
  const std::vector<Tensor> layers = model.self_attention(
      Tensor::from_vector(c.ids, {1, n}), Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(n)}, {1}));
  if (!layers.empty()) {
    std::vector<std::string> tokens = {"[CLS]"};
    tokens.insert(tokens.end(), c.tokens.begin(), c.tokens.end());
    v.hypotheses.push_back({"input", text, nullptr,
                            {map_from_layers("encoder self", tokens, tokens, layers), rollout_map("encoder self", tokens, layers)}});
  }
  return v;
}

// --run DIR: every log.jsonl record; for a sweep folder (results.json, as attn sweep and
// train --compare write it) the accuracy-by-length results too. Each file is read as
// attn reads every input: a regular file (a FIFO, a link to /dev/zero or a folder in its
// place is refused), bounded in size, its JSON in depth (attn/json.h); a damaged last line
// of a log is skipped with a warning (train::read_run_log).
json run_json(const std::string& dir) {
  if (!fs::is_directory(dir)) throw IoError(dir + ": not a folder (--run wants a run or sweep folder)");
  json j = {{"kind", "run"}, {"title", "run " + fs::path(dir).filename().string()}, {"runs", json::array()}};
  auto read_log = [&](const fs::path& log, const std::string& name) {
    train::RunLogRecords read = train::read_run_log(log.string());
    for (const std::string& warning : read.warnings) std::fprintf(stderr, "attn: warning: %s\n", printable(warning).c_str());
    j["runs"].push_back({{"name", name}, {"records", std::move(read.records)}});
  };
  // (exists: a dangling link is no file; a FIFO or a folder named log.jsonl is one, refused.)
  auto present = [](const fs::path& path) {
    std::error_code error;
    return fs::exists(path, error);
  };
  if (present(fs::path(dir) / "log.jsonl")) read_log(fs::path(dir) / "log.jsonl", fs::path(dir).filename().string());
  std::vector<fs::path> children;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && present(entry.path() / "log.jsonl")) children.push_back(entry.path());
  std::sort(children.begin(), children.end());
  for (const fs::path& child : children) read_log(child / "log.jsonl", child.filename().string());
  const fs::path results = fs::path(dir) / "results.json";
  if (present(results)) j["sweep"] = parse_json(io::read_regular_file(results.string(), kMaxJsonBytes), results.string());
  if (j["runs"].empty() && !j.contains("sweep"))
    throw IoError(dir + ": no log.jsonl and no results.json (not a run or sweep folder)");
  return j;
}

// A sweep folder's models (each child folder's model.safetensors of an RNN seq2seq with
// attention): the greedy alignment of one example each, a "hypothesis" named after the
// folder, so that the page's output menu switches between the models.
constexpr const char* kSweepExample = "5 9 3 17 4 8 11 6";
void add_sweep_alignments(json& page, json& raw, const ViewArgs& a) {
  std::vector<fs::path> models;
  for (const auto& entry : fs::directory_iterator(a.run))
    if (entry.is_directory() && fs::exists(entry.path() / "model.safetensors")) models.push_back(entry.path() / "model.safetensors");
  std::sort(models.begin(), models.end());
  std::vector<int32_t> source;
  as_usage([&] { source = data::parse_symbols(a.input.empty() ? kSweepExample : a.input); });
  if (source.empty()) throw UsageError("--input is empty");
  View v("rnn-seq2seq", "", data::symbols_to_string(source));
  for (const fs::path& file : models) {
    if (decode::checkpoint_kind(file.string()) != decode::CheckpointKind::seq2seq) continue;
    decode::LoadedSeq2Seq loaded = decode::load_seq2seq(file.string());
    const std::string name = file.parent_path().filename().string();
    if (loaded.model->config().attention == models::AttentionKind::none) {
      v.notes.push_back(name + ": no attention, no alignment");
      continue;
    }
    Hypothesis h = seq2seq_hypotheses(*loaded.model, source, 1).front();
    h.name = name;
    v.hypotheses.push_back(std::move(h));
  }
  if (v.hypotheses.empty()) return;
  const json packed = view_json(v, true), numbers = view_json(v, false);
  for (const char* key : {"input", "notes"}) page[key] = raw[key] = packed[key];
  page["hypotheses"] = packed["hypotheses"];
  raw["hypotheses"] = numbers["hypotheses"];
}

// The page shows one input: more than this is not one (`--stdin < /dev/zero` read until
// memory ran out).
constexpr size_t kMaxStdinBytes = size_t{1} << 20;

std::string read_stdin() {
  std::string text = read_stdin_bounded(kMaxStdinBytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

void run_view(ViewArgs& a) {
  if (a.beam < 1) throw UsageError("--beam must be >= 1, got " + std::to_string(a.beam));
  json page, raw;
  if (!a.run.empty()) {
    page = raw = run_json(a.run);
    if (page.contains("sweep")) add_sweep_alignments(page, raw, a);
  } else {
    using decode::CheckpointKind;
    const CheckpointKind kind = decode::checkpoint_kind(a.model);
    if (a.from_stdin) (kind == CheckpointKind::seq2seq ? a.input : a.text) = read_stdin();
    const std::string text = data::valid_utf8(a.text);
    auto need_text = [&] {
      if (data::whitespace_tokens(text).empty()) throw UsageError("the input is empty (give --text \"...\" or --stdin)");
    };
    View v;
    switch (kind) {
      case CheckpointKind::seq2seq: v = view_synthetic(a); break;
      case CheckpointKind::translation:
        need_text();
        v = view_translation(a, text);
        break;
      case CheckpointKind::lm:
        if (text.empty()) throw UsageError("the input is empty (give --text \"...\" or --stdin)");
        v = view_lm(a, text);
        break;
      case CheckpointKind::classifier:
        need_text();
        v = view_classifier(a, text);
        break;
      case CheckpointKind::g2p:
        throw UsageError(a.model + " is a G2P checkpoint: attn view does not show those yet (attn translate "
                         "pronounces words, attn eval scores PER and WER)");
    }
    page = view_json(v, true);
    if (!a.json_out.empty()) raw = view_json(v, false);
  }
  // Every input is read by now: an output naming one (`--out M`, `--json M`) is refused
  // before anything is written.
  refuse_outputs_naming_inputs({{"--out", a.out}, {"--json", a.json_out}});
  viz::write_view_html(page, a.out);
  if (!a.json_out.empty()) io::write_file_atomically(a.json_out, json_text(raw, 1) + "\n");
  std::printf("view: %s\n", a.out.c_str());
}

}  // namespace

void add_view_command(CLI::App& app) {
  auto args = std::make_shared<ViewArgs>();
  CLI::App* cmd = app.add_subcommand("view", "Write an interactive attention viewer: one self-contained HTML page");
  auto* model = cmd->add_option("--model", args->model, "Checkpoint (model.safetensors) of any kind with attention");
  auto* run = cmd->add_option("--run", args->run, "A run folder (log.jsonl) or sweep folder: training curves");
  model->excludes(run);
  auto* input = cmd->add_option("--input", args->input, "Synthetic-task model (or a sweep folder's models): source symbols, e.g. \"5 9 3 17 4\"");
  auto* text = cmd->add_option("--text", args->text, "Translation, language or classifier model: the text");
  auto* from_stdin = cmd->add_flag("--stdin", args->from_stdin, "Read the input (or text) from standard input");
  input->excludes(text)->excludes(from_stdin);
  text->excludes(from_stdin);
  for (auto* o : {text, from_stdin}) o->excludes(run);  // --input with --run: a sweep's example
  cmd->add_option("--beam", args->beam, "Beam width: the page shows greedy and each beam hypothesis (1: greedy only)")
      ->capture_default_str();
  cmd->add_option("--out", args->out, "The HTML page to write")->required();
  cmd->add_option("--json", args->json_out, "Also write the raw data (every weight as a number) to this JSON file");
  add_threads_option(cmd);
  cmd->callback([args] {
    if (args->model.empty() && args->run.empty()) throw UsageError("give --model CHECKPOINT or --run DIR");
    run_view(*args);
  });
}

ATTN_REGISTER_COMMAND(55, add_view_command);

}  // namespace attn::cli
