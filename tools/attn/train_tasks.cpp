// The task registry of `attn train` (train_tasks.h).
#include "train_tasks.h"

#include <algorithm>

#include "attn/enum_names.h"
#include "attn/error.h"
#include "attn/printable.h"
#include "commands.h"

namespace attn::cli {
namespace {

std::vector<TrainTask>& registry() {
  static std::vector<TrainTask> tasks;
  return tasks;
}

}  // namespace

RegisterTask::RegisterTask(TrainTask task) {
  auto& tasks = registry();
  tasks.push_back(std::move(task));
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const TrainTask& a, const TrainTask& b) { return a.order < b.order; });
}

const std::vector<TrainTask>& train_tasks() { return registry(); }

std::string train_task_names() {
  std::string names;
  for (const TrainTask& t : train_tasks()) names += (names.empty() ? "" : ", ") + t.name;
  return names;
}

std::string train_task_help() {
  std::string help;
  for (const TrainTask& t : train_tasks()) {
    std::string line = "  " + t.name;
    line.resize(std::max<size_t>(line.size() + 1, 13), ' ');
    help += line + t.summary + "\n";
  }
  return help;
}

const TrainTask& find_train_task(const std::string& name) {
  for (const TrainTask& t : train_tasks())
    if (t.name == name) return t;
  throw UsageError("unknown task '" + printable(name) + "' (valid: " + train_task_names() + ")");
}

TrainTarget train_target(const TrainTask& task, const std::string& model, bool model_given) {
  // A task without --model: the option groups refuse a --model given to it.
  if (!model_given || task.models.front().name.empty()) return task.models.front().target;
  std::string valid;
  for (const TaskModel& m : task.models) {
    if (m.name == model) return m.target;
    valid += (valid.empty() ? "" : ", ") + m.name;
  }
  throw UsageError("--task " + task.name + ": unknown --model '" + printable(model) + "' (valid: " + valid + ")");
}

std::string target_flags(TrainTarget target, const std::string& task) {
  auto flags = [](const TrainTask& t, const TaskModel& m) {
    return "--task " + t.name + (t.models.size() > 1 ? " --model " + m.name : "");
  };
  for (int pass = 0; pass < 2; ++pass)  // the task given first, then any task with this target
    for (const TrainTask& t : train_tasks())
      for (const TaskModel& m : t.models)
        if (m.target == target && (pass == 1 || t.name == task)) return flags(t, m);
  return "--task " + task;
}

// --- export targets ---

namespace {

struct ExportTargetName {
  ExportTarget target;
  const char* name;
};
// The one table of --to values.
const ExportTargetName kExportTargets[] = {{ExportTarget::torch, "torch"}, {ExportTarget::ctranslate2, "ctranslate2"}};

bool has(const std::vector<ExportTarget>& targets, ExportTarget target) {
  return std::find(targets.begin(), targets.end(), target) != targets.end();
}

// "torch, ctranslate2" ("nothing" for none).
std::string target_list(const std::vector<ExportTarget>& targets) {
  std::string s;
  for (ExportTarget t : targets) s += (s.empty() ? "" : ", ") + std::string(export_target_name(t));
  return s.empty() ? "nothing" : s;
}

// The registry, checked once for contradictions (an Error at the first export lookup).
const std::vector<TrainTask>& checked_tasks() {
  static const bool checked = (check_export_targets(train_tasks()), true);
  (void)checked;
  return train_tasks();
}

}  // namespace

const std::vector<ExportTarget>& all_export_targets() {
  static const std::vector<ExportTarget> targets = table_column(kExportTargets, &ExportTargetName::target);
  return targets;
}

const char* export_target_name(ExportTarget target) {
  for (const ExportTargetName& t : kExportTargets)
    if (t.target == target) return t.name;
  throw Error("unknown export target " + std::to_string(static_cast<int>(target)));
}

ExportTarget export_target(const std::string& name) {
  for (const ExportTargetName& t : kExportTargets)
    if (name == t.name) return t.target;
  throw UsageError("unknown export target '" + printable(name) + "' (valid: " + target_list(all_export_targets()) +
                   ")");
}

std::vector<ExportTarget> export_targets(decode::CheckpointKind kind, const std::string& model) {
  for (const TrainTask& t : checked_tasks())
    for (const TaskModel& m : t.models)
      if (t.writes == kind && m.name == model) return m.exports;
  return {};
}

bool exports_kind(decode::CheckpointKind kind, ExportTarget target) {
  for (const TrainTask& t : checked_tasks())
    for (const TaskModel& m : t.models)
      if (t.writes == kind && has(m.exports, target)) return true;
  return false;
}

std::string export_sources(ExportTarget target) {
  // Tasks whose models going to `target` are the same, in registration order: (tasks, models).
  std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> groups;
  for (const TrainTask& t : train_tasks()) {  // not checked: --help is built for every command line
    std::vector<std::string> models;
    for (const TaskModel& m : t.models)
      if (has(m.exports, target)) models.push_back(t.models.size() > 1 ? m.name : "");
    if (models.empty()) continue;
    auto same = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.second == models; });
    if (same == groups.end())
      groups.push_back({{t.name}, models});
    else
      same->first.push_back(t.name);
  }
  auto join = [](const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : " | ") + n;
    return s;
  };
  std::string sources;
  for (const auto& [tasks, models] : groups)
    sources += (sources.empty() ? "" : ", ") + ("--task " + join(tasks)) +
               (models.front().empty() ? "" : " --model " + join(models));
  return sources.empty() ? "nothing" : sources;
}

void check_export_targets(const std::vector<TrainTask>& tasks) {
  auto sorted = [](std::vector<ExportTarget> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  for (const TrainTask& a : tasks)
    for (const TaskModel& am : a.models)
      for (const TrainTask& b : tasks)
        for (const TaskModel& bm : b.models)
          if (a.writes == b.writes && am.name == bm.name && sorted(am.exports) != sorted(bm.exports))
            throw Error("task registry: --task " + a.name + " and --task " + b.name + " both write " +
                        decode::format_name(a.writes) + " checkpoints of --model '" + am.name +
                        "' but export them to " + target_list(am.exports) + " and " + target_list(bm.exports) +
                        " (a checkpoint does not record its task: give both the same targets)");
}

}  // namespace attn::cli
