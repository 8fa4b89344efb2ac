#pragma once
// One utterance's alignment by an ASR (listen-attend-spell) model: what attn align draws and
// attn view shows. The output characters (and EOS) down, the listener frames across, the
// log-mel features under them on the same time axis (listener frame i covers input frames
// [i·r, (i+1)·r) for the model's time reduction r), and for online attention (monotonic,
// MoChA) the frame where each output step stopped.
#include <cstdint>
#include <string>
#include <vector>

#include "attn/data/speech.h"
#include "attn/decode/asr.h"

namespace attn::explain {

struct AsrAlignment {
  std::string text;               // the hypothesis
  std::vector<std::string> rows;  // R: its characters (a space shown as "_"), then "</s>" for the step that chose EOS
  int64_t frames = 0;             // C: the utterance's listener frames
  std::vector<float> weights;     // (R, C): each output step's attention (heads averaged)
  std::vector<int> frames_read;   // (R): the listener frames read before each step (decode::frames_read)
  bool online = false;            // monotonic or MoChA attention
  // Online attention only, else empty: (R) the last frame with weight of each step (hard
  // monotonic: the selected one; MoChA: the end of its chunk), −1 for a step that read to the
  // end without stopping (zero weights).
  std::vector<int64_t> stops;
};

// The log-mel features under an alignment, padded to whole listener frames.
struct AsrSpectrogram {
  int64_t reduction = 1;     // r: input frames to a listener frame
  int64_t bins = 0;          // log-mel bins
  int64_t input_frames = 0;  // the utterance's frames
  // (C·r, bins), row-major as data::SpeechUtterance::features: the features, the last
  // listener frame's missing input frames filled with the features' minimum.
  std::vector<float> values;
};

// The alignment of `utterance` decoded greedily (beam 1) or as the best of a beam (GNMT's
// length penalty α). ValueError as decode::transcribe for features the model cannot read.
AsrAlignment asr_alignment(decode::LoadedAsr& model, const data::SpeechUtterance& utterance, int beam,
                           float length_penalty);

AsrSpectrogram asr_spectrogram(const decode::LoadedAsr& model, const data::SpeechUtterance& utterance);

// A title naming the score, the utterance and, for online attention, the red stop marks.
std::string asr_alignment_title(const decode::LoadedAsr& model, const std::string& utterance_id);

}  // namespace attn::explain
