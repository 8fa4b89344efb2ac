"""attn.safetensors: plain tensor dicts to and from safetensors files, through attn's C++
reader and writer (the same validation as the CLI's checkpoint loader: header, offsets,
sizes, dtypes, CRC-32s when stored; writes are atomic). No Python safetensors package needed.

    attn.safetensors.save({"w": np.ones((2, 3), np.float32)}, "w.safetensors", metadata={"k": "v"})
    tensors = attn.safetensors.load("w.safetensors")               # {name: numpy array}
    tensors = attn.safetensors.load("w.safetensors", framework="pt")  # {name: torch tensor}

Values may be numpy arrays, torch tensors (CPU) or attn Tensors. attn's files hold F32 and
I32: float16/float32 are stored as F32 (exact); integers as I32, each value checked to fit
(ValueError otherwise); float64 is refused rather than rounded, as is any other dtype.
"""
from collections import OrderedDict

import numpy as np

from . import _attn
from ._attn import Tensor

__all__ = ["load", "save", "load_metadata"]


def to_tensor(name, value):
    if isinstance(value, Tensor):
        return value
    if type(value).__module__.startswith("torch"):
        if value.device.type != "cpu":
            raise ValueError(f"safetensors.save: '{name}' is on {value.device}; pass a CPU tensor")
        value = value.detach().contiguous().numpy()
    if isinstance(value, np.generic):  # a numpy scalar: a 0-d array
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        raise TypeError(f"safetensors.save: '{name}' must be a numpy array, torch tensor or attn.Tensor, "
                        f"got {type(value).__name__}")
    if value.dtype.kind == "f" and value.dtype.itemsize > 4:
        raise TypeError(f"safetensors.save: '{name}' is {value.dtype}; attn stores float32 (convert it "
                        f"yourself, e.g. .astype(np.float32), if rounding is what you want)")
    if value.dtype.kind not in "fiub":
        raise TypeError(f"safetensors.save: '{name}' has dtype {value.dtype}; attn stores float32 and int32")
    return _attn.tensor(np.require(value, requirements="C"))  # (ascontiguousarray would make 0-d 1-d)


def save(tensors, path, metadata=None):
    """Writes {name: array} (in the dict's order) and {str: str} metadata to path, atomically."""
    if not isinstance(tensors, dict):
        raise TypeError(f"safetensors.save: tensors must be a dict of name -> array, got {type(tensors).__name__}")
    metadata = dict(metadata or {})
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"safetensors.save: metadata must map str to str, got {key!r}: {type(value).__name__}")
    _attn.io.save_safetensors(str(path), OrderedDict((n, to_tensor(n, v)) for n, v in tensors.items()), metadata)


def load(path, framework="numpy"):
    """{name: numpy array} (framework="numpy") or {name: torch tensor} ("pt"), in file order."""
    if framework not in ("numpy", "np", "pt", "torch"):
        raise ValueError(f"safetensors.load: framework must be 'numpy' or 'pt', got {framework!r}")
    file = _attn.io.load_safetensors(str(path))
    arrays = OrderedDict((name, t.numpy()) for name, t in file.tensors)  # views of the loaded copy
    if framework in ("pt", "torch"):
        import torch
        return OrderedDict((name, torch.from_numpy(a)) for name, a in arrays.items())
    return arrays


def load_metadata(path):
    """The file's {str: str} metadata."""
    return dict(_attn.io.load_safetensors(str(path)).metadata)
