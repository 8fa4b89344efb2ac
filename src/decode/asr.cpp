// Speech recognition with a trained model (attn/decode/asr.h).
#include "attn/decode/asr.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>

#include "attn/data/metrics.h"
#include "attn/data/text.h"
#include "attn/decode/g2p.h"
#include "attn/error.h"
#include "attn/io/checkpoint_read.h"
#include "attn/printable.h"
#include "decode_batches.h"

namespace attn::decode {
using nlohmann::json;

json asr_metadata(const AsrInfo& info) {
  json j = io::run_metadata(kAsrFormat, info.config.to_json());
  j.update({{"characters", info.characters},
            {"step", info.step},
            {"best_val_cer", info.best_val_cer},
            {"best_val_wer", info.best_val_wer}});
  return j;
}

LoadedAsr load_asr(const io::SafetensorsFile& file, const std::string& path) {
  const json j = io::read_run_metadata(file, path, kAsrFormat, "an ASR checkpoint");
  LoadedAsr loaded;
  io::read_metadata_fields(path, [&] {
    loaded.info.characters = j.at("characters").get<std::vector<std::string>>();
    loaded.info.step = j.at("step").get<int64_t>();
    loaded.info.best_val_cer = j.at("best_val_cer").get<double>();
    loaded.info.best_val_wer = j.at("best_val_wer").get<double>();
    loaded.info.config = models::AsrConfig::from_json(j.at("config"));
    loaded.vocab = data::CharVocab(loaded.info.characters);
  });
  if (loaded.info.config.speller.vocab != loaded.vocab.size())
    throw IoError(fmt::format("{}: the speller has {} symbols, its character list {}", path,
                              loaded.info.config.speller.vocab, loaded.vocab.size()));
  loaded.model = std::make_unique<models::ListenAttendSpell>(loaded.info.config);
  io::load_model_parameters(file, loaded.model->named_parameters(), path);
  return loaded;
}

LoadedAsr load_asr(const std::string& path) { return load_asr(io::load_safetensors(path), path); }

namespace {

// Each string of `items` as an id, the same string the same id across calls.
std::vector<int32_t> ids_of(const std::vector<std::string>& items, std::map<std::string, int32_t>& ids) {
  std::vector<int32_t> out;
  out.reserve(items.size());
  for (const std::string& s : items) out.push_back(ids.emplace(s, static_cast<int32_t>(ids.size())).first->second);
  return out;
}

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> words;
  for (std::string_view w : data::split_fields(text)) words.emplace_back(w);
  return words;
}

double ratio(int64_t a, int64_t b) { return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0; }

}  // namespace

void AsrScore::add(const std::string& hypothesis, const std::string& reference) {
  std::map<std::string, int32_t> ids;
  const std::vector<int32_t> ref_chars = ids_of(data::utf8_characters(reference), ids);
  char_edits += data::edit_distance(ids_of(data::utf8_characters(hypothesis), ids), ref_chars);
  chars += static_cast<int64_t>(ref_chars.size());
  const std::vector<int32_t> ref_words = ids_of(words_of(reference), ids);
  word_edits += data::edit_distance(ids_of(words_of(hypothesis), ids), ref_words);
  words += static_cast<int64_t>(ref_words.size());
  ++utterances;
}

double AsrScore::cer() const { return ratio(char_edits, chars); }
double AsrScore::wer() const { return ratio(word_edits, words); }

std::vector<Transcript> transcribe(LoadedAsr& model, const std::vector<data::SpeechUtterance>& utterances,
                                   const TranscribeOptions& options) {
  if (options.beam < 1) throw ValueError("--beam must be >= 1, got " + std::to_string(options.beam));
  if (options.batch < 1) throw ValueError("--batch must be >= 1, got " + std::to_string(options.batch));
  const models::AsrConfig& config = model.info.config;
  for (const data::SpeechUtterance& u : utterances) {
    if (u.frames < config.reduction || u.features.size() != static_cast<size_t>(u.frames * config.bins))
      throw ValueError(fmt::format(
          "utterance '{}' has {} frames of {} values; the model takes at least {} frames (its "
          "reduction) of {} bins",
          printable(u.id, false, 60), u.frames, u.frames > 0 ? u.features.size() / static_cast<size_t>(u.frames) : 0,
          config.reduction, config.bins));
  }
  std::vector<size_t> order(utterances.size());  // by length: little padding in a batch
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return utterances[a].frames < utterances[b].frames; });
  model.model->eval();
  const bool online = model.model->speller.attention->online();
  std::vector<Transcript> out(utterances.size());
  for (size_t begin = 0; begin < order.size(); begin += static_cast<size_t>(options.batch)) {
    const size_t end = std::min(order.size(), begin + static_cast<size_t>(options.batch));
    std::vector<std::span<const float>> frames;
    for (size_t k = begin; k < end; ++k) frames.emplace_back(utterances[order[k]].features);
    const models::SpeechBatch batch = models::pack_speech(frames, config.bins);
    const int64_t S = config.encoded_length(batch.features.dim(1));  // listener frames
    const int max_len = static_cast<int>(2 * S + 10);
    const models::DecodeResult r =
        options.beam == 1
            ? model.model->greedy(batch.features, batch.lengths, max_len)
            : model.model->beam(batch.features, batch.lengths,
                                {.width = options.beam, .length_penalty = options.length_penalty, .max_len = max_len});
    for (size_t k = begin; k < end; ++k) {
      Transcript& t = out[order[k]];
      const std::vector<int32_t>& tokens = r.tokens[k - begin];
      t.text = model.vocab.decode(tokens);
      t.frames = config.encoded_length(utterances[order[k]].frames);
      if (!options.attention) continue;
      for (const std::vector<float>& w : r.attention[k - begin]) {
        t.weights.push_back(detail::head_average(w, S, static_cast<size_t>(t.frames)));
        t.frames_read.push_back(frames_read(t.weights.back(), static_cast<size_t>(t.frames), online));
      }
    }
  }
  return out;
}

data::SpeechSet join_utterances(const data::SpeechSet& set, int n) {
  if (n < 1) throw ValueError("--join must be >= 1, got " + std::to_string(n));
  if (set.utterances.size() < static_cast<size_t>(n))
    throw ValueError(fmt::format("--join {}: the set has only {} utterances", n, set.utterances.size()));
  data::SpeechSet joined;
  joined.bins = set.bins;
  joined.provenance = set.provenance;
  for (size_t first = 0; first + static_cast<size_t>(n) <= set.utterances.size(); first += static_cast<size_t>(n)) {
    data::SpeechUtterance u;
    for (size_t i = first; i < first + static_cast<size_t>(n); ++i) {
      const data::SpeechUtterance& part = set.utterances[i];
      const bool more = i > first;
      u.id += (more ? "+" : "") + part.id;
      if (!more)
        u.voice = part.voice;
      else if (u.voice != part.voice)
        u.voice = "mixed";  // utterances of several voices
      u.text += (more ? " " : "") + part.text;
      u.frames += part.frames;
      u.features.insert(u.features.end(), part.features.begin(), part.features.end());
    }
    joined.utterances.push_back(std::move(u));
  }
  return joined;
}

data::SpeechUtterance speech_utterance(const std::string& file, const std::string& id, int n) {
  if (file.empty() || id.empty()) throw ValueError("an ASR model needs --speech FILE --utterance ID");
  if (n < 1) throw ValueError("--join must be >= 1, got " + std::to_string(n));
  data::SpeechSet set;
  try {
    set = data::read_speech_set(file);
  } catch (const ValueError& e) {
    throw IoError(e.what());  // a damaged file, not a bad request
  }
  size_t index = set.utterances.size();
  for (size_t i = 0; i < set.utterances.size(); ++i)
    if (set.utterances[i].id == id) index = i;
  if (index == set.utterances.size()) throw ValueError("no utterance '" + printable(id) + "' in " + file);
  const size_t join = static_cast<size_t>(n), first = index / join * join;
  if (join > set.utterances.size())
    throw ValueError(fmt::format("--join {}: {} has only {} utterances", n, file, set.utterances.size()));
  if (first != index)
    throw ValueError(fmt::format(
        "utterance '{}' does not start a group of --join {} (eval's groups from the set's start); its group starts "
        "at '{}'",
        printable(id), n, printable(set.utterances[first].id)));
  if (first + join > set.utterances.size())
    throw ValueError(
        fmt::format("utterance '{}' starts the last group, of fewer than {} utterances, which eval --join leaves out",
                    printable(id), n));
  data::SpeechSet group;
  group.bins = set.bins;
  group.utterances.assign(set.utterances.begin() + static_cast<std::ptrdiff_t>(first),
                          set.utterances.begin() + static_cast<std::ptrdiff_t>(first + join));
  return join_utterances(group, n).utterances.at(0);
}

AsrEval evaluate_asr(LoadedAsr& model, const std::vector<data::SpeechUtterance>& utterances,
                     TranscribeOptions options) {
  const auto start = std::chrono::steady_clock::now();
  options.attention = true;  // for the frames read
  const std::vector<Transcript> said = transcribe(model, utterances, options);
  AsrEval eval;
  for (size_t i = 0; i < utterances.size(); ++i) {
    for (int f : said[i].frames_read) {
      ++eval.steps;
      eval.frames_read += f;
      eval.frames += said[i].frames;
    }
    eval.score.add(said[i].text, utterances[i].text);
  }
  eval.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return eval;
}

}  // namespace attn::decode
