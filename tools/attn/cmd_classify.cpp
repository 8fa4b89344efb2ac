// attn classify: the label, its probability and the per-token attention of a classifier
// checkpoint for one text (--text) or for every line of stdin.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "attn/data/text.h"
#include "attn/decode/classify.h"
#include "attn/json.h"
#include "attn/train/checkpoint.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {
namespace {

void print_classification(const decode::LoadedClassifier& loaded, const std::string& text,
                          const decode::Classification& c, bool json) {
  // Mostly unknown words: the label says little (another language, or unusual spelling).
  const auto unknown = std::count(c.ids.begin(), c.ids.end(), data::Vocab::kUnk);
  if (2 * unknown > static_cast<std::ptrdiff_t>(c.ids.size()))
    std::fprintf(stderr, "warning: %td of %zu tokens are not in the model's vocabulary; the label means little\n",
                 unknown, c.ids.size());
  const std::string& name = loaded.labels.at(static_cast<size_t>(c.label));
  if (json) {
    nlohmann::json j = {{"text", text},
                        {"label", c.label},
                        {"label_name", name},
                        {"probability", c.probability},
                        {"probabilities", c.probabilities},
                        {"tokens", c.tokens}};
    j["attention"] = c.attention.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.attention);
    std::printf("%s\n", json_text(j).c_str());
    return;
  }
  std::printf("%s %.4f  %s\n", name.c_str(), c.probability, text.c_str());
  if (c.attention.empty()) {
    std::printf("  (no attention for a %s model)\n", loaded.model->kind().c_str());
    return;
  }
  std::printf("  attention (%s):\n", loaded.model->attention_description().c_str());
  for (size_t i = 0; i < c.tokens.size(); ++i) {
    const float w = c.attention[i];
    const int bar = static_cast<int>(w * 40.0f + 0.5f);
    std::printf("  %6.3f %-40s %s%s\n", w, std::string(static_cast<size_t>(bar), '#').c_str(), c.tokens[i].c_str(),
                c.ids[i] == data::Vocab::kUnk ? " <unk>" : "");
  }
}

}  // namespace

void add_classify_command(CLI::App& app) {
  struct Args {
    std::string model;
    std::string text;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd =
      app.add_subcommand("classify", "Classify text with a classifier checkpoint: label, probability, attention");
  cmd->add_option("--model", args->model, "Classifier checkpoint (model.safetensors)")->required();
  cmd->add_option("--text", args->text,
                  "The text (raw text is lower-cased and PTB-tokenised like the training data); default: stdin lines, "
                  "a blank line answered by a blank line (--json: null)");
  cmd->add_flag("--json", args->json, "One JSON object per text");
  add_threads_option(cmd);
  add_precision_option(cmd, PrecisionUse::inference);
  cmd->callback([args, cmd] {
    require_checkpoint(args->model, {decode::CheckpointKind::classifier});
    decode::LoadedClassifier loaded = decode::load_classifier(args->model);
    // Bytes that are not UTF-8 become U+FFFD, as in the data files, so that --json can print them.
    if (cmd->count("--text")) {
      const std::string text = data::valid_utf8(args->text);
      as_usage([&] {
        print_classification(loaded, text, decode::classify_text(*loaded.model, loaded.vocab, text), args->json);
      });
      return;
    }
    std::string line;
    while (std::getline(std::cin, line)) {
      line = data::valid_utf8(line);
      if (data::whitespace_tokens(line).empty()) {  // kept, so that output line k answers input line k
        std::printf("%s\n", args->json ? "null" : "");
        continue;
      }
      print_classification(loaded, line, decode::classify_text(*loaded.model, loaded.vocab, line), args->json);
    }
    check_stdin_read();
  });
}

ATTN_REGISTER_COMMAND(60, add_classify_command);

}  // namespace attn::cli
