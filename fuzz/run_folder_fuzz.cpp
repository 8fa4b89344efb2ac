// libFuzzer target: a run folder's files as `attn view --run` reads them. The input is
// written as a log.jsonl and read by train::read_run_log, and parsed as a results.json
// (attn::parse_json); what was accepted is then dumped, as the page writer does. The
// promises: only attn errors (IoError, one line) for any bytes, every record accepted is a
// JSON object, and no input nests deep enough for the recursive dump to overflow the stack
// (a 100,000-deep array did).
#include <cstdlib>
#include <string_view>

#include "attn/json.h"
#include "attn/train/run_log.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = attn::fuzz::scratch_path("run/log.jsonl");
  attn::fuzz::write_file(path, data, size);
  attn::fuzz::expect_only_attn_errors([&] {
    const attn::train::RunLogRecords read = attn::train::read_run_log(path);
    for (const auto& record : read.records)
      if (!record.is_object()) std::abort();  // a line that is not an object was accepted
    (void)attn::json_text(read.records, 1);
  });
  attn::fuzz::expect_only_attn_errors([&] {
    const nlohmann::json results =
        attn::parse_json(std::string_view(reinterpret_cast<const char*>(data), size), "results.json");
    (void)attn::json_text(results, 1);
  });
  return 0;
}
