#include "attn/decode/seq2seq.h"

#include <algorithm>
#include <cmath>

#include "attn/error.h"
#include "attn/io/checkpoint_read.h"
#include "attn/json.h"
#include "attn/random.h"

namespace attn::decode {
using nlohmann::json;

json seq2seq_metadata(const Seq2SeqInfo& info) {
  json vocabulary = json::array();
  for (int32_t id = 0; id < info.config.vocab; ++id) vocabulary.push_back(data::symbol_name(id));
  json j = io::run_metadata(kSeq2SeqFormat, info.config.to_json());
  j.update({{"task", info.task},
            {"min_len", info.min_len},
            {"max_len", info.max_len},
            {"step", info.step},
            {"best_token_accuracy", info.best_token_accuracy},
            {"vocabulary", vocabulary}});
  return j;
}

Seq2SeqInfo read_seq2seq_info(const io::SafetensorsFile& file, const std::string& path) {
  const json j = io::read_run_metadata(file, path, kSeq2SeqFormat, "an attn seq2seq checkpoint");
  Seq2SeqInfo info;
  io::read_metadata_fields(path, "bad model configuration", [&] {
    info.config = models::Seq2SeqConfig::from_json(j.at("config"));
    info.task = j.at("task").get<std::string>();
    info.min_len = j.at("min_len").get<int>();
    info.max_len = j.at("max_len").get<int>();
    info.step = j.at("step").get<int64_t>();
    info.best_token_accuracy = j.at("best_token_accuracy").get<double>();
    const json& vocabulary = j.at("vocabulary");
    if (static_cast<int>(vocabulary.size()) != info.config.vocab)
      throw IoError(path + ": vocabulary has " + std::to_string(vocabulary.size()) +
                    " symbols, the configuration says " + std::to_string(info.config.vocab));
    for (int32_t id = 0; id < info.config.vocab; ++id)
      if (vocabulary[id].get<std::string>() != data::symbol_name(id))
        throw IoError(path + ": vocabulary differs at id " + std::to_string(id) + ": '" +
                      vocabulary[id].get<std::string>() + "' where attn uses '" + data::symbol_name(id) + "'");
  });
  return info;
}

LoadedSeq2Seq load_seq2seq(const std::string& path) {
  const io::SafetensorsFile file = io::load_safetensors(path);
  LoadedSeq2Seq loaded;
  loaded.info = read_seq2seq_info(file, path);
  loaded.model = std::make_unique<models::Seq2Seq>(loaded.info.config);
  io::load_model_parameters(file, loaded.model->named_parameters(), path);
  return loaded;
}

data::AccuracyCounts decode_and_score(models::Seq2Seq& model, const data::Batch& batch, int beam, float length_penalty,
                                      float coverage_penalty) {
  const int max_len = static_cast<int>(batch.tgt_out.dim(1)) + 5;
  const models::BeamOptions options{
      .width = beam, .length_penalty = length_penalty, .max_len = max_len, .coverage_penalty = coverage_penalty};
  models::DecodeResult decoded = beam > 1 ? model.beam(batch.src, batch.src_lengths, options)
                                          : model.greedy(batch.src, batch.src_lengths, max_len);
  const Tensor predicted = models::pad_rows({decoded.tokens.begin(), decoded.tokens.end()});  // (B, T')
  return data::score_predictions(predicted, batch.tgt_out, batch.tgt_lengths);
}

void EvalOptions::validate() const {
  if (samples < 1) throw ValueError("--samples must be >= 1, got " + std::to_string(samples));
  if (beam < 1) throw ValueError("--beam must be >= 1, got " + std::to_string(beam));
  if (!(length_penalty >= 0.0f) || !std::isfinite(length_penalty))
    throw ValueError("--length-penalty must be >= 0, got " + std::to_string(length_penalty));
  if (!(coverage_penalty >= 0.0f) || !std::isfinite(coverage_penalty))
    throw ValueError("--coverage-penalty must be finite and >= 0, got " + std::to_string(coverage_penalty));
  if (batch < 1) throw ValueError("evaluation batch must be >= 1, got " + std::to_string(batch));
  for (int length : lengths)
    if (length < 1) throw ValueError("evaluation length must be >= 1, got " + std::to_string(length));
}

std::vector<LengthAccuracy> evaluate_seq2seq(models::Seq2Seq& model, data::TaskKind task, const EvalOptions& options) {
  options.validate();
  if (options.coverage_penalty > 0.0f && options.beam < 2)
    throw ValueError("--coverage-penalty applies to beam search (--beam > 1)");
  model.eval();
  std::vector<LengthAccuracy> rows;
  for (int length : options.lengths) {
    data::TaskGenerator generator(task, length, length, splitmix64(options.seed + length));
    data::AccuracyCounts counts;
    for (int done = 0; done < options.samples; done += options.batch) {
      const int n = std::min(options.batch, options.samples - done);
      counts.add(decode_and_score(model, generator.fixed_length(n, length), options.beam, options.length_penalty,
                                  options.coverage_penalty));
    }
    rows.push_back({length, counts.token_accuracy(), counts.sequence_accuracy()});
  }
  return rows;
}

std::string accuracy_json(const std::vector<LengthAccuracy>& rows) {
  json lengths = json::array();
  for (const auto& r : rows)
    lengths.push_back(
        {{"length", r.length}, {"token_accuracy", r.token_accuracy}, {"sequence_accuracy", r.sequence_accuracy}});
  return json_text(json{{"lengths", lengths}}, 2);
}

}  // namespace attn::decode
