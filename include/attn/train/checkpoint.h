#pragma once
// Run checkpoints, shared by every trainer. A checkpoint is a safetensors file with
//   - the model's parameters under their module names;
//   - optionally the optimizer's state, for --resume: "optimizer.<i>.<slot>" (optimizer.h)
//     and "optimizer.step_count" (int32 (1));
//   - an "attn" metadata entry: a JSON object whose "format" names the trainer that wrote it
//     ("attn-seq2seq", "attn-classifier", "attn-translation", "attn-lm") and whose other keys
//     are that trainer's business.
// model.safetensors (the best model) carries no optimizer state; last.safetensors does.

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/io/safetensors.h"
#include "attn/tensor.h"
#include "attn/train/optimizer.h"

namespace attn::train {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Writes `parameters`, the optimizer's state when `optimizer` is given, and `metadata`,
// atomically (io::save_safetensors).
void save_run_checkpoint(const std::string& path, NamedTensors parameters, const nlohmann::json& metadata,
                         const Optimizer* optimizer = nullptr);

// The "version" every checkpoint's metadata carries; readers refuse a newer one.
constexpr int kCheckpointVersion = 1;

// The "attn" metadata of `file`, checked to have "format" == `format`. IoError
// "<path>: ..." when it is missing, is not a JSON object, is another format (`what`
// names the expected kind in that message, e.g. "a translation checkpoint"), or has a
// "version" that is not an integer in [1, kCheckpointVersion].
nlohmann::json read_run_metadata(const io::SafetensorsFile& file, const std::string& path, const std::string& format,
                                 const std::string& what);

// The "format" of the checkpoint at `path`: "" when the file has no attn metadata.
// IoError when the file cannot be read as safetensors.
std::string checkpoint_format(const std::string& path);

// Copies the model tensors of `file` (everything but "optimizer.*") into `parameters`
// (io::load_into: all checked first, nothing changed on a mismatch).
void load_model_parameters(const io::SafetensorsFile& file, const NamedTensors& parameters, const std::string& path);

// Restores the optimizer state that save_run_checkpoint wrote. IoError when `file` has none.
void load_optimizer_state(const io::SafetensorsFile& file, Optimizer& optimizer, const std::string& path);
// --resume of a run that has done `done` steps toward --steps `steps`: ValueError when it
// would train nothing (done >= steps), naming the run directory.
void check_steps_left(int64_t done, int64_t steps, const std::string& out_dir);

}  // namespace attn::train
