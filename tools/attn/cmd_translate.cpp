// attn translate: translates stdin to stdout, one sentence a line, with a trained
// translation model (`attn train --task translate`).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/decode/g2p.h"
#include "attn/decode/translate.h"
#include "attn/models/memory_estimate.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {

namespace {

struct Args {
  std::string model;
  decode::TranslateOptions options;
  bool pieces = false;
  bool json = false;
};

// One --json line: {"text", "pieces" (up to EOS), "copy" (the pointer-generator: 1 − p_gen of
// each piece)}.
std::string translation_json(const decode::Translation& t, const std::string& eos) {
  nlohmann::json pieces = nlohmann::json::array(), copy = nlohmann::json::array();
  for (size_t i = 0; i < t.out_pieces.size() && t.out_pieces[i] != eos; ++i) {
    pieces.push_back(t.out_pieces[i]);
    if (i < t.copy.size()) copy.push_back(t.copy[i]);
  }
  nlohmann::json j = {{"text", t.text}, {"pieces", std::move(pieces)}};
  if (!t.copy.empty()) j["copy"] = std::move(copy);
  return j.dump() + "\n";
}

// A G2P checkpoint: one word a line in, its phonemes (space-separated) a line out; an empty
// line gives an empty line.
void pronounce_stdin(const Args& a) {
  decode::LoadedG2p model = decode::load_g2p(a.model);
  refuse_outputs_naming_inputs({});
  std::vector<std::string> lines, words;
  for (std::string line; std::getline(std::cin, line);) lines.push_back(std::move(line));
  check_stdin_read();
  for (const std::string& line : lines)
    if (!line.empty()) words.push_back(line);
  std::vector<decode::Pronunciation> said;
  as_usage([&] {
    said = decode::pronounce(
        model, words, {.beam = a.options.beam, .length_penalty = a.options.length_penalty, .batch = a.options.batch});
  });
  // The whole output is built before anything is written: a failure prints no half result.
  std::string out;
  size_t next = 0;
  for (const std::string& line : lines) {
    if (!line.empty())
      for (const std::string& p : said[next++].phonemes) out += (out.empty() || out.back() == '\n' ? "" : " ") + p;
    out += '\n';
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

void add_translate_command(CLI::App& app) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "translate",
      "Translate stdin to stdout, one sentence a line (batched); with a G2P checkpoint, one word a line to "
      "its phonemes");
  cmd->add_option("--model", args->model,
                  "Translation checkpoint (RUN/model.safetensors; spm.model next to it) or G2P checkpoint")
      ->required();
  cmd->add_option("--beam", args->options.beam, "Beam width (1: greedy)")->capture_default_str();
  cmd->add_option("--length-penalty", args->options.length_penalty, "GNMT length penalty alpha")->capture_default_str();
  add_coverage_penalty_option(cmd, args->options.coverage_penalty);
  add_beam_stop_option(cmd, args->options.stop);
  add_beam_rules_option(cmd, args->options.rules);
  cmd->add_option("--batch", args->options.batch, "Sentences per decoding batch")->capture_default_str();
  cmd->add_option("--max-len", args->options.max_len, "Longest output in pieces (0: 2 x source + 10)")
      ->capture_default_str();
  cmd->add_flag("--json", args->json,
                "Print one JSON object a line: text, pieces and, for a --pointer model, the copy probability "
                "1 - p_gen of each piece");
  cmd->add_flag("--pieces", args->pieces,
                "Print the output pieces (space-separated, up to EOS) instead of text, to compare token for token "
                "with another engine (e.g. CTranslate2)");
  add_threads_option(cmd);
  add_precision_option(cmd, PrecisionUse::inference);
  cmd->callback([args] {
    if (cmd_beam_invalid(args->options.beam))
      throw UsageError("--beam must be >= 1, got " + std::to_string(args->options.beam));
    if (args->options.batch < 1) throw UsageError("--batch must be >= 1");
    const float alpha = args->options.length_penalty;
    if (!(alpha >= 0.0f) || !std::isfinite(alpha))
      throw UsageError("--length-penalty must be finite and >= 0, got " + std::to_string(alpha));
    check_coverage_penalty(args->options.coverage_penalty, args->options.beam);
    check_beam_rules(args->options.rules, args->options.stop, args->options.coverage_penalty);
    if (args->options.max_len < 0 || args->options.max_len > models::kMaxLength)
      throw UsageError("--max-len must be in [0, " + std::to_string(models::kMaxLength) +
                       "] pieces (0: 2 x source + 10), got " + std::to_string(args->options.max_len));
    if (require_checkpoint(args->model, {decode::CheckpointKind::translation, decode::CheckpointKind::g2p}) ==
        decode::CheckpointKind::g2p)
      return pronounce_stdin(*args);
    decode::LoadedTranslator model = decode::load_translator(args->model);
    refuse_outputs_naming_inputs({});  // `>> RUN/spm.model`: the standard output
    std::vector<std::string> lines;
    for (std::string line; std::getline(std::cin, line);) lines.push_back(std::move(line));
    check_stdin_read();
    // The whole output is built before anything is written: a failure prints no half result.
    std::string out;
    args->options.attention = args->pieces || args->json;  // (out_pieces come with the weights)
    const std::string eos = model.tokenizer->pieces({models::kEos}).front();
    for (const auto& t : decode::translate(model, lines, args->options)) {
      if (args->json) {
        out += translation_json(t, eos);
        continue;
      }
      if (!args->pieces) {
        out += t.text + '\n';
        continue;
      }
      std::string line;
      for (const std::string& piece : t.out_pieces) {
        if (piece == eos) break;
        line += (line.empty() ? "" : " ") + piece;
      }
      out += line + '\n';
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
  });
}

ATTN_REGISTER_COMMAND(62, add_translate_command);

}  // namespace attn::cli
