#include "attn/train/run.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>

#include "attn/autodiff/tape.h"
#include "attn/distributed/data_parallel.h"
#include "attn/distributed/gradient_reducer.h"
#include "attn/error.h"
#include "attn/io/atomic_file.h"
#include "attn/io/output_folder.h"
#include "attn/json.h"
#include "attn/parallel.h"
#include "attn/train/checkpoint.h"
#include "attn/train/machine_report.h"
#include "attn/train/optimizer.h"
#include "attn/train/progress.h"
#include "attn/train/run_log.h"
#include "attn/version.h"

namespace attn::train {
namespace fs = std::filesystem;
using nlohmann::json;

json Provenance::to_json() const {
  return {{"command_line", command_line}, {"attn_version", attn_version}, {"threads", threads}, {"machine", machine}};
}

// The `attn doctor --summary` line without its one-second sgemm measurement.
std::string machine_summary() { return machine_report({.sgemm_seconds = 0}).summary(); }

Provenance current_provenance(const std::string& command_line) {
  return {command_line, std::string(version()) + " (" + build_commit() + ")", num_threads(), machine_summary()};
}

void RunOptions::validate() const {
  if (steps < 0) throw ValueError("--steps must be >= 1, got " + std::to_string(steps));
  if (steps == 0 && epochs < 1) throw ValueError("--steps must be >= 1 (or give --epochs), got 0");
  if (epochs < 0) throw ValueError("--epochs must be >= 1, got " + std::to_string(epochs));
  if (!(lr > 0.0f) || !std::isfinite(lr)) throw ValueError("--lr must be a positive number, got " + std::to_string(lr));
  if (!(clip >= 0.0f)) throw ValueError("--clip must be >= 0, got " + std::to_string(clip));
  if (!(weight_decay >= 0.0f) || !std::isfinite(weight_decay))
    throw ValueError("--weight-decay must be >= 0, got " + std::to_string(weight_decay));
  if (warmup < 0) throw ValueError("--warmup must be >= 0, got " + std::to_string(warmup));
  parse_lr_schedule_kind(lr_schedule);
  if (steps > 0) schedule(steps);
  if (log_every < 1) throw ValueError("--log-every must be >= 1, got " + std::to_string(log_every));
  if (eval_every < 0) throw ValueError("--eval-every must be >= 1, got " + std::to_string(eval_every));
  if (!(max_minutes >= 0.0) || !std::isfinite(max_minutes)) throw ValueError("--max-minutes must be >= 0");
  if (stop_at_step < 0) throw ValueError("stop_at_step must be >= 0, got " + std::to_string(stop_at_step));
  if (!(save_every_minutes >= 0.0) || !std::isfinite(save_every_minutes))
    throw ValueError("--save-every must be >= 0 minutes");
  if (!(bucket_mb > 0.0) || !(bucket_mb < 1e6)) throw ValueError("--bucket-mb must be a positive number of megabytes");
  if (out_dir.empty()) throw ValueError("an output directory (--out) is required");
}

LrSchedule RunOptions::schedule(int64_t total_steps) const {
  const LrScheduleKind kind = parse_lr_schedule_kind(lr_schedule);
  const int64_t w = cap_warmup ? std::min(warmup, total_steps / 10) : warmup;
  if (kind != LrScheduleKind::constant && kind != LrScheduleKind::inverse_sqrt && total_steps <= w)
    throw ValueError("--lr-schedule " + lr_schedule + ": --steps " + std::to_string(total_steps) +
                     " must be larger than --warmup " + std::to_string(w));
  return LrSchedule({.kind = kind, .base_lr = lr, .warmup_steps = w, .total_steps = total_steps, .min_lr = 0.0f});
}

namespace {

constexpr const char* kRandomPrefix = "rng.";

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::unique_ptr<Optimizer> make_optimizer(const nn::Module& module, const RunOptions& o) {
  if (o.weight_decay > 0.0f)
    return std::make_unique<AdamW>(module.parameters(), AdamWOptions{.lr = o.lr, .weight_decay = o.weight_decay});
  return std::make_unique<Adam>(module.parameters(), AdamOptions{.lr = o.lr});
}

// "run" fields every checkpoint carries besides the task's, so --resume knows where it
// stood and with which options.
json with_run_state(json metadata, const RunState& s, const json& options, int ranks) {
  metadata["run"] = {{"step", s.step},           {"has_best", s.has_best}, {"best_score", s.best_score},
                     {"best_step", s.best_step}, {"ranks", ranks},         {"options", options}};
  return metadata;
}

// The options a resumed run must keep, by flag.
json checked_options(const Task& task, const RunOptions& o) {
  json j = task.resume_checked_options();
  j["--lr"] = o.lr;
  j["--lr-schedule"] = o.lr_schedule;
  j["--warmup"] = o.warmup;
  j["--clip"] = o.clip;
  j["--seed"] = o.seed;
  j["--weight-decay"] = o.weight_decay;
  return j;
}

// ValueError naming the first option that differs from the run being resumed.
void refuse_changed_options(const io::SafetensorsFile& file, const json& now, const RunOptions& o) {
  const json j = io::attn_metadata(file, o.out_dir + "/last.safetensors");
  if (!j.is_object() || !j.contains("run") || !j["run"].is_object() || !j["run"].contains("options")) return;
  const json& before = j["run"]["options"];
  auto show = [](const json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (!v.is_number_float()) return v.dump();
    char text[32];
    std::snprintf(text, sizeof text, "%g", v.get<double>());
    return std::string(text);
  };
  for (const auto& [flag, value] : now.items())
    if (before.contains(flag) && before[flag] != value)
      throw ValueError("--resume: " + flag + " " + show(value) + " differs from the run in " + o.out_dir + " (" + flag +
                       " " + show(before[flag]) +
                       "); only --steps, --epochs, --max-minutes, --save-every, --log-every "
                       "and --eval-every may change on resume");
}

// --resume with another rank count than the run's: its shards, and so its batches' split
// and rounding, would differ. A checkpoint without the record was written by one process.
void refuse_other_rank_count(const io::SafetensorsFile& file, int ranks, const RunOptions& o) {
  const json j = io::attn_metadata(file, o.out_dir + "/last.safetensors");
  if (!j.is_object() || !j.contains("run") || !j["run"].is_object()) return;
  const int before = j["run"].value("ranks", 1);
  if (before != ranks)
    throw ValueError("--resume: the run in " + o.out_dir + " was trained by " + std::to_string(before) + " rank" +
                     (before == 1 ? "" : "s") + " and this one has " + std::to_string(ranks) +
                     ": resume it with the same number of processes (mpirun -np " + std::to_string(before) + ")");
}

// One rank of a data-parallel run: what it agrees on with the others (data_parallel.h).
struct DataParallel {
  distributed::Communicator& comm;
  std::optional<distributed::GradientReducer> reducer;
  bool rank0() const { return comm.rank() == 0; }
};

// The hash compared across ranks at start-up: the binary's version and commit, the options
// a resume checks, the run length and the parameters' names and shapes.
std::string configuration_description(const Task& task, const RunOptions& o, const json& options_now,
                                      int64_t total_steps, const nn::Module& module) {
  json j = {{"attn", std::string(version()) + " (" + build_commit() + ")"},
            {"options", options_now},
            {"steps", total_steps},
            {"label", task.label()},
            {"deterministic_reduce", o.deterministic_reduce},
            {"bucket_mb", o.bucket_mb},
            {"reduce_after_backward", o.reduce_after_backward}};
  for (const auto& [name, t] : module.named_parameters()) j["parameters"][name] = t.shape().str();
  return json_text(j);
}

// --threads × ranks on this machine above its cores: a warning (the ranks' threads compete).
void warn_about_oversubscription(const distributed::Communicator& comm, const RunOptions& o) {
  const unsigned cores = std::thread::hardware_concurrency();
  const int threads = num_threads() * comm.local_size();
  if (comm.rank() == 0 && o.progress && cores > 0 && threads > static_cast<int>(cores))
    std::fprintf(o.progress,
                 "attn: warning: %d ranks on this machine x %d threads = %d threads on %u cores; give --threads %d\n",
                 comm.local_size(), num_threads(), threads, cores,
                 std::max(1, static_cast<int>(cores) / comm.local_size()));
}

// Prefers the "run" record; a checkpoint written before it existed has the task's own fields.
RunState read_run_state(const io::SafetensorsFile& file, const RunState& from_task) {
  const json j = io::attn_metadata(file, file.path);
  if (!j.is_object() || !j.contains("run") || !j["run"].is_object()) return from_task;
  const json& r = j["run"];
  RunState s = from_task;
  s.step = r.value("step", s.step);
  s.has_best = r.value("has_best", s.has_best);
  s.best_score = r.value("best_score", s.best_score);
  s.best_step = r.value("best_step", s.best_step);
  return s;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> random_stream_tensors(const nn::Module& module) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, rng] : module.named_random_streams()) {
    const Rng::State s = rng->state();
    std::vector<int32_t> words(8);
    std::memcpy(words.data(), s.data(), sizeof(s));
    out.emplace_back(kRandomPrefix + name, Tensor::from_vector(words, {8}));
  }
  return out;
}

void load_random_streams(const io::SafetensorsFile& file, const nn::Module& module, const std::string& path) {
  const auto streams = module.named_random_streams();
  // A checkpoint of an older attn has no streams at all: the run continues with fresh
  // ones (bit-identical only without dropout and hard attention).
  bool any = false;
  for (const auto& [name, t] : file.tensors) any = any || name.rfind(kRandomPrefix, 0) == 0;
  if (!any) return;
  std::vector<Rng::State> states;
  for (const auto& [name, rng] : streams) {
    const Tensor* t = file.find(kRandomPrefix + name);
    if (!t) throw IoError(path + ": no state for the random stream '" + name + "' (a checkpoint of another model?)");
    if (t->dtype() != DType::i32 || t->numel() != 8)
      throw IoError(path + ": random stream '" + name + "' must be 8 int32 values");
    Rng::State s;
    std::memcpy(s.data(), t->i32(), sizeof(s));
    states.push_back(s);
  }
  for (size_t i = 0; i < streams.size(); ++i) streams[i].second->set_state(states[i]);
}

namespace {

// The files of a run that --overwrite replaces: the models, the log, the configuration and
// a translation run's tokenizer.
constexpr const char* kRunFiles[] = {"model.safetensors", "last.safetensors", "log.jsonl",
                                     "config.toml",       "spm.model",        "spm.vocab"};

// The run folder's lock (an flock on DIR/.attn-run.lock, released when the descriptor
// closes) and, with --overwrite, the old run moved aside into DIR/.attn-replaced-XXXXXX:
// deleted once the new run has saved a model (keep_new_run), moved back when the lock is
// released before that (an exception: a tokenizer that cannot be learned, a bad resume).
class RunFolder {
 public:
  RunFolder(std::string dir, int fd) : dir_(std::move(dir)), fd_(fd) {}
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;
  ~RunFolder() {
    restore_old_run();
    if (fd_ >= 0) ::close(fd_);
  }

  // Moves the old run's files into a fresh DIR/.attn-replaced-XXXXXX.
  void move_old_run_aside() {
    std::string pattern = (fs::path(dir_) / ".attn-replaced-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw IoError(dir_ + ": cannot make a folder for the run --overwrite replaces (" + std::strerror(errno) + ")");
    aside_ = pattern;
    for (const char* name : kRunFiles) {
      std::error_code error;
      const fs::path from = fs::path(dir_) / name;
      if (!fs::exists(fs::symlink_status(from, error))) continue;
      fs::rename(from, fs::path(aside_) / name);
    }
  }
  // The new run has saved a model: the old one goes for good.
  void keep_new_run() {
    if (aside_.empty()) return;
    std::error_code ignored;
    fs::remove_all(aside_, ignored);
    aside_.clear();
  }

 private:
  void restore_old_run() noexcept {
    if (aside_.empty()) return;
    std::error_code ignored;
    for (const char* name : kRunFiles) {
      const fs::path old = fs::path(aside_) / name;
      if (!fs::exists(fs::symlink_status(old, ignored))) {
        fs::remove(fs::path(dir_) / name, ignored);  // the new run's, with no old one to put back
        continue;
      }
      fs::rename(old, fs::path(dir_) / name, ignored);
    }
    fs::remove_all(aside_, ignored);
  }

  std::string dir_;
  int fd_;
  std::string aside_;  // the old run while the new one has saved nothing
};

}  // namespace

std::shared_ptr<void> lock_run_folder(const RunOptions& o) {
  if (o.communicator && o.communicator->rank() != 0)
    return std::make_shared<RunFolder>("", -1);  // rank 0 owns the folder
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<RunFolder>> held;  // folders this process has locked
  const std::lock_guard<std::mutex> guard(mutex);
  if (o.resume && !fs::is_directory(o.out_dir))  // and not made only to find nothing in it
    throw IoError((fs::path(o.out_dir) / "last.safetensors").string() + ": nothing to resume (no such file)");
  io::check_output_folder(o.out_dir, "--out");
  fs::create_directories(o.out_dir);
  const std::string key = fs::canonical(o.out_dir).string();
  if (auto lock = held[key].lock()) return lock;
  const std::string lock_path = (fs::path(o.out_dir) / ".attn-run.lock").string();
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(lock_path + ": cannot open the run folder's lock (" + std::strerror(errno) + ")");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    throw IoError(o.out_dir + ": another attn run is using this folder (wait for it, or choose another --out)");
  }
  auto lock = std::make_shared<RunFolder>(o.out_dir, fd);
  for (const char* name : {"last.safetensors", "model.safetensors"}) {
    if (o.resume || !fs::exists(fs::path(o.out_dir) / name)) continue;
    if (!o.overwrite)
      throw ValueError(o.out_dir + " holds another run (" + name +
                       "); give --resume to continue it, --overwrite to replace it, or another --out");
    // --overwrite: nothing of the old run stays beside the new one (a translation run's
    // tokenizer), and nothing of it is lost before the new run has saved a model.
    lock->move_old_run_aside();
    break;
  }
  held[key] = lock;
  return lock;
}

void keep_new_run(const std::shared_ptr<void>& folder) {
  if (folder) static_cast<RunFolder*>(folder.get())->keep_new_run();
}

void apply_gradients(Optimizer& optimizer, float clip) {
  if (clip > 0.0f) clip_grad_norm(optimizer.parameters(), clip);
  optimizer.step();
  optimizer.zero_grad();
}

RunResult run(Task& task, const RunOptions& o) {
  o.validate();
  const fs::path dir(o.out_dir);
  RunResult result;
  result.model_path = (dir / "model.safetensors").string();
  result.last_path = (dir / "last.safetensors").string();
  nn::Module& module = task.module();

  const int64_t per_epoch = task.steps_per_epoch();
  if ((o.steps == 0 || o.eval_every == 0) && per_epoch < 1)
    throw ValueError(o.steps == 0 ? "--epochs does not apply to this task (its data has no epochs); give --steps"
                                  : "--eval-every must be >= 1 for this task (its data has no epochs)");
  const int64_t total_steps = o.steps > 0 ? o.steps : per_epoch * o.epochs;
  const int64_t eval_every = o.eval_every > 0 ? o.eval_every : per_epoch;
  const LrSchedule schedule = o.schedule(total_steps);
  result.total_steps = total_steps;

  std::optional<DataParallel> dp;
  if (o.communicator) dp.emplace(*o.communicator);  // (the reducer cannot move: its hook points at it)
  const int ranks = dp ? dp->comm.size() : 1;
  const bool rank0 = !dp || dp->rank0();
  task.set_shard({dp ? dp->comm.rank() : 0, ranks});
  const json options_now = checked_options(task, o);
  if (dp) {
    distributed::require_same_configuration(dp->comm,
                                            configuration_description(task, o, options_now, total_steps, module));
    warn_about_oversubscription(dp->comm, o);
  }
  if (o.resume && !fs::exists(result.last_path))  // before the folder is made or locked
    throw IoError(result.last_path + ": nothing to resume (no such file)");
  const std::shared_ptr<void> folder = lock_run_folder(o);
  std::unique_ptr<Optimizer> optimizer = make_optimizer(module, o);
  RunState& state = result.state;
  if (o.resume) {
    // Every rank reads the checkpoint (the folder must be readable by all; only rank 0 writes).
    const io::SafetensorsFile file = io::load_safetensors(result.last_path);
    refuse_other_rank_count(file, ranks, o);
    refuse_changed_options(file, options_now, o);
    state = read_run_state(file, task.restore(file, result.last_path));
    check_steps_left(state.step, total_steps, o.out_dir);
    load_optimizer_state(file, *optimizer, result.last_path);
    load_random_streams(file, module, result.last_path);
  }
  if (dp) {
    distributed::broadcast_parameters(dp->comm, module.parameters());  // one starting point
    dp->reducer.emplace(
        dp->comm, module.parameters(),
        distributed::GradientReduceOptions{.deterministic = o.deterministic_reduce,
                                           .overlap = !o.reduce_after_backward,
                                           .bucket_bytes = static_cast<size_t>(o.bucket_mb * (1 << 20))});
  }
  std::optional<JsonlLog> log;
  if (rank0) {
    log.emplace((dir / "log.jsonl").string(), o.resume);
    json first = {{"run", o.provenance.to_json()}, {"step", state.step}, {"resume", o.resume}};
    if (dp) first["ranks"] = ranks;
    log->write(first);
    if (!o.config_toml.empty()) io::write_file_atomically((dir / "config.toml").string(), o.config_toml);
  }

  const auto run_start = std::chrono::steady_clock::now();
  auto last_save = run_start;
  double eval_seconds = 0.0;  // validation time, not counted against --max-minutes
  auto save_last = [&] {
    NamedTensors tensors = module.named_parameters();
    for (auto& entry : random_stream_tensors(module)) tensors.push_back(std::move(entry));
    save_run_checkpoint(result.last_path, std::move(tensors),
                        with_run_state(task.checkpoint_metadata(state, false), state, options_now, ranks),
                        optimizer.get());
    keep_new_run(folder);
    last_save = std::chrono::steady_clock::now();
  };
  int64_t last_validated = -1;
  auto validate_and_keep_best = [&] {
    if (!rank0) return;  // validated once, by the rank that keeps the model
    const auto start = std::chrono::steady_clock::now();
    Validation v = task.validate(state.step);
    module.train();
    eval_seconds += seconds_since(start);
    last_validated = state.step;
    json line = v.fields;
    line["step"] = state.step;
    line["elapsed_s"] = seconds_since(run_start);
    log->write(line);
    if (o.progress && !v.message.empty()) std::fprintf(o.progress, "%s\n", v.message.c_str());
    const bool better = task.higher_is_better() ? v.score >= state.best_score : v.score <= state.best_score;
    if (!state.has_best || better) {
      state.has_best = true;
      state.best_score = v.score;
      state.best_step = state.step;
      save_run_checkpoint(result.model_path, module.named_parameters(),
                          with_run_state(task.checkpoint_metadata(state, true), state, options_now, ranks));
      keep_new_run(folder);
    }
  };

  Progress progress(task.label(), total_steps, rank0 ? o.progress : nullptr);
  double global_loss = 0.0;  // a data-parallel step's loss over every rank's shard
  auto window_start = std::chrono::steady_clock::now();
  module.train();
  while (state.step < total_steps) {
    const bool stop_now = (o.stop && o.stop->load()) || (o.stop_at_step > 0 && state.step >= o.stop_at_step);
    const bool time_up = o.max_minutes > 0 && seconds_since(run_start) - eval_seconds > 60.0 * o.max_minutes;
    // Every rank stops at the same step (a signal or the clock may reach one rank first).
    if (dp ? distributed::any_rank(dp->comm, stop_now) : stop_now) {
      result.interrupted = true;
      break;
    }
    if (dp ? distributed::any_rank(dp->comm, time_up) : time_up) {
      result.out_of_time = true;
      break;
    }
    if (dp) dp->reducer->begin_step();  // buckets start as backward finishes their gradients
    const StepLoss loss = task.forward(state.step);
    double checked = loss.reported, scale = 1.0;
    if (dp) {
      const distributed::GlobalLoss g = distributed::reduce_loss(dp->comm, loss.reported, loss.weight);
      checked = global_loss = g.loss;
      scale = g.weight > 0 ? loss.weight / g.weight : 0.0;
    }
    result.final_loss = checked;
    if (!std::isfinite(checked))
      throw ValueError("training diverged at step " + std::to_string(state.step + 1) + " (loss " +
                       std::to_string(checked) + "); try a smaller --lr");
    optimizer->set_lr(schedule.lr_at(state.step));
    if (dp) dp->reducer->set_scale(static_cast<float>(scale));
    if (!loss.backward_done) backward(loss.loss);
    if (dp) dp->reducer->finish_step();
    apply_gradients(*optimizer, o.clip);
    const int64_t step = ++state.step;

    if (step % o.log_every == 0 || step == total_steps) {
      json line = {{"step", step}, {"lr", optimizer->lr()}, {"elapsed_s", seconds_since(run_start)}};
      const std::vector<LogField> fields = task.log_fields(seconds_since(window_start));
      // A rate ("tokens_per_s") is this rank's shard; summed over the ranks it is the run's,
      // "global_tokens_per_s", which the progress line shows instead (every rank logs at
      // the same steps, so the sum is one collective).
      std::vector<double> global_rates;
      for (const LogField& f : fields)
        if (dp && f.name.ends_with("_per_s")) global_rates.push_back(f.value);
      if (!global_rates.empty()) dp->comm.all_reduce_sum(std::span<double>(global_rates));
      Progress::Fields shown;
      size_t next_rate = 0;
      for (const LogField& f : fields) {
        line[f.name] = f.value;
        double value = f.value;
        std::string shown_name = f.progress_name;
        if (dp && f.name.ends_with("_per_s")) {
          value = global_rates[next_rate++];
          line["global_" + f.name] = value;
          shown_name = "global " + shown_name;
        }
        if (!f.progress_name.empty()) shown.emplace_back(shown_name, value);
      }
      if (dp) {  // the task's fields are rank 0's shard; these are the whole run's
        line["ranks"] = ranks;
        line["global_loss"] = global_loss;
        line["allreduce_s"] = dp->reducer->seconds();            // gradient all-reduce time so far
        line["allreduce_wait_s"] = dp->reducer->wait_seconds();  // of it, after backward
        // the share of the gradient bytes so far whose all-reduce completed before backward ended
        line["allreduce_done_in_backward"] =
            dp->reducer->done_in_backward_bytes() / std::max(1.0, dp->reducer->total_bytes());
      }
      window_start = std::chrono::steady_clock::now();
      if (log) log->write(line);
      progress.update(step, shown);
    }
    if (step % eval_every == 0 || step == total_steps) validate_and_keep_best();
    if (rank0 && o.save_every_minutes > 0 && seconds_since(last_save) > 60.0 * o.save_every_minutes &&
        step < total_steps)
      save_last();
  }
  progress.finish();
  if (last_validated != state.step || !state.has_best) validate_and_keep_best();
  if (rank0) save_last();
  result.seconds = seconds_since(run_start);
  result.train_seconds = result.seconds - eval_seconds;
  return result;
}

}  // namespace attn::train
