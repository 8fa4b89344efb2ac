#include "attn/explain/attention_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "attn/data/char_vocab.h"
#include "attn/data/parallel.h"
#include "attn/data/sst2.h"
#include "attn/data/tasks.h"
#include "attn/data/text.h"
#include "attn/decode/asr.h"
#include "attn/decode/classify.h"
#include "attn/decode/sample.h"
#include "attn/decode/seq2seq.h"
#include "attn/decode/translate.h"
#include "attn/error.h"
#include "attn/explain/classifier_checkpoint.h"
#include "attn/explain/report.h"
#include "attn/explain/rollout.h"
#include "attn/explain/zero_share.h"
#include "attn/models/attention_classifier.h"
#include "attn/models/transformer.h"
#include "attn/viz/html_view.h"

namespace attn::explain {
namespace {
using nlohmann::json;

constexpr int32_t kSubwordUnk = 3;  // data::SubwordModel's UNK id (load() checks it)

// The share of exactly-zero weights among the positions each row may attend to: every one, or
// for the decoder's self-attention those up to the row's own (the causal mask's zeros are not
// the normaliser's). null for a rollout, which is a product of maps, not a normaliser's output.
json map_zero_share(const AttentionMap& m) {
  if (m.name.find("rollout") != std::string::npos) return nullptr;
  const bool causal = m.name == "decoder self";
  const size_t R = m.rows.size(), C = m.cols.size();
  ZeroShare zeros;
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
  const Tensor r = attention_rollout(sentence_layers(layers, 0, n));  // (N, N)
  return map_from_layers(name + " rollout", tokens, tokens, {r.reshape({1, 1, n, n})});
}

// The input `text` of a self-attention stack over `tokens` as the page's one "hypothesis": the
// maps `name` of every layer and head, and their rollout.
ViewHypothesis self_attention_input(const std::string& name, const std::string& text,
                                    const std::vector<std::string>& tokens, const std::vector<Tensor>& layers) {
  return {"input", text, nullptr, {map_from_layers(name, tokens, tokens, layers), rollout_map(name, tokens, layers)}};
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
void add_coverage(ViewHypothesis& h) {
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
      out.push_back(
          {"beam " + std::to_string(beam) + " #" + std::to_string(rank++), h.score, h.tokens, h.attention, h.copy});
  }
  return out;
}

// An RNN seq2seq's greedy output of `source` and, for beam > 1, each beam hypothesis, with
// its cross-attention (one layer, a head per --score multihead head).
std::vector<ViewHypothesis> seq2seq_hypotheses(models::Seq2Seq& model, const std::vector<int32_t>& source, int beam) {
  const bool coverage = model.config().coverage != models::CoverageKind::none;
  model.eval();
  const int64_t S = static_cast<int64_t>(source.size());
  const Tensor src = Tensor::from_vector(source, {1, S});
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(S)}, {1});
  const int max_len = static_cast<int>(S) * 2 + 10;
  std::vector<std::string> cols;
  for (int32_t id : source) cols.push_back(data::symbol_name(id));
  std::vector<ViewHypothesis> out;
  for (const Decoded& d : greedy_and_beam(beam, [&](int width) {
         return width > 1 ? model.beam(src, lengths, {.width = width, .length_penalty = 1.0f, .max_len = max_len})
                          : model.greedy(src, lengths, max_len);
       })) {
    std::vector<std::string> rows;
    for (int32_t id : d.tokens) rows.push_back(data::symbol_name(id));
    out.push_back({d.name,
                   data::symbols_to_string(d.tokens),
                   d.score,
                   {map_from_steps(with_copy(rows, d.copy), cols, d.attention)},
                   d.copy});
    if (coverage) add_coverage(out.back());
  }
  return out;
}

AttentionView view_synthetic(const std::string& path, const ViewInput& in) {
  if (in.symbols.empty()) throw ValueError("a synthetic-task model needs --input \"5 9 3 17 4\"");
  const std::vector<int32_t> source = data::parse_symbols(in.symbols);
  if (source.empty()) throw ValueError("--input is empty");
  decode::LoadedSeq2Seq loaded = decode::load_seq2seq(path);
  models::Seq2Seq& model = *loaded.model;
  if (model.config().attention == models::AttentionKind::none)
    throw ValueError("the model has no attention (--attention none): there is nothing to view");
  AttentionView v{"rnn-seq2seq",
                  std::string("attention: ") + models::to_string(model.config().attention) + " (" +
                      model.config().effective_score() + ")",
                  data::symbols_to_string(source)};
  v.hypotheses = seq2seq_hypotheses(model, source, in.beam);
  if (model.config().coverage != models::CoverageKind::none) v.notes.push_back(kCoverageNote);
  return v;
}

std::vector<int32_t> all_but_last(std::vector<int32_t> ids) {
  if (!ids.empty()) ids.pop_back();
  return ids;
}

AttentionView view_translation(const std::string& path, const std::string& text, int beam) {
  decode::LoadedTranslator loaded = decode::load_translator(path);
  models::Translator& model = *loaded.model;
  if (model.attention_layers() == 0)
    throw ValueError("the model has no attention (--attention none): there is nothing to view");
  model.module().eval();
  const data::SubwordModel& spm = *loaded.tokenizer;
  std::vector<int32_t> ids = spm.encode(text);
  if (ids.empty()) throw ValueError("--text is empty after tokenisation");
  // The pointer-generator copies unknown pieces: a text of nothing else still translates.
  const bool pointer = loaded.info.config.value("pointer", false);
  if (!pointer && std::count(ids.begin(), ids.end(), kSubwordUnk) == static_cast<std::ptrdiff_t>(ids.size()))
    throw ValueError("the model's vocabulary cannot encode --text (every piece is unknown)");
  const bool transformer = loaded.info.kind == models::TranslatorKind::transformer;
  const bool coverage =
      !transformer && models::Seq2SeqConfig::from_json(loaded.info.config).coverage != models::CoverageKind::none;
  const size_t limit = transformer ? static_cast<size_t>(loaded.info.config.value("max_len", 256)) - 1
                                   : static_cast<size_t>(loaded.info.config.value("max_src_len", 128));
  if (ids.size() > limit)
    throw ValueError("--text has " + std::to_string(ids.size()) + " pieces; the model reads at most " +
                     std::to_string(limit));
  const int64_t S = static_cast<int64_t>(ids.size());
  const Tensor src = Tensor::from_vector(ids, {1, S});
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(S)}, {1});
  int max_len = static_cast<int>(2 * S + 10);
  if (transformer) max_len = std::min<int>(max_len, static_cast<int>(limit));
  AttentionView v{transformer ? "transformer-translation" : "rnn-translation",
                  transformer ? "Transformer translation"
                              : "RNN translation: " + loaded.info.config.value("attention", std::string()),
                  text};
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
  for (const Decoded& d : greedy_and_beam(beam, [&](int width) {
         options.beam = width;
         return model.decode(src, lengths, options);
       })) {
    const std::vector<std::string> out_pieces = decode::output_pieces(spm, d.tokens, oovs.oovs);
    ViewHypothesis h{
        d.name, pointer ? decode::output_text(spm, d.tokens, oovs.oovs) : spm.decode(d.tokens), d.score, {}, d.copy};
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

AttentionView view_lm(const std::string& path, const std::string& text) {
  decode::LoadedLm lm = decode::load_char_lm(path);
  lm.model->eval();
  const std::vector<std::string> chars = data::utf8_characters(text);
  if (chars.empty()) throw ValueError("--text is empty");
  std::vector<int32_t> ids = {data::kBos};
  for (int32_t id : lm.vocab.encode(text)) ids.push_back(id);
  if (std::count(ids.begin() + 1, ids.end(), data::CharVocab::kUnk) == static_cast<std::ptrdiff_t>(chars.size()))
    throw ValueError("the model's vocabulary cannot encode --text (every character is unknown)");
  const int64_t max_len = lm.model->config().max_len;
  if (static_cast<int64_t>(ids.size()) > max_len)
    throw ValueError("--text has " + std::to_string(chars.size()) + " characters; the model reads at most " +
                     std::to_string(max_len - 1));
  std::vector<std::string> tokens = {"<s>"};
  tokens.insert(tokens.end(), chars.begin(), chars.end());
  const std::vector<Tensor> layers =
      lm.model->self_attention(Tensor::from_vector(ids, {1, static_cast<int64_t>(ids.size())}));
  AttentionView v{"transformer-lm", "character language model: causal self-attention", text};
  v.hypotheses.push_back(self_attention_input("decoder self", text, tokens, layers));
  return v;
}

// A classifier's attention beside the importance measures of attn explain (bilstm-attn and
// transformer-cls; for transformer-cls also [CLS]'s rollout and flow rows).
json explained_tokens(models::TextClassifier& model, const data::Vocab& vocab, const std::string& text) {
  const std::vector<std::string> tokens = data::sst2_tokens(text);
  std::vector<int32_t> ids;
  for (const auto& t : tokens) ids.push_back(vocab.id(t));
  const std::optional<ExplainableClassifier> explainable = explainable_classifier(model);
  if (!explainable) return nullptr;
  const SentenceImportance m = sentence_importance(*explainable, ids, tokens, {});
  json measures = {
      {"attention", m.attention}, {"gradient × input", m.gradient}, {"integrated gradients", m.integrated_gradients}};
  if (m.has_leave_one_out) measures["leave-one-out"] = m.leave_one_out;
  if (!m.rollout.empty()) measures["rollout"] = m.rollout;
  if (!m.flow.empty()) measures["flow"] = m.flow;
  json taus = json::array();
  for (const TauPair& pair : tau_pairs_for(m)) {
    const KendallTau k = sentence_tau(m, pair);
    taus.push_back({{"first", pair.first},
                    {"second", pair.second},
                    {"defined", k.defined},
                    {"tau", k.defined ? json(k.tau) : json(nullptr)},
                    {"p", k.defined ? json(k.p_value) : json(nullptr)},
                    {"reason", k.undefined_reason}});
  }
  return {{"tokens", tokens},
          {"label_index", m.label},
          {"probability", m.probability},
          {"measures", measures},
          {"taus", taus}};
}

AttentionView view_classifier(const std::string& path, const std::string& text) {
  decode::LoadedClassifier loaded = decode::load_classifier(path);
  models::TextClassifier& model = *loaded.model;
  decode::Classification c;
  c = decode::classify_text(model, loaded.vocab, text);
  if (c.attention.empty())
    throw ValueError(path + " is a '" + model.kind() +
                     "' classifier, which has no attention: there is nothing to view");
  if (std::count(c.ids.begin(), c.ids.end(), data::Vocab::kUnk) == static_cast<std::ptrdiff_t>(c.ids.size()))
    throw ValueError("the model's vocabulary cannot encode --text (every token is unknown)");
  AttentionView v{model.kind(), "classifier (" + model.kind() + "): " + model.attention_description(), text};
  v.classifier = explained_tokens(model, loaded.vocab, text);
  if (v.classifier.is_null()) {
    v.classifier = {{"tokens", c.tokens},
                    {"label_index", c.label},
                    {"probability", c.probability},
                    {"measures", {{"attention", c.attention}}},
                    {"taus", json::array()}};
    v.notes.push_back(
        "gradient × input, leave-one-out and integrated gradients: attn explain computes them for "
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
    v.hypotheses.push_back(self_attention_input("encoder self", text, tokens, layers));
  }
  return v;
}

// An ASR model's alignment of one utterance, greedy and, for beam > 1, the beam's best
// (decode::transcribe keeps the best hypothesis only), over the listener frames, with the
// log-mel features under them.
AttentionView view_asr(const std::string& path, const ViewInput& in) {
  const data::SpeechUtterance utterance = decode::speech_utterance(in.speech, in.utterance, in.join);
  decode::LoadedAsr model = decode::load_asr(path);
  AttentionView v{"asr", asr_alignment_title(model, utterance.id), utterance.id};
  v.speech = ViewSpeech{utterance.id, utterance.text, model.model->speller.attention->online(),
                        asr_spectrogram(model, utterance)};
  const int64_t r = v.speech->spectrogram.reduction;
  v.notes.push_back(fmt::format(
      "under the alignment: the log-mel spectrogram ({} bins, lowest at the bottom), {} input frames of 10 ms to a "
      "listener frame",
      v.speech->spectrogram.bins, r));
  if (v.speech->online)
    v.notes.push_back("red: the frame where each output step stopped (online attention reads no further)");
  std::vector<int> beams = {1};
  if (in.beam > 1) beams.push_back(in.beam);
  for (int beam : beams) {
    const AsrAlignment a = asr_alignment(model, utterance, beam, 1.0f);
    std::vector<std::string> cols;
    for (int64_t f = 0; f < a.frames; ++f) cols.push_back(std::to_string(f));
    AttentionMap cross{"cross", a.rows, std::move(cols), 1, 1, a.weights};
    ViewHypothesis h{
        beam == 1 ? "greedy" : "beam " + std::to_string(beam) + " #1", a.text, nullptr, {std::move(cross)}};
    h.frames_read = a.frames_read;
    h.stops = a.stops;
    v.hypotheses.push_back(std::move(h));
  }
  return v;
}

// The log-mel features for the page: min and max, and the values mapped to [0, 1] between them
// packed as the weights are (viz::pack_weights; an error of at most 3e-8 of the range); for the
// raw export every value, one list of bins per input frame.
json speech_json(const ViewSpeech& s, bool packed) {
  const AsrSpectrogram& g = s.spectrogram;
  const int64_t frames = g.bins > 0 ? static_cast<int64_t>(g.values.size()) / g.bins : 0;
  json j = {{"utterance", s.utterance}, {"reference", s.reference},
            {"online", s.online},       {"reduction", g.reduction},
            {"bins", g.bins},           {"input_frames", g.input_frames},
            {"frames", frames},         {"listener_frames", frames / g.reduction}};
  if (!packed) {
    json rows = json::array();
    for (int64_t f = 0; f < frames; ++f) {
      const auto row = g.values.begin() + f * g.bins;
      rows.push_back(std::vector<float>(row, row + g.bins));
    }
    j["values"] = std::move(rows);
    return j;
  }
  const auto [low, high] = std::minmax_element(g.values.begin(), g.values.end());
  const float lo = g.values.empty() ? 0.0f : *low, hi = g.values.empty() ? 0.0f : *high;
  const double range = hi > lo ? static_cast<double>(hi) - lo : 1.0;
  std::vector<float> unit;
  unit.reserve(g.values.size());
  for (float x : g.values) unit.push_back(static_cast<float>((static_cast<double>(x) - lo) / range));
  j["min"] = lo;
  j["max"] = hi;
  j["data"] = viz::pack_weights(unit);
  return j;
}

}  // namespace

AttentionView attention_view(const std::string& path, decode::CheckpointKind kind, const ViewInput& input) {
  using decode::CheckpointKind;
  const auto need_text = [&](bool empty) {
    if (empty) throw ValueError("the input is empty (give --text \"...\" or --stdin)");
  };
  switch (kind) {
    case CheckpointKind::seq2seq:
      return view_synthetic(path, input);
    case CheckpointKind::translation:
      need_text(data::whitespace_tokens(input.text).empty());
      return view_translation(path, input.text, input.beam);
    case CheckpointKind::lm:
      need_text(input.text.empty());
      return view_lm(path, input.text);
    case CheckpointKind::classifier:
      need_text(data::whitespace_tokens(input.text).empty());
      return view_classifier(path, input.text);
    case CheckpointKind::g2p:
      throw ValueError(path +
                       " is a G2P checkpoint: attn view does not show those yet (attn translate "
                       "pronounces words, attn eval scores PER and WER)");
    case CheckpointKind::asr:
      return view_asr(path, input);
  }
  throw ValueError(path + ": attn view does not show this kind of checkpoint");
}

AttentionView sweep_alignments(const std::vector<std::string>& models, const std::vector<int32_t>& symbols) {
  AttentionView v{"rnn-seq2seq", "", data::symbols_to_string(symbols)};
  for (const std::string& file : models) {
    if (decode::checkpoint_kind(file) != decode::CheckpointKind::seq2seq) continue;
    decode::LoadedSeq2Seq loaded = decode::load_seq2seq(file);
    const std::string name = std::filesystem::path(file).parent_path().filename().string();
    if (loaded.model->config().attention == models::AttentionKind::none) {
      v.notes.push_back(name + ": no attention, no alignment");
      continue;
    }
    ViewHypothesis h = seq2seq_hypotheses(*loaded.model, symbols, 1).front();
    h.name = name;
    v.hypotheses.push_back(std::move(h));
  }
  return v;
}

json view_json(const AttentionView& v, bool packed) {
  json hypotheses = json::array();
  for (const ViewHypothesis& h : v.hypotheses) {
    json maps = json::array();
    for (const AttentionMap& m : h.maps) maps.push_back(map_json(m, packed));
    hypotheses.push_back({{"name", h.name}, {"text", h.text}, {"score", h.score}, {"maps", maps}});
    if (!h.copy.empty()) hypotheses.back()["copy"] = h.copy;
    if (!h.coverage.empty()) hypotheses.back()["coverage"] = coverage_json(h.coverage);
    if (!h.frames_read.empty()) hypotheses.back()["frames_read"] = h.frames_read;
    if (v.speech && v.speech->online) hypotheses.back()["stops"] = h.stops;
  }
  json j = {{"kind", "attention"}, {"model", v.model_kind},    {"title", v.title},
            {"input", v.input},    {"hypotheses", hypotheses}, {"notes", v.notes}};
  if (!v.classifier.is_null()) j["classifier"] = v.classifier;
  if (v.speech) j["speech"] = speech_json(*v.speech, packed);
  return j;
}

}  // namespace attn::explain
