// attn bleu: corpus BLEU of hypotheses (stdin, or --hyp) against one reference file, computed
// as sacreBLEU 2.x does by default (13a tokenisation, exp smoothing).
//   attn bleu --ref test_2016_flickr.de.gz < hyp.de
//   BLEU = 35.12 66.0/42.2/28.8/19.9 (BP = 0.985 ratio = 0.985 hyp_len = 12011 ref_len = 12193)
//   attn bleu --ref ref.de --lowercase < hyp.de      # sacreBLEU's --lowercase (-lc)
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attn/data/bleu.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {
namespace {

void add_bleu_command(CLI::App& app) {
  struct Args {
    std::string ref;
    std::string hyp;
    bool json = false;
    data::BleuOptions options;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("bleu", "Corpus BLEU of stdin against a reference file (sacreBLEU-compatible)");
  cmd->add_option("--ref", args->ref, "Reference translations, one a line (plain or .gz)")->required();
  cmd->add_option("--hyp", args->hyp, "Hypotheses file (default: stdin)");
  cmd->add_flag("--json", args->json, "Print sacreBLEU-style JSON instead of the one-line score");
  cmd->add_flag("--lowercase", args->options.lowercase, "Case-insensitive BLEU, as sacreBLEU's --lowercase");
  cmd->callback([args] {
    const std::vector<std::string> refs = data::read_lines(args->ref);
    std::vector<std::string> hyps;
    std::string hyp_name = "stdin";
    if (args->hyp.empty()) {
      std::string line;
      while (std::getline(std::cin, line)) hyps.push_back(line);
      check_stdin_read();
    } else {
      hyps = data::read_lines(args->hyp);
      hyp_name = "'" + args->hyp + "'";
    }
    if (hyps.size() != refs.size()) {
      throw ValueError(fmt::format("bleu: {} has {} lines but '{}' has {}", hyp_name, hyps.size(), args->ref,
                                   refs.size()));
    }
    const data::BleuResult result = data::corpus_bleu(hyps, refs, args->options);
    std::printf("%s\n", args->json ? result.to_json().c_str() : result.to_string().c_str());
  });
}

}  // namespace

ATTN_REGISTER_COMMAND(80, add_bleu_command);

}  // namespace attn::cli
