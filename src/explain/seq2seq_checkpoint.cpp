#include "attn/explain/seq2seq_checkpoint.h"

#include <algorithm>

#include "attn/data/parallel.h"
#include "attn/data/tasks.h"

namespace attn::explain {

std::vector<std::string> ExplainableSeq2Seq::tokens(const std::vector<int32_t>& ids) const {
  if (translator) return translator->tokenizer->pieces(ids);
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(data::symbol_name(id));
  return out;
}

std::vector<int32_t> ExplainableSeq2Seq::source_ids(const std::string& text) const {
  std::vector<int32_t> ids = translator ? translator->tokenizer->encode(text) : data::parse_symbols(text);
  if (ids.size() > max_source) ids.resize(max_source);
  return ids;
}

ExplainedPair ExplainableSeq2Seq::explain(const std::string& text, const std::vector<int32_t>& ids) const {
  int max_len = static_cast<int>(2 * ids.size() + 10);
  if (max_output > 0) max_len = std::min(max_len, max_output);
  ExplainedPair p;
  p.text = text;
  p.importance = explain_pair(model, ids, max_len);
  p.source_tokens = tokens(p.importance.source);
  p.target_tokens = tokens(p.importance.hypothesis);
  return p;
}

ExplainedSources explain_sources(const ExplainableSeq2Seq& model, const std::vector<std::string>& lines,
                                 const std::function<void(int64_t, int64_t)>& progress) {
  const int64_t n = static_cast<int64_t>(lines.size());
  if (progress) progress(0, n);
  ExplainedSources out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::vector<int32_t> ids = model.source_ids(lines[i]);
    if (ids.empty()) {
      ++out.skipped_empty;
    } else {
      out.pairs.push_back(model.explain(lines[i], ids));
    }
    if (progress) progress(static_cast<int64_t>(i + 1), n);
  }
  return out;
}

ExplainableSeq2Seq load_explainable_seq2seq(const std::string& path, decode::CheckpointKind kind) {
  ExplainableSeq2Seq l;
  if (kind == decode::CheckpointKind::seq2seq) {
    l.synthetic = decode::load_seq2seq(path);
    l.model = source_embedding_model(*l.synthetic->model);
    l.kind = "seq2seq " + l.synthetic->info.task;
    l.config = l.synthetic->model->config().to_json();
    l.max_source = static_cast<size_t>(l.synthetic->model->config().max_src_len);
    return l;
  }
  l.translator = decode::load_translator(path);
  l.kind = std::string("translation ") + models::to_string(l.translator->info.kind);
  l.config = l.translator->info.config;
  if (models::Seq2Seq* rnn = l.translator->model->rnn()) {
    l.model = source_embedding_model(*rnn);
    l.max_source = static_cast<size_t>(rnn->config().max_src_len);
  } else {
    models::TransformerSeq2Seq& transformer = *l.translator->model->transformer();
    l.model = source_embedding_model(transformer);
    l.max_source = static_cast<size_t>(transformer.config().max_len);
    l.max_output = static_cast<int>(transformer.config().max_len) - 1;
  }
  return l;
}

std::vector<std::string> report_sources(const ExplainableSeq2Seq& l, const std::string& data, const std::string& split,
                                        int64_t limit, uint64_t seed, std::string* split_name) {
  if (l.translator) {
    const decode::TranslationInfo& info = l.translator->info;
    const bool multi30k = info.corpus == data::Corpus::multi30k;  // Tatoeba's splits are dev and test
    *split_name = multi30k && split == "dev" ? "val" : multi30k && split == "test" ? "test2016" : split;
    // The corpus's folder, or the folder holding it (as attn eval).
    return data::load_corpus(info.corpus, data, *split_name, info.src_lang, info.tgt_lang, limit).src;
  }
  const decode::Seq2SeqInfo& info = l.synthetic->info;
  data::TaskGenerator generator(data::parse_task(info.task), std::max(1, info.min_len),
                                std::max(std::max(1, info.min_len), info.max_len), seed);
  *split_name = "generated";
  std::vector<std::string> lines;
  for (const auto& s : generator.random_sources(static_cast<int>(limit))) lines.push_back(data::symbols_to_string(s));
  return lines;
}

}  // namespace attn::explain
