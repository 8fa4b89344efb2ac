#pragma once
// The espeak-ng program (Debian: espeak-ng) as a subprocess: the text goes on its standard
// input, never through a shell; the WAV comes back on its standard output.
#include <string>

namespace attn::data {

struct EspeakVoice {
  std::string voice;  // -v: a language and variant, e.g. "en-us+f2"
  int rate = 175;     // -s: words per minute (espeak-ng's default 175)
  int pitch = 50;     // -p: 0..99 (default 50)
};

// The bytes of the WAV espeak-ng makes of `text` (22,050 Hz, mono, 16-bit). IoError
// "espeak-ng not found; install the Debian package espeak-ng (scripts/install-deps.sh does)"
// when the program is not on PATH, and naming the voice and espeak-ng's own message when it fails.
std::string espeak_wav(const std::string& text, const EspeakVoice& voice);
// espeak-ng's version line, e.g. "eSpeak NG text-to-speech: 1.51" (the data path that follows it
// is dropped). IoError as above when the program is missing.
std::string espeak_version();

}  // namespace attn::data
