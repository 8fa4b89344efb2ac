"""Shared parity helpers: the tolerance table (the one place tolerances live), conversions,
and a comparison that fails loudly with the op, the case, the tensor, max abs/rel error
and where it is."""
import os

import numpy as np
import torch

import attn

# ATTN_PARITY_MARGIN_LOG=FILE: assert_close appends "op<TAB>case<TAB>name<TAB>max(error / allowed)" per passing
# comparison, to compare the tolerances' headroom between ISA levels (docs/performance.md).
MARGIN_LOG = os.environ.get("ATTN_PARITY_MARGIN_LOG")

torch.set_default_dtype(torch.float32)

# Per-op tolerances (atol, rtol) for float32 outputs and gradients against PyTorch: an element
# may differ by atol * scale + rtol * |expected|, scale = max |expected| of the compared tensor
# (at least 1; see comparison_scale). Fused ops that sum in a different order than PyTorch
# get a little more room; each looser entry says why.
TOLERANCES = {
    "default": (1e-5, 1e-4),
    "elementwise": (1e-6, 1e-5),
    "gelu": (1e-6, 1e-5),
    # Pure copies and index moves: exact.
    "shape_ops": (0.0, 0.0),
    "embedding": (0.0, 0.0),
    "optim": (1e-6, 1e-5),
    # Whole Seq2Seq models vs tests/parity/seq2seq_reference.py (test_seq2seq.py): logits and
    # loss at the default. Gradients pass scale = max(max|grad|, 1e-3), stricter than the usual
    # floor of 1 because these gradients are small by nature: attention gradients can be ~1e-5 (near-uniform
    # weights, the result of cancellation) next to output-layer ones ~1e-1.
    "seq2seq": (1e-5, 1e-4),
    # Parameters after Adam steps: the first update is ~lr·sign(g), so an entry whose
    # gradient is round-off sized could differ by 2·lr; none does at these sizes.
    "seq2seq_adam": (1e-5, 1e-4),
    # Log-mel energies (test_log_mel.py): a float32 FFTW spectrum against a float64 torch.stft,
    # compared after the log, where an energy's relative rounding error is the absolute error.
    "log_mel": (1e-5, 1e-4),
}


def tolerance(op):
    return TOLERANCES.get(op, TOLERANCES["default"])


def rng(seed):
    return np.random.default_rng(seed)


def randn(seed, *shape, scale=1.0):
    return np.asarray(rng(seed).standard_normal(shape) * scale, dtype=np.float32)


def to_attn(array, requires_grad=False):
    return attn.tensor(np.array(array, order="C"), requires_grad=requires_grad)  # keeps 0-d shapes


def to_torch(array, requires_grad=False, dtype=None):
    """dtype None keeps the array's (float32 arrays give the float32 reference)."""
    return torch.tensor(np.array(array), dtype=dtype, requires_grad=requires_grad)


def comparison_scale(expected):
    """The scale the table's atol is relative to: max |expected| over the compared tensor,
    floored at 1. Float32 rounding in a sum or product is relative to the size of the terms,
    not of each result, so an element near zero inside a large tensor (cancellation) carries
    errors of the tensor's scale; a per-element relative tolerance cannot hold there when the
    summation order changes (another SIMD width, another BLAS kernel). The floor at 1 keeps
    the table's atol for the unit-scale inputs most tests use: results that are small through
    cancellation of unit-scale terms still carry unit-scale rounding."""
    finite = np.abs(expected[np.isfinite(expected)])
    return max(1.0, float(finite.max())) if finite.size else 1.0


def assert_close(op, case, name, actual, expected, atol=None, rtol=None, scale=None):
    """Compares an attn result (Tensor or array) with a torch tensor / array.

    Each element may differ by atol * scale + rtol * |expected|: atol is relative to the
    tensor's scale (comparison_scale: max |expected|, at least 1), like torch.testing with a
    scaled atol or ggml's normalised error, and rtol to the element itself. A caller passes
    scale only to be stricter than that (see test_seq2seq.py)."""
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
    scale = comparison_scale(e) if scale is None else scale
    err = np.abs(a - e)
    allowed = atol * scale + rtol * np.abs(e)
    if (err > allowed).any():
        worst = np.unravel_index(np.argmax(err - allowed), a.shape) if a.ndim else ()
        rel = err / np.maximum(np.abs(e), 1e-30)
        raise AssertionError(
            f"{op} [{case}] {name}: max abs err {err.max():.3e}, max rel err {rel.max():.3e}, "
            f"worst at index {worst}: attn {a[worst]!r} vs torch {e[worst]!r} "
            f"(allowed {atol:g} * scale {scale:.3g} + {rtol:g} * |expected|)")
    if MARGIN_LOG and err.size:  # how much of its tolerance a passing comparison used
        with open(MARGIN_LOG, "a") as log:
            used = np.divide(err, allowed, out=np.zeros_like(err), where=allowed > 0)
            log.write(f"{op}\t{case}\t{name}\t{float(np.nanmax(used))}\n")


def seed_like(seed, t):
    """A random upstream gradient (numpy) of the shape of a torch or attn tensor."""
    shape = tuple(t.shape)
    return randn(seed, *shape)


def assert_grads(op, case, pairs):
    """pairs: [(name, attn_tensor, torch_tensor)] — compares every gradient; an attn
    tensor without a gradient counts as zeros (attn leaves .grad None when nothing
    reached it), a torch tensor without one likewise."""
    for name, a, t in pairs:
        ga = a.grad.numpy() if a.grad is not None else np.zeros(a.shape, np.float32)
        gt = t.grad if t.grad is not None else torch.zeros(t.shape)
        assert_close(op, case, f"grad {name}", ga, gt)


def lengths_mask(lengths, S):
    """(B) lengths -> (B, S) bool keep-mask."""
    return torch.arange(S)[None, :] < torch.as_tensor(np.asarray(lengths))[:, None].long()


def masked_softmax_ref(scores, keep):
    """softmax over the last dim of `scores` where keep; masked entries 0; a fully masked
    row gives zeros and zero gradient (the masked_fill(-inf) reference, minus its NaN)."""
    keep = keep.expand(scores.shape)
    dead = ~keep.any(-1, keepdim=True)
    keep2 = keep | dead
    y = torch.softmax(scores.masked_fill(~keep2, float("-inf")), -1)
    return y * (~dead)
