"""Shared parity helpers: the tolerance table (the one place tolerances live), conversions,
and a comparison that fails loudly with the op, the case, the tensor, max abs/rel error
and where it is."""
import numpy as np
import torch

import attn

torch.set_default_dtype(torch.float32)

# Per-op tolerances (atol, rtol) for float32 outputs and gradients against PyTorch.
# Fused ops that sum in a different order than PyTorch get a little more room; each
# looser entry says why.
TOLERANCES = {
    "default": (1e-5, 1e-4),
    "elementwise": (1e-6, 1e-5),
    "gelu": (1e-6, 1e-5),
}


def tolerance(op):
    return TOLERANCES.get(op, TOLERANCES["default"])


def rng(seed):
    return np.random.default_rng(seed)


def randn(seed, *shape, scale=1.0):
    return (rng(seed).standard_normal(shape) * scale).astype(np.float32)


def to_attn(array, requires_grad=False):
    return attn.tensor(np.ascontiguousarray(array), requires_grad=requires_grad)


def to_torch(array, requires_grad=False):
    return torch.tensor(np.array(array), requires_grad=requires_grad)


def assert_close(op, case, name, actual, expected, atol=None, rtol=None):
    """Compares an attn result (Tensor or array) with a torch tensor / array."""
    default_atol, default_rtol = tolerance(op)
    atol = default_atol if atol is None else atol
    rtol = default_rtol if rtol is None else rtol
    a = np.asarray(actual.numpy() if isinstance(actual, attn.Tensor) else actual, dtype=np.float64)
    e = (expected.detach().numpy() if isinstance(expected, torch.Tensor) else np.asarray(expected)).astype(np.float64)
    if a.shape != e.shape:
        raise AssertionError(f"{op} [{case}] {name}: shape {a.shape} != expected {e.shape}")
    if np.isnan(a).any() and not np.isnan(e).any():
        idx = np.unravel_index(np.argmax(np.isnan(a)), a.shape) if a.ndim else ()
        raise AssertionError(f"{op} [{case}] {name}: NaN at index {idx}")
    err = np.abs(a - e)
    allowed = atol + rtol * np.abs(e)
    if (err > allowed).any():
        worst = np.unravel_index(np.argmax(err - allowed), a.shape) if a.ndim else ()
        rel = err / np.maximum(np.abs(e), 1e-30)
        raise AssertionError(
            f"{op} [{case}] {name}: max abs err {err.max():.3e}, max rel err {rel.max():.3e}, "
            f"worst at index {worst}: attn {a[worst]!r} vs torch {e[worst]!r} (atol {atol}, rtol {rtol})")
