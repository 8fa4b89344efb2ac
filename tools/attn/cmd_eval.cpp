// attn eval: accuracy of a trained model — per source length for seq2seq checkpoints, on
// an SST-2 split for classifier checkpoints (dispatch on the checkpoint's metadata format).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "attn/json.h"
#include "attn/data/sst2.h"
#include "attn/data/text.h"
#include "attn/decode/classify.h"
#include "attn/decode/translate.h"
#include "attn/train/checkpoint.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {

void add_eval_command(CLI::App& app) {
  struct Args {
    std::string model;
    std::string lengths = "5,10,20,40,80";
    decode::EvalOptions options;
    bool json = false;
    std::string data;
    std::string split;
    int batch = 256;
    std::string hypotheses;
    int64_t limit = 0;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Evaluate a model: token and sequence accuracy per source length (seq2seq), or accuracy on an "
              "SST-2 split (classifier)");
  cmd->add_option("--model", args->model, "Checkpoint (model.safetensors)")->required();
  cmd->add_option("--eval-lengths", args->lengths, "Comma-separated source lengths")->capture_default_str();
  cmd->add_option("--samples", args->options.samples, "Examples per length")->capture_default_str();
  cmd->add_option("--beam", args->options.beam,
                  "Beam width, 1: greedy (default: 1 for synthetic-task checkpoints, 5 for translation checkpoints)");
  cmd->add_option("--length-penalty", args->options.length_penalty,
                  "Beam search: GNMT length penalty alpha, scores divided by ((5 + length) / 6)^alpha (0: none)")
      ->capture_default_str();
  cmd->add_option("--seed", args->options.seed, "Seed of the evaluation data")->capture_default_str()->check(integer_at_least(0));
  cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  cmd->add_option("--data", args->data, "Classifier / translation: the data folder (or its sst2/ or multi30k/)");
  cmd->add_option("--split", args->split,
                  "Classifier: dev (default) | test | train; translation: test2016 (default) | val | test2017 | test2018 | "
                  "mscoco2017");
  cmd->add_option("--hypotheses", args->hypotheses, "Translation: also write the translations to this file");
  cmd->add_option("--limit", args->limit, "Translation: the first N sentences of the split only (0: all)");
  cmd->add_option("--eval-batch", args->batch, "Classifier: examples per batch")->capture_default_str()->check(integer_at_least(1));
  add_threads_option(cmd);
  cmd->callback([args, cmd] {
    args->options.lengths = parse_lengths(args->lengths);
    as_usage([&] { args->options.validate(); });  // --samples, --beam
    const std::string format = attn_checkpoint_format(args->model);
    if (!args->hypotheses.empty() && format != "attn-translation") throw UsageError("--hypotheses needs a translation checkpoint; " + args->model + " is '" + format + "'");
    if (format == "attn-translation") {
      if (args->data.empty()) throw UsageError("a translation checkpoint needs --data DIR (the multi30k folder)");
      if (args->limit < 0) throw UsageError("--limit must be >= 0");
      decode::LoadedTranslator model = decode::load_translator(args->model);
      refuse_outputs_naming_inputs({{"--hypotheses", args->hypotheses}});  // the checkpoint, its spm.model
      decode::TranslateOptions options;
      options.beam = cmd->count("--beam") ? args->options.beam : 5;  // the documented Multi30k recipe
      options.length_penalty = args->options.length_penalty;
      const std::string split = args->split.empty() ? "test2016" : args->split;
      std::string dir = args->data;
      if (data::file_exists(dir + "/multi30k/raw/train.en.gz")) dir += "/multi30k";
      const decode::TranslationEval e = decode::evaluate_translation(model, dir, split, options, args->limit);
      if (!args->hypotheses.empty()) data::write_lines(args->hypotheses, e.hypotheses);
      if (args->json) {
        nlohmann::json j = e.bleu_json;
        j["bleu"] = e.bleu;
        j["split"] = split;
        j["sentences"] = e.sentences;
        j["beam"] = options.beam;
        j["length_penalty"] = options.length_penalty;
        j["seconds"] = e.seconds;
        j["model"] = args->model;
        j["kind"] = model.info.kind;
        j["score"] = e.bleu;
        j["metric"] = "bleu";
        std::printf("%s\n", json_text(j, 2).c_str());
      } else {
        std::printf("%s %s (%lld sentences, beam %d): %s\n", model.info.kind.c_str(), split.c_str(),
                    static_cast<long long>(e.sentences), options.beam, e.bleu_line.c_str());
      }
      return;
    }
    if (format == "attn-classifier") {
      if (args->split.empty()) args->split = "dev";
      args->data = data_or_default(args->data, "sst2", "a classifier checkpoint needs --data DIR (the folder holding sst2/)");
      if (args->split != "dev" && args->split != "test" && args->split != "train")
        throw UsageError("unknown --split '" + args->split + "' (valid: train, dev, test)");
      decode::LoadedClassifier loaded = decode::load_classifier(args->model);
      const auto examples = data::read_sst2(data::sst2_split_path(args->data, args->split));
      const decode::ClassifierEval e = decode::evaluate_classifier(*loaded.model, loaded.vocab, examples, args->batch);
      if (args->json) {
        nlohmann::json j = nlohmann::json::parse(decode::classifier_eval_json(e));
        j["model"] = args->model;
        j["kind"] = loaded.model->kind();
        j["split"] = args->split;
        j["score"] = e.accuracy;
        j["metric"] = "accuracy";
        std::printf("%s\n", json_text(j, 2).c_str());
      } else {
        std::printf("%s %s: accuracy %.2f %% (%lld examples), loss %.4f\n", loaded.model->kind().c_str(),
                    args->split.c_str(), 100 * e.accuracy, static_cast<long long>(e.examples), e.loss);
      }
      return;
    }
    decode::LoadedSeq2Seq loaded = decode::load_seq2seq(args->model);
    check_eval_memory(loaded.model->config(), args->options);
    auto rows = decode::evaluate_seq2seq(*loaded.model, data::parse_task(loaded.info.task), args->options);
    if (args->json) {
      // The score: token accuracy averaged over the evaluated lengths.
      nlohmann::json j = nlohmann::json::parse(decode::accuracy_json(rows));
      double mean = 0.0;
      for (const auto& r : rows) mean += r.token_accuracy / static_cast<double>(rows.size());
      j["model"] = args->model;
      j["attention"] = models::to_string(loaded.info.config.attention);
      j["beam"] = args->options.beam;
      j["length_penalty"] = args->options.length_penalty;
      j["samples"] = args->options.samples;
      j["seed"] = args->options.seed;
      j["score"] = mean;
      j["metric"] = "mean token accuracy over the lengths";
      std::printf("%s\n", json_text(j, 2).c_str());
    } else {
      std::printf("%s", accuracy_table({models::to_string(loaded.info.config.attention)}, {rows}).c_str());
    }
  });
}

ATTN_REGISTER_COMMAND(30, add_eval_command);

}  // namespace attn::cli
