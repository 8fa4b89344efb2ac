#include "attn/train/checkpoint.h"

#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>

#include "attn/error.h"

namespace attn::train {
namespace {

using json = nlohmann::json;

constexpr const char* kOptimizerPrefix = "optimizer.";
constexpr const char* kStepCount = "optimizer.step_count";

bool is_optimizer_entry(const std::string& name) { return name.rfind(kOptimizerPrefix, 0) == 0; }
// Run state that is not the model: the optimizer's and the random streams' (run.h).
bool is_run_state_entry(const std::string& name) { return is_optimizer_entry(name) || name.rfind("rng.", 0) == 0; }

// "NaN" or "an infinity" for the first non-finite value of a float32 tensor, "" if none.
std::string non_finite(const Tensor& t) {
  if (t.dtype() != DType::f32) return "";
  const float* x = t.f32();
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    if (!std::isfinite(x[i])) return std::isnan(x[i]) ? "NaN" : "an infinity";
  return "";
}

// A file without checksums loads (other tools, attn before checksums), once said so.
void note_if_unverified(const io::SafetensorsFile& file, const std::string& path) {
  if (file.verified) return;
  static std::mutex mutex;
  static std::set<std::string> noted;
  std::lock_guard lock(mutex);
  if (noted.insert(path).second)
    std::fprintf(stderr, "note: %s has no checksums (written by another tool or an older attn): its tensors are unverified\n",
                 path.c_str());
}

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
  note_if_unverified(file, path);
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
  for (const auto& [name, t] : parameters)
    if (const std::string bad = non_finite(t); !bad.empty())
      throw ValueError(path + ": parameter '" + name + "' holds " + bad + " (a diverged or damaged checkpoint)");
}

void load_optimizer_state(const io::SafetensorsFile& file, Optimizer& optimizer, const std::string& path) {
  const Tensor* count = file.find(kStepCount);
  if (!count) throw IoError(path + ": no optimizer state to resume from");
  OptimizerState state;
  state.step = count->i32()[0];
  for (const auto& [name, t] : file.tensors)
    if (is_optimizer_entry(name) && name != kStepCount) {
      // NaN moments would only surface steps later, as a "diverged: try a smaller --lr".
      if (const std::string bad = non_finite(t); !bad.empty())
        throw ValueError(path + ": optimizer state '" + name + "' holds " + bad +
                         " (a damaged checkpoint: cannot resume from it)");
      state.tensors.emplace_back(name, t);
    }
  optimizer.load_state(state);
}

void check_steps_left(int64_t done, int64_t steps, const std::string& out_dir) {
  if (done >= steps)
    throw ValueError("--resume: the run in " + out_dir + " has done " + std::to_string(done) + " steps already; --steps " +
                     std::to_string(steps) + " asks for none more");
}

}  // namespace attn::train
