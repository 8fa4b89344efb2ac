// libFuzzer target: the parallel-text reader, data::load_parallel. The input is split at its
// first '\t' (or in half) into the source and target files of a split, read with a limit
// taken from the first byte; mismatched, empty or damaged sides must end in attn::Error.
#include <algorithm>

#include "attn/data/parallel.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t* split = std::find(data, data + size, '\t');
  const size_t src_size = split == data + size ? size / 2 : static_cast<size_t>(split - data);
  const size_t tgt_start = split == data + size ? src_size : src_size + 1;
  const std::string dir = attn::fuzz::scratch_path("multi30k");
  attn::fuzz::write_file(dir + "/raw/train.de.gz", data, src_size);
  attn::fuzz::write_file(dir + "/raw/train.en.gz", data + tgt_start, size - tgt_start);
  const int64_t limit = size > 0 ? data[0] % 4 : 0;
  attn::fuzz::expect_only_attn_errors([&] {
    const attn::data::ParallelCorpus c = attn::data::load_parallel(dir, "train", "de", "en", limit);
    if (c.src.size() != c.tgt.size()) std::abort();  // the reader promises aligned sides
  });
  return 0;
}
