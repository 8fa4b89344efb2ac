// libFuzzer target: checkpoint metadata parsing and model-configuration validation. The
// input is the text of a checkpoint's "attn" metadata entry; it goes through
// train::read_run_metadata, then the configuration through every model's from_json, and an
// accepted configuration is built (under a 64 MiB ATTN_MEMORY_LIMIT, so the bounds and the
// memory estimate, not the machine, stop a huge one).
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "attn/models/classifier.h"
#include "attn/models/memory_estimate.h"
#include "attn/models/seq2seq.h"
#include "attn/models/transformer.h"
#include "attn/train/checkpoint.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("ATTN_MEMORY_LIMIT", "64M", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using nlohmann::json;
  const std::string text(reinterpret_cast<const char*>(data), size);
  attn::io::SafetensorsFile file;
  file.path = "fuzz.safetensors";
  file.metadata["attn"] = text;
  json config = json::object();
  for (const char* format : {"attn-seq2seq", "attn-classifier", "attn-translation"})
    attn::fuzz::expect_only_attn_errors([&] {
      const json meta = attn::train::read_run_metadata(file, file.path, format, "a checkpoint");
      if (meta.contains("config")) config = meta["config"];
    });
  // The configuration alone, as --model-config gives it, when the text is one.
  if (config.empty()) config = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return 0;
  attn::fuzz::expect_only_attn_errors(
      [&] { attn::models::Seq2Seq model(attn::models::Seq2SeqConfig::from_json(config)); });
  attn::fuzz::expect_only_attn_errors([&] {
    const attn::models::TransformerConfig c = attn::models::TransformerConfig::from_json(config);
    (void)attn::models::parameter_bytes(c);
    if (c.tgt_vocab > 2) attn::models::TransformerLM model(c);
  });
  attn::fuzz::expect_only_attn_errors([&] {
    const std::string kind = config.is_object() && config.contains("kind") && config["kind"].is_string()
                                 ? config["kind"].get<std::string>()
                                 : "bilstm";
    (void)attn::models::make_classifier(kind, config);
  });
  return 0;
}
