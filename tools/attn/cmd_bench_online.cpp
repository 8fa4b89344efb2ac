// attn bench online: what global, local, monotonic and MoChA attention cost as the input grows.
//
//   attn bench online [--lengths 64,128,...,2048] [--chars-per-frame 0.5] [--json]
//
// One decoder pass of each step attention (nn::make_step_attention) over T listener frames
// with U = chars-per-frame · T decoder steps, B = 1, the ASR speller's sizes (D = A = 128,
// E = 256): prepare() once, then U steps on random queries, no gradient. Kinds: global additive,
// Luong's local_m and local_p (general score, half-width --window), hard monotonic and MoChA
// inference (eval mode), and monotonic and MoChA training's expected alignment (train mode,
// forward). Reports the median wall and CPU time (the process's, steadier on a loaded machine;
// run it with --threads 1) of --reps passes per (kind, T), the multiply-adds the code does
// (bench/support/flops.h; hard inference's, which depend on where it stops, as their bound)
// and, per kind, the exponent k of CPU time ∝ T^k fitted over the four
// longest lengths. The monotonic energies' offset r is 0 here, so that on random inputs hard
// attention stops now and then rather than never.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/autodiff/tape.h"
#include "attn/nn/init.h"
#include "attn/nn/step_attention.h"
#include "attn/parallel.h"
#include "attn/random.h"
#include "attn/train/machine_report.h"
#include "commands.h"
#include "common.h"
#include "option_parsing.h"
#include "support/flops.h"
#include "support/measure.h"

namespace attn::cli {
namespace {
using json = nlohmann::json;

struct OnlineBenchArgs {
  std::string lengths = "64,128,256,512,1024,2048";
  double chars_per_frame = 0.5;  // U / T
  int query = 128;               // D (= A)
  int memory = 256;              // E
  int window = 10;               // local_m / local_p: Luong's half-width D
  int chunk = 2;                 // mocha: W
  int reps = 3;
  uint64_t seed = 1;
  bool as_json = false;
};

struct Case {
  std::string kind;  // the StepScore name
  bool training;     // monotonic / mocha: the expected alignment
  std::string label() const { return training ? kind + " (training)" : kind; }
};

// option_parsing's list of positive lengths, each in [2, 65536].
std::vector<int64_t> listener_lengths(const std::string& text) {
  std::vector<int64_t> lengths;
  for (int T : parse_lengths(text)) {
    if (T < 2 || T > 65536) throw UsageError("--lengths: " + std::to_string(T) + " is not in [2, 65536]");
    lengths.push_back(T);
  }
  return lengths;
}

Tensor random_normal(const Shape& shape, Rng& rng) {
  Tensor t = Tensor::empty(shape);
  nn::normal_(t, 0.0f, 1.0f, rng);
  return t;
}

// The least-squares slope of log y against log x.
double log_log_slope(const std::vector<double>& x, const std::vector<double>& y) {
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += std::log(x[i]) / x.size(), my += std::log(y[i]) / y.size();
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (std::log(x[i]) - mx) * (std::log(y[i]) - my);
    sxx += (std::log(x[i]) - mx) * (std::log(x[i]) - mx);
  }
  return sxx > 0 ? sxy / sxx : NAN;
}

struct PassResult {
  double ms = 0, cpu_ms = 0;  // medians of one pass: wall time, and the process's CPU time
};

PassResult time_pass(const OnlineBenchArgs& a, const Case& c, int64_t T, int64_t U) {
  Rng rng(a.seed);
  nn::StepAttentionOptions options;
  options.score = *nn::find_step_score(c.kind);
  options.query_size = a.query;
  options.memory_size = a.memory;
  options.window = a.window;
  options.sample_seed = a.seed;
  options.monotonic_bias = 0.0f;  // stops every couple of frames on random inputs
  options.chunk = a.chunk;
  auto attention = nn::make_step_attention(options, rng);
  attention->module().train(c.training);
  const Tensor values = random_normal({1, T, a.memory}, rng);
  const Tensor lengths = Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(T)}, {1});
  std::vector<Tensor> queries;
  for (int64_t u = 0; u < U; ++u) queries.push_back(random_normal({1, a.query}, rng));
  autodiff::NoGradGuard no_grad;
  std::vector<double> ms, cpu_ms;
  for (int r = 0; r < a.reps + 1; ++r) {  // the first pass warms up
    const auto start = bench::Clock::now();
    const double cpu_start = bench::process_cpu_seconds();
    const nn::StepMemory memory = attention->prepare(values, lengths);
    nn::StepState state = attention->start(memory);
    for (int64_t u = 0; u < U; ++u) {
      (void)attention->step(queries[static_cast<size_t>(u)], memory, state, false);
    }
    if (r == 0) continue;
    ms.push_back(1e3 * bench::seconds_since(start));
    cpu_ms.push_back(1e3 * (bench::process_cpu_seconds() - cpu_start));
  }
  return {bench::median(ms), bench::median(cpu_ms)};
}

void run_online_bench(const OnlineBenchArgs& a) {
  const std::vector<int64_t> lengths = listener_lengths(a.lengths);
  if (!(a.chars_per_frame > 0 && a.chars_per_frame <= 4))
    throw UsageError("--chars-per-frame must be in (0, 4], got " + std::to_string(a.chars_per_frame));
  if (a.query < 1 || a.memory < 1 || a.window < 1 || a.chunk < 1 || a.reps < 1)
    throw UsageError("--query, --memory, --window, --chunk and --reps must be >= 1");
  const std::vector<Case> cases = {{"additive", false}, {"local_m", false},  {"local_p", false}, {"monotonic", false},
                                   {"mocha", false},    {"monotonic", true}, {"mocha", true}};
  json rows = json::array(), exponents = json::object();
  if (!a.as_json)
    std::printf("%-22s %6s %6s %10s %10s %14s\n", "attention", "T", "U", "wall ms", "CPU ms", "multiply-adds");
  for (const Case& c : cases) {
    std::vector<double> xs, ys;
    for (int64_t T : lengths) {
      const int64_t U = std::max<int64_t>(1, std::llround(a.chars_per_frame * static_cast<double>(T)));
      const PassResult p = time_pass(a, c, T, U);
      const double macs = bench::step_attention_macs(c.kind, c.training, T, U, a.query, a.memory, a.window, a.chunk);
      rows.push_back(
          {{"attention", c.label()}, {"T", T}, {"U", U}, {"ms", p.ms}, {"cpu_ms", p.cpu_ms}, {"macs", macs}});
      if (!a.as_json)
        std::printf("%-22s %6lld %6lld %10.3f %10.3f %14.4g\n", c.label().c_str(), static_cast<long long>(T),
                    static_cast<long long>(U), p.ms, p.cpu_ms, macs);
      xs.push_back(static_cast<double>(T));
      ys.push_back(p.cpu_ms);
    }
    const size_t from = xs.size() > 4 ? xs.size() - 4 : 0;  // the four longest: per-step overheads fade
    exponents[c.label()] = log_log_slope({xs.begin() + static_cast<std::ptrdiff_t>(from), xs.end()},
                                         {ys.begin() + static_cast<std::ptrdiff_t>(from), ys.end()});
  }
  json j = {{"bench", "online"},
            {"rows", rows},
            {"exponents", exponents},
            {"config",
             {{"query", a.query},
              {"memory", a.memory},
              {"window", a.window},
              {"chunk", a.chunk},
              {"chars_per_frame", a.chars_per_frame},
              {"reps", a.reps},
              {"seed", a.seed}}},
            {"threads", num_threads()},
            {"machine", train::machine_report().to_json()}};
  if (a.as_json) {
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("CPU time ∝ T^k over the four longest lengths:");
  for (const auto& [name, k] : exponents.items()) std::printf(" %s %.2f;", name.c_str(), k.get<double>());
  std::printf("\n");
}

}  // namespace

void add_bench_online_command(CLI::App* bench) {
  auto a = std::make_shared<OnlineBenchArgs>();
  CLI::App* cmd = bench->add_subcommand(
      "online", "What global, local, monotonic and MoChA attention cost per utterance as the input grows");
  cmd->add_option("--lengths", a->lengths, "Listener lengths T, comma-separated")->capture_default_str();
  cmd->add_option("--chars-per-frame", a->chars_per_frame, "Decoder steps per listener frame (U / T)")
      ->capture_default_str();
  cmd->add_option("--query", a->query, "Decoder state size D (= the attention size A)")->capture_default_str();
  cmd->add_option("--memory", a->memory, "Listener output size E")->capture_default_str();
  cmd->add_option("--window", a->window, "local_m / local_p: half-width of the window")->capture_default_str();
  cmd->add_option("--chunk", a->chunk, "mocha: chunk width W")->capture_default_str();
  cmd->add_option("--reps", a->reps, "Timed passes per length (the median is reported)")->capture_default_str();
  cmd->add_option("--seed", a->seed, "Random inputs and weights")->capture_default_str();
  cmd->add_flag("--json", a->as_json, "One JSON object instead of the table");
  add_threads_option(cmd);
  cmd->callback([a] { run_online_bench(*a); });
}

}  // namespace attn::cli
