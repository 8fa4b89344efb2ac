#pragma once
// Reading attn checkpoints: the "attn" metadata entry and the model tensors of a
// safetensors file. What the inference APIs (attn/decode/) and the trainers (which also
// write checkpoints, attn/train/checkpoint.h) share. The layout is train/checkpoint.h's:
// model parameters under their module names, optional run state ("optimizer.*", "rng.*")
// and a JSON object under "attn" whose "format" names the task that wrote it.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "attn/error.h"
#include "attn/io/safetensors.h"
#include "attn/tensor.h"

namespace attn::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// The "version" every checkpoint's metadata carries; readers refuse a newer one.
constexpr int kCheckpointVersion = 1;

// The "attn" metadata of `file`, checked to have "format" == `format`. IoError
// "<path>: ..." when it is missing, is not a JSON object, is another format (`what`
// names the expected kind in that message, e.g. "a translation checkpoint"), or has a
// "version" that is not an integer in [1, kCheckpointVersion].
nlohmann::json read_run_metadata(const SafetensorsFile& file, const std::string& path, const std::string& format,
                                 const std::string& what);
// The start of every checkpoint's "attn" metadata: {"format": format, "version":
// kCheckpointVersion, "config": config}; each kind adds its own fields.
nlohmann::json run_metadata(const std::string& format, nlohmann::json config);

// Runs `read`, which reads fields of `path`'s "attn" metadata, turning its errors into
// IoError naming `path`: "<path>: bad 'attn' metadata: ..." for a missing or mistyped field
// (a nlohmann::json exception), "<path>: <bad_value>: ..." for a bad value (a ValueError).
template <class Read>
void read_metadata_fields(const std::string& path, const std::string& bad_value, Read&& read) {
  try {
    read();
  } catch (const nlohmann::json::exception& e) {
    throw IoError(path + ": bad 'attn' metadata: " + e.what());
  } catch (const ValueError& e) {
    throw IoError(path + ": " + bad_value + ": " + e.what());
  }
}
template <class Read>
void read_metadata_fields(const std::string& path, Read&& read) {
  read_metadata_fields(path, "bad 'attn' metadata", std::forward<Read>(read));
}

// The "attn" metadata of `file` parsed (attn/json.h's limits), null when it has none;
// IoError "<path>: 'attn' metadata is not valid JSON: ..." (or nests too deep).
nlohmann::json attn_metadata(const SafetensorsFile& file, const std::string& path);

// The "format" of the checkpoint at `path`: "" when the file has no attn metadata.
// IoError when the file cannot be read as safetensors.
std::string checkpoint_format(const std::string& path);

// True for the run-state entries of a checkpoint (optimizer state, random streams).
bool is_run_state_entry(const std::string& name);

// "NaN" or "an infinity" for the first non-finite value of a float32 tensor, "" if none.
std::string non_finite(const Tensor& t);

// Copies the model tensors of `file` (everything but the run state) into `parameters`
// (load_into: all checked first, nothing changed on a mismatch). ValueError naming a
// parameter that holds a NaN or an infinity.
void load_model_parameters(const SafetensorsFile& file, const NamedTensors& parameters, const std::string& path);

}  // namespace attn::io
