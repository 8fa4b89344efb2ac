#include "attn/train/checkpoint.h"

#include <cmath>

#include "attn/error.h"

namespace attn::train {
namespace {

using json = nlohmann::json;

constexpr const char* kOptimizerPrefix = "optimizer.";
constexpr const char* kStepCount = "optimizer.step_count";

bool is_optimizer_entry(const std::string& name) { return name.rfind(kOptimizerPrefix, 0) == 0; }
// Run state that is not the model: the optimizer's and the random streams' (run.h).
bool is_run_state_entry(const std::string& name) { return is_optimizer_entry(name) || name.rfind("rng.", 0) == 0; }

}  // namespace

void save_run_checkpoint(const std::string& path, NamedTensors parameters, const json& metadata,
                         const Optimizer* optimizer) {
  if (optimizer) {
    OptimizerState state = optimizer->state();
    for (auto& entry : state.tensors) parameters.push_back(std::move(entry));
    parameters.emplace_back(kStepCount, Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(state.step)}, {1}));
  }
  io::save_safetensors(path, parameters, {{io::kAttnMetadataKey, metadata.dump()}});
}

json read_run_metadata(const io::SafetensorsFile& file, const std::string& path, const std::string& format,
                       const std::string& what) {
  auto it = file.metadata.find(io::kAttnMetadataKey);
  if (it == file.metadata.end()) throw IoError(path + ": no 'attn' metadata (not written by attn)");
  json j;
  try {
    j = json::parse(it->second);
  } catch (const json::exception& e) {
    throw IoError(path + ": bad 'attn' metadata: " + e.what());
  }
  if (!j.is_object()) throw IoError(path + ": bad 'attn' metadata: not a JSON object");
  const std::string found = j.value("format", "");
  if (found != format) throw IoError(path + ": not " + what + " (metadata format '" + found + "')");
  const json version = j.value("version", json(kCheckpointVersion));
  if (!version.is_number_integer() || version.get<int64_t>() < 1)
    throw IoError(path + ": bad 'attn' metadata: version " + version.dump());
  if (version.get<int64_t>() > kCheckpointVersion)
    throw IoError(path + ": written by a newer attn (checkpoint version " + version.dump() + "; this one reads up to " +
                  std::to_string(kCheckpointVersion) + ")");
  return j;
}

std::string checkpoint_format(const std::string& path) {
  const io::SafetensorsFile file = io::load_safetensors(path);
  auto it = file.metadata.find(io::kAttnMetadataKey);
  if (it == file.metadata.end()) return "";
  try {
    const json j = json::parse(it->second);
    return j.is_object() ? j.value("format", "") : "";
  } catch (const json::exception&) {
    return "";
  }
}

void load_model_parameters(const io::SafetensorsFile& file, const NamedTensors& parameters, const std::string& path) {
  io::SafetensorsFile model;
  model.path = file.path;
  for (const auto& [name, t] : file.tensors)
    if (!is_run_state_entry(name)) model.tensors.emplace_back(name, t);
  io::load_into(model, parameters, path);
  // A model with a NaN or an infinity only ever predicts garbage: refuse it by name.
  for (const auto& [name, t] : parameters) {
    if (t.dtype() != DType::f32) continue;
    const float* x = t.f32();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (!std::isfinite(x[i]))
        throw ValueError(path + ": parameter '" + name + "' holds " + (std::isnan(x[i]) ? "NaN" : "an infinity") +
                         " (a diverged or damaged checkpoint)");
  }
}

void load_optimizer_state(const io::SafetensorsFile& file, Optimizer& optimizer, const std::string& path) {
  const Tensor* count = file.find(kStepCount);
  if (!count) throw IoError(path + ": no optimizer state to resume from");
  OptimizerState state;
  state.step = count->i32()[0];
  for (const auto& [name, t] : file.tensors)
    if (is_optimizer_entry(name) && name != kStepCount) state.tensors.emplace_back(name, t);
  optimizer.load_state(state);
}

void check_steps_left(int64_t done, int64_t steps, const std::string& out_dir) {
  if (done >= steps)
    throw ValueError("--resume: the run in " + out_dir + " has done " + std::to_string(done) + " steps already; --steps " +
                     std::to_string(steps) + " asks for none more");
}

}  // namespace attn::train
