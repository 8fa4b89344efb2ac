#pragma once
// Log-mel features of mono audio, as `attn data speech` computes them (docs/data.md, "Spoken
// sentences"):
//
//   data::Audio audio = data::read_audio("hello.wav");        // libsndfile: WAV, FLAC, ...
//   data::LogMel log_mel(audio.sample_rate);                    // plans the FFT once
//   std::vector<float> features = log_mel.compute(audio.samples);  // [frames, 80], row-major
//
// At the file's own sample rate sr (no resampling):
//   window  W = round(0.025 sr) samples (551 at espeak-ng's 22,050 Hz, 400 at 16 kHz), a
//           periodic Hann window w[n] = 0.5 - 0.5 cos(2 pi n / W); the FFT is W points long
//           (FFTW, any size), so frame t is the power spectrum |rfft(w * x[t hop .. t hop + W))|^2,
//           W/2 + 1 values, of unscaled samples in [-1, 1];
//   hop     H = round(0.010 sr) samples (221 at 22,050 Hz: 10.02 ms); no padding: frames =
//           1 + (N - W) / H for N >= W samples, the last partial window dropped;
//   mel     HTK mel scale, m(f) = 2595 log10(1 + f / 700); `bins` triangular filters with
//           centres equally spaced in mel between fmin and fmax (fmax clipped to sr / 2), peak 1,
//           not area-normalised (torchaudio's MelScale defaults: mel_scale "htk", norm None);
//   log     the natural log of max(energy, floor), floor 1e-10: silence is log(1e-10) = -23.03.
// As torch.stft(x, n_fft=W, hop_length=H, window=hann_window(W), center=False) followed by that
// filterbank (tests/parity/test_log_mel.py checks it against this formula).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attn::data {

struct LogMelOptions {
  int bins = 80;
  double window_ms = 25.0;
  double hop_ms = 10.0;
  double fmin_hz = 0.0;
  double fmax_hz = 8000.0;  // clipped to the Nyquist frequency, sr / 2
  float floor = 1e-10f;     // log(max(energy, floor))
};

// Mono audio, samples in [-1, 1].
struct Audio {
  int sample_rate = 0;
  std::vector<float> samples;
};

// The audio in `path` through libsndfile (WAV, FLAC, Ogg, ... of 16-bit, 24-bit or float
// samples). IoError "<path>: ..." when it cannot be read; ValueError for more than one channel.
Audio read_audio(const std::string& path);
// The same from the bytes of an audio file in memory (espeak-ng's --stdout WAV); `name` is
// for messages.
Audio read_audio_bytes(std::string_view bytes, const std::string& name);

class LogMel {
 public:
  // ValueError for options that make no filterbank: sample_rate < 1000, bins < 1, a window
  // under 16 samples, a hop under 1, fmin >= fmax, or a filter that covers no FFT bin (too
  // many bins for the window's frequency resolution, sr / W).
  explicit LogMel(int sample_rate, const LogMelOptions& options = {});
  ~LogMel();
  LogMel(const LogMel&) = delete;
  LogMel& operator=(const LogMel&) = delete;

  int sample_rate() const { return sample_rate_; }
  int window() const { return window_; }  // W samples, also the FFT length
  int hop() const { return hop_; }        // H samples
  int bins() const { return options_.bins; }
  const LogMelOptions& options() const { return options_; }
  double fmax_hz() const { return fmax_hz_; }  // options().fmax_hz clipped to sr / 2
  // The number of frames of `samples` samples: 1 + (samples - W) / H, or 0 when shorter than W.
  int64_t frames(int64_t samples) const;
  // The [bins, W/2 + 1] filterbank, row-major.
  const std::vector<float>& filterbank() const { return filterbank_; }

  // [frames(N), bins] log-mel energies of N samples, row-major. ValueError "audio of N samples
  // (x ms) is shorter than one window (W samples, 25 ms)" when N < W, and for a non-finite sample.
  // Thread-safe: the FFT plan is shared, the buffers are per call.
  std::vector<float> compute(const std::vector<float>& samples) const;

 private:
  struct Plan;
  int sample_rate_;
  LogMelOptions options_;
  int window_ = 0, hop_ = 0;
  double fmax_hz_ = 0.0;
  std::vector<float> hann_;        // [W]
  std::vector<float> filterbank_;  // [bins, W/2 + 1]
  std::unique_ptr<Plan> plan_;
};

}  // namespace attn::data
