// Building a spoken-sentence set (attn/data/speech_build.h).
#include "attn/data/speech_build.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "attn/data/espeak.h"
#include "attn/data/log_mel.h"
#include "attn/data/speech.h"
#include "attn/data/tatoeba.h"
#include "attn/data/text.h"
#include "attn/error.h"
#include "attn/io/atomic_file.h"
#include "attn/io/output_folder.h"
#include "attn/random.h"

namespace attn::data {
namespace {
namespace fs = std::filesystem;

// The split draws: a sentence is test with probability 0.1 (spoken by a test voice), dev with
// 0.1 and train with 0.8 (both spoken by a training voice).
constexpr float kTestShare = 0.1f, kDevShare = 0.1f;
// espeak-ng's rate (-s, words a minute) and pitch (-p), drawn uniformly from these ranges.
constexpr int kRateMin = 130, kRateMax = 210, kPitchMin = 25, kPitchMax = 75;
const char* const kSplits[] = {"train", "dev", "test"};

struct Sentence {
  std::string spoken;      // as in the file: what espeak-ng reads (punctuation gives it prosody)
  std::string transcript;  // speech_transcript(spoken)
};

// The first `count` usable sentences: distinct English sentences of fra.txt.gz in file order
// (the file is sorted by length, so the shortest first), distinct again after normalisation.
std::vector<Sentence> read_sentences(const std::string& data_dir, int64_t count, SpeechBuildReport& report) {
  const std::string path = require_tatoeba_file(data_dir);
  std::vector<Sentence> out;
  std::unordered_set<std::string> seen_english, seen_transcripts;
  for (TatoebaPair& pair : read_tatoeba(path)) {
    std::string& english = pair.english;
    if (!seen_english.insert(english).second) continue;
    ++report.sentences_read;
    std::string dropped;
    std::string transcript = speech_transcript(english, &dropped);
    if (dropped == "digits") ++report.dropped_digits;
    if (transcript.empty()) {
      if (dropped != "digits") ++report.dropped_other;
      continue;
    }
    if (!seen_transcripts.insert(transcript).second) {
      ++report.dropped_repeats;
      continue;
    }
    out.push_back({std::move(english), std::move(transcript)});
    if (static_cast<int64_t>(out.size()) == count) break;
  }
  if (static_cast<int64_t>(out.size()) < count)
    throw ValueError(fmt::format("{}: only {} usable sentences, {} asked for (--sentences)", path, out.size(), count));
  return out;
}

// White noise at `snr_db` below the utterance's mean power: sigma^2 = mean(x^2) / 10^(snr/10).
void add_noise(std::vector<float>& samples, double snr_db, Rng& rng) {
  double power = 0.0;
  for (float x : samples) power += static_cast<double>(x) * x;
  power /= std::max<size_t>(samples.size(), 1);
  const float sigma = static_cast<float>(std::sqrt(power / std::pow(10.0, snr_db / 10.0)));
  for (float& x : samples) x += sigma * rng.normal();
}

std::string provenance_of(const std::string& version, const SpeechBuildOptions& o, const LogMel& log_mel) {
  return fmt::format(
      "attn data speech: {}; seed {}; {} sentences of tatoeba-fra-eng fra.txt.gz (shortest first); rate {}-{} wpm, "
      "pitch {}-{}; noise {}; log-mel {} bins (HTK, {}-{} Hz), {}-sample window, {}-sample hop at {} Hz",
      version, o.seed, o.sentences, kRateMin, kRateMax, kPitchMin, kPitchMax,
      o.snr_db ? fmt::format("white at {} dB SNR", *o.snr_db) : "none", log_mel.bins(), log_mel.options().fmin_hz,
      log_mel.fmax_hz(), log_mel.window(), log_mel.hop(), log_mel.sample_rate());
}

nlohmann::ordered_json manifest_of(const SpeechBuildReport& r, const SpeechBuildOptions& o, const LogMel& log_mel) {
  nlohmann::ordered_json m;
  m["format"] = "attn speech set";
  m["version"] = kSpeechSetVersion;
  m["espeak_ng"] = r.espeak_version;
  m["source"] = {{"data", (fs::path(o.data_dir) / "fra.txt.gz").string()},
                 {"rule", "distinct English sentences in file order (shortest first), distinct after normalisation"},
                 {"sentences_read", r.sentences_read},
                 {"dropped",
                  {{"digits", r.dropped_digits},
                   {"other_characters", r.dropped_other},
                   {"repeats_after_normalisation", r.dropped_repeats}}}};
  m["seed"] = o.seed;
  m["snr_db"] = o.snr_db ? nlohmann::ordered_json(*o.snr_db) : nlohmann::ordered_json(nullptr);
  m["voices"] = {{"train_and_dev", speech_train_voices()}, {"test", speech_test_voices()}};
  m["rate_wpm"] = {kRateMin, kRateMax};
  m["pitch"] = {kPitchMin, kPitchMax};
  m["features"] = {{"bins", log_mel.bins()},
                   {"sample_rate", log_mel.sample_rate()},
                   {"window_samples", log_mel.window()},
                   {"hop_samples", log_mel.hop()},
                   {"mel", "htk"},
                   {"fmin_hz", log_mel.options().fmin_hz},
                   {"fmax_hz", log_mel.fmax_hz()},
                   {"log_floor", std::stod(fmt::format("{:g}", log_mel.options().floor))},
                   {"encoding", "fp16"},
                   {"bytes_per_frame", speech_set_bytes_per_frame(log_mel.bins())}};
  nlohmann::ordered_json splits;
  for (const SpeechSplitReport& s : r.splits)
    splits[s.name] = {
        {"file", s.name + ".speech"}, {"utterances", s.utterances}, {"frames", s.frames}, {"bytes", s.bytes}};
  m["splits"] = splits;
  m["build_seconds"] = std::round(r.seconds * 10.0) / 10.0;
  return m;
}

}  // namespace

const std::vector<std::string>& speech_train_voices() {
  static const std::vector<std::string> voices = {"en-us+m1",  "en-us+f2",          "en-gb+m3",
                                                  "en-gb+f1",  "en-gb-scotland+m4", "en-gb-x-rp+f3",
                                                  "en-029+m2", "en-gb-x-gbcwmd+f4", "en-us+m6"};
  return voices;
}

const std::vector<std::string>& speech_test_voices() {
  // An accent never heard in training (Lancaster), and two unseen variants of known accents.
  static const std::vector<std::string> voices = {"en-gb-x-gbclan+m5", "en-us+f5", "en-029+f1"};
  return voices;
}

std::string speech_transcript(std::string_view sentence, std::string* dropped) {
  std::string out;
  dropped->clear();
  for (size_t i = 0; i < sentence.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(sentence[i]);
    char mapped = 0;  // 0: removed
    if (c >= 'A' && c <= 'Z') {
      mapped = static_cast<char>(c - 'A' + 'a');
    } else if ((c >= 'a' && c <= 'z') || c == '\'') {
      mapped = static_cast<char>(c);
    } else if (c == ' ' || c == '-' || c == '\t') {
      mapped = ' ';
    } else if (sentence.substr(i, 3) == "\xe2\x80\x99" || sentence.substr(i, 3) == "\xe2\x80\x98") {  // ’ ‘
      mapped = '\'';
      i += 2;
    } else if (c >= '0' && c <= '9') {
      *dropped = "digits";
      return "";
    } else if (std::string_view(".,!?;:\"").find(static_cast<char>(c)) == std::string_view::npos) {
      *dropped = "other characters";
      return "";
    }
    if (mapped == ' ' && (out.empty() || out.back() == ' ')) continue;
    if (mapped != 0) out += mapped;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.empty()) *dropped = "empty";
  return out;
}

SpeechBuildReport build_speech_set(const SpeechBuildOptions& o) {
  if (o.sentences < 1) throw ValueError(fmt::format("--sentences must be >= 1, got {}", o.sentences));
  if (o.snr_db && !std::isfinite(*o.snr_db)) throw ValueError("--snr must be a finite number of dB");
  const auto start = std::chrono::steady_clock::now();
  SpeechBuildReport report;
  report.espeak_version = espeak_version();  // first: a missing espeak-ng is reported before any work
  io::NewFolder folder(o.out_dir, "--out");
  const std::vector<Sentence> sentences = read_sentences(o.data_dir, o.sentences, report);

  SpeechSet sets[3];
  std::unique_ptr<LogMel> log_mel;
  Rng draws(o.seed);  // split, voice, rate and pitch: four draws a sentence, whatever --snr is
  for (size_t i = 0; i < sentences.size(); ++i) {
    const float u = draws.uniform();
    const int split = u < kTestShare ? 2 : u < kTestShare + kDevShare ? 1 : 0;
    const std::vector<std::string>& voices = split == 2 ? speech_test_voices() : speech_train_voices();
    EspeakVoice voice;
    voice.voice = voices[draws.below(voices.size())];
    voice.rate = kRateMin + static_cast<int>(draws.below(kRateMax - kRateMin + 1));
    voice.pitch = kPitchMin + static_cast<int>(draws.below(kPitchMax - kPitchMin + 1));
    const std::string id = fmt::format("s{:06d}", i);
    Audio audio = read_audio_bytes(espeak_wav(sentences[i].spoken, voice), "espeak-ng's audio of " + id);
    if (!log_mel) log_mel = std::make_unique<LogMel>(audio.sample_rate);
    if (audio.sample_rate != log_mel->sample_rate())
      throw IoError(fmt::format("espeak-ng's audio of {} is at {} Hz, the set's at {} Hz", id, audio.sample_rate,
                                log_mel->sample_rate()));
    if (o.snr_db) {
      Rng noise(splitmix64(o.seed ^ 0x6e6f697365ull) ^ splitmix64(i));  // "noise": its own stream per utterance
      add_noise(audio.samples, *o.snr_db, noise);
    }
    SpeechUtterance utterance;
    utterance.id = id;
    utterance.voice = voice.voice;  // rate and pitch follow from the seed
    utterance.text = sentences[i].transcript;
    utterance.features = log_mel->compute(audio.samples);
    utterance.frames = log_mel->frames(static_cast<int64_t>(audio.samples.size()));
    sets[split].utterances.push_back(std::move(utterance));
    if (o.progress) o.progress(static_cast<int64_t>(i) + 1, static_cast<int64_t>(sentences.size()));
  }

  const std::string provenance = provenance_of(report.espeak_version, o, *log_mel);
  for (int s = 0; s < 3; ++s) {
    sets[s].bins = log_mel->bins();
    sets[s].provenance = provenance;
    const std::string file = folder.file(std::string(kSplits[s]) + ".speech");
    write_speech_set(file, sets[s]);
    SpeechSplitReport split{kSplits[s], static_cast<int64_t>(sets[s].utterances.size()), 0,
                            static_cast<int64_t>(fs::file_size(file))};
    for (const SpeechUtterance& u : sets[s].utterances) split.frames += u.frames;
    report.splits.push_back(split);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  io::write_file_atomically(folder.file("manifest.json"), manifest_of(report, o, *log_mel).dump(2) + "\n");
  folder.commit();
  return report;
}

}  // namespace attn::data
