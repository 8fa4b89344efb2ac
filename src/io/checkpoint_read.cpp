#include "attn/io/checkpoint_read.h"

#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>

#include "attn/error.h"
#include "attn/json.h"
#include "attn/printable.h"

namespace attn::io {
namespace {

using json = nlohmann::json;

// A file without checksums loads (other tools, attn before checksums), once said so.
void note_if_unverified(const SafetensorsFile& file, const std::string& path) {
  if (file.verified) return;
  static std::mutex mutex;
  static std::set<std::string> noted;
  std::lock_guard lock(mutex);
  if (noted.insert(path).second)
    std::fprintf(stderr,
                 "note: %s has no checksums (written by another tool or an older attn): its tensors are unverified\n",
                 printable(path).c_str());
}

}  // namespace

// Run state that is not the model: the optimizer's and the random streams' (train/run.h).
bool is_run_state_entry(const std::string& name) {
  return name.rfind("optimizer.", 0) == 0 || name.rfind("rng.", 0) == 0;
}

std::string non_finite(const Tensor& t) {
  if (t.dtype() != DType::f32) return "";
  const float* x = t.f32();
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    if (!std::isfinite(x[i])) return std::isnan(x[i]) ? "NaN" : "an infinity";
  return "";
}

json attn_metadata(const SafetensorsFile& file, const std::string& path) {
  auto it = file.metadata.find(kAttnMetadataKey);
  return it == file.metadata.end() ? json() : parse_json(it->second, path + ": 'attn' metadata");
}

json run_metadata(const std::string& format, json config) {
  return {{"format", format}, {"version", kCheckpointVersion}, {"config", std::move(config)}};
}

json read_run_metadata(const SafetensorsFile& file, const std::string& path, const std::string& format,
                       const std::string& what) {
  auto it = file.metadata.find(kAttnMetadataKey);
  if (it == file.metadata.end()) throw IoError(path + ": no 'attn' metadata (not written by attn)");
  note_if_unverified(file, path);
  const json j = parse_json(it->second, path + ": 'attn' metadata");
  if (!j.is_object()) throw IoError(path + ": bad 'attn' metadata: not a JSON object");
  // A "format" that is not a string (fuzz/regressions/lm_metadata_fuzz) is a wrong format too.
  const json found_format = j.contains("format") ? j["format"] : json("");
  const std::string found = printable(found_format.is_string() ? found_format.get<std::string>() : found_format.dump());
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
  const SafetensorsFile file = load_safetensors(path);
  auto it = file.metadata.find(kAttnMetadataKey);
  if (it == file.metadata.end()) return "";
  try {
    const json j = parse_json(it->second, path + ": 'attn' metadata");
    return j.is_object() && j.contains("format") && j["format"].is_string() ? j["format"].get<std::string>() : "";
  } catch (const IoError&) {
    return "";
  }
}

void load_model_parameters(const SafetensorsFile& file, const NamedTensors& parameters, const std::string& path) {
  SafetensorsFile model;
  model.path = file.path;
  for (const auto& [name, t] : file.tensors)
    if (!is_run_state_entry(name)) model.tensors.emplace_back(name, t);
  load_into(model, parameters, path);
  // A model with a NaN or an infinity only ever predicts garbage: refuse it by name.
  for (const auto& [name, t] : parameters)
    if (const std::string bad = non_finite(t); !bad.empty())
      throw ValueError(path + ": parameter '" + name + "' holds " + bad + " (a diverged or damaged checkpoint)");
}

}  // namespace attn::io
