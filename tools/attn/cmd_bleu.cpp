// attn bleu and attn rouge: corpus scores of hypotheses (stdin, or --hyp) against one
// reference file.
// BLEU as sacreBLEU 2.x computes it by default (13a tokenisation, exp smoothing):
//   attn bleu --ref test_2016_flickr.de.gz < hyp.de
//   BLEU = 35.12 66.0/42.2/28.8/19.9 (BP = 0.985 ratio = 0.985 hyp_len = 12011 ref_len = 12193)
//   attn bleu --ref ref.de --lowercase < hyp.de      # sacreBLEU's --lowercase (-lc)
// ROUGE-1/2/L F1 as rouge-score computes them by default (lowercase, no stemming; data/rouge.h):
//   printf 'the cat was on the mat\n' | attn rouge --ref ref.txt      # ref.txt: "The cat sat on the mat."
//   ROUGE-1/2/L F1 = 83.33/60.00/83.33 (1 sentence, no stemming)
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "attn/data/bleu.h"
#include "attn/data/rouge.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {
namespace {

struct ScoreArgs {
  std::string ref;
  std::string hyp;
  bool json = false;
  data::BleuOptions bleu;
};

struct HypothesesAndReferences {
  std::vector<std::string> hyps, refs;
};

// --ref, --hyp (default: stdin) and --json, the options both scores share.
std::shared_ptr<ScoreArgs> add_score_options(CLI::App* cmd, const char* what) {
  auto args = std::make_shared<ScoreArgs>();
  cmd->add_option("--ref", args->ref, fmt::format("Reference {}, one a line (plain or .gz)", what))->required();
  cmd->add_option("--hyp", args->hyp, "Hypotheses file (default: stdin)");
  return args;
}

// The hypotheses and references, as many of one as of the other (ValueError naming both otherwise).
HypothesesAndReferences read_scored_lines(const ScoreArgs& a, const char* command) {
  HypothesesAndReferences r;
  r.refs = data::read_lines(a.ref);
  std::string hyp_name = "stdin";
  if (a.hyp.empty()) {
    std::string line;
    while (std::getline(std::cin, line)) r.hyps.push_back(line);
    check_stdin_read();
  } else {
    r.hyps = data::read_lines(a.hyp);
    hyp_name = "'" + a.hyp + "'";
  }
  if (r.hyps.size() != r.refs.size())
    throw ValueError(
        fmt::format("{}: {} has {} lines but '{}' has {}", command, hyp_name, r.hyps.size(), a.ref, r.refs.size()));
  return r;
}

void add_bleu_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("bleu", "Corpus BLEU of stdin against a reference file (sacreBLEU-compatible)");
  auto args = add_score_options(cmd, "translations");
  cmd->add_flag("--json", args->json, "Print sacreBLEU-style JSON instead of the one-line score");
  cmd->add_flag("--lowercase", args->bleu.lowercase, "Case-insensitive BLEU, as sacreBLEU's --lowercase");
  cmd->callback([args] {
    const HypothesesAndReferences lines = read_scored_lines(*args, "bleu");
    const data::BleuResult result = data::corpus_bleu(lines.hyps, lines.refs, args->bleu);
    std::printf("%s\n", args->json ? result.to_json().c_str() : result.to_string().c_str());
  });
}

void add_rouge_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "rouge", "Mean ROUGE-1/2/L of stdin against a reference file (rouge-score-compatible: lowercase, no stemming)");
  auto args = add_score_options(cmd, "summaries");
  cmd->add_flag("--json", args->json, "Print precision, recall and F1 of each (0-100) as JSON");
  cmd->callback([args] {
    const HypothesesAndReferences lines = read_scored_lines(*args, "rouge");
    const data::RougeResult result = data::corpus_rouge(lines.hyps, lines.refs);
    std::printf("%s\n", args->json ? result.to_json().c_str() : result.to_string().c_str());
  });
}

}  // namespace

ATTN_REGISTER_COMMAND(80, add_bleu_command);
ATTN_REGISTER_COMMAND(81, add_rouge_command);

}  // namespace attn::cli
