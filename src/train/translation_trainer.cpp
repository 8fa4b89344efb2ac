#include "attn/train/translation_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "attn/autodiff/tape.h"
#include "attn/data/bleu.h"
#include "attn/data/parallel.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "attn/io/atomic_file.h"
#include "attn/io/checksum.h"
#include "attn/io/safetensors.h"
#include "attn/train/checkpoint.h"
#include "attn/train/optimizer.h"
#include "attn/train/progress.h"
#include "attn/train/run_log.h"
#include "attn/train/schedule.h"

namespace attn::train {
namespace fs = std::filesystem;
using nlohmann::json;

void TranslationOptions::validate() const {
  if (data_dir.empty()) throw ValueError("a data directory (--data) is required for --task translate");
  if (src_lang.empty() || tgt_lang.empty() || src_lang == tgt_lang)
    throw ValueError("--src and --tgt must name two different languages, got '" + src_lang + "' and '" + tgt_lang + "'");
  if (vocab_size < 16) throw ValueError("--vocab-size must be >= 16, got " + std::to_string(vocab_size));
  if (max_len < 2) throw ValueError("--max-len must be >= 2, got " + std::to_string(max_len));
  if (train_limit < 0) throw ValueError("--train-limit must be >= 0");
  if (max_tokens < 2 * max_len + 1)
    throw ValueError("--max-tokens " + std::to_string(max_tokens) + " cannot hold one pair of --max-len " +
                     std::to_string(max_len) + " (needs >= " + std::to_string(2 * max_len + 1) + ")");
  if (max_sentences < 1) throw ValueError("--max-sentences must be >= 1");
  if (steps < 1) throw ValueError("--steps must be >= 1, got " + std::to_string(steps));
  if (!(max_minutes >= 0.0)) throw ValueError("--max-minutes must be >= 0");
  if (!(lr > 0.0f) || !std::isfinite(lr)) throw ValueError("--lr must be a positive number, got " + std::to_string(lr));
  if (!(clip >= 0.0f)) throw ValueError("--clip must be >= 0");
  if (!(label_smoothing >= 0.0f && label_smoothing < 1.0f))
    throw ValueError("--label-smoothing must be in [0, 1), got " + std::to_string(label_smoothing));
  if (warmup < 0) throw ValueError("--warmup must be >= 0");
  LrSchedule(LrScheduleOptions{.kind = parse_lr_schedule_kind(lr_schedule),
                               .base_lr = lr,
                               .warmup_steps = warmup,
                               .total_steps = steps,
                               .min_lr = 0.0f});
  if (log_every < 1) throw ValueError("--log-every must be >= 1");
  if (eval_every < 1) throw ValueError("--eval-every must be >= 1");
  if (eval_sentences < 0) throw ValueError("--eval-sentences must be >= 0");
  if (out_dir.empty()) throw ValueError("an output directory (--out) is required");
}

namespace {

constexpr const char* kFormat = "attn-translation";

json info_json(const TranslationInfo& info, int64_t vocab) {
  return {{"format", kFormat},
          {"version", kCheckpointVersion},
          {"kind", info.kind},
          {"config", info.config},
          {"src_lang", info.src_lang},
          {"tgt_lang", info.tgt_lang},
          {"tokenizer", fs::path(info.tokenizer).filename().string()},
          {"tokenizer_crc32", io::file_crc32_hex(info.tokenizer)},
          {"vocab_size", vocab},
          {"step", info.step},
          {"best_val_bleu", info.best_val_bleu}};
}

void save(const std::string& path, models::Translator& model, const TranslationInfo& info, const Optimizer* optimizer) {
  save_run_checkpoint(path, model.module().named_parameters(), info_json(info, model.vocab()), optimizer);
}

LoadedTranslator load_from(const io::SafetensorsFile& file, const std::string& path) {
  const json j = read_run_metadata(file, path, kFormat, "a translation checkpoint");
  LoadedTranslator loaded;
  try {
    loaded.info.kind = j.at("kind").get<std::string>();
    loaded.info.config = j.at("config");
    loaded.info.src_lang = j.at("src_lang").get<std::string>();
    loaded.info.tgt_lang = j.at("tgt_lang").get<std::string>();
    const std::string tokenizer = j.at("tokenizer").get<std::string>();
    if (tokenizer.empty() || fs::path(tokenizer).filename() != tokenizer)
      throw IoError(path + ": bad 'attn' metadata: tokenizer '" + tokenizer + "' is not a file name beside the checkpoint");
    loaded.info.tokenizer = (fs::path(path).parent_path() / tokenizer).string();
    loaded.info.step = j.at("step").get<int64_t>();
    loaded.info.best_val_bleu = j.at("best_val_bleu").get<double>();
  } catch (const json::exception& e) {
    throw IoError(path + ": bad 'attn' metadata: " + e.what());
  }
  try {
    loaded.model = models::make_translator(loaded.info.kind, loaded.info.config);
  } catch (const ValueError& e) {
    throw IoError(path + ": bad model configuration: " + e.what());
  }
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
  load_model_parameters(file, loaded.model->module().named_parameters(), path);
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
size_t source_limit(const LoadedTranslator& model) {
  if (model.info.kind == "transformer") return static_cast<size_t>(model.info.config.value("max_len", 256));
  return static_cast<size_t>(model.info.config.value("max_src_len", 128));
}

}  // namespace

LoadedTranslator load_translator(const std::string& path) { return load_from(io::load_safetensors(path), path); }

std::vector<Translation> translate(LoadedTranslator& model, const std::vector<std::string>& lines,
                                   const TranslateOptions& options, bool attention) {
  if (options.beam < 1) throw ValueError("--beam must be >= 1, got " + std::to_string(options.beam));
  if (options.batch < 1) throw ValueError("--batch must be >= 1, got " + std::to_string(options.batch));
  model.model->module().eval();
  const size_t limit = source_limit(model);
  std::vector<std::vector<int32_t>> sources = encode_sources(*model.tokenizer, lines, limit);
  std::vector<Translation> out(lines.size());
  // Only non-empty sources are decoded; an empty line translates to an empty line.
  std::vector<size_t> real;
  std::vector<std::vector<int32_t>> real_sources;
  for (size_t i = 0; i < sources.size(); ++i)
    if (!sources[i].empty()) {
      real.push_back(i);
      real_sources.push_back(sources[i]);
    }
  for (const auto& batch_indices : data::sorted_batches(real_sources, options.batch)) {
    std::vector<data::EncodedPair> pairs;
    int64_t longest = 1;
    for (size_t k : batch_indices) {
      pairs.push_back({real_sources[k], {data::kEos}});
      longest = std::max<int64_t>(longest, static_cast<int64_t>(real_sources[k].size()));
    }
    std::vector<size_t> all(pairs.size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = k;
    const data::Batch batch = data::make_pair_batch(pairs, all);
    int max_len = options.max_len > 0 ? options.max_len : static_cast<int>(2 * longest + 10);
    if (model.info.kind == "transformer") max_len = std::min<int>(max_len, static_cast<int>(limit) - 1);
    const models::DecodeResult decoded = model.model->decode(batch.src, batch.src_lengths, options.beam, max_len,
                                                             options.length_penalty, options.select);
    const int64_t S = batch.src.dim(1);
    for (size_t k = 0; k < batch_indices.size(); ++k) {
      Translation& t = out[real[batch_indices[k]]];
      t.text = model.tokenizer->decode(decoded.tokens[k]);
      if (!attention) continue;
      const auto& src_ids = real_sources[batch_indices[k]];
      t.src_pieces = model.tokenizer->pieces(src_ids);
      std::vector<int32_t> out_ids = decoded.tokens[k];
      t.out_pieces = model.tokenizer->pieces(out_ids);
      for (size_t step = 0; step < out_ids.size() && step < decoded.attention[k].size(); ++step) {
        const std::vector<float>& w = decoded.attention[k][step];
        // Multi-head RNN weights are head-major (H·S); report the head average.
        const int64_t heads = static_cast<int64_t>(w.size()) / S;
        std::vector<float> row(src_ids.size(), 0.0f);
        for (int64_t h = 0; h < heads; ++h)
          for (size_t s = 0; s < src_ids.size(); ++s) row[s] += w[static_cast<size_t>(h * S) + s] / heads;
        t.weights.push_back(std::move(row));
      }
    }
  }
  return out;
}

TranslationEval evaluate_translation(LoadedTranslator& model, const std::string& data_dir, const std::string& split,
                                     const TranslateOptions& options, int64_t limit) {
  const data::ParallelCorpus corpus =
      data::load_parallel(data_dir, split, model.info.src_lang, model.info.tgt_lang, limit);
  const auto start = std::chrono::steady_clock::now();
  TranslationEval eval;
  for (auto& t : translate(model, corpus.src, options)) eval.hypotheses.push_back(std::move(t.text));
  eval.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const data::BleuResult bleu = data::corpus_bleu(eval.hypotheses, corpus.tgt);
  eval.bleu = bleu.score;
  eval.bleu_line = bleu.to_string();
  eval.bleu_json = json::parse(bleu.to_json());
  eval.sentences = static_cast<int64_t>(corpus.src.size());
  return eval;
}

TranslationResult train_translation(const std::string& kind, json config, const TranslationOptions& o) {
  o.validate();
  const fs::path dir(o.out_dir);
  const std::string model_path = (dir / "model.safetensors").string();
  const std::string last_path = (dir / "last.safetensors").string();
  const std::string spm_prefix = (dir / "spm").string();
  const std::string spm_path = spm_prefix + ".model";
  // What can be checked before anything is written or learned.
  if (o.resume && !fs::exists(last_path)) throw IoError(last_path + ": nothing to resume (no such file)");
  if (!o.tokenizer.empty()) data::SubwordModel::load(o.tokenizer);  // IoError naming it when it is not one
  fs::create_directories(o.out_dir);

  std::FILE* say = o.progress;
  data::ParallelCorpus train_text = data::load_parallel(o.data_dir, "train", o.src_lang, o.tgt_lang, o.train_limit);
  const data::ParallelCorpus val_text =
      data::load_parallel(o.data_dir, "val", o.src_lang, o.tgt_lang, o.eval_sentences);

  // The tokenizer: given, kept from the run being resumed, or learned on the training text.
  if (!o.tokenizer.empty()) {
    if (fs::absolute(o.tokenizer) != fs::absolute(spm_path)) {
      io::copy_file_atomically(o.tokenizer, spm_path);
    }
  } else if (!(o.resume && data::file_exists(spm_path))) {
    if (say) std::fprintf(say, "learning a shared %d-piece SentencePiece model on %zu + %zu lines\n", o.vocab_size,
                          train_text.src.size(), train_text.tgt.size());
    std::vector<std::string> lines = train_text.src;
    lines.insert(lines.end(), train_text.tgt.begin(), train_text.tgt.end());
    data::train_subword_model(lines, spm_prefix, {.vocab_size = o.vocab_size});
  }
  const data::SubwordModel tokenizer = data::SubwordModel::load(spm_path);
  const int64_t V = tokenizer.vocab_size();
  if (kind == "rnn") {
    config["vocab"] = V;
  } else {
    config["src_vocab"] = V;
    config["tgt_vocab"] = V;
  }

  data::EncodedCorpus train_data = data::encode_parallel(train_text, tokenizer, tokenizer, o.max_len);
  if (say)
    std::fprintf(say, "%zu training pairs (%lld truncated to %d pieces), %zu validation sentences, vocabulary %lld\n",
                 train_data.pairs.size(), static_cast<long long>(train_data.truncated), o.max_len, val_text.src.size(),
                 static_cast<long long>(V));
  train_text = {};

  TranslationInfo info{kind, config, o.src_lang, o.tgt_lang, spm_path, 0, 0.0};
  LoadedTranslator run;
  run.tokenizer = tokenizer;
  std::unique_ptr<Adam> adam;
  int64_t start_step = 0;
  if (o.resume) {
    io::SafetensorsFile file = io::load_safetensors(last_path);
    run = load_from(file, last_path);
    if (run.info.kind != kind || run.info.config != config)
      throw ValueError("--resume: the options describe a different model than " + last_path + " (" +
                       run.info.config.dump() + ")");
    info = run.info;
    start_step = info.step;
    check_steps_left(start_step, o.steps, o.out_dir);
    adam = std::make_unique<Adam>(run.model->module().parameters(), AdamOptions{.lr = o.lr});
    load_optimizer_state(file, *adam, last_path);
  } else {
    run.model = models::make_translator(kind, config);
    run.info = info;
    adam = std::make_unique<Adam>(run.model->module().parameters(), AdamOptions{.lr = o.lr});
  }
  models::Translator& model = *run.model;
  if (say && !o.resume)
    std::fprintf(say, "%s model: %lld parameters\n", kind.c_str(), static_cast<long long>(model.module().num_parameters()));
  JsonlLog log((dir / "log.jsonl").string(), o.resume);

  TranslationResult result;
  result.model_path = model_path;
  const LrSchedule schedule(LrScheduleOptions{.kind = parse_lr_schedule_kind(o.lr_schedule),
                                              .base_lr = o.lr,
                                              .warmup_steps = o.warmup,
                                              .total_steps = o.steps,
                                              .min_lr = 0.0f});
  const auto run_start = std::chrono::steady_clock::now();
  auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  double eval_seconds = 0.0;  // validation time, not counted against --max-minutes

  auto validate_and_keep_best = [&](int64_t step) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::string> hypotheses;
    for (auto& t : translate(run, val_text.src, {.beam = 1, .batch = 100})) hypotheses.push_back(std::move(t.text));
    const data::BleuResult bleu = data::corpus_bleu(hypotheses, val_text.tgt);
    model.module().train();
    const double took = seconds_since(start);
    eval_seconds += took;
    log.write({{"step", step}, {"val_bleu", bleu.score}, {"val_bleu_line", bleu.to_string()}, {"eval_s", took}});
    if (say) std::fprintf(say, "step %lld: validation %s (greedy, %.0f s)\n", static_cast<long long>(step),
                          bleu.to_string().c_str(), took);
    if (bleu.score >= info.best_val_bleu || !fs::exists(model_path)) {
      info.best_val_bleu = bleu.score;
      info.step = step;
      save(model_path, model, info, nullptr);
    }
  };

  // Batches: epoch e is token_batches(seed, e); the step counter walks through them in order,
  // so a resumed run continues with the very batches it would have seen.
  int64_t epoch = 0;
  std::vector<std::vector<size_t>> epoch_batches = data::token_batches(train_data.pairs, o.max_tokens, o.max_sentences, o.seed, 0);
  int64_t in_epoch = 0;
  for (int64_t s = 0; s < start_step; ++s) {
    if (++in_epoch == static_cast<int64_t>(epoch_batches.size())) {
      epoch_batches = data::token_batches(train_data.pairs, o.max_tokens, o.max_sentences, o.seed, ++epoch);
      in_epoch = 0;
    }
  }

  Progress progress("train " + kind, o.steps, o.progress);
  int64_t step = start_step, window_tokens = 0, total_tokens = 0;
  auto window_start = std::chrono::steady_clock::now();
  double loss_value = 0.0;
  model.module().train();
  while (step < o.steps) {
    if (o.stop && o.stop->load()) {
      result.interrupted = true;
      break;
    }
    if (o.max_minutes > 0 && seconds_since(run_start) - eval_seconds > 60.0 * o.max_minutes) break;
    const data::Batch batch = data::make_pair_batch(train_data.pairs, epoch_batches[static_cast<size_t>(in_epoch)]);
    const Tensor loss = model.loss(batch, o.label_smoothing);
    loss_value = loss.item();
    if (!std::isfinite(loss_value))
      throw ValueError("training diverged at step " + std::to_string(step + 1) + " (loss " + std::to_string(loss_value) +
                       "); try a smaller --lr");
    adam->set_lr(schedule.lr_at(step));
    backward(loss);
    if (o.clip > 0.0f) clip_grad_norm(model.module().parameters(), o.clip);
    adam->step();
    adam->zero_grad();
    ++step;
    if (++in_epoch == static_cast<int64_t>(epoch_batches.size())) {
      epoch_batches = data::token_batches(train_data.pairs, o.max_tokens, o.max_sentences, o.seed, ++epoch);
      in_epoch = 0;
    }
    int64_t tokens = 0;
    for (int32_t len : batch.tgt_lengths.to_vector_i32()) tokens += len;
    window_tokens += tokens;
    total_tokens += tokens;
    if (step % o.log_every == 0 || step == o.steps) {
      const double seconds = seconds_since(window_start);
      const double tokens_per_s = seconds > 0 ? window_tokens / seconds : 0.0;
      log.write({{"step", step},
                 {"epoch", epoch},
                 {"loss", loss_value},
                 {"tokens_per_s", tokens_per_s},
                 {"lr", adam->lr()},
                 {"elapsed_s", seconds_since(run_start)}});
      progress.update(step, {{"loss", loss_value}, {"epoch", static_cast<double>(epoch)}, {"tok/s", tokens_per_s}});
      window_start = std::chrono::steady_clock::now();
      window_tokens = 0;
    }
    if (step % o.eval_every == 0) validate_and_keep_best(step);
  }
  progress.finish();
  if (step % o.eval_every != 0 || !fs::exists(model_path)) validate_and_keep_best(step);
  TranslationInfo last = info;
  last.step = step;
  save(last_path, model, last, adam.get());

  result.steps_done = step;
  result.best_val_bleu = info.best_val_bleu;
  result.final_loss = loss_value;
  result.train_seconds = seconds_since(run_start) - eval_seconds;
  result.tokens_per_second = result.train_seconds > 0 ? total_tokens / result.train_seconds : 0.0;
  return result;
}

}  // namespace attn::train
