#include "attn/explain/asr_alignment.h"

#include <algorithm>

#include "attn/data/text.h"

namespace attn::explain {
namespace {

// The last frame with weight of each step, −1 where every weight is zero.
std::vector<int64_t> stop_frames(const std::vector<std::vector<float>>& steps) {
  std::vector<int64_t> stops;
  for (const std::vector<float>& row : steps) {
    int64_t stop = -1;
    for (size_t f = 0; f < row.size(); ++f)
      if (row[f] > 0.0f) stop = static_cast<int64_t>(f);
    stops.push_back(stop);
  }
  return stops;
}

}  // namespace

AsrAlignment asr_alignment(decode::LoadedAsr& model, const data::SpeechUtterance& utterance, int beam,
                           float length_penalty) {
  const decode::Transcript t =
      decode::transcribe(model, {utterance}, {.beam = beam, .length_penalty = length_penalty, .attention = true}).at(0);
  AsrAlignment a;
  a.text = t.text;
  a.frames = t.frames;
  a.rows = data::utf8_characters(t.text);
  for (std::string& c : a.rows)
    if (c == " ") c = "_";                                         // a space, visible
  if (t.weights.size() > a.rows.size()) a.rows.push_back("</s>");  // the step that chose EOS
  a.rows.resize(std::min(a.rows.size(), t.weights.size()));
  const size_t R = a.rows.size();
  for (size_t r = 0; r < R; ++r) a.weights.insert(a.weights.end(), t.weights[r].begin(), t.weights[r].end());
  a.frames_read.assign(t.frames_read.begin(), t.frames_read.begin() + static_cast<std::ptrdiff_t>(R));
  a.online = model.model->speller.attention->online();
  if (a.online) a.stops = stop_frames({t.weights.begin(), t.weights.begin() + static_cast<std::ptrdiff_t>(R)});
  return a;
}

AsrSpectrogram asr_spectrogram(const decode::LoadedAsr& model, const data::SpeechUtterance& utterance) {
  const models::AsrConfig& config = model.info.config;
  AsrSpectrogram s{config.reduction, config.bins, utterance.frames, utterance.features};
  const int64_t listener_frames = config.encoded_length(utterance.frames);
  const float floor =
      utterance.features.empty() ? 0.0f : *std::min_element(utterance.features.begin(), utterance.features.end());
  s.values.resize(static_cast<size_t>(listener_frames * s.reduction * s.bins), floor);
  return s;
}

std::string asr_alignment_title(const decode::LoadedAsr& model, const std::string& utterance_id) {
  return "ASR attention (" + model.info.config.speller.effective_score() + ") over listener frames: " + utterance_id +
         (model.model->speller.attention->online() ? " (red: where each step stopped)" : "");
}

}  // namespace attn::explain
