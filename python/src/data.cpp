// attn.data: log-mel features and audio (include/attn/data/log_mel.h), and the spoken-sentence
// feature cache (include/attn/data/speech.h), for the parity tests and for users' own audio.
#include <string>
#include <vector>

#include "attn/data/log_mel.h"
#include "attn/data/speech.h"
#include "attn/error.h"
#include "bindings.h"

namespace py = pybind11;

namespace {

// [rows, cols] float32 array holding a copy of `values`.
py::array_t<float> matrix(const std::vector<float>& values, int64_t rows, int64_t cols) {
  py::array_t<float> out({rows, cols});
  if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * sizeof(float));
  return out;
}

void register_data(py::module_& m) {
  using namespace attn::data;
  py::module_ data = m.def_submodule("data", "log-mel features, audio, spoken-sentence sets");
  data.def(
      "log_mel",
      [](const py::array_t<float, py::array::c_style | py::array::forcecast>& samples, int sample_rate, int bins,
         double fmin_hz, double fmax_hz) {
        if (samples.ndim() != 1) throw attn::ShapeError("log_mel: 'samples' expected (N,), got a different rank");
        const std::vector<float> x(samples.data(), samples.data() + samples.size());
        LogMelOptions o;
        o.bins = bins;
        o.fmin_hz = fmin_hz;
        o.fmax_hz = fmax_hz;
        const LogMel log_mel(sample_rate, o);
        return matrix(log_mel.compute(x), log_mel.frames(static_cast<int64_t>(x.size())), log_mel.bins());
      },
      py::arg("samples"), py::arg("sample_rate"), py::arg("bins") = 80, py::arg("fmin_hz") = 0.0,
      py::arg("fmax_hz") = 8000.0, "[frames, bins] log-mel energies of mono samples (docs/data.md)");
  data.def(
      "read_audio",
      [](const std::string& path) {
        Audio a = read_audio(path);
        py::array_t<float> samples(static_cast<py::ssize_t>(a.samples.size()));
        if (!a.samples.empty()) std::memcpy(samples.mutable_data(), a.samples.data(), a.samples.size() * sizeof(float));
        return py::make_tuple(samples, a.sample_rate);
      },
      py::arg("path"), "(samples, sample_rate) of a mono audio file, samples in [-1, 1]");
  data.def(
      "read_speech_set",
      [](const std::string& path) {
        const SpeechSet set = read_speech_set(path);
        py::list utterances;
        for (const SpeechUtterance& u : set.utterances) {
          py::dict d;
          d["id"] = u.id;
          d["voice"] = u.voice;
          d["text"] = u.text;
          d["features"] = matrix(u.features, u.frames, set.bins);
          utterances.append(d);
        }
        py::dict out;
        out["bins"] = set.bins;
        out["provenance"] = set.provenance;
        out["utterances"] = utterances;
        return out;
      },
      py::arg("path"), "A .speech file: {bins, provenance, utterances: [{id, voice, text, features}]}");
}

}  // namespace

ATTN_PYTHON_REGISTER(register_data);
