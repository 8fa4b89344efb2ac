#pragma once
// Reading and writing safetensors files (https://github.com/huggingface/safetensors), the
// checkpoint format of attn, readable by PyTorch and Hugging Face tools:
//
//   bytes 0..7     N, the header length, unsigned 64-bit little-endian
//   bytes 8..8+N   a JSON object, padded with spaces so that 8 + N is a multiple of 8:
//                    {"__metadata__": {"key": "string value", ...},
//                     "name": {"dtype": "F32", "shape": [4, 5], "data_offsets": [0, 80]}, ...}
//   the rest       the data buffer; data_offsets [begin, end) are byte offsets into it;
//                  elements are little-endian, row-major
//
// attn writes and reads F32 and I32 tensors. Tensors are written back to back in the
// order given (the header keeps that order, "__metadata__" first); loading returns them
// in header order.
//
// Checkpoints: model configuration and vocabulary go into the metadata as ONE JSON
// document (serialised to a string) under the key kAttnMetadataKey ("attn"), since
// safetensors metadata values must be strings. Parameter names are the PyTorch
// state_dict keys (nn::Module::named_parameters()); optimizer state uses the
// "optimizer." names of train::OptimizerState.
//
// Integrity: attn stores a CRC-32 (zlib's) of each tensor's bytes in the metadata key
// kChecksumMetadataKey, as a JSON object {"<tensor>": "<8 hex digits>", ...}, and loading
// verifies every tensor against it, naming a tensor whose bytes changed. A file without
// that key (another tool, an attn before checksums) still loads, with
// SafetensorsFile::verified false. load_safetensors does not return the key in metadata.
//
// Every failure is one line: attn::IoError "<path>: <problem>" for the file system and
// for damaged or mismatching files (never a crash, whatever the bytes), attn::ValueError
// for bad arguments (duplicate names, undefined tensors).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "attn/tensor.h"

namespace attn::io {

// The metadata key holding attn's JSON document (model configuration + vocabulary).
inline constexpr const char* kAttnMetadataKey = "attn";
// The metadata key holding the per-tensor CRC-32 checksums.
inline constexpr const char* kChecksumMetadataKey = "attn.crc32";
// Headers larger than this are refused when loading (a damaged length field would
// otherwise ask for gigabytes).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100u * 1000u * 1000u;

// Writes atomically through io::AtomicFile (attn/io/atomic_file.h: a symlink is written
// through, a device in place). On any failure IoError is thrown; `path` is then either
// untouched or the complete old file, never half written. ValueError (before touching the disk) for
// an empty or duplicate tensor name, the name "__metadata__", an undefined tensor, or
// metadata that is not valid UTF-8.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

struct SafetensorsFile {
  std::string path;                                     // as given to load_safetensors, for messages
  std::vector<std::pair<std::string, Tensor>> tensors;  // in header order
  std::map<std::string, std::string> metadata;          // without kChecksumMetadataKey
  // Whether every tensor was checked against a stored checksum. False for a file written
  // without checksums; a file whose checksums do not match never loads.
  bool verified = false;

  // The tensor called `name`; IoError "<path>: no tensor '<name>'" if absent.
  const Tensor& at(const std::string& name) const;
  // nullptr if absent.
  const Tensor* find(const std::string& name) const;
  // The tensors whose names start with `prefix`, with the prefix removed (storage
  // shared, metadata copied): file.subset("optimizer.") or file.subset("model.").
  SafetensorsFile subset(const std::string& prefix) const;
};

// Reads and validates the whole file: it exists and is a regular file, is at least 8
// bytes, the header length is <= file size − 8 and <= kMaxSafetensorsHeaderBytes, the
// header is a JSON object without duplicate names, every entry has a supported dtype
// (F32, I32; any other dtype is an IoError naming it), a shape of non-negative integers,
// data_offsets [begin, end] inside the data buffer with end − begin == numel × 4, the
// tensors' bytes tile the data buffer exactly (no overlap, no gap, nothing after the last
// tensor: the format forbids both), "__metadata__" (if present) maps strings to strings,
// and, when the file carries checksums, every tensor's bytes match its CRC-32 (IoError
// "<path>: tensor '<name>' is damaged: ...").
SafetensorsFile load_safetensors(const std::string& path);

// Copies the file's tensors by name into existing tensors (e.g. a module's
// named_parameters()). Everything is checked before anything is copied: a destination
// name missing from the file, a file tensor with no destination, or a dtype or shape
// mismatch throws one IoError "<path_for_messages>: ..." listing the problems (the
// tensor and both shapes), and leaves every destination untouched. An empty
// path_for_messages uses file.path. ValueError for duplicate destination names.
void load_into(const SafetensorsFile& file, const std::vector<std::pair<std::string, Tensor>>& destination,
               const std::string& path_for_messages = "");

}  // namespace attn::io
