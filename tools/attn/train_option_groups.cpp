// `attn train`'s option groups and run configuration file (see train_option_groups.h).
#include "train_option_groups.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "attn/error.h"
#include "attn/printable.h"
#include "commands.h"
#include "common.h"
#include "train_tasks.h"

namespace attn::cli {

TrainGroups::TrainGroups() {
  using T = TrainTarget;
  const std::vector<T> sst2 = {T::sst2_bilstm, T::sst2_bilstm_attn, T::sst2_transformer_cls};
  run = {"Every task",
         {T::seq2seq, T::translate_rnn, T::translate_transformer, T::sst2_bilstm, T::sst2_bilstm_attn,
          T::sst2_transformer_cls, T::charlm, T::g2p_rnn, T::g2p_transformer, T::asr}};
  synthetic = {"Synthetic seq2seq (--task copy | reverse | sort)", {T::seq2seq}};
  rnn = {
      "RNN seq2seq model (--task copy | reverse | sort, --task translate | summarize | g2p --model rnn, --task asr's "
      "speller)",
      {T::seq2seq, T::translate_rnn, T::g2p_rnn, T::asr}};
  text_data = {"Text data (--task sst2 | translate | summarize | charlm | g2p)",
               {T::translate_rnn, T::translate_transformer, T::sst2_bilstm, T::sst2_bilstm_attn,
                T::sst2_transformer_cls, T::charlm, T::g2p_rnn, T::g2p_transformer}};
  classifier = {"Classifier (--task sst2)", sst2};
  bilstm = {"BiLSTM classifier (--task sst2 --model bilstm | bilstm-attn)", {T::sst2_bilstm, T::sst2_bilstm_attn}};
  pooling = {"Attention pooling (--task sst2 --model bilstm-attn)", {T::sst2_bilstm_attn}};
  translation = {"Translation (--task translate | summarize)", {T::translate_rnn, T::translate_transformer}};
  lm = {"Character LM (--task charlm)", {T::charlm}};
  g2p = {"G2P (--task g2p)", {T::g2p_rnn, T::g2p_transformer}};
  transformer = {
      "Transformer (--task translate | g2p --model transformer, --task charlm, --task sst2 --model "
      "transformer-cls)",
      {T::translate_transformer, T::charlm, T::sst2_transformer_cls, T::g2p_transformer}};
  transformer_seq2seq = {"Transformer encoder-decoder (--task translate | g2p --model transformer)",
                         {T::translate_transformer, T::g2p_transformer}};
  transformer_classifier = {"Transformer classifier (--task sst2 --model transformer-cls)", {T::sst2_transformer_cls}};
  asr = {"ASR (--task asr)", {T::asr}};
}

CLI::Option* OptionGroups::add(CLI::Option* option, const std::vector<const OptionGroup*>& groups) {
  option->group(groups.at(0)->heading);
  std::string also;
  for (size_t i = 1; i < groups.size(); ++i) also += (also.empty() ? "" : "; ") + groups[i]->heading;
  if (!also.empty()) option->description(option->get_description() + " [also: " + also + "]");
  groups_of_[option->get_name()] = groups;
  return option;
}

void OptionGroups::add(CLI::App* cmd, const std::string& name, const std::vector<const OptionGroup*>& groups) {
  add(cmd->get_option(name), groups);
}

void OptionGroups::refuse_outside(const CLI::App* cmd, TrainTarget target, const std::string& task) const {
  for (const CLI::Option* option : cmd->get_options()) {
    if (option->count() == 0) continue;
    const auto found = groups_of_.find(option->get_name());
    if (found == groups_of_.end()) continue;  // help, or an option placed in no group: every task
    const auto& groups = found->second;
    const bool applies = std::any_of(groups.begin(), groups.end(), [&](const OptionGroup* g) {
      return std::find(g->targets.begin(), g->targets.end(), target) != g->targets.end();
    });
    if (applies) continue;
    std::string owners;
    for (const OptionGroup* g : groups) owners += (owners.empty() ? "" : "; ") + g->heading;
    throw UsageError(option->get_name() + " does not apply to " + target_flags(target, task) + " (it is an option of " +
                     owners + ")");
  }
}

namespace {

// An option a config file may not set: it says how this invocation treats the folder, not
// what the run is.
bool per_invocation(const CLI::Option* option) { return !option->get_configurable(); }

}  // namespace

void apply_config_file(CLI::App* cmd, const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    throw IoError("--config " + path + ": not a readable regular file");
  CLI::ConfigTOML reader;
  std::vector<CLI::ConfigItem> items;
  try {
    items = reader.from_file(path);
  } catch (const CLI::Error& e) {
    throw IoError("--config " + path + ": " + e.what());
  }
  std::set<std::string> seen;
  for (const CLI::ConfigItem& item : items) {
    if (!item.parents.empty())
      throw UsageError("--config " + path + ": sections are not supported ([" + item.parents.front() +
                       "]); write the train options as name = value lines");
    CLI::Option* option = cmd->get_option_no_throw("--" + item.name);
    if (option == nullptr || option == cmd->get_help_ptr())
      throw UsageError("--config " + path + ": unknown option '" + item.name + "' (see attn train --help)");
    if (per_invocation(option))
      throw UsageError("--config " + path + ": " + option->get_name() +
                       " cannot come from a file; give it on the command line");
    // (A second line would be taken for the command line's value below, and dropped.)
    if (!seen.insert(option->get_name()).second)
      throw UsageError("--config " + path + ": " + item.name + " is set twice");
    if (option->get_expected_max() == 1 && item.inputs.size() > 1)  // CLI11's reader joins repeated lines
      throw UsageError("--config " + path + ": " + item.name + " takes one value, got " +
                       std::to_string(item.inputs.size()) + " (set twice, or a list)");
    if (option->count() > 0) continue;  // the command line overrides the file
    try {
      if (option->get_expected_min() == 0)
        option->add_result(option->get_flag_value(item.name, reader.to_flag(item)));
      else
        option->add_result(item.inputs);
      option->run_callback();
    } catch (const CLI::ParseError& e) {  // a value CLI11 cannot convert, or one a check refuses
      throw UsageError("--config " + path + ": " + e.what());
    }
  }
}

std::string run_config_text(const CLI::App* cmd, const train::Provenance& provenance) {
  auto one_line = [](std::string text) {
    std::replace(text.begin(), text.end(), '\n', ' ');
    return text;
  };
  std::string out =
      "# attn train run configuration: `attn train --config config.toml --out DIR` repeats this run (options\n"
      "# on the command line override the file). Options not listed had their defaults.\n"
      "# command line: " +
      one_line(provenance.command_line) +
      "\n"
      "# attn version: " +
      one_line(provenance.attn_version) +
      "\n"
      "# threads: " +
      std::to_string(provenance.threads) +
      "\n"
      "# machine: " +
      one_line(provenance.machine) + "\n";
  for (const CLI::Option* option : cmd->get_options()) {
    if (option->count() == 0 || per_invocation(option) || option->get_name() == "--threads") continue;
    const std::string name = option->get_single_name();
    const std::vector<std::string> results = option->results();
    // A control character cannot be recorded faithfully: a NUL cut `--print-config` short
    // and lost the options after it, and the TOML reader does not read the others back as
    // they were given (found by fuzz/train_config_fuzz).
    for (const std::string& r : results) {
      const auto bad = std::find_if(r.begin(), r.end(), [](unsigned char c) { return c < ' ' || c == 0x7f; });
      if (bad != r.end()) {
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(*bad));
        throw UsageError(option->get_name() + ": a value holding a control character (" + byte +
                         ") cannot be recorded in the run's config.toml: '" + printable(r) + "'");
      }
    }
    std::string value;
    if (option->get_expected_min() == 0) {
      // A flag: "true" when given as a bare flag (--no-input-feeding stores "false").
      value = results.back() == option->get_flag_value(name, "") ? "true" : "false";
    } else {
      for (const std::string& r : results) value += (value.empty() ? "" : ",") + CLI::detail::convert_arg_for_ini(r);
      if (results.size() > 1) value = "[" + value + "]";
    }
    out += name + " = " + value + "\n";
  }
  // Results are bit-identical for a fixed seed and thread count, not across thread counts.
  out += "threads = " + std::to_string(provenance.threads) + "\n";
  return out;
}

}  // namespace attn::cli
