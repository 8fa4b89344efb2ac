// Log-mel features (attn/data/log_mel.h): libsndfile reads the audio, FFTW's single-precision
// real FFT (fftw3f) gives each frame's spectrum.
#include "attn/data/log_mel.h"

#include <fftw3.h>
#include <fmt/format.h>
#include <sndfile.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "attn/error.h"
#include "attn/io/input_file.h"
#include "attn/printable.h"

namespace attn::data {
namespace {

constexpr double kPi = 3.14159265358979323846;

double hz_to_mel(double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); }
double mel_to_hz(double mel) { return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0); }

// FFTW's planner is not thread-safe; executing a plan on new arrays is.
std::mutex& fftw_planner_mutex() {
  static std::mutex m;
  return m;
}

// The samples of an open libsndfile handle; closes it.
Audio read_sndfile(SNDFILE* file, const SF_INFO& info, const std::string& name) {
  struct Closer {
    SNDFILE* f;
    ~Closer() { sf_close(f); }
  } closer{file};
  if (info.channels != 1)
    throw ValueError(
        fmt::format("{}: {} channels; log-mel features take mono audio (mix it down first, e.g. "
                    "sox in.wav -c 1 out.wav)",
                    printable(name, false, 200), info.channels));
  if (info.samplerate < 1)
    throw IoError(fmt::format("{}: sample rate {}", printable(name, false, 200), info.samplerate));
  Audio audio;
  audio.sample_rate = info.samplerate;
  // Read in blocks: a stream's header (espeak-ng --stdout) does not give the true length.
  std::vector<float> block(1 << 16);
  for (;;) {
    const sf_count_t got = sf_readf_float(file, block.data(), static_cast<sf_count_t>(block.size()));
    if (got <= 0) break;
    audio.samples.insert(audio.samples.end(), block.begin(), block.begin() + got);
  }
  if (sf_error(file) != SF_ERR_NO_ERROR)
    throw IoError(fmt::format("{}: cannot read the audio: {}", printable(name, false, 200), sf_strerror(file)));
  return audio;
}

// libsndfile's virtual I/O over bytes in memory.
struct MemoryFile {
  std::string_view bytes;
  sf_count_t at = 0;
};

sf_count_t memory_length(void* user) { return static_cast<sf_count_t>(static_cast<MemoryFile*>(user)->bytes.size()); }

sf_count_t memory_seek(sf_count_t offset, int whence, void* user) {
  auto* m = static_cast<MemoryFile*>(user);
  const sf_count_t size = static_cast<sf_count_t>(m->bytes.size());
  const sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->at : size;
  m->at = std::clamp<sf_count_t>(base + offset, 0, size);
  return m->at;
}

sf_count_t memory_read(void* out, sf_count_t count, void* user) {
  auto* m = static_cast<MemoryFile*>(user);
  const sf_count_t n = std::clamp<sf_count_t>(static_cast<sf_count_t>(m->bytes.size()) - m->at, 0, count);
  std::memcpy(out, m->bytes.data() + m->at, static_cast<size_t>(n));
  m->at += n;
  return n;
}

sf_count_t memory_write(const void*, sf_count_t, void*) { return 0; }
sf_count_t memory_tell(void* user) { return static_cast<MemoryFile*>(user)->at; }

}  // namespace

Audio read_audio(const std::string& path) {
  const int fd = io::open_regular_file(path);  // IoError for a missing file, a FIFO, a folder
  SF_INFO info{};
  SNDFILE* file = sf_open_fd(fd, SFM_READ, &info, /*close_desc=*/SF_TRUE);
  if (file == nullptr) {
    const std::string why = sf_strerror(nullptr);
    ::close(fd);  // sf_open_fd leaves it open when it fails
    throw IoError(fmt::format("{}: cannot read audio: {}", printable(path, false, 200), why));
  }
  return read_sndfile(file, info, path);
}

Audio read_audio_bytes(std::string_view bytes, const std::string& name) {
  MemoryFile memory{bytes};
  SF_VIRTUAL_IO io{memory_length, memory_seek, memory_read, memory_write, memory_tell};
  SF_INFO info{};
  SNDFILE* file = sf_open_virtual(&io, SFM_READ, &info, &memory);
  if (file == nullptr)
    throw IoError(fmt::format("{}: cannot read audio: {}", printable(name, false, 200), sf_strerror(nullptr)));
  return read_sndfile(file, info, name);
}

struct LogMel::Plan {
  fftwf_plan plan = nullptr;
  ~Plan() {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    if (plan != nullptr) fftwf_destroy_plan(plan);
  }
};

LogMel::LogMel(int sample_rate, const LogMelOptions& options) : sample_rate_(sample_rate), options_(options) {
  const LogMelOptions& o = options_;
  if (sample_rate < 1000) throw ValueError(fmt::format("log-mel: sample rate {} Hz is below 1000 Hz", sample_rate));
  if (o.bins < 1) throw ValueError(fmt::format("log-mel: bins must be >= 1, got {}", o.bins));
  if (!(o.floor > 0.0f) || !std::isfinite(o.floor))
    throw ValueError(fmt::format("log-mel: the floor must be a positive number, got {}", o.floor));
  // sr * ms / 1000 is exact for whole milliseconds (10 ms at 22,050 Hz: 220.5, rounded up to 221).
  window_ = static_cast<int>(std::lround(o.window_ms * sample_rate / 1000.0));
  hop_ = static_cast<int>(std::lround(o.hop_ms * sample_rate / 1000.0));
  if (!(window_ >= 16)) throw ValueError(fmt::format("log-mel: a {} ms window is under 16 samples", o.window_ms));
  if (!(hop_ >= 1)) throw ValueError(fmt::format("log-mel: a {} ms hop is under one sample", o.hop_ms));
  const double fmax = fmax_hz_ = std::min(o.fmax_hz, sample_rate / 2.0);
  if (!(o.fmin_hz >= 0.0 && o.fmin_hz < fmax))
    throw ValueError(fmt::format("log-mel: fmin {} Hz must be in [0, fmax = {} Hz)", o.fmin_hz, fmax));

  // Periodic Hann window (torch.hann_window's default): w[n] = 0.5 - 0.5 cos(2 pi n / W).
  hann_.resize(static_cast<size_t>(window_));
  for (int n = 0; n < window_; ++n)
    hann_[static_cast<size_t>(n)] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * kPi * n / window_));

  // Triangular filters on the HTK mel scale: bins + 2 points equally spaced in mel; filter m rises
  // from point m to point m + 1 and falls to point m + 2, weight max(0, min(up, down)).
  const int spectrum = window_ / 2 + 1;
  std::vector<double> points(static_cast<size_t>(o.bins) + 2);
  const double mel_lo = hz_to_mel(o.fmin_hz), mel_hi = hz_to_mel(fmax);
  for (size_t i = 0; i < points.size(); ++i)
    points[i] = mel_to_hz(mel_lo + (mel_hi - mel_lo) * static_cast<double>(i) / (o.bins + 1));
  filterbank_.assign(static_cast<size_t>(o.bins) * spectrum, 0.0f);
  for (int m = 0; m < o.bins; ++m) {
    const double lo = points[static_cast<size_t>(m)], centre = points[static_cast<size_t>(m) + 1],
                 hi = points[static_cast<size_t>(m) + 2];
    double sum = 0.0;
    for (int k = 0; k < spectrum; ++k) {
      const double f = static_cast<double>(k) * sample_rate / window_;
      const double w = std::max(0.0, std::min((f - lo) / (centre - lo), (hi - f) / (hi - centre)));
      filterbank_[static_cast<size_t>(m) * spectrum + k] = static_cast<float>(w);
      sum += w;
    }
    if (sum == 0.0)
      throw ValueError(
          fmt::format("log-mel: mel filter {} ({:.1f}-{:.1f} Hz) covers no FFT bin: {} bins are too many "
                      "for a {}-sample window at {} Hz ({:.1f} Hz a bin)",
                      m, lo, hi, o.bins, window_, sample_rate, static_cast<double>(sample_rate) / window_));
  }

  // One plan for every frame (FFTW_ESTIMATE: no timing runs, so the same plan every time).
  plan_ = std::make_unique<Plan>();
  float* in = fftwf_alloc_real(static_cast<size_t>(window_));
  fftwf_complex* out = fftwf_alloc_complex(static_cast<size_t>(spectrum));
  {
    std::lock_guard<std::mutex> lock(fftw_planner_mutex());
    plan_->plan = fftwf_plan_dft_r2c_1d(window_, in, out, FFTW_ESTIMATE);
  }
  fftwf_free(in);
  fftwf_free(out);
  if (plan_->plan == nullptr) throw ValueError(fmt::format("log-mel: FFTW made no plan for {} points", window_));
}

LogMel::~LogMel() = default;

int64_t LogMel::frames(int64_t samples) const { return samples < window_ ? 0 : 1 + (samples - window_) / hop_; }

std::vector<float> LogMel::compute(const std::vector<float>& samples) const {
  const int64_t n = static_cast<int64_t>(samples.size());
  if (n < window_)
    throw ValueError(
        fmt::format("log-mel: audio of {} samples ({:.1f} ms) is shorter than one window ({} samples, {} ms)", n,
                    1e3 * static_cast<double>(n) / sample_rate_, window_, options_.window_ms));
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(samples[static_cast<size_t>(i)]))
      throw ValueError(fmt::format("log-mel: sample {} is not finite", i));
  const int64_t T = frames(n);
  const int bins = options_.bins, spectrum = window_ / 2 + 1;
  std::vector<float> features(static_cast<size_t>(T) * bins);
  // fftwf_malloc'ed, so aligned as the arrays the plan was made with.
  struct Buffers {
    float* in;
    fftwf_complex* out;
    ~Buffers() {
      fftwf_free(in);
      fftwf_free(out);
    }
  } buffer{fftwf_alloc_real(static_cast<size_t>(window_)), fftwf_alloc_complex(static_cast<size_t>(spectrum))};
  std::vector<float> power(static_cast<size_t>(spectrum));
  for (int64_t t = 0; t < T; ++t) {
    const float* x = samples.data() + t * hop_;
    for (int i = 0; i < window_; ++i) buffer.in[i] = x[i] * hann_[static_cast<size_t>(i)];
    fftwf_execute_dft_r2c(plan_->plan, buffer.in, buffer.out);
    for (int k = 0; k < spectrum; ++k)  // |X_k|^2
      power[static_cast<size_t>(k)] = buffer.out[k][0] * buffer.out[k][0] + buffer.out[k][1] * buffer.out[k][1];
    float* row = features.data() + t * bins;  // (bins,)
    for (int m = 0; m < bins; ++m) {
      const float* filter = filterbank_.data() + static_cast<size_t>(m) * spectrum;
      double energy = 0.0;
      for (int k = 0; k < spectrum; ++k) energy += static_cast<double>(filter[k]) * power[static_cast<size_t>(k)];
      row[m] = static_cast<float>(std::log(std::max(energy, static_cast<double>(options_.floor))));
    }
  }
  return features;
}

}  // namespace attn::data
