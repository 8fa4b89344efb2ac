"""attn.safetensors.load / save: numpy and torch dicts round-trip through attn's C++ writer
and reader, the checked conversions, and the reader's validation as Python exceptions."""
import os

import numpy as np
import pytest
import torch

import attn


def test_round_trip_numpy_and_torch(tmp_path):
    path = tmp_path / "t.safetensors"
    rng = np.random.default_rng(0)
    tensors = {"w": rng.standard_normal((3, 4)).astype(np.float32), "ids": np.array([1, -2, 2 ** 31 - 1]),
               "half": np.array([0.5, 1.5], np.float16), "t": torch.arange(6, dtype=torch.float32).reshape(2, 3),
               "scalar": np.float32(2.5) * np.ones((), np.float32)}
    attn.safetensors.save(tensors, path, metadata={"note": "hi"})
    back = attn.safetensors.load(path)
    assert list(back) == list(tensors)
    assert np.array_equal(back["w"], tensors["w"]) and back["w"].dtype == np.float32
    assert np.array_equal(back["ids"], [1, -2, 2 ** 31 - 1]) and back["ids"].dtype == np.int32
    assert np.array_equal(back["half"], [0.5, 1.5]) and back["t"].shape == (2, 3) and back["scalar"].shape == ()
    pt = attn.safetensors.load(path, framework="pt")
    assert torch.equal(pt["t"], tensors["t"]) and pt["ids"].dtype == torch.int32
    assert attn.safetensors.load_metadata(path) == {"note": "hi"}
    # A torch state dict in, loaded into a torch module again.
    linear = torch.nn.Linear(3, 2)
    attn.safetensors.save(linear.state_dict(), path)
    other = torch.nn.Linear(3, 2)
    other.load_state_dict(attn.safetensors.load(path, framework="pt"))
    assert torch.equal(other.weight, linear.weight)


def test_conversions_that_would_lose_values_are_errors(tmp_path):
    path = tmp_path / "t.safetensors"
    with pytest.raises(TypeError, match="'x' is float64; attn stores float32"):
        attn.safetensors.save({"x": np.zeros(2)}, path)
    with pytest.raises(ValueError, match="does not fit in int32"):
        attn.safetensors.save({"x": np.array([2 ** 40])}, path)
    with pytest.raises(TypeError, match="dtype complex64"):
        attn.safetensors.save({"x": np.zeros(2, np.complex64)}, path)
    with pytest.raises(TypeError, match="metadata must map str to str"):
        attn.safetensors.save({"x": np.zeros(2, np.float32)}, path, metadata={"k": 1})
    with pytest.raises(TypeError, match="must be a dict"):
        attn.safetensors.save([np.zeros(2, np.float32)], path)
    assert not os.path.exists(path)  # nothing written by a refused save


def test_reader_validation(tmp_path):
    with pytest.raises(attn.IoError, match="missing.safetensors"):
        attn.safetensors.load(tmp_path / "missing.safetensors")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{bad}")
    with pytest.raises(attn.IoError, match="header is not valid JSON"):
        attn.safetensors.load(bad)
    good = tmp_path / "good.safetensors"
    attn.safetensors.save({"w": np.ones((4, 4), np.float32)}, good)
    truncated = tmp_path / "truncated.safetensors"
    truncated.write_bytes(good.read_bytes()[:-8])
    with pytest.raises(attn.IoError):
        attn.safetensors.load(truncated)
    with pytest.raises(ValueError, match="framework must be 'numpy' or 'pt'"):
        attn.safetensors.load(good, framework="jax")
