// libFuzzer target: io::load_safetensors on arbitrary bytes, then the checkpoint-format probe
// the CLI runs first (train::checkpoint_format). Bad files must end in attn::Error, never a
// crash, a sanitizer report, an uncaught exception or an allocation beyond -rss_limit_mb.
#include "attn/io/safetensors.h"
#include "attn/train/checkpoint.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::scratch_path("x.safetensors");
  attn::fuzz::write_file(path, data, size);
  attn::fuzz::expect_only_attn_errors([&] {
    const attn::io::SafetensorsFile file = attn::io::load_safetensors(path);
    for (const auto& [name, tensor] : file.tensors) (void)tensor.numel();
  });
  attn::fuzz::expect_only_attn_errors([&] { (void)attn::train::checkpoint_format(path); });
  return 0;
}
