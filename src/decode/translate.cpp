#include "attn/decode/translate.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "attn/data/bleu.h"
#include "attn/data/parallel.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "attn/io/checkpoint_read.h"
#include "attn/io/checksum.h"
#include "attn/models/pointer.h"
#include "decode_batches.h"

namespace attn::decode {
namespace fs = std::filesystem;
using nlohmann::json;

json translation_metadata(const TranslationInfo& info, int64_t vocab) {
  json j = io::run_metadata(kTranslationFormat, info.config);
  j.update({{"kind", models::to_string(info.kind)},
            {"src_lang", info.src_lang},
            {"tgt_lang", info.tgt_lang},
            {"tokenizer", fs::path(info.tokenizer).filename().string()},
            {"tokenizer_crc32", io::file_crc32_hex(info.tokenizer)},
            {"vocab_size", vocab},
            {"step", info.step},
            {"best_val_bleu", info.best_val_bleu}});
  if (info.summarization) j["summarization"] = true;  // absent for translation, as before
  if (info.corpus != data::Corpus::multi30k) j["corpus"] = data::to_string(info.corpus);  // absent: Multi30k, as before
  return j;
}

namespace {

LoadedTranslator load_from(const io::SafetensorsFile& file, const std::string& path) {
  const json j = io::read_run_metadata(file, path, kTranslationFormat, "a translation checkpoint");
  LoadedTranslator loaded;
  std::string kind;
  io::read_metadata_fields(path, [&] {
    kind = j.at("kind").get<std::string>();
    loaded.info.config = j.at("config");
    loaded.info.src_lang = j.at("src_lang").get<std::string>();
    loaded.info.tgt_lang = j.at("tgt_lang").get<std::string>();
    const std::string tokenizer = j.at("tokenizer").get<std::string>();
    if (tokenizer.empty() || fs::path(tokenizer).filename() != tokenizer)
      throw IoError(path + ": bad 'attn' metadata: tokenizer '" + tokenizer +
                    "' is not a file name beside the checkpoint");
    loaded.info.tokenizer = (fs::path(path).parent_path() / tokenizer).string();
    loaded.info.step = j.at("step").get<int64_t>();
    loaded.info.best_val_bleu = j.at("best_val_bleu").get<double>();
    loaded.info.summarization = j.value("summarization", false);
    loaded.info.corpus = data::parse_corpus(j.value("corpus", std::string("multi30k")));
  });
  loaded.model = detail::checkpoint_translator(kind, loaded.info.config, path);
  loaded.info.kind = loaded.model->kind();
  if (!data::file_exists(loaded.info.tokenizer))
    throw IoError(path + ": its tokenizer " + loaded.info.tokenizer + " is missing (keep it next to the checkpoint)");
  // A swapped spm.model (another language's, say) would load and translate garbage.
  if (j.contains("tokenizer_crc32") && j["tokenizer_crc32"] != io::file_crc32_hex(loaded.info.tokenizer))
    throw IoError(path + ": its tokenizer " + loaded.info.tokenizer +
                  " is not the one it was trained with (CRC-32 differs); restore the original spm.model");
  loaded.tokenizer = data::SubwordModel::load(loaded.info.tokenizer);
  if (loaded.tokenizer->vocab_size() != loaded.model->vocab())
    throw IoError(path + ": the tokenizer has " + std::to_string(loaded.tokenizer->vocab_size()) +
                  " pieces, the model " + std::to_string(loaded.model->vocab()));
  io::load_model_parameters(file, loaded.model->module().named_parameters(), path);
  return loaded;
}

// The source pieces of each line, truncated to `max_len`.
std::vector<std::vector<int32_t>> encode_sources(const data::SubwordModel& tokenizer,
                                                 const std::vector<std::string>& lines, size_t max_len) {
  std::vector<std::vector<int32_t>> sources;
  sources.reserve(lines.size());
  for (const auto& line : lines) {
    std::vector<int32_t> ids = tokenizer.encode(line);
    if (ids.size() > max_len) ids.resize(max_len);
    sources.push_back(std::move(ids));
  }
  return sources;
}

// The longest source a model can take (Transformer: its positions).
size_t source_limit(const LoadedTranslator& model) { return detail::source_limit(*model.model, model.info.config); }

}  // namespace

LoadedTranslator load_translator(const io::SafetensorsFile& file, const std::string& path) {
  return load_from(file, path);
}

std::vector<std::string> output_pieces(const data::SubwordModel& tokenizer, const std::vector<int32_t>& ids,
                                       const std::vector<std::string>& oovs) {
  const int64_t V = tokenizer.vocab_size();
  std::vector<int32_t> known = ids;  // copied OOVs as UNK for pieces(), their text after
  for (int32_t& id : known) id = id >= V ? models::kUnk : id;
  std::vector<std::string> pieces = tokenizer.pieces(known);
  for (size_t t = 0; t < ids.size(); ++t)
    if (ids[t] >= V) pieces[t] = models::oov_text(ids[t], V, oovs);
  return pieces;
}

std::string output_text(const data::SubwordModel& tokenizer, const std::vector<int32_t>& ids,
                        const std::vector<std::string>& oovs) {
  const std::vector<int32_t> until_eos(ids.begin(), std::find(ids.begin(), ids.end(), models::kEos));
  const int64_t V = tokenizer.vocab_size();
  if (std::none_of(until_eos.begin(), until_eos.end(), [V](int32_t id) { return id >= V; }))
    return tokenizer.decode(until_eos);
  // SentencePiece's DecodePieces turns a piece outside its vocabulary into its unknown mark, so a
  // copied OOV's text is spliced in here: the pieces joined, "▁" as a space, the first one
  // dropped (SentencePiece's default detokenisation; PAD and BOS skipped as decode() does).
  const std::vector<std::string> pieces = output_pieces(tokenizer, until_eos, oovs);
  const std::string unknown_mark = " \u2047 ", word_start = "\u2581";
  std::string text;
  for (size_t t = 0; t < pieces.size(); ++t) {
    if (until_eos[t] == models::kPad || until_eos[t] == models::kBos) continue;
    text += until_eos[t] == models::kUnk ? unknown_mark : pieces[t];
  }
  for (size_t at = text.find(word_start); at != std::string::npos; at = text.find(word_start, at + 1))
    text.replace(at, word_start.size(), " ");
  if (!text.empty() && text.front() == ' ') text.erase(0, 1);
  return text;
}

LoadedTranslator load_translator(const std::string& path) { return load_from(io::load_safetensors(path), path); }

std::vector<Translation> translate(LoadedTranslator& model, const std::vector<std::string>& lines,
                                   const TranslateOptions& options) {
  detail::check_decode_options(options.beam, options.batch);
  model.model->module().eval();
  const size_t limit = source_limit(model);
  std::vector<std::vector<int32_t>> sources = encode_sources(*model.tokenizer, lines, limit);
  std::vector<Translation> out(lines.size());
  const bool pointer = model.info.config.value("pointer", false);
  const int64_t V = model.model->vocab();
  // Only non-empty sources are decoded; an empty line translates to an empty line.
  std::vector<size_t> real;
  std::vector<std::vector<int32_t>> real_sources, real_ext;
  std::vector<std::vector<std::string>> real_oovs;  // the pointer: each source's unknown pieces
  for (size_t i = 0; i < sources.size(); ++i)
    if (!sources[i].empty()) {
      real.push_back(i);
      real_sources.push_back(sources[i]);
      if (!pointer) continue;
      data::EncodedOovs e = data::encode_with_oovs(*model.tokenizer, lines[i], limit);
      real_ext.push_back(std::move(e.ext));
      real_oovs.push_back(std::move(e.oovs));
    }
  detail::decode_sorted(
      *model.model, limit, real_sources, options.batch,
      {.beam = options.beam,
       .max_len = options.max_len,
       .length_penalty = options.length_penalty,
       .coverage_penalty = options.coverage_penalty,
       .stop = options.stop,
       .rules = options.rules,
       .select = options.select},
      [&](const std::vector<size_t>& batch_indices, const models::DecodeResult& decoded, int64_t S) {
        for (size_t k = 0; k < batch_indices.size(); ++k) {
          Translation& t = out[real[batch_indices[k]]];
          const std::vector<std::string> no_oovs;
          const std::vector<std::string>& oovs = pointer ? real_oovs[batch_indices[k]] : no_oovs;
          const std::vector<int32_t>& out_ids = decoded.tokens[k];
          t.text = pointer ? output_text(*model.tokenizer, out_ids, oovs) : model.tokenizer->decode(out_ids);
          if (!options.attention) continue;
          const auto& src_ids = real_sources[batch_indices[k]];
          t.src_pieces = model.tokenizer->pieces(src_ids);
          t.out_pieces = output_pieces(*model.tokenizer, out_ids, oovs);
          if (pointer) t.copy = decoded.copy[k];
          for (size_t step = 0; step < out_ids.size() && step < decoded.attention[k].size(); ++step)
            t.weights.push_back(detail::head_average(decoded.attention[k][step], S, src_ids.size()));
        }
      },
      pointer ? &real_ext : nullptr, V);
  return out;
}

TranslationEval evaluate_translation(LoadedTranslator& model, const std::string& data_dir, const std::string& split,
                                     const TranslateOptions& options, int64_t limit) {
  const data::ParallelCorpus corpus =
      data::load_corpus(model.info.corpus, data_dir, split, model.info.src_lang, model.info.tgt_lang, limit);
  const auto start = std::chrono::steady_clock::now();
  TranslationEval eval;
  TranslateOptions with_weights = options;
  with_weights.attention = true;  // for the under-translated pieces
  std::vector<std::vector<std::vector<float>>> weights;
  for (auto& t : translate(model, corpus.src, with_weights)) {
    eval.hypotheses.push_back(std::move(t.text));
    weights.push_back(std::move(t.weights));
  }
  eval.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const data::ParallelCorpus train =
      data::load_corpus(model.info.corpus, data_dir, "train", model.info.src_lang, model.info.tgt_lang);
  eval.copy = data::copy_accuracy(corpus.src, corpus.tgt, eval.hypotheses, data::word_set(train.tgt));
  eval.repetition = data::repetition_rate(corpus.src, eval.hypotheses);
  eval.under = data::under_translation(weights);
  eval.buckets = data::bleu_by_source_length(corpus.src, eval.hypotheses, corpus.tgt);
  const data::BleuResult bleu = data::corpus_bleu(eval.hypotheses, corpus.tgt);
  eval.bleu = bleu.score;
  eval.bleu_line = bleu.to_string();
  eval.bleu_json = json::parse(bleu.to_json());
  if (model.info.summarization) eval.rouge = data::corpus_rouge(eval.hypotheses, corpus.tgt);
  eval.sentences = static_cast<int64_t>(corpus.src.size());
  return eval;
}

}  // namespace attn::decode
