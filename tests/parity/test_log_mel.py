"""attn.data.log_mel (src/data/log_mel.cpp: FFTW float32) against a reference written from the
formula of include/attn/data/log_mel.h in float64: torch.stft (center=False, a periodic Hann
window of W = round(0.025 sr) samples, n_fft = W, hop round(0.010 sr)), |X|^2, a numpy HTK mel
filterbank (peak 1, not normalised, fmin 0, fmax min(8000, sr/2)), log(max(., 1e-10)).
torchaudio is not installed; the filterbank here is written from the formula, not taken from attn.

Tolerance: TOLERANCES["log_mel"] in parity.py, on natural-log energies (about -23 to 10)."""
import os
import shutil
import subprocess
import wave

import numpy as np
import pytest
import torch

import attn
from parity import assert_close, rng

FLOOR = 1e-10


def htk_mel(hz):
    return 2595.0 * np.log10(1.0 + hz / 700.0)


def htk_hz(mel):
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def mel_matrix(sr, n_fft, bins, fmin=0.0, fmax=8000.0):
    """[bins, n_fft // 2 + 1]: triangles between bins + 2 points equally spaced in HTK mel."""
    fmax = min(fmax, sr / 2)
    freqs = np.arange(n_fft // 2 + 1) * sr / n_fft
    points = htk_hz(np.linspace(htk_mel(fmin), htk_mel(fmax), bins + 2))
    lo, centre, hi = points[:-2, None], points[1:-1, None], points[2:, None]
    up = (freqs[None, :] - lo) / (centre - lo)
    down = (hi - freqs[None, :]) / (hi - centre)
    return np.maximum(0.0, np.minimum(up, down))


def window_and_hop(sr):
    """round(25 ms), round(10 ms) in samples, halves away from zero (C's lround): 551 and 221 at 22,050 Hz."""
    return int(np.floor(sr * 25 / 1000 + 0.5)), int(np.floor(sr * 10 / 1000 + 0.5))


def reference_log_mel(samples, sr, bins=80):
    window, hop = window_and_hop(sr)
    x = torch.tensor(np.asarray(samples, np.float64))
    spec = torch.stft(x, n_fft=window, hop_length=hop, win_length=window,
                      window=torch.hann_window(window, periodic=True, dtype=torch.float64),
                      center=False, return_complex=True)  # (W/2 + 1, frames)
    power = (spec.abs() ** 2).numpy()
    energy = mel_matrix(sr, window, bins) @ power  # (bins, frames)
    return np.log(np.maximum(energy, FLOOR)).T  # (frames, bins)


def broadband(sr, seconds, seed):
    """White noise under three tones and a chirp: every mel filter gets energy, so float32
    rounding is small against each bin and the comparison can be tight."""
    n = int(sr * seconds)
    t = np.arange(n) / sr
    x = 0.05 * rng(seed).standard_normal(n)
    for hz, a in ((220.0, 0.3), (1000.0, 0.2), (3500.0, 0.1)):
        x += a * np.sin(2 * np.pi * hz * t)
    x += 0.1 * np.sin(2 * np.pi * (100.0 * t + 2000.0 * t * t))  # 100 Hz rising 4 kHz a second
    return x.astype(np.float32)


@pytest.mark.parametrize("sr", [16000, 22050, 44100])
def test_log_mel_matches_the_formula(sr):
    x = broadband(sr, 0.7, seed=sr)
    actual = attn.data.log_mel(x, sr)
    expected = reference_log_mel(x, sr)
    window, hop = window_and_hop(sr)
    assert actual.shape == expected.shape == (1 + (len(x) - window) // hop, 80)
    assert_close("log_mel", f"broadband sr={sr}", "log-mel", actual, expected)


def test_silence_gives_the_floor_and_short_audio_is_refused():
    quiet = attn.data.log_mel(np.zeros(4000, np.float32), 16000)
    assert quiet.shape == (23, 80)
    assert np.all(quiet == np.float32(np.log(np.float32(FLOOR))))
    with pytest.raises(ValueError, match="shorter than one window"):
        attn.data.log_mel(np.zeros(399, np.float32), 16000)


def write_wav(path, samples, sr):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sr)
        w.writeframes((np.clip(samples, -1, 1) * 32767).round().astype("<i2").tobytes())


def read_wav(path):
    with wave.open(str(path), "rb") as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64) / 32768.0, w.getframerate()


def test_wav_reading_scales_16_bit_samples(tmp_path):
    x = broadband(22050, 0.3, seed=3) * 0.5
    write_wav(tmp_path / "a.wav", x, 22050)
    samples, sr = attn.data.read_audio(str(tmp_path / "a.wav"))
    expected, expected_sr = read_wav(tmp_path / "a.wav")
    assert sr == expected_sr == 22050
    np.testing.assert_array_equal(samples, expected.astype(np.float32))  # k / 32768, exact in float32


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (scripts/install-deps.sh)")
def test_log_mel_of_espeak_speech(tmp_path):
    """Real speech: espeak-ng's 22,050 Hz WAV, with its silences (exact zeros: the floor on both
    sides). Bins far below their frame's loudest hold float32 FFT rounding of the loud ones, so
    only bins within 1e-6 of their frame's maximum energy (13.8 in log) are compared."""
    wav = tmp_path / "s.wav"
    subprocess.run(["espeak-ng", "-v", "en-us+f2", "-w", str(wav)], input=b"The quick brown fox jumps over the dog.",
                   check=True)
    samples, sr = attn.data.read_audio(str(wav))
    actual = attn.data.log_mel(samples, sr)
    expected = reference_log_mel(read_wav(wav)[0], sr)
    assert actual.shape == expected.shape and actual.shape[0] > 100
    loud = expected >= expected.max(axis=1, keepdims=True) - np.log(1e6)
    assert loud.mean() > 0.5
    assert_close("log_mel", "espeak-ng speech", "log-mel (loud bins)", actual[loud], expected[loud])
    window, hop = window_and_hop(sr)
    silent = np.array([not samples[t * hop:t * hop + window].any() for t in range(actual.shape[0])])
    assert silent.any()  # espeak-ng pauses between words
    assert np.all(actual[silent] == np.float32(np.log(np.float32(FLOOR))))
    assert np.all(expected[silent] == np.log(FLOOR))
