// attn align: the attention heatmap of one decoded input: a synthetic-task model with
// --input "5 9 3", or a translation model with --text "Ein Mann fährt Fahrrad ." (word
// pieces on both axes; a Transformer's cross-attention per head of one layer). --json FILE
// also writes the drawn weights as numbers (what the browser tests of attn view compare with);
// for a G2P model also "frames_read", the letters read before each output row (decode/g2p.h).
// An ASR model aligns one utterance of a .speech file (--speech FILE --utterance ID; with
// --join N the N utterances from ID joined, eval --join's group): its characters down, the
// listener frames across ("frames_read" likewise), the log-mel features under them on the same
// time axis, and for monotonic / MoChA attention each step's stopping frame as a red dot
// ("stops" in the JSON).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "alignment.h"
#include "attn/data/tasks.h"
#include "attn/data/text.h"
#include "attn/decode/asr.h"
#include "attn/decode/g2p.h"
#include "attn/decode/translate.h"
#include "attn/explain/asr_alignment.h"
#include "attn/explain/zero_share.h"
#include "attn/io/atomic_file.h"
#include "attn/json.h"
#include "attn/train/checkpoint.h"
#include "attn/viz/plot.h"
#include "commands.h"
#include "common.h"

namespace attn::cli {
namespace {

struct AlignArgs {
  std::string model, input, text, out = "align.png", json_out;
  int beam = 1;
  float length_penalty = 1.0f;    // beam: GNMT's α
  float coverage_penalty = 0.0f;  // beam: GNMT's β
  int layer = -1;                 // Transformer: decoder layer (-1: the last)
  int head = -2;                  // Transformer: one head, -1 the average, -2 every head as its own panel
  SpeechOptions speech;           // ASR: the .speech file, the utterance's id, --join
};

// The heatmap's weights as JSON: {input, output, title, rows (output tokens), cols (source
// tokens), zero_share, panels: [{head, title, zero_share, weights: rows × cols}]}, written
// atomically; zero_share is the share of exactly-zero weights (explain/zero_share.h). The weights are
// the floats the picture is drawn from (a float's shortest round-trip decimal).
// With the pointer-generator, "copy": the copy probability 1 − p_gen of each output token (row).
void write_alignment_json(const viz::Heatmap& map, const std::string& input, const std::string& output,
                          const std::string& path, const std::vector<float>& copy = {},
                          const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json panels = nlohmann::json::array();
  const size_t C = map.col_labels.size();
  explain::ZeroShare all;
  for (size_t p = 0; p < map.panels.size(); ++p) {
    explain::ZeroShare panel;
    panel.add(map.panels[p]);
    all.add(map.panels[p]);
    nlohmann::json rows = nlohmann::json::array();
    for (size_t r = 0; r < map.row_labels.size(); ++r) {
      const auto row = map.panels[p].begin() + static_cast<std::ptrdiff_t>(r * C);
      rows.push_back(std::vector<float>(row, row + static_cast<std::ptrdiff_t>(C)));
    }
    // The picture's panel title (heads counted from 1 there, from 0 in "head").
    const std::string title = p < map.panel_titles.size() ? map.panel_titles[p]
                              : map.panels.size() > 1     ? "head " + std::to_string(p + 1)
                                                          : std::string();
    panels.push_back({{"head", p}, {"title", title}, {"zero_share", panel.share()}, {"weights", std::move(rows)}});
  }
  nlohmann::json j = {
      {"input", input},         {"output", output},          {"title", map.title},         {"rows", map.row_labels},
      {"cols", map.col_labels}, {"zero_share", all.share()}, {"panels", std::move(panels)}};
  if (!copy.empty()) j["copy"] = copy;
  j.update(extra);
  io::write_file_atomically(path, json_text(j, 1) + "\n");
}

void align_translation(const AlignArgs& a) {
  decode::LoadedTranslator model = decode::load_translator(a.model);
  refuse_outputs_naming_inputs({{"--out", a.out}, {"--json", a.json_out}});
  const int layers = model.model->attention_layers(), heads = model.model->attention_heads();
  if (layers == 0) throw UsageError("the model has no attention (--attention none): there is no alignment to draw");
  if (a.layer < -1 || a.layer >= layers)
    throw UsageError("--layer must be in [0, " + std::to_string(layers) + ") or -1 (the last), got " +
                     std::to_string(a.layer));
  if (a.head < -2 || a.head >= heads)
    throw UsageError("--head must be in [0, " + std::to_string(heads) + "), -1 (average) or -2 (every head), got " +
                     std::to_string(a.head));
  viz::Heatmap map;
  const bool transformer = model.info.kind == models::TranslatorKind::transformer;
  const int layer = a.layer < 0 ? layers - 1 : a.layer;
  std::vector<int> panel_heads;
  if (transformer && a.head == -2) {
    for (int h = 0; h < heads; ++h) panel_heads.push_back(h);
  } else {
    panel_heads.push_back(transformer ? a.head : -1);
  }
  std::string output;
  std::vector<float> copy;  // the pointer-generator's, per output piece
  for (int h : panel_heads) {
    decode::TranslateOptions options{.beam = a.beam,
                                     .length_penalty = a.length_penalty,
                                     .coverage_penalty = a.coverage_penalty,
                                     .select = {.layer = layer, .head = h},
                                     .attention = true};
    decode::Translation t = decode::translate(model, {a.text}, options).at(0);
    if (t.src_pieces.empty()) throw UsageError("--text is empty after tokenisation");
    if (map.panels.empty()) {
      map.col_labels = t.src_pieces;
      map.row_labels = t.out_pieces;
      output = t.text;
      copy = t.copy;
    }
    std::vector<float> panel;
    for (const auto& row : t.weights) panel.insert(panel.end(), row.begin(), row.end());
    map.panels.push_back(std::move(panel));
  }
  map.title = transformer ? "cross-attention, layer " + std::to_string(layer) +
                                (a.head == -1  ? ", head average"
                                 : a.head >= 0 ? ", head " + std::to_string(a.head)
                                               : ", heads 0.." + std::to_string(heads - 1))
                          : "attention: " + model.info.config.value("attention", std::string()) +
                                (heads > 1 ? " (head average)" : "");
  viz::write_heatmap(map, a.out);
  if (!a.json_out.empty()) write_alignment_json(map, a.text, output, a.json_out, copy);
  std::printf("input:  %s\noutput: %s\nheatmap: %s\n", a.text.c_str(), output.c_str(), a.out.c_str());
}

// A G2P model's alignment of one word: letters across, phonemes (and EOS) down; a
// Transformer's last layer, heads averaged.
void align_g2p(const AlignArgs& a) {
  decode::LoadedG2p model = decode::load_g2p(a.model);
  refuse_outputs_naming_inputs({{"--out", a.out}, {"--json", a.json_out}});
  if (model.model->attention_layers() == 0)
    throw UsageError("the model has no attention (--attention none): there is no alignment to draw");
  std::vector<decode::Pronunciation> said;
  as_usage([&] {
    said = decode::pronounce(model, {a.text}, {.beam = a.beam, .length_penalty = a.length_penalty, .attention = true});
  });
  viz::Heatmap map;
  map.col_labels = data::cmudict_spell(a.text);
  map.row_labels = said[0].phonemes;
  if (said[0].weights.size() > map.row_labels.size()) map.row_labels.push_back("</s>");  // the step that chose EOS
  std::vector<float> panel;
  for (size_t r = 0; r < map.row_labels.size(); ++r)
    panel.insert(panel.end(), said[0].weights[r].begin(), said[0].weights[r].end());
  map.panels.push_back(std::move(panel));
  map.title = "G2P attention: " + (model.info.kind == models::TranslatorKind::transformer
                                       ? std::string("cross-attention, last layer, head average")
                                       : model.info.config.value("attention", std::string()) + " " +
                                             model.info.config.value("score", std::string()));
  std::string output;
  for (const std::string& p : said[0].phonemes) output += (output.empty() ? "" : " ") + p;
  viz::write_heatmap(map, a.out);
  // The letters read before each output row (all of them for soft attention): the online-decoding measure.
  if (!a.json_out.empty())
    write_alignment_json(map, a.text, output, a.json_out, {}, {{"frames_read", said[0].frames_read}});
  std::printf("input:  %s\noutput: %s\nheatmap: %s\n", a.text.c_str(), output.c_str(), a.out.c_str());
}

// An ASR model's alignment of one utterance (explain/asr_alignment.h): the listener frames
// across (labelled every 10th), the characters (and EOS) down, the log-mel features under them.
void align_asr(const AlignArgs& a) {
  decode::LoadedAsr model = decode::load_asr(a.model);
  refuse_outputs_naming_inputs({{"--out", a.out}, {"--json", a.json_out}});
  data::SpeechUtterance utterance;
  explain::AsrAlignment alignment;
  as_usage([&] {
    utterance = decode::speech_utterance(a.speech.speech, a.speech.utterance, a.speech.join);
    alignment = explain::asr_alignment(model, utterance, a.beam, a.length_penalty);
  });
  const explain::AsrSpectrogram spectrogram = explain::asr_spectrogram(model, utterance);
  viz::Heatmap map;
  for (int64_t f = 0; f < alignment.frames; ++f) map.col_labels.push_back(f % 10 == 0 ? std::to_string(f) : "");
  map.row_labels = alignment.rows;
  map.panels.push_back(alignment.weights);
  map.marks = alignment.stops;
  map.strip = spectrogram.values;  // [frames, bins]
  map.strip_rows = spectrogram.bins;
  map.strip_label = "log-mel";
  map.title = explain::asr_alignment_title(model, utterance.id);
  viz::write_heatmap(map, a.out);
  nlohmann::json extra = {{"frames_read", alignment.frames_read},
                          {"input_frames", spectrogram.input_frames},
                          {"reduction", spectrogram.reduction}};
  if (alignment.online) extra["stops"] = alignment.stops;
  if (!a.json_out.empty()) write_alignment_json(map, utterance.text, alignment.text, a.json_out, {}, extra);
  std::printf("input:  %s (%s)\noutput: %s\nheatmap: %s\n", utterance.id.c_str(), utterance.text.c_str(),
              alignment.text.c_str(), a.out.c_str());
}

}  // namespace

void add_align_command(CLI::App& app) {
  auto args = std::make_shared<AlignArgs>();
  CLI::App* cmd = app.add_subcommand("align", "Draw the attention weights of one decoded input as a heatmap");
  cmd->add_option("--model", args->model, "Checkpoint (model.safetensors)")->required();
  auto* input =
      cmd->add_option("--input", args->input, "Synthetic-task model: source symbols, e.g. \"5 9 3 17 4\" (3..31)");
  auto* text = cmd->add_option("--text", args->text, "Translation model: the source sentence; G2P model: the word");
  input->excludes(text);
  cmd->add_option("--beam", args->beam, "Beam width (1: greedy)")->capture_default_str();
  cmd->add_option("--length-penalty", args->length_penalty,
                  "Beam search: GNMT length penalty alpha, scores divided by ((5 + length) / 6)^alpha (0: none)")
      ->capture_default_str();
  add_coverage_penalty_option(cmd, args->coverage_penalty);
  cmd->add_option("--layer", args->layer, "Transformer: decoder layer whose cross-attention to draw (-1: the last)")
      ->capture_default_str();
  cmd->add_option("--head", args->head, "Transformer: head to draw (-1: average, -2: one panel per head)")
      ->capture_default_str();
  cmd->add_option("--out", args->out, "Output picture (.png or .svg)")->capture_default_str();
  cmd->add_option("--json", args->json_out,
                  "Also write the drawn weights (every panel, rows x columns) to this JSON file");
  args->speech.add(cmd);
  add_threads_option(cmd);
  cmd->callback([args, cmd] {
    if (cmd_beam_invalid(args->beam)) throw UsageError("--beam must be >= 1, got " + std::to_string(args->beam));
    if (!(args->length_penalty >= 0.0f) || !std::isfinite(args->length_penalty))
      throw UsageError("--length-penalty must be finite and >= 0, got " + std::to_string(args->length_penalty));
    check_coverage_penalty(args->coverage_penalty, args->beam);
    // Only encoder-decoders have alignments: say which kind of model arrived (an LM or a
    // classifier used to be told it "needs --input").
    using decode::CheckpointKind;
    const CheckpointKind kind = require_checkpoint(
        args->model, {CheckpointKind::seq2seq, CheckpointKind::translation, CheckpointKind::g2p, CheckpointKind::asr},
        ": align draws encoder-decoder attention; for a classifier use attn classify");
    args->speech.check(cmd, kind, args->model);
    if (kind == CheckpointKind::asr) {
      align_asr(*args);
      return;
    }
    if (kind == CheckpointKind::g2p) {
      if (args->text.empty()) throw UsageError("a G2P model needs --text WORD");
      align_g2p(*args);
      return;
    }
    if (kind == CheckpointKind::translation) {
      if (args->text.empty()) throw UsageError("a translation model needs --text \"source sentence\"");
      align_translation(*args);
      return;
    }
    if (args->input.empty()) throw UsageError("a synthetic-task model needs --input \"5 9 3 17 4\"");
    std::vector<int32_t> source;
    as_usage([&] { source = data::parse_symbols(args->input); });
    decode::LoadedSeq2Seq loaded = decode::load_seq2seq(args->model);
    refuse_outputs_naming_inputs({{"--out", args->out}, {"--json", args->json_out}});
    std::string output;
    std::vector<float> copy;
    const viz::Heatmap map = alignment_heatmap(*loaded.model, source, args->beam, args->length_penalty, &output,
                                               args->coverage_penalty, &copy);
    viz::write_heatmap(map, args->out);
    if (!args->json_out.empty())
      write_alignment_json(map, data::symbols_to_string(source), output, args->json_out, copy);
    std::printf("input:  %s\noutput: %s\nheatmap: %s\n", data::symbols_to_string(source).c_str(), output.c_str(),
                args->out.c_str());
  });
}

ATTN_REGISTER_COMMAND(50, add_align_command);

}  // namespace attn::cli
