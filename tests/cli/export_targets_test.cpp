// The export targets of the task registry (tools/attn/train_tasks.h): what `attn export --to`
// takes, declared on each task's models and looked up by what a checkpoint records (its kind
// and --model), and the check that finds two registrations that contradict each other.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "attn/error.h"
#include "commands.h"
#include "test_support.h"
#include "train_tasks.h"

namespace attn::cli {
namespace {

using decode::CheckpointKind;

// "torch, ctranslate2" ("" for none): readable in a failure.
std::string names(const std::vector<ExportTarget>& targets) {
  std::string s;
  for (ExportTarget t : targets) s += (s.empty() ? "" : ", ") + std::string(export_target_name(t));
  return s;
}

// What cmd_export.cpp writes today: the RNN seq2seq (copy, reverse, sort: no --model) and the
// translators of translate and summarize; CTranslate2 takes the Transformer only.
const std::map<std::pair<CheckpointKind, std::string>, std::vector<ExportTarget>> kExpected = {
    {{CheckpointKind::seq2seq, ""}, {ExportTarget::torch}},
    {{CheckpointKind::translation, "rnn"}, {ExportTarget::torch}},
    {{CheckpointKind::translation, "transformer"}, {ExportTarget::torch, ExportTarget::ctranslate2}},
};

TEST(ExportTargets, LookupAnswersEveryRegisteredModel) {
  std::map<std::pair<CheckpointKind, std::string>, int> met;
  for (const TrainTask& t : train_tasks())
    for (const TaskModel& m : t.models) {
      const auto key = std::make_pair(t.writes, m.name);
      const auto expected = kExpected.find(key);
      EXPECT_EQ(names(export_targets(t.writes, m.name)), expected == kExpected.end() ? "" : names(expected->second))
          << "--task " << t.name << " --model '" << m.name << "' (" << decode::format_name(t.writes) << ")";
      ++met[key];
    }
  for (const auto& [key, targets] : kExpected)
    EXPECT_GT(met[key], 0) << decode::format_name(key.first) << " --model '" << key.second << "' goes to "
                           << names(targets) << " but no task registers it";
  EXPECT_EQ(met[std::make_pair(CheckpointKind::translation, std::string("transformer"))], 2)
      << "translate and summarize both write Transformer translation checkpoints";
}

TEST(ExportTargets, KindLookupIsTheUnionOfItsModels) {
  for (CheckpointKind kind : decode::checkpoint_kinds())
    for (ExportTarget target : all_export_targets()) {
      bool expected = false;
      for (const auto& [key, targets] : kExpected)
        expected |= key.first == kind && std::find(targets.begin(), targets.end(), target) != targets.end();
      EXPECT_EQ(exports_kind(kind, target), expected)
          << decode::format_name(kind) << " --to " << export_target_name(target);
    }
}

TEST(ExportTargets, UnregisteredModelGoesNowhere) {
  EXPECT_EQ(names(export_targets(CheckpointKind::translation, "lstm")), "");
  EXPECT_EQ(names(export_targets(CheckpointKind::seq2seq, "transformer")), "");
  EXPECT_EQ(names(export_targets(CheckpointKind::lm, "transformer")), "");  // charlm: registered, not exported
}

// The phrase of export's refusals and --help, from the registrations.
TEST(ExportTargets, SourcesNameTheRegisteredTasks) {
  EXPECT_EQ(export_sources(ExportTarget::torch),
            "--task copy | reverse | sort, --task translate | summarize --model rnn | transformer");
  EXPECT_EQ(export_sources(ExportTarget::ctranslate2), "--task translate | summarize --model transformer");
}

TEST(ExportTargets, NamesRoundTrip) {
  EXPECT_EQ(all_export_targets().size(), 2u);
  for (ExportTarget t : all_export_targets()) EXPECT_EQ(export_target(export_target_name(t)), t);
  EXPECT_THROW_MSG(export_target("onnx"), UsageError, "unknown export target 'onnx' (valid: torch, ctranslate2)");
}

TrainTask task(std::string name, std::vector<ExportTarget> transformer_exports) {
  return {.name = std::move(name),
          .summary = "a test task",
          .writes = CheckpointKind::translation,
          .models = {{"rnn", TrainTarget::translate_rnn, {ExportTarget::torch}},
                     {"transformer", TrainTarget::translate_transformer, std::move(transformer_exports)}}};
}

TEST(ExportTargets, ContradictoryRegistrationsAreFound) {
  EXPECT_NO_THROW(check_export_targets(train_tasks()));
  // The same targets in another order agree.
  EXPECT_NO_THROW(check_export_targets({task("a", {ExportTarget::torch, ExportTarget::ctranslate2}),
                                        task("b", {ExportTarget::ctranslate2, ExportTarget::torch})}));
  // A checkpoint does not record its task: "b"'s Transformer checkpoints could not be told apart.
  EXPECT_THROW_MSG(
      check_export_targets({task("a", {ExportTarget::torch, ExportTarget::ctranslate2}), task("b", {})}), Error,
      "--task a and --task b both write attn-translation checkpoints of --model 'transformer' but export them to "
      "torch, ctranslate2 and nothing");
  // Another kind with the same --model is no contradiction.
  TrainTask lm = task("lm", {});
  lm.writes = CheckpointKind::lm;
  EXPECT_NO_THROW(check_export_targets({task("a", {ExportTarget::torch}), lm}));
}

}  // namespace
}  // namespace attn::cli
