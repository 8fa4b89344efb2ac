#pragma once
// One training run for every task. A task (the synthetic seq2seq tasks, translation, the
// SST-2 classifier, the character LM) says what one step computes and how a model is
// validated and described; run(task, options) owns the rest, once:
//
//   resume      --resume continues from out_dir/last.safetensors: parameters, optimizer
//               state, the step count, the best score and every random stream the model
//               registered (dropout, hard attention), so K steps + resume to N gives the
//               weights of an uninterrupted N-step run, bit for bit.
//   the step    lr = schedule(step); backward(loss); clip the global norm; optimizer step;
//               zero_grad.
//   ranks       with a communicator (distributed/communicator.h; the CLI passes world()),
//               one rank of a data-parallel run (docs/distributed.md): the task trains on
//               its shard of each global batch (Task::shard()); the ranks check at start-up
//               that they run the same binary and configuration (a hash) and take rank 0's
//               initial weights; each step all-reduces the loss and the gradients weighted
//               by each rank's StepLoss::weight, so the update is the one of a single process
//               on the global batch; stopping is agreed by all ranks; rank 0 alone locks
//               and writes the run folder (checkpoints, log.jsonl, progress) and validates.
//               The checkpoints record the rank count; --resume with another is refused.
//   divergence  a non-finite loss stops the run: "training diverged at step N (loss X);
//               try a smaller --lr".
//   keep-best   after each validation, model.safetensors is replaced when the score is at
//               least as good as the best so far (>= when higher is better, <= when lower
//               is), so of equal scores the later model is kept; the first validation of a
//               run always writes it.
//   validation  every eval_every steps (0: once per epoch) and at the end of the run, or
//               when it stops early, unless the last step was just validated.
//   log         out_dir/log.jsonl: first a {"run": provenance} record, then one line per
//               log_every steps ({"step", "lr", "elapsed_s"} + the task's fields) and per
//               validation ({"step", "elapsed_s"} + the task's fields).
//   progress    a bar or plain lines (progress.h) on options.progress.
//   stopping    *options.stop becoming true (Ctrl-C, SIGTERM, SIGHUP in the CLI), or
//               max_minutes of training time (validation excluded): the run validates,
//               writes last.safetensors and returns with interrupted / out_of_time set.
//   the folder  locked (flock) while a run uses it: a second run on it is refused; a folder
//               holding another run (model.safetensors or last.safetensors) is refused
//               unless --resume or --overwrite. --resume refuses changed options
//               (Task::resume_checked_options), naming the option and both values.
//   saving      last.safetensors (model + optimizer + random streams) at the end, on a
//               stop, and every save_every_minutes of wall time; each write is atomic.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "attn/distributed/communicator.h"
#include "attn/distributed/shard.h"
#include "attn/io/safetensors.h"
#include "attn/nn/module.h"
#include "attn/tensor.h"
#include "attn/train/schedule.h"

namespace attn::train {

class Optimizer;

// What the run folder records about how it was made (log.jsonl's first record; the
// CLI's config.toml too): {"command_line", "attn_version", "threads", "machine"}.
struct Provenance {
  std::string command_line;
  std::string attn_version;  // "0.1.0 (commit)"
  int threads = 0;
  std::string machine;  // one line describing the machine (machine_summary())
  nlohmann::json to_json() const;
};
// This process's provenance for `command_line`: attn's version, the thread count, and
// machine_summary().
Provenance current_provenance(const std::string& command_line);
// One line describing the machine for a run's provenance: `attn doctor --summary` without
// the sgemm measurement (CPU, ISA, GEMM kernels, threads, wait policy, versions).
std::string machine_summary();

// The options every task shares. A task's options struct derives from this one, sets its
// own defaults in its constructor and calls RunOptions::validate() from its validate().
struct RunOptions {
  int64_t steps = 1500;  // optimizer steps; 0: `epochs` passes over the task's data
  int epochs = 0;        // used when steps == 0 (a task with epochs only)
  float lr = 1e-3f;
  // Learning-rate schedule over the run (schedule.h), with `warmup` linear warm-up steps.
  std::string lr_schedule = "constant";
  int64_t warmup = 0;
  bool cap_warmup = false;    // warm-up at most a tenth of the run (a default that must not eat a short run)
  float clip = 1.0f;          // global gradient norm; 0: no clipping
  float weight_decay = 0.0f;  // > 0: AdamW with this decoupled decay; 0: Adam
  uint64_t seed = 1;
  int64_t log_every = 50;
  int64_t eval_every = 250;                 // validation every N steps; 0: once per epoch
  double max_minutes = 0.0;                 // stop (and save) after this much training time; 0: no limit
  double save_every_minutes = 10.0;         // write last.safetensors this often (wall time); 0: only at the end
  std::string out_dir;                      // required
  bool resume = false;                      // continue from out_dir/last.safetensors
  bool overwrite = false;                   // replace a run that out_dir already holds
  std::FILE* progress = stderr;             // nullptr: silent
  const std::atomic<bool>* stop = nullptr;  // checked between steps; true: save and return
  // > 0: stop as *stop would once this many steps are done (a session of a longer run;
  // the resume tests interrupt at an exact step with it).
  int64_t stop_at_step = 0;
  Provenance provenance;  // recorded in log.jsonl's first record
  // Not empty: written to out_dir/config.toml (atomically) once the folder is this run's
  // (locked, and a resume accepted): the CLI's configuration that repeats the run.
  std::string config_toml;
  // The ranks of a data-parallel run (see "ranks" above); nullptr: one process.
  distributed::Communicator* communicator = nullptr;
  // --deterministic-reduce: gradients added in rank order (gradient_reducer.h).
  bool deterministic_reduce = false;
  double bucket_mb = 25.0;             // --bucket-mb: gradient all-reduce bucket size (PyTorch DDP: 25 MB)
  bool reduce_after_backward = false;  // --reduce-after-backward: no overlap (for measuring it)

  // ValueError naming the bad option (--steps, --lr, ...). Checks the schedule against
  // --steps and --warmup when steps > 0.
  void validate() const;
  // The schedule for a run of `total_steps` (the warm-up capped when cap_warmup).
  LrSchedule schedule(int64_t total_steps) const;
};

// The update after backward() (and, in a data-parallel run, the gradient all-reduce):
// clipping of the global gradient norm to `clip` (0: none), the optimizer's step and
// zero_grad. run() calls it every step; so does anything that drives its own loop (attn bench).
void apply_gradients(Optimizer& optimizer, float clip);

// A named number of a log line; shown on the progress line too under `progress_name`
// unless that is empty.
struct LogField {
  std::string name;
  double value = 0.0;
  std::string progress_name;
};

// The forward half of one step.
struct StepLoss {
  Tensor loss;            // what backward() differentiates
  double reported = 0.0;  // the loss to check and report (e.g. without a REINFORCE term)
  // How many items (target tokens, examples) `loss` is the mean over: a data-parallel run
  // weights each rank's gradient by it, so the update equals one process's on the whole batch.
  double weight = 1.0;
  // True when forward() has also run the backward pass (its gradients are in the
  // parameters, e.g. Seq2Seq::loss_backward_in_row_blocks): the loop does not call
  // backward(loss), and `loss` may be undefined.
  bool backward_done = false;
};

struct Validation {
  double score = 0.0;
  nlohmann::json fields = nlohmann::json::object();  // written to log.jsonl with the step
  std::string message;                               // printed on the progress stream when not empty
};

// Where a run stands; saved in checkpoints and restored on --resume.
struct RunState {
  int64_t step = 0;       // optimizer steps done
  bool has_best = false;  // a validation has written model.safetensors
  double best_score = 0.0;
  int64_t best_step = 0;
};

class Task {
 public:
  virtual ~Task() = default;
  // The model being trained: its parameters, training mode and random streams.
  virtual nn::Module& module() = 0;
  // "train additive": the progress line's label.
  virtual std::string label() const = 0;
  // Steps in one pass over the training data; 0 when the data has no epochs (generated).
  virtual int64_t steps_per_epoch() const { return 0; }
  // The forward pass and loss of the update with 0-based index `step`. The batch must depend
  // only on the seed and `step`, so that a resumed run sees the data it would have seen; in a
  // data-parallel run it is shard()'s part of that batch (distributed::shard_of).
  virtual StepLoss forward(int64_t step) = 0;
  // Log fields since the previous call (the task accumulates them in forward()), e.g.
  // {"loss", ...}, {"tokens_per_s", ...}. `window_seconds` is the wall time since that call.
  virtual std::vector<LogField> log_fields(double window_seconds) = 0;
  // Validates the model (the task sets eval mode and restores training mode).
  virtual Validation validate(int64_t step) = 0;
  virtual bool higher_is_better() const = 0;
  // The "attn" metadata of a checkpoint at `state` (best = false: last.safetensors).
  virtual nlohmann::json checkpoint_metadata(const RunState& state, bool best) const = 0;
  // --resume: checks that `file`'s metadata describes the model this task builds (ValueError
  // naming what differs), loads its parameters, and returns where that run stood.
  virtual RunState restore(const io::SafetensorsFile& file, const std::string& path) = 0;
  // The task's options a resumed run must share with the run it continues, by flag
  // ({"--batch": 64, ...}); run() adds its own (--lr, --lr-schedule, --warmup, --clip,
  // --seed, --weight-decay). --steps, --epochs, --max-minutes, --save-every, --log-every
  // and --eval-every may change on resume.
  virtual nlohmann::json resume_checked_options() const { return nlohmann::json::object(); }

  // This process's part of every global batch: run() sets it from options.communicator.
  void set_shard(const distributed::Shard& shard) { shard_ = shard; }
  const distributed::Shard& shard() const { return shard_; }

 private:
  distributed::Shard shard_;
};

struct RunResult {
  RunState state;            // steps done, best score and its step
  bool interrupted = false;  // *options.stop
  bool out_of_time = false;  // max_minutes
  int64_t total_steps = 0;
  double final_loss = 0.0;     // the reported loss of the last step
  double train_seconds = 0.0;  // training time, validation excluded
  double seconds = 0.0;        // wall time of the whole run
  std::string model_path;      // out_dir/model.safetensors
  std::string last_path;       // out_dir/last.safetensors
};

RunResult run(Task& task, const RunOptions& options);

// Locks options.out_dir for this run (creating it; on a rank other than 0 of a data-parallel
// run, which never writes the folder, it does nothing) and refuses a folder holding another
// run unless options.resume or options.overwrite (ValueError naming the folder), or one
// that another process is using (IoError). run() takes it; a task that writes into the
// folder before run() (translation's tokenizer) takes it first. The lock lasts while a
// returned handle lives; a second call for the same folder in this process shares it.
// With options.overwrite, the old run's files (models, log, config.toml, spm.*) are moved
// into DIR/.attn-replaced-XXXXXX, deleted by keep_new_run once the new run has saved a model
// (run() calls it after each save), and moved back when the handle is released before that
// (the new run failed: nothing of the old run is lost). --resume into a folder that does not
// exist is an IoError, and the folder is not made.
std::shared_ptr<void> lock_run_folder(const RunOptions& options);
void keep_new_run(const std::shared_ptr<void>& folder);

// The random streams of `module`, as int32 tensors "rng.<stream>" (8 values: 4 uint64),
// and their restore: IoError naming a stream that is missing or malformed; a file with no
// "rng." entries at all (written by an older attn) leaves the streams as they are.
std::vector<std::pair<std::string, Tensor>> random_stream_tensors(const nn::Module& module);
void load_random_streams(const io::SafetensorsFile& file, const nn::Module& module, const std::string& path);

}  // namespace attn::train
