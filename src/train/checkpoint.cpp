#include "attn/train/checkpoint.h"

#include "attn/error.h"
#include "attn/json.h"

namespace attn::train {
namespace {

using json = nlohmann::json;

constexpr const char* kOptimizerPrefix = "optimizer.";
constexpr const char* kStepCount = "optimizer.step_count";

bool is_optimizer_entry(const std::string& name) { return name.rfind(kOptimizerPrefix, 0) == 0; }

}  // namespace

void save_run_checkpoint(const std::string& path, NamedTensors parameters, const json& metadata,
                         const Optimizer* optimizer) {
  if (optimizer) {
    OptimizerState state = optimizer->state();
    for (auto& entry : state.tensors) parameters.push_back(std::move(entry));
    parameters.emplace_back(kStepCount,
                            Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(state.step)}, {1}));
  }
  io::save_safetensors(path, parameters, {{io::kAttnMetadataKey, json_text(metadata)}});
}

void load_optimizer_state(const io::SafetensorsFile& file, Optimizer& optimizer, const std::string& path) {
  const Tensor* count = file.find(kStepCount);
  if (!count) throw IoError(path + ": no optimizer state to resume from");
  OptimizerState state;
  state.step = count->i32()[0];
  for (const auto& [name, t] : file.tensors)
    if (is_optimizer_entry(name) && name != kStepCount) {
      // NaN moments would only surface steps later, as a "diverged: try a smaller --lr".
      if (const std::string bad = io::non_finite(t); !bad.empty())
        throw ValueError(path + ": optimizer state '" + name + "' holds " + bad +
                         " (a damaged checkpoint: cannot resume from it)");
      state.tensors.emplace_back(name, t);
    }
  optimizer.load_state(state);
}

void check_steps_left(int64_t done, int64_t steps, const std::string& out_dir) {
  if (done >= steps)
    throw ValueError("--resume: the run in " + out_dir + " has done " + std::to_string(done) +
                     " steps already; --steps " + std::to_string(steps) + " asks for none more");
}

}  // namespace attn::train
