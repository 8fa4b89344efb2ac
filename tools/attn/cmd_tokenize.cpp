// attn tokenize: train a SentencePiece model on text files, and encode / decode text with it
// (stdin -> stdout, one line at a time).
//   attn tokenize train --input train.de.gz --input train.en.gz --vocab-size 8000 --out spm/shared
//   attn tokenize encode --model spm/shared.model < text.txt          # pieces: ▁Zwei ▁junge ...
//   attn tokenize encode --model spm/shared.model --ids < text.txt    # ids: 412 97 ...
//   attn tokenize decode --model spm/shared.model [--ids] < pieces.txt
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attn/data/subword.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "attn/models/memory_estimate.h"
#include "commands.h"
#include "common.h"
#include "option_parsing.h"

namespace attn::cli {
namespace {

std::vector<int32_t> parse_ids(const std::string& line, int64_t line_number) {
  std::vector<int32_t> ids;
  for (const std::string_view field : data::split_fields(line)) {
    const std::string token(field);
    const std::optional<long long> value = whole_integer(token);
    if (!value || *value < INT32_MIN || *value > INT32_MAX) {
      throw ValueError(fmt::format("stdin line {}: '{}' is not an id", line_number, token));
    }
    ids.push_back(static_cast<int32_t>(*value));
  }
  return ids;
}

template <class Fn>
void filter_stdin(Fn&& fn) {
  std::ios::sync_with_stdio(false);
  std::string line;
  int64_t number = 0;
  while (std::getline(std::cin, line)) {
    ++number;
    const std::string out = fn(line, number) + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);  // a line in, a line out: usable as a coprocess
  }
  check_stdin_read();
}

struct CodecArgs {
  std::string model;
  bool ids = false;
};

// attn tokenize encode / decode: a subcommand NAME with --model and --ids.
CLI::App* add_codec_command(CLI::App& tokenize, const char* name, const char* what, const char* ids_help,
                            CodecArgs& args) {
  CLI::App* sub = tokenize.add_subcommand(name, what);
  sub->add_option("--model", args.model, "SentencePiece model (PREFIX.model)")->required();
  sub->add_flag("--ids", args.ids, ids_help);
  return sub;
}

void add_tokenize_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("tokenize", "Train a SentencePiece subword model; encode and decode text");
  cmd->require_subcommand(1);

  struct TrainArgs {
    std::vector<std::string> inputs;
    std::string out;
    data::SubwordTrainOptions options;
  };
  auto train = std::make_shared<TrainArgs>();
  CLI::App* train_cmd = cmd->add_subcommand("train", "Train a model on text files (plain or .gz, one sentence a line)");
  train_cmd->add_option("--input", train->inputs, "Training text (repeat for several files, e.g. both languages)")
      ->required();
  train_cmd->add_option("--vocab-size", train->options.vocab_size, "Vocabulary size V (4 special pieces included)")
      ->capture_default_str();
  train_cmd->add_option("--model-type", train->options.model_type, "unigram or bpe")
      ->check(CLI::IsMember({"unigram", "bpe"}))
      ->capture_default_str();
  train_cmd
      ->add_option("--character-coverage", train->options.character_coverage,
                   "Share of characters the vocabulary covers, in (0, 1]")
      ->capture_default_str();
  train_cmd
      ->add_option("--max-sentences", train->options.max_sentences,
                   "Train on an evenly spaced sample of this many lines (0: all)")
      ->capture_default_str();
  train_cmd->add_flag("--verbose", train->options.verbose, "Show SentencePiece's training log");
  train_cmd->add_option("--out", train->out, "Output prefix: writes PREFIX.model and PREFIX.vocab")->required();
  train_cmd->callback([train] {
    if (train->options.vocab_size < 5 || train->options.vocab_size > models::kMaxVocab) {
      throw UsageError(
          fmt::format("--vocab-size must be in [5, {}], got {}", models::kMaxVocab, train->options.vocab_size));
    }
    if (!(train->options.character_coverage > 0.0f && train->options.character_coverage <= 1.0f)) {
      throw UsageError(
          fmt::format("--character-coverage must be in (0, 1], got {}", train->options.character_coverage));
    }
    if (train->options.max_sentences < 0) {
      throw UsageError(fmt::format("--max-sentences must be >= 0, got {}", train->options.max_sentences));
    }
    std::vector<std::string> lines;
    for (const auto& path : train->inputs) {
      auto part = data::read_lines(path);
      lines.insert(lines.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    }
    data::train_subword_model(lines, train->out, train->options);
    const auto model = data::SubwordModel::load(train->out + ".model");
    std::printf("trained a %s model of %d pieces on %zu lines: %s.model, %s.vocab\n", train->options.model_type.c_str(),
                model.vocab_size(), lines.size(), train->out.c_str(), train->out.c_str());
  });

  auto encode = std::make_shared<CodecArgs>();
  CLI::App* encode_cmd = add_codec_command(*cmd, "encode", "Text on stdin -> pieces (or ids) on stdout, line by line",
                                           "Print piece ids instead of pieces", *encode);
  encode_cmd->callback([encode] {
    const auto model = data::SubwordModel::load(encode->model);
    filter_stdin([&](const std::string& line, int64_t) {
      std::string out;
      if (encode->ids) {
        for (const int32_t id : model.encode(line)) {
          if (!out.empty()) out.push_back(' ');
          out += std::to_string(id);
        }
      } else {
        for (const auto& piece : model.encode_pieces(line)) {
          if (!out.empty()) out.push_back(' ');
          out += piece;
        }
      }
      return out;
    });
  });

  auto decode = std::make_shared<CodecArgs>();
  CLI::App* decode_cmd = add_codec_command(*cmd, "decode", "Pieces (or ids) on stdin -> text on stdout, line by line",
                                           "Read piece ids instead of pieces", *decode);
  decode_cmd->callback([decode] {
    const auto model = data::SubwordModel::load(decode->model);
    filter_stdin([&](const std::string& line, int64_t number) {
      if (decode->ids) return model.decode(parse_ids(line, number));
      const std::vector<std::string_view> pieces = data::split_fields(line);
      return model.decode_pieces(std::vector<std::string>(pieces.begin(), pieces.end()));
    });
  });
}

}  // namespace

ATTN_REGISTER_COMMAND(70, add_tokenize_command);

}  // namespace attn::cli
