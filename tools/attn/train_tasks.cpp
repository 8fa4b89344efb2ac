// The task registry of `attn train` (train_tasks.h).
#include "train_tasks.h"

#include <algorithm>

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

}  // namespace attn::cli
