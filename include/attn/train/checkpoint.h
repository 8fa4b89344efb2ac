#pragma once
// Run checkpoints, shared by every trainer. A checkpoint is a safetensors file with
//   - the model's parameters under their module names;
//   - optionally the optimizer's state, for --resume: "optimizer.<i>.<slot>" (optimizer.h)
//     and "optimizer.step_count" (int32 (1));
//   - an "attn" metadata entry: a JSON object whose "format" names the trainer that wrote it
//     ("attn-seq2seq", "attn-classifier", "attn-translation", "attn-lm") and whose other keys
//     are that trainer's business.
// model.safetensors (the best model) carries no optimizer state; last.safetensors does.

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "attn/io/checkpoint_read.h"
#include "attn/io/safetensors.h"
#include "attn/tensor.h"
#include "attn/train/optimizer.h"

namespace attn::train {

using io::NamedTensors;

// Writes `parameters`, the optimizer's state when `optimizer` is given, and `metadata`,
// atomically (io::save_safetensors).
void save_run_checkpoint(const std::string& path, NamedTensors parameters, const nlohmann::json& metadata,
                         const Optimizer* optimizer = nullptr);

// The reading side (metadata, model tensors) is io/checkpoint_read.h, shared with the
// inference APIs (attn/decode/).
using io::checkpoint_format;
using io::kCheckpointVersion;
using io::load_model_parameters;
using io::read_run_metadata;

// Restores the optimizer state that save_run_checkpoint wrote. IoError when `file` has none.
void load_optimizer_state(const io::SafetensorsFile& file, Optimizer& optimizer, const std::string& path);
// --resume of a run that has done `done` steps toward --steps `steps`: ValueError when it
// would train nothing (done >= steps), naming the run directory.
void check_steps_left(int64_t done, int64_t steps, const std::string& out_dir);

}  // namespace attn::train
