// attn eval: accuracy of a trained model — per source length for seq2seq checkpoints, on
// an SST-2 split for classifier checkpoints (dispatch on the checkpoint's kind, decode/checkpoint_kind.h).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "attn/data/sst2.h"
#include "attn/data/text.h"
#include "attn/decode/asr.h"
#include "attn/decode/classify.h"
#include "attn/decode/g2p.h"
#include "attn/decode/translate.h"
#include "attn/json.h"
#include "attn/train/asr_trainer.h"
#include "attn/train/checkpoint.h"
#include "attn/train/g2p_trainer.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {
namespace {

struct EvalArgs {
  std::string model;
  std::string lengths = "5,10,20,40,80";
  decode::EvalOptions options;
  bool json = false;
  std::string data;
  std::string split;
  int batch = 256;
  std::string hypotheses;
  int64_t limit = 0;
  models::BeamStop beam_stop = models::BeamStop::bound;    // translation checkpoints
  models::BeamRules beam_rules = models::BeamRules::attn;  // translation checkpoints
  int join = 1;
};

// BLEU by source-length bucket: JSON entries {"words": "1-5", "min_words", "max_words" (null:
// no bound), "sentences", "bleu" (null for an empty bucket)}, which `attn plot buckets` reads.
nlohmann::json length_buckets_json(const std::vector<data::LengthBucket>& buckets) {
  nlohmann::json out = nlohmann::json::array();
  for (const data::LengthBucket& b : buckets)
    out.push_back({{"words", b.label()},
                   {"min_words", b.min_words},
                   {"max_words", b.max_words > 0 ? nlohmann::json(b.max_words) : nlohmann::json(nullptr)},
                   {"sentences", b.sentences},
                   {"bleu", b.bleu ? nlohmann::json(b.bleu->score) : nlohmann::json(nullptr)}});
  return out;
}

// The same as a table under eval's line.
void print_length_buckets(const std::vector<data::LengthBucket>& buckets) {
  std::printf("%-14s %9s %7s\n", "source words", "sentences", "BLEU");
  for (const data::LengthBucket& b : buckets) {
    if (b.bleu)
      std::printf("%-14s %9lld %7.2f\n", b.label().c_str(), static_cast<long long>(b.sentences), b.bleu->score);
    else
      std::printf("%-14s %9lld %7s\n", b.label().c_str(), static_cast<long long>(b.sentences), "-");
  }
}

void eval_translation(EvalArgs& a, const CLI::App* cmd) {
  if (a.limit < 0) throw UsageError("--limit must be >= 0");
  check_coverage_penalty(a.options.coverage_penalty, cmd->count("--beam") ? a.options.beam : 5);
  check_beam_rules(a.beam_rules, a.beam_stop, a.options.coverage_penalty);
  decode::LoadedTranslator model = decode::load_translator(a.model);
  const bool summaries = model.info.summarization;
  if (a.data.empty())
    throw UsageError(summaries
                         ? "a summarization checkpoint needs --data DIR (the folder with test.article and test.summary)"
                         : "a translation checkpoint needs --data DIR (the multi30k or tatoeba-fra-eng folder, or "
                           "the folder holding it)");
  refuse_outputs_naming_inputs({{"--hypotheses", a.hypotheses}});  // the checkpoint, its spm.model
  decode::TranslateOptions options;
  options.beam = cmd->count("--beam") ? a.options.beam : 5;  // the documented Multi30k recipe
  options.length_penalty = a.options.length_penalty;
  options.coverage_penalty = a.options.coverage_penalty;
  options.stop = a.beam_stop;
  options.rules = a.beam_rules;
  const bool tatoeba = model.info.corpus == data::Corpus::tatoeba;
  const std::string split = !a.split.empty() ? a.split : summaries || tatoeba ? "test" : "test2016";
  const decode::TranslationEval e = decode::evaluate_translation(model, a.data, split, options, a.limit);
  if (!a.hypotheses.empty()) data::write_lines(a.hypotheses, e.hypotheses);
  if (a.json) {
    nlohmann::json j = e.bleu_json;
    j["bleu"] = e.bleu;
    j["split"] = split;
    j["corpus"] = data::to_string(model.info.corpus);
    j["sentences"] = e.sentences;
    j["beam"] = options.beam;
    j["length_penalty"] = options.length_penalty;
    j["coverage_penalty"] = options.coverage_penalty;
    j["beam_stop"] = models::to_string(options.stop);
    j["beam_rules"] = models::to_string(options.rules);
    j["seconds"] = e.seconds;
    j["model"] = a.model;
    j["kind"] = models::to_string(model.info.kind);
    j["score"] = e.bleu;
    j["metric"] = "bleu";
    j["copy_accuracy"] = {
        {"rate", e.copy.rate()}, {"words", e.copy.words}, {"copied", e.copy.copied}, {"sentences", e.copy.sentences}};
    j["repetition_rate"] = e.repetition;
    j["repetition_ngrams"] = {2, 4};
    j["under_translation"] = {{"rate", e.under.rate()}, {"tokens", e.under.tokens}, {"under", e.under.under}};
    j["length_buckets"] = length_buckets_json(e.buckets);
    if (e.rouge) {  // summarization: ROUGE-1/2/L (0-100), the score ROUGE-L F1
      const nlohmann::json rouge = nlohmann::json::parse(e.rouge->to_json());
      for (const char* name : {"rouge1", "rouge2", "rougeL", "stemming"}) j[name] = rouge[name];
      j["score"] = rouge["rougeL"]["f1"];
      j["metric"] = "rougeL_f1";
    }
    std::printf("%s\n", json_text(j, 2).c_str());
  } else {
    const std::string scores = e.rouge ? e.rouge->to_string() + "; " + e.bleu_line : e.bleu_line;
    std::printf("%s %s (%lld sentences, beam %d): %s\n", models::to_string(model.info.kind), split.c_str(),
                static_cast<long long>(e.sentences), options.beam, scores.c_str());
    print_length_buckets(e.buckets);
  }
}

void eval_classifier(EvalArgs& a) {
  if (a.split.empty()) a.split = "dev";
  a.data = data_or_default(a.data, "sst2", "a classifier checkpoint needs --data DIR (the folder holding sst2/)");
  if (a.split != "dev" && a.split != "test" && a.split != "train")
    throw UsageError("unknown --split '" + a.split + "' (valid: train, dev, test)");
  decode::LoadedClassifier loaded = decode::load_classifier(a.model);
  const auto examples = data::read_sst2(data::sst2_split_path(a.data, a.split));
  const decode::ClassifierEval e = decode::evaluate_classifier(*loaded.model, loaded.vocab, examples, a.batch);
  if (a.json) {
    nlohmann::json j = nlohmann::json::parse(decode::classifier_eval_json(e));
    j["model"] = a.model;
    j["kind"] = loaded.model->kind();
    j["split"] = a.split;
    j["score"] = e.accuracy;
    j["metric"] = "accuracy";
    std::printf("%s\n", json_text(j, 2).c_str());
  } else {
    std::printf("%s %s: accuracy %.2f %% (%lld examples), loss %.4f\n", loaded.model->kind().c_str(), a.split.c_str(),
                100 * e.accuracy, static_cast<long long>(e.examples), e.loss);
  }
}

// What the JSON of an error-rate evaluation (G2P, ASR) holds besides its counts: the checkpoint,
// the split, the decoding, the time, and the score (lower is better) named by "metric".
nlohmann::json error_rate_json(const EvalArgs& a, int beam, float length_penalty, double seconds, const char* metric,
                               double score) {
  return {{"model", a.model},   {"split", a.split}, {"beam", beam},    {"length_penalty", length_penalty},
          {"seconds", seconds}, {"score", score},   {"metric", metric}};
}

// PER and WER on a CMUdict split (the hash split of docs/data.md).
void eval_g2p(EvalArgs& a, const CLI::App* cmd) {
  if (a.split.empty()) a.split = "dev";
  const std::string data_dir = data_or_default(
      a.data, "cmudict", "a G2P checkpoint needs --data DIR (the cmudict folder, or the folder holding it)");
  data::CmudictSplit split = data::CmudictSplit::dev;
  if (a.split == "test")
    split = data::CmudictSplit::test;
  else if (a.split == "train")
    split = data::CmudictSplit::train;
  else if (a.split != "dev")
    throw UsageError("unknown --split '" + a.split + "' (valid: dev, test, train)");
  if (a.limit < 0) throw UsageError("--limit must be >= 0");
  decode::LoadedG2p model = decode::load_g2p(a.model);
  std::vector<data::CmudictEntry> entries =
      data::cmudict_subset(data::read_cmudict(train::cmudict_path(data_dir)), split);
  if (a.limit > 0 && static_cast<int64_t>(entries.size()) > a.limit) entries.resize(static_cast<size_t>(a.limit));
  decode::PronounceOptions options;
  options.beam = cmd->count("--beam") ? a.options.beam : 1;
  options.length_penalty = a.options.length_penalty;
  const decode::G2pEval e = decode::evaluate_g2p(model, entries, options);
  if (a.json) {
    nlohmann::json j = error_rate_json(a, options.beam, options.length_penalty, e.seconds, "per", e.score.per());
    j.update({{"kind", models::to_string(model.info.kind)},
              {"words", e.score.words},
              {"per", e.score.per()},
              {"wer", e.score.wer()},
              {"phoneme_edits", e.score.edits},
              {"reference_phonemes", e.score.phonemes},
              {"words_wrong", e.score.words_wrong}});
    if (e.steps > 0) {  // attention: letters read before each output step, against the word's letters
      j["output_steps"] = e.steps;
      j["frames_read_per_step"] = static_cast<double>(e.frames_read) / static_cast<double>(e.steps);
      j["letters_per_step"] = static_cast<double>(e.letters) / static_cast<double>(e.steps);
    }
    std::printf("%s\n", json_text(j, 2).c_str());
  } else {
    std::printf("%s %s (%lld words, beam %d): PER %.2f %%, WER %.2f %%\n", models::to_string(model.info.kind),
                a.split.c_str(), static_cast<long long>(e.score.words), options.beam, 100 * e.score.per(),
                100 * e.score.wer());
    if (e.steps > 0)
      std::printf("attention read %.2f of %.2f letters per output step\n",
                  static_cast<double>(e.frames_read) / static_cast<double>(e.steps),
                  static_cast<double>(e.letters) / static_cast<double>(e.steps));
  }
}

// CER and WER on a split of a speech folder, its utterances joined `--join` at a time.
void eval_asr(EvalArgs& a, const CLI::App* cmd) {
  if (a.split.empty()) a.split = "test";
  if (a.data.empty()) throw UsageError("an ASR checkpoint needs --data DIR (the folder with test.speech)");
  if (a.limit < 0) throw UsageError("--limit must be >= 0");
  if (a.join < 1) throw UsageError("--join must be >= 1, got " + std::to_string(a.join));
  decode::LoadedAsr model = decode::load_asr(a.model);
  data::SpeechSet set = data::read_speech_set(train::speech_split_path(a.data, a.split));
  if (a.limit > 0 && static_cast<int64_t>(set.utterances.size()) > a.limit)
    set.utterances.resize(static_cast<size_t>(a.limit));
  if (set.bins != model.info.config.bins)
    throw ValueError(a.data + ": " + std::to_string(set.bins) + " bins a frame, the model takes " +
                     std::to_string(model.info.config.bins));
  set = decode::join_utterances(set, a.join);
  decode::TranscribeOptions options;
  options.beam = cmd->count("--beam") ? a.options.beam : 1;
  options.length_penalty = a.options.length_penalty;
  const decode::AsrEval e = decode::evaluate_asr(model, set.utterances, options);
  const std::string score = model.info.config.speller.effective_score();
  const double read = e.steps > 0 ? static_cast<double>(e.frames_read) / static_cast<double>(e.steps) : 0.0;
  const double frames = e.steps > 0 ? static_cast<double>(e.frames) / static_cast<double>(e.steps) : 0.0;
  if (a.json) {
    nlohmann::json j = error_rate_json(a, options.beam, options.length_penalty, e.seconds, "cer", e.score.cer());
    j.update({{"score_function", score},
              {"join", a.join},
              {"utterances", e.score.utterances},
              {"cer", e.score.cer()},
              {"wer", e.score.wer()},
              {"char_edits", e.score.char_edits},
              {"reference_chars", e.score.chars},
              {"word_edits", e.score.word_edits},
              {"reference_words", e.score.words},
              {"output_steps", e.steps},
              {"frames_read_per_step", read},
              {"frames_per_step", frames}});
    std::printf("%s\n", json_text(j, 2).c_str());
  } else {
    std::printf("asr (%s) %s, join %d (%lld utterances, beam %d): CER %.2f %%, WER %.2f %%\n", score.c_str(),
                a.split.c_str(), a.join, static_cast<long long>(e.score.utterances), options.beam, 100 * e.score.cer(),
                100 * e.score.wer());
    std::printf("attention read %.2f of %.2f listener frames per output step\n", read, frames);
  }
}

void eval_seq2seq(const EvalArgs& a) {
  check_coverage_penalty(a.options.coverage_penalty, a.options.beam);
  decode::LoadedSeq2Seq loaded = decode::load_seq2seq(a.model);
  check_eval_memory(loaded.model->config(), a.options);
  auto rows = decode::evaluate_seq2seq(*loaded.model, data::parse_task(loaded.info.task), a.options);
  if (a.json) {
    // The score: token accuracy averaged over the evaluated lengths.
    nlohmann::json j = nlohmann::json::parse(decode::accuracy_json(rows));
    double mean = 0.0;
    for (const auto& r : rows) mean += r.token_accuracy / static_cast<double>(rows.size());
    j["model"] = a.model;
    j["attention"] = models::to_string(loaded.info.config.attention);
    j["beam"] = a.options.beam;
    j["length_penalty"] = a.options.length_penalty;
    j["coverage_penalty"] = a.options.coverage_penalty;
    j["samples"] = a.options.samples;
    j["seed"] = a.options.seed;
    j["score"] = mean;
    j["metric"] = "mean token accuracy over the lengths";
    std::printf("%s\n", json_text(j, 2).c_str());
  } else {
    std::printf("%s", accuracy_table({models::to_string(loaded.info.config.attention)}, {rows}).c_str());
  }
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd =
      app.add_subcommand("eval",
                         "Evaluate a model: token and sequence accuracy per source length (seq2seq), or accuracy on an "
                         "SST-2 split (classifier)");
  cmd->add_option("--model", args->model, "Checkpoint (model.safetensors)")->required();
  cmd->add_option("--eval-lengths", args->lengths, "Comma-separated source lengths")->capture_default_str();
  cmd->add_option("--samples", args->options.samples, "Examples per length")->capture_default_str();
  cmd->add_option("--beam", args->options.beam,
                  "Beam width, 1: greedy (default: 1 for synthetic-task checkpoints, 5 for translation checkpoints)");
  cmd->add_option("--length-penalty", args->options.length_penalty,
                  "Beam search: GNMT length penalty alpha, scores divided by ((5 + length) / 6)^alpha (0: none)")
      ->capture_default_str();
  add_coverage_penalty_option(cmd, args->options.coverage_penalty);
  add_beam_stop_option(cmd, args->beam_stop);
  add_beam_rules_option(cmd, args->beam_rules);
  cmd->add_option("--seed", args->options.seed, "Seed of the evaluation data")
      ->capture_default_str()
      ->check(integer_at_least(0));
  cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  cmd->add_option(
      "--data", args->data,
      "Classifier / translation / G2P: the data folder (or its sst2/, multi30k/ or cmudict/); summarization: the "
      "folder with <split>.article and <split>.summary");
  cmd->add_option(
      "--split", args->split,
      "Classifier: dev (default) | test | train; translation: test2016 (default) | val | test2017 | test2018 | "
      "mscoco2017, Tatoeba: test (default) | dev | train; summarization: test (default) | val | any <split> with its "
      "two files; G2P: dev (default) | test | "
      "train (docs/data.md); ASR: test (default) | dev | train");
  cmd->add_option("--hypotheses", args->hypotheses, "Translation: also write the translations to this file");
  cmd->add_option("--limit", args->limit,
                  "Translation / G2P / ASR: the first N sentences (words, utterances) of the split only (0: all)");
  cmd->add_option("--join", args->join,
                  "ASR: join every N consecutive utterances into one, the long-utterance test (default 1)");
  cmd->add_option("--eval-batch", args->batch, "Classifier: examples per batch")
      ->capture_default_str()
      ->check(integer_at_least(1));
  add_threads_option(cmd);
  add_precision_option(cmd, PrecisionUse::inference);
  cmd->callback([args, cmd] {
    args->options.lengths = parse_lengths(args->lengths);
    as_usage([&] { args->options.validate(); });  // --samples, --beam
    using decode::CheckpointKind;
    const CheckpointKind kind =
        require_checkpoint(args->model, {CheckpointKind::seq2seq, CheckpointKind::translation,
                                         CheckpointKind::classifier, CheckpointKind::g2p, CheckpointKind::asr});
    if (!args->hypotheses.empty() && kind != CheckpointKind::translation)
      throw UsageError("--hypotheses needs a translation checkpoint; " + args->model + " is '" +
                       decode::format_name(kind) + "'");
    refuse_options_for_kind(cmd, {"--join"}, kind == CheckpointKind::asr, "an ASR checkpoint", args->model, kind);
    refuse_options_for_kind(cmd, {"--beam-stop", "--beam-rules"}, kind == CheckpointKind::translation,
                            "a translation checkpoint", args->model, kind);
    switch (kind) {
      case CheckpointKind::translation:
        return eval_translation(*args, cmd);
      case CheckpointKind::classifier:
        return eval_classifier(*args);
      case CheckpointKind::seq2seq:
        return eval_seq2seq(*args);
      case CheckpointKind::g2p:
        return eval_g2p(*args, cmd);
      case CheckpointKind::asr:
        return eval_asr(*args, cmd);
      case CheckpointKind::lm:
        break;  // refused above
    }
  });
}

ATTN_REGISTER_COMMAND(30, add_eval_command);

}  // namespace attn::cli
