// G2P with a trained model (attn/decode/g2p.h).
#include "attn/decode/g2p.h"

#include <algorithm>
#include <chrono>

#include "attn/data/parallel.h"
#include "attn/error.h"
#include "attn/io/checkpoint_read.h"
#include "attn/models/batch.h"
#include "attn/printable.h"
#include "decode_batches.h"

namespace attn::decode {
using nlohmann::json;

json g2p_metadata(const G2pInfo& info) {
  json j = io::run_metadata(kG2pFormat, info.config);
  j.update({{"kind", models::to_string(info.kind)},
            {"symbols", data::g2p_symbols()},
            {"step", info.step},
            {"best_val_per", info.best_val_per},
            {"best_val_wer", info.best_val_wer}});
  return j;
}

LoadedG2p load_g2p(const io::SafetensorsFile& file, const std::string& path) {
  const json j = io::read_run_metadata(file, path, kG2pFormat, "a G2P checkpoint");
  LoadedG2p loaded;
  std::string kind;
  io::read_metadata_fields(path, [&] {
    kind = j.at("kind").get<std::string>();
    loaded.info.config = j.at("config");
    loaded.info.step = j.at("step").get<int64_t>();
    loaded.info.best_val_per = j.at("best_val_per").get<double>();
    loaded.info.best_val_wer = j.at("best_val_wer").get<double>();
    if (j.at("symbols").get<std::vector<std::string>>() != data::g2p_symbols())
      throw IoError(path + ": its letters and phonemes differ from this attn's (data::g2p_symbols)");
  });
  loaded.model = detail::checkpoint_translator(kind, loaded.info.config, path);
  loaded.info.kind = loaded.model->kind();
  if (loaded.model->vocab() != static_cast<int64_t>(data::g2p_symbols().size()))
    throw IoError(path + ": the model has " + std::to_string(loaded.model->vocab()) + " symbols, G2P " +
                  std::to_string(data::g2p_symbols().size()));
  io::load_model_parameters(file, loaded.model->module().named_parameters(), path);
  return loaded;
}

LoadedG2p load_g2p(const std::string& path) { return load_g2p(io::load_safetensors(path), path); }

std::vector<Pronunciation> pronounce(LoadedG2p& model, const std::vector<std::string>& words,
                                     const PronounceOptions& options) {
  detail::check_decode_options(options.beam, options.batch);
  const size_t limit = detail::source_limit(*model.model, model.info.config);
  std::vector<std::vector<int32_t>> sources;
  sources.reserve(words.size());
  for (const std::string& word : words) {
    sources.push_back(data::g2p_encode_word(word));
    if (sources.back().size() > limit)
      throw ValueError("the word '" + printable(word, false, 40) + "' has " + std::to_string(sources.back().size()) +
                       " letters; the model takes at most " + std::to_string(limit));
  }
  model.model->module().eval();
  std::vector<Pronunciation> out(words.size());
  detail::decode_sorted(
      *model.model, limit, sources, options.batch,
      {.beam = options.beam,
       .max_len = 0,
       .length_penalty = options.length_penalty},  // 2·letters + 10: CMUdict has <= 1.3 phonemes a letter
      [&](const std::vector<size_t>& batch_indices, const models::DecodeResult& decoded, int64_t S) {
        for (size_t k = 0; k < batch_indices.size(); ++k) {
          Pronunciation& p = out[batch_indices[k]];
          p.phonemes = data::g2p_decode_phonemes(decoded.tokens[k]);
          if (!options.attention) continue;
          const size_t letters = sources[batch_indices[k]].size();
          for (const std::vector<float>& w : decoded.attention[k]) {
            p.weights.push_back(detail::head_average(w, S, letters));
            p.frames_read.push_back(frames_read(p.weights.back(), letters, model.model->online_attention()));
          }
        }
      });
  return out;
}

int frames_read(const std::vector<float>& weights, size_t letters, bool online) {
  if (!online) return static_cast<int>(letters);
  for (size_t s = std::min(letters, weights.size()); s > 0; --s)
    if (weights[s - 1] > 0.0f) return static_cast<int>(s);
  return static_cast<int>(letters);  // stopped nowhere: read to the end
}

G2pEval evaluate_g2p(LoadedG2p& model, const std::vector<data::CmudictEntry>& entries, PronounceOptions options) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> words;
  for (const data::CmudictEntry& e : entries) words.push_back(e.word);
  options.attention = model.model->attention_layers() > 0;  // for the frames read
  const std::vector<Pronunciation> said = pronounce(model, words, options);
  G2pEval eval;
  for (size_t i = 0; i < entries.size(); ++i) {
    const int64_t letters = static_cast<int64_t>(data::g2p_encode_word(entries[i].word).size());
    for (int f : said[i].frames_read) {
      ++eval.steps;
      eval.frames_read += f;
      eval.letters += letters;
    }
    std::vector<std::vector<int32_t>> references;
    for (const auto& p : entries[i].pronunciations) references.push_back(data::g2p_encode_phonemes(p));
    eval.score.add(data::g2p_encode_phonemes(said[i].phonemes), references);
  }
  eval.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return eval;
}

}  // namespace attn::decode
